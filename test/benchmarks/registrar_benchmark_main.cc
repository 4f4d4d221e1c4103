// Prints the registrar's figures: start-to-ready, socket recreation, memory (right after
// registration and in steady state, by kind), idle CPU, size; with --compare_with=PATH, the
// start-up and steady-state memory of another registrar binary (the Go node-driver-registrar)
// beside ours, measured the same way in the same run.
//
//   bazel run -c opt //test/benchmarks:registrar_benchmark [-- --runs=20 --idle_seconds=60 --steady_seconds=60
//       --compare_with=/path/to/csi-node-driver-registrar [--compare_args=--flag=value,...]]
//
// The registrar (stripped, static) and the sample driver run as real processes on sockets
// under /tmp. Times come from inotify events and real GetInfo calls, not from polling.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <functional>
#include <tuple>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gflags/gflags.h"
#include "grpcpp/grpcpp.h"
#include "registrar/memory_breakdown.h"
#include "test/benchmarks/memory_cgroup.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

DEFINE_int32(runs, 20, "Start-ups and socket recreations to time.");
DEFINE_int32(idle_seconds, 60, "How long to watch the idle registrar's CPU time.");
DEFINE_int32(load_seconds, 5, "How long to load the registrar with GetInfo calls.");
DEFINE_int32(load_clients, 4, "Client threads for the load.");
DEFINE_int32(steady_seconds, 60,
             "How long the steady-state traffic runs before memory is measured: /healthz every "
             "second, and a kubelet's GetInfo and NotifyRegistrationStatus every 10 s.");
DEFINE_string(compare_with, "",
              "Another registrar binary (e.g. the Go node-driver-registrar) whose start-up and "
              "steady-state memory are measured beside ours.");
DEFINE_string(compare_args, "",
              "Extra flags, comma-separated, for the --compare_with registrar, e.g. "
              "--compare_with=OUR_BINARY --compare_args=--automaxprocs to see what a flag of ours "
              "does, measured the same way in the same run.");
DEFINE_bool(cgroup, true,
            "Also run each registrar measured for memory in a memory cgroup of its own, from a "
            "fresh copy of its binary, and report its working set as a cluster sees it (needs "
            "root).");
DEFINE_string(registrar, "",
              "Registrar binary to measure instead of the one built with this benchmark, e.g. an "
              "older build to compare start-up against.");

namespace ndr {
namespace {

using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;

constexpr char kName[] = "sample.csi.example.com";

// Waits up to 10 s for `name` to be created or renamed into the directory watched by `fd`.
bool WaitForName(int fd, const std::string& name) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  alignas(inotify_event) char buffer[4096];
  while (absl::Now() < deadline) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = read(fd, buffer, sizeof(buffer));
    for (char* q = buffer; n > 0 && q < buffer + n;) {
      auto* e = reinterpret_cast<inotify_event*>(q);
      q += sizeof(inotify_event) + e->len;
      if (e->len > 0 && name == e->name && (e->mask & (IN_CREATE | IN_MOVED_TO))) return true;
    }
  }
  return false;
}

bool GetInfo(const std::string& socket) {
  auto stub = pluginregistration::Registration::NewStub(
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  pluginregistration::PluginInfo info;
  return stub->GetInfo(&context, {}, &info).ok() && info.name() == kName;
}

// Kubelet's three calls of a registration.
void Register(const std::string& socket) {
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  auto stub = pluginregistration::Registration::NewStub(channel);
  {
    grpc::ClientContext context;
    pluginregistration::PluginInfo info;
    stub->GetInfo(&context, {}, &info);
  }
  {
    grpc::ClientContext context;
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(true);
    pluginregistration::RegistrationStatusResponse response;
    stub->NotifyRegistrationStatus(&context, status, &response);
  }
}

// The value of "FIELD:" in /proc/PID/FILE (status, smaps_rollup), or "?".
std::string ProcField(pid_t pid, const std::string& file, const std::string& field) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/", file));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::string value = line.substr(field.size() + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  }
  return "?";
}

// utime + stime of all threads, in clock ticks.
long CpuTicks(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string f;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stol(f);
    if (i == 15) stime = std::stol(f);
  }
  return utime + stime;
}

// Context switches (each one a wake-up) per thread name, over all threads.
std::map<std::string, long> ContextSwitches(pid_t pid) {
  std::map<std::string, long> by_name;
  std::string dir = absl::StrCat("/proc/", pid, "/task");
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in(absl::StrCat(dir, "/", e->d_name, "/status"));
      std::string line, name;
      while (std::getline(in, line)) {
        if (line.rfind("Name:", 0) == 0) name = line.substr(line.find_first_not_of(" \t", 5));
        if (line.rfind("voluntary_ctxt_switches:", 0) == 0 ||
            line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) {
          by_name[name] += std::stol(line.substr(line.find(':') + 1));
        }
      }
    }
    closedir(d);
  }
  return by_name;
}

size_t GzipSize(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uLongf size = compressBound(data.size());
  std::vector<Bytef> out(size);
  compress2(out.data(), &size, reinterpret_cast<const Bytef*>(data.data()), data.size(), 9);
  return size;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string Machine() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "?";
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  utsname u;
  uname(&u);
  return absl::StrCat(model, ", ", sysconf(_SC_NPROCESSORS_ONLN), " cores, Linux ", u.release);
}

// A port on 127.0.0.1 that was free a moment ago (the Go registrar takes no port 0).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// GET http://127.0.0.1:port/healthz: whether it answered 200.
bool Healthz(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request =
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[1024];
      ssize_t n;
      while ((n = read(fd, buffer, sizeof(buffer))) > 0) reply.append(buffer, n);
    }
  }
  close(fd);
  return reply.rfind("HTTP/1.1 200", 0) == 0;
}

struct StartupTimes {
  double socket_ms = 0, get_info_ms = 0;
  int64_t private_kb = -1;  // anonymous memory when the socket appeared; -1 unreadable
};

// The memory that is this process's alone, what it wrote (heap, stacks, bss, the data pages it
// changed): Anonymous of /proc/PID/smaps_rollup, in kB; -1 when it cannot be read. The binary's
// pages are left out: they are the page cache's, and Private_Dirty would count a binary still being
// written back (a fresh build) as the process's.
int64_t PrivateKb(pid_t pid) {
  const std::string value = ProcField(pid, "smaps_rollup", "Anonymous");  // "1234 kB"
  int64_t kb = -1;
  return absl::SimpleAtoi(absl::StripSuffix(value, " kB"), &kb) ? kb : -1;
}

// One start of `registrar`: exec to the registration socket, and to GetInfo answered on it.
// `extra` are flags added to the registrar's command line.
std::optional<StartupTimes> StartOnce(const std::string& registrar, const std::string& csi,
                                      const std::string& log,
                                      const std::vector<std::string>& extra) {
  TempDir reg("bsu");
  const std::string socket = reg.Join(std::string(kName) + "-reg.sock");
  int fd = inotify_init1(IN_NONBLOCK);
  inotify_add_watch(fd, reg.path().c_str(), IN_CREATE | IN_MOVED_TO);
  std::vector<std::string> argv = {
      registrar, "--csi-address=" + csi,
      "--kubelet-registration-path=/var/lib/kubelet/plugins/s/csi.sock",
      "--plugin-registration-path=" + reg.path()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const absl::Time start = absl::Now();
  Subprocess r(argv, log);
  std::optional<StartupTimes> times;
  if (WaitForName(fd, std::string(kName) + "-reg.sock")) {
    const absl::Time created = absl::Now();
    const int64_t private_kb = PrivateKb(r.pid());
    if (::ndr::testing::PollUntil([&] { return GetInfo(socket); })) {
      times = StartupTimes{absl::ToDoubleMilliseconds(created - start),
                           absl::ToDoubleMilliseconds(absl::Now() - start), private_kb};
    }
  }
  close(fd);
  r.Signal(SIGTERM);
  r.Wait(absl::Seconds(10));
  return times;
}

// Where a measured registrar runs: in a memory cgroup of its own, from a fresh copy of its
// binary (--cgroup), or as it is. Say() why not, once.
struct Placement {
  std::unique_ptr<benchmarks::MemoryCgroup> cgroup;
  std::unique_ptr<TempDir> dir;
  std::string binary;  // the fresh copy, or the binary itself
};
std::string cgroup_unavailable;  // why no cgroup, once known
std::optional<bool> cgroup_v2;   // which hierarchy was used
Placement Place(const std::string& registrar) {
  Placement placement;
  placement.binary = registrar;
  if (!FLAGS_cgroup || !cgroup_unavailable.empty()) return placement;
  static int count = 0;
  absl::StatusOr<std::unique_ptr<benchmarks::MemoryCgroup>> cgroup =
      benchmarks::MemoryCgroup::Create(absl::StrCat("ndr-bench-", getpid(), "-", ++count));
  if (!cgroup.ok()) {
    cgroup_unavailable = std::string(cgroup.status().message());
    return placement;
  }
  placement.dir = std::make_unique<TempDir>("bcg");
  absl::StatusOr<std::string> copy = benchmarks::FreshCopy(registrar, placement.dir->path());
  if (!copy.ok()) {
    cgroup_unavailable = std::string(copy.status().message());
    return placement;
  }
  cgroup_v2 = (*cgroup)->v2();
  placement.cgroup = *std::move(cgroup);
  placement.binary = *copy;
  return placement;
}

struct SteadyState {
  registrar::MemoryBreakdown registered, steady;
  std::optional<benchmarks::CgroupMemory> cgroup;  // at the end of the traffic, right after a call
  // The working set halfway between two calls, once a second over the traffic's last ten
  // seconds: cAdvisor reads a container's memory on its own clock, not right after a call.
  std::vector<benchmarks::CgroupMemory> between_calls;
  bool healthy = true;  // every /healthz answered 200
};

// Memory of `registrar` right after a kubelet's registration (and one /healthz), then after
// FLAGS_steady_seconds of kubelet-like traffic: /healthz every second (which asks GetInfo on the
// registration socket), and GetInfo with NotifyRegistrationStatus every 10 s.
std::optional<SteadyState> MeasureSteadyState(const std::string& registrar, const std::string& csi,
                                              const std::string& log,
                                              const std::vector<std::string>& extra) {
  TempDir reg("bst");
  const std::string socket = reg.Join(std::string(kName) + "-reg.sock");
  const int port = FreePort();
  Placement placement = Place(registrar);
  std::vector<std::string> argv = {
      placement.binary, "--csi-address=" + csi,
      "--kubelet-registration-path=/var/lib/kubelet/plugins/s/csi.sock",
      "--plugin-registration-path=" + reg.path(), absl::StrCat("--http-endpoint=127.0.0.1:", port)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (placement.cgroup != nullptr) argv = placement.cgroup->Wrap(argv);
  Subprocess r(argv, log);
  if (!::ndr::testing::PollUntil([&] { return GetInfo(socket); })) return std::nullopt;
  SteadyState state;
  Register(socket);
  state.healthy = Healthz(port);
  absl::StatusOr<registrar::MemoryBreakdown> registered =
      registrar::MeasureMemory(r.pid(), placement.binary);
  if (!registered.ok()) return std::nullopt;
  state.registered = *registered;
  for (int second = 1; second <= FLAGS_steady_seconds; ++second) {
    // The traffic's own rhythm, a probe a second; halfway, in the last ten seconds, a reading.
    absl::SleepFor(absl::Milliseconds(500));
    if (placement.cgroup != nullptr && second > FLAGS_steady_seconds - 10) {
      absl::StatusOr<benchmarks::CgroupMemory> now = placement.cgroup->Read();
      if (now.ok()) state.between_calls.push_back(*now);
    }
    absl::SleepFor(absl::Milliseconds(500));
    state.healthy = Healthz(port) && state.healthy;
    if (second % 10 == 0) Register(socket);
  }
  absl::StatusOr<registrar::MemoryBreakdown> steady =
      registrar::MeasureMemory(r.pid(), placement.binary);
  if (placement.cgroup != nullptr) {
    absl::StatusOr<benchmarks::CgroupMemory> cgroup = placement.cgroup->Read();
    if (cgroup.ok()) state.cgroup = *cgroup;
  }
  r.Signal(SIGTERM);
  r.Wait(absl::Seconds(10));
  if (!steady.ok()) return std::nullopt;
  state.steady = *steady;
  return state;
}

// One registrar left alone after a kubelet's registration (GetInfo, NotifyRegistrationStatus, the
// connection closed): its CPU time and context switches over FLAGS_idle_seconds, counted from 2 s
// after the registration (ours stops gRPC a moment after the last connection closes, and a
// thread that ends inside the window would take its switches with it), and its memory then.
struct Idle {
  long ticks = 0;
  long switches = 0;
  std::string by_thread, rss, hwm, anon, file, threads;
  std::optional<benchmarks::CgroupMemory> cgroup;  // at the end of the idle time
};

std::optional<Idle> MeasureIdle(const std::string& registrar, const std::string& csi,
                                const std::string& log, const std::vector<std::string>& extra) {
  TempDir reg("breg");
  const std::string socket = reg.Join(std::string(kName) + "-reg.sock");
  Placement placement = Place(registrar);
  std::vector<std::string> argv = {placement.binary, "--csi-address=" + csi,
                                   "--kubelet-registration-path=/var/lib/kubelet/plugins/s/csi.sock",
                                   "--plugin-registration-path=" + reg.path()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (placement.cgroup != nullptr) argv = placement.cgroup->Wrap(argv);
  Subprocess r(argv, log);
  if (!::ndr::testing::PollUntil([&] { return GetInfo(socket); })) return std::nullopt;
  Register(socket);  // returns once the registrar has answered both of kubelet's calls
  absl::SleepFor(absl::Seconds(2));  // the settling the figure leaves out, by definition
  Idle idle;
  const long ticks_before = CpuTicks(r.pid());
  std::map<std::string, long> switches = ContextSwitches(r.pid());
  absl::SleepFor(absl::Seconds(FLAGS_idle_seconds));  // The measurement itself: idle time.
  idle.ticks = CpuTicks(r.pid()) - ticks_before;
  idle.rss = ProcField(r.pid(), "status", "VmRSS");
  idle.hwm = ProcField(r.pid(), "status", "VmHWM");
  idle.anon = ProcField(r.pid(), "status", "RssAnon");
  idle.file = ProcField(r.pid(), "status", "RssFile");
  idle.threads = ProcField(r.pid(), "status", "Threads");
  if (placement.cgroup != nullptr) {
    absl::StatusOr<benchmarks::CgroupMemory> cgroup = placement.cgroup->Read();
    if (cgroup.ok()) idle.cgroup = *cgroup;
  }
  for (const auto& [name, count] : ContextSwitches(r.pid())) {
    const long delta = count - switches[name];
    idle.switches += delta;
    if (delta > 0) absl::StrAppend(&idle.by_thread, idle.by_thread.empty() ? "" : ", ", name, " ", delta);
  }
  r.Signal(SIGTERM);
  r.Wait(absl::Seconds(10));
  return idle;
}

std::string Mb(int64_t kb) { return absl::StrFormat("%.2f MB", kb / 1024.0); }

// The working set as a cluster sees it, ours beside the other registrar's: what leads.
void PrintWorkingSet(const SteadyState& steady, const Idle& idle,
                     const std::optional<SteadyState>& other_steady,
                     const std::optional<Idle>& other_idle) {
  if (!steady.cgroup.has_value() || !idle.cgroup.has_value()) {
    std::cout << "Working set: not measured ("
              << (cgroup_unavailable.empty() ? std::string(FLAGS_cgroup ? "unreadable" : "--cgroup=false")
                                             : cgroup_unavailable)
              << ")\n\n";
    return;
  }
  const bool compare = other_steady.has_value() && other_steady->cgroup.has_value() &&
                       other_idle.has_value() && other_idle->cgroup.has_value();
  std::cout << "Working set as a cluster sees it: each registrar in a memory cgroup of its own "
               "(cgroup "
            << (cgroup_v2.value_or(false) ? "v2" : "v1")
            << "), started from a fresh copy of its binary (its page cache emptied first, so "
               "that the pages it faults in are charged there); working set = usage - inactive "
               "file, as "
               "cAdvisor and kubelet compute it; charged ahead = usage - anon - file - kernel, pages "
               "the kernel charged in per-CPU batches and not yet used, which it hands back when "
               "other cgroups charge on those CPUs. Steady: "
            << FLAGS_steady_seconds
            << " s of traffic (/healthz every second, a registration every 10 s), read halfway "
               "between two calls once a second over its last 10 s (mean and highest: cAdvisor "
               "reads on its own clock), and right after its last call; idle: after "
            << FLAGS_idle_seconds << " s idle.\n\n";
  std::cout << absl::StrFormat("| %-56s | %-10s |%s\n", "MB", "ours",
                               compare ? " other      | ours/other |" : "");
  std::cout << absl::StrFormat("|%s|%s|%s\n", std::string(58, '-'), std::string(12, '-'),
                               compare ? std::string(12, '-') + "|" + std::string(12, '-') + "|"
                                       : "");
  using Memory = benchmarks::CgroupMemory;
  using Get = std::function<int64_t(const Memory&)>;
  // One line: ours, and with a comparison the other's and the ratio ("-" where it has none).
  auto print_row = [&](const std::string& name, int64_t ours, std::optional<int64_t> theirs) {
    std::string line = absl::StrFormat("| %-56s | %-10.2f |", name, ours / 1e6);
    if (compare) {
      line += absl::StrFormat(
          " %-10s | %-10s |", theirs.has_value() ? absl::StrFormat("%.2f", *theirs / 1e6) : "-",
          theirs.value_or(0) > 0 ? absl::StrFormat("%.2f", static_cast<double>(ours) / *theirs)
                                 : "-");
    }
    std::cout << line << "\n";
  };
  const Get working_set = [](const Memory& m) { return m.working_set(); };
  // What the processes hold: the working set less the pages charged ahead, which the kernel
  // hands back as soon as other cgroups charge on those CPUs.
  const Get held = [](const Memory& m) { return m.working_set() - m.charged_ahead(); };
  const std::pair<const char*, Get> fields[] = {
      {"working set less charged ahead", held},
      {"anon", [](const Memory& m) { return m.anon; }},
      {"kernel", [](const Memory& m) { return m.kernel; }},
      {"file (page cache)", [](const Memory& m) { return m.file; }},
      {"  of which active", [](const Memory& m) { return m.active_file; }},
      {"  of which inactive", [](const Memory& m) { return m.inactive_file; }},
      {"charged ahead (per-CPU batches)", [](const Memory& m) { return m.charged_ahead(); }},
      {"usage", [](const Memory& m) { return m.usage; }},
  };
  // Steady state between calls: the mean and the highest of the readings halfway between two.
  auto between = [](const SteadyState& state, const Get& get,
                    bool highest) -> std::optional<int64_t> {
    if (state.between_calls.empty()) return std::nullopt;
    int64_t sum = 0, most = 0;
    for (const Memory& reading : state.between_calls) {
      sum += get(reading);
      most = std::max(most, get(reading));
    }
    return highest ? most : sum / static_cast<int64_t>(state.between_calls.size());
  };
  // Named with how many readings there were of ours, so that a reading that failed shows.
  for (const auto& [what, get] : {std::pair<const char*, Get>{"", working_set},
                                  std::pair<const char*, Get>{", less charged ahead", held}}) {
    for (const bool highest : {false, true}) {
      std::optional<int64_t> ours = between(steady, get, highest);
      if (!ours.has_value()) continue;
      print_row(absl::StrCat("steady, between calls", what, ": ",
                             highest ? "highest of " : "mean of ", steady.between_calls.size()),
                *ours, compare ? between(*other_steady, get, highest) : std::nullopt);
    }
  }
  // What the mean between calls is made of, field by field (each a mean of the readings).
  if (between(steady, working_set, false).has_value()) {
    for (const auto& [name, get] : fields) {
      print_row(absl::StrCat("  ", name, ", mean"), *between(steady, get, false),
                compare ? between(*other_steady, get, false) : std::nullopt);
    }
  }
  for (const auto& [state, ours, other] :
       {std::tuple{"steady, right after a call", *steady.cgroup,
                   compare ? &*other_steady->cgroup : static_cast<const Memory*>(nullptr)},
        std::tuple{"idle", *idle.cgroup,
                   compare ? &*other_idle->cgroup : static_cast<const Memory*>(nullptr)}}) {
    print_row(absl::StrCat(state, ": working set"), ours.working_set(),
              other != nullptr ? std::optional<int64_t>(other->working_set()) : std::nullopt);
    for (const auto& [name, get] : fields) {
      print_row(absl::StrCat("  ", name), get(ours),
                other != nullptr ? std::optional<int64_t>(get(*other)) : std::nullopt);
    }
  }
  std::cout << "\n";
}

int Run() {
  const std::string registrar = FLAGS_registrar.empty()
                                    ? Runfile("registrar/csi-node-driver-registrar.stripped")
                                    : FLAGS_registrar;
  TempDir dir("bench");
  const std::string csi = dir.Join("csi.sock");
  Subprocess driver(
      {Runfile("test/csidriver/sample-csi-driver"), "--endpoint=" + csi, "--nodeid=n"},
      dir.Join("driver.log"));
  if (!::ndr::testing::PollUntil([&] {
        struct stat st;
        return stat(csi.c_str(), &st) == 0;
      })) {
    std::cerr << "sample driver did not start" << std::endl;
    return 1;
  }

  std::vector<std::string> compare_args;
  if (!FLAGS_compare_args.empty()) compare_args = absl::StrSplit(FLAGS_compare_args, ',');
  // Start-up is timed from copies of both binaries side by side in one directory, so that both are
  // exec'd alike. Ours as Bazel leaves it, behind the runfiles' links in its output tree, started
  // about 1 ms (4-8%) later than the same bytes copied beside the other one (measured on this
  // project's machine, median of 40 starts, three runs each way).
  std::string ours_binary, other_binary;
  for (auto [binary, copy, name] : {std::tuple{registrar, &ours_binary, "ours"},
                                    std::tuple{FLAGS_compare_with, &other_binary, "other"}}) {
    if (binary.empty()) continue;
    const std::string copy_dir = dir.Join(name);
    absl::StatusOr<std::string> copied;
    if (mkdir(copy_dir.c_str(), 0700) == 0) copied = benchmarks::FreshCopy(binary, copy_dir);
    if (!copied.ok()) {
      std::cerr << "cannot copy " << binary << " into " << copy_dir << " to time its start-up"
                << std::endl;
      return 1;
    }
    *copy = *copied;
  }
  // Start-up, ours and (alternating, so that both see the same machine) the other registrar's.
  std::vector<double> socket_ms, get_info_ms, other_socket_ms, other_get_info_ms;
  std::vector<double> private_kb, other_private_kb;  // at the socket, each start
  for (int i = 0; i < FLAGS_runs; ++i) {
    std::optional<StartupTimes> ours = StartOnce(ours_binary, csi, dir.Join("startup.log"), {});
    if (!ours.has_value()) {
      std::string log;
      ::ndr::testing::ReadFile(dir.Join("startup.log"), &log);
      std::cerr << "registrar did not start:\n" << log << std::endl;
      return 1;
    }
    socket_ms.push_back(ours->socket_ms);
    get_info_ms.push_back(ours->get_info_ms);
    if (ours->private_kb >= 0) private_kb.push_back(ours->private_kb);
    if (FLAGS_compare_with.empty()) continue;
    std::optional<StartupTimes> other =
        StartOnce(other_binary, csi, dir.Join("other.log"), compare_args);
    if (!other.has_value()) {
      std::string log;
      ::ndr::testing::ReadFile(dir.Join("other.log"), &log);
      std::cerr << FLAGS_compare_with << " did not start:\n" << log << std::endl;
      return 1;
    }
    other_socket_ms.push_back(other->socket_ms);
    other_get_info_ms.push_back(other->get_info_ms);
    if (other->private_kb >= 0) other_private_kb.push_back(other->private_kb);
  }
  std::optional<SteadyState> steady =
      MeasureSteadyState(registrar, csi, dir.Join("steady.log"), {});
  if (!steady.has_value()) {
    std::cerr << "steady-state measurement failed" << std::endl;
    return 1;
  }
  std::optional<SteadyState> other_steady;
  if (!FLAGS_compare_with.empty()) {
    other_steady =
        MeasureSteadyState(FLAGS_compare_with, csi, dir.Join("other-steady.log"), compare_args);
    if (!other_steady.has_value()) {
      std::cerr << FLAGS_compare_with << ": steady-state measurement failed" << std::endl;
      return 1;
    }
  }

  std::vector<double> ready_ms, recreate_ms;
  for (int i = 0; i < FLAGS_runs; ++i) {
    TempDir reg("breg");
    const std::string socket = reg.Join(std::string(kName) + "-reg.sock");
    int fd = inotify_init1(IN_NONBLOCK);
    inotify_add_watch(fd, reg.path().c_str(), IN_CREATE | IN_MOVED_TO);
    const absl::Time start = absl::Now();
    Subprocess r({registrar, "--csi-address=" + csi,
                  "--kubelet-registration-path=/var/lib/kubelet/plugins/s/csi.sock",
                  "--plugin-registration-path=" + reg.path()},
                 dir.Join("registrar.log"));
    if (!WaitForName(fd, std::string(kName) + "-reg.sock") || !GetInfo(socket)) {
      std::cerr << "registrar did not become ready:\n" << r.Log() << std::endl;
      return 1;
    }
    ready_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
    const absl::Time deleted = absl::Now();
    unlink(socket.c_str());
    if (!WaitForName(fd, std::string(kName) + "-reg.sock")) {
      std::cerr << "socket was not recreated" << std::endl;
      return 1;
    }
    recreate_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - deleted));
    close(fd);
    r.Signal(SIGTERM);
    r.Wait(absl::Seconds(10));
  }

  // Memory and idle CPU of one registrar after a kubelet-style registration, ours and the other's.
  std::optional<Idle> idle = MeasureIdle(registrar, csi, dir.Join("registrar.log"), {});
  std::optional<Idle> other_idle;
  if (!FLAGS_compare_with.empty()) {
    other_idle = MeasureIdle(FLAGS_compare_with, csi, dir.Join("other-idle.log"), compare_args);
  }
  if (!idle.has_value() || (!FLAGS_compare_with.empty() && !other_idle.has_value())) {
    std::cerr << "idle measurement failed" << std::endl;
    return 1;
  }

  // GetInfo calls per second that one registrar serves on one core: the registrar on CPU 0,
  // the clients (this process) on the other CPU.
  double calls_per_second = 0;
  if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
    TempDir load_reg("bload");
    const std::string load_socket = load_reg.Join(std::string(kName) + "-reg.sock");
    Subprocess pinned({"/usr/bin/taskset", "-c", "0", registrar, "--csi-address=" + csi,
                       "--kubelet-registration-path=/var/lib/kubelet/plugins/s/csi.sock",
                       "--plugin-registration-path=" + load_reg.path()},
                      dir.Join("load.log"));
    ::ndr::testing::PollUntil([&] { return GetInfo(load_socket); });
    cpu_set_t others;
    CPU_ZERO(&others);
    for (int cpu = 1; cpu < sysconf(_SC_NPROCESSORS_ONLN); ++cpu) CPU_SET(cpu, &others);
    sched_setaffinity(0, sizeof(others), &others);
    std::atomic<long> calls{0};
    const absl::Time end = absl::Now() + absl::Seconds(FLAGS_load_seconds);
    std::vector<std::thread> clients;
    for (int c = 0; c < FLAGS_load_clients; ++c) {
      clients.emplace_back([&] {
        grpc::ChannelArguments args;
        args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
        auto stub = pluginregistration::Registration::NewStub(grpc::CreateCustomChannel(
            "unix:" + load_socket, grpc::InsecureChannelCredentials(), args));
        while (absl::Now() < end) {
          grpc::ClientContext context;
          pluginregistration::PluginInfo info;
          if (stub->GetInfo(&context, {}, &info).ok()) ++calls;
        }
      });
    }
    for (std::thread& t : clients) t.join();
    calls_per_second = calls.load() / static_cast<double>(FLAGS_load_seconds);
  }

  struct stat st;
  stat(registrar.c_str(), &st);
  std::cout << "csi-node-driver-registrar benchmark on " << Machine() << "\n\n";
  PrintWorkingSet(*steady, *idle, other_steady, other_idle);
  std::cout << absl::StrFormat("| %-48s | %-40s |\n", "figure", "value");
  std::cout << absl::StrFormat("|%s|%s|\n", std::string(50, '-'), std::string(42, '-'));
  auto row = [](const std::string& k, const std::string& v) {
    std::cout << absl::StrFormat("| %-48s | %-40s |\n", k, v);
  };
  row(absl::StrCat("start to GetInfo answered, median of ", ready_ms.size()),
      absl::StrFormat("%.1f ms (min %.1f, max %.1f)", Median(ready_ms),
                      *std::min_element(ready_ms.begin(), ready_ms.end()),
                      *std::max_element(ready_ms.begin(), ready_ms.end())));
  row(absl::StrCat("socket deleted to recreated, median of ", recreate_ms.size()),
      absl::StrFormat("%.2f ms (max %.2f)", Median(recreate_ms),
                      *std::max_element(recreate_ms.begin(), recreate_ms.end())));
  row(absl::StrCat("VmRSS after registration and ", FLAGS_idle_seconds, " s idle"), idle->rss);
  row("VmHWM (peak, start-up included)", idle->hwm);
  row("  of which anonymous / file-backed", absl::StrCat(idle->anon, " / ", idle->file));
  row("threads", idle->threads);
  row(absl::StrCat("CPU time while idle for ", FLAGS_idle_seconds, " s"),
      absl::StrCat(idle->ticks * 1000 / sysconf(_SC_CLK_TCK), " ms"));
  row("wake-ups (context switches) while idle", absl::StrCat(idle->switches));
  row("  by thread", idle->by_thread.empty() ? "none" : idle->by_thread);
  if (other_idle.has_value()) {
    row("other registrar: wake-ups while idle", absl::StrCat(other_idle->switches));
    row("  by thread", other_idle->by_thread.empty() ? "none" : other_idle->by_thread);
    row("other registrar: threads, VmRSS idle",
        absl::StrCat(other_idle->threads, ", ", other_idle->rss));
  }
  row(absl::StrCat("GetInfo calls per second, registrar on 1 core, ", FLAGS_load_clients,
                   " clients"),
      calls_per_second > 0 ? absl::StrFormat("%.0f", calls_per_second) : "needs 2 cores");
  row("binary (static, stripped)", absl::StrFormat("%.1f MB", st.st_size / 1e6));
  row("binary, zlib -9", absl::StrFormat("%.1f MB", GzipSize(registrar) / 1e6));

  // Start-up and steady-state memory, ours beside the other registrar's.
  const bool compare = other_steady.has_value();
  std::cout << "\nStart-up (median of " << socket_ms.size()
            << (compare ? " alternating runs each" : " runs")
            << "; private: the Anonymous memory of smaps_rollup, what the process itself wrote, when "
               "its socket appeared) and memory "
            << "(after registration and one /healthz; steady: after " << FLAGS_steady_seconds
            << " s of /healthz every second and a kubelet registration every 10 s):\n\n";
  std::cout << absl::StrFormat("| %-32s | %-14s | %-14s |%s\n", "figure", "ours", "ours, steady",
                               compare ? " other          | other, steady  | steady ratio |" : "");
  std::cout << absl::StrFormat(
      "|%s|%s|%s|%s\n", std::string(34, '-'), std::string(16, '-'), std::string(16, '-'),
      compare ? std::string(16, '-') + "|" + std::string(16, '-') + "|" + std::string(14, '-') + "|"
              : "");
  auto ms_row = [&](const std::string& name, const std::vector<double>& ours,
                    const std::vector<double>& other) {
    std::string line = absl::StrFormat("| %-32s | %-14s | %-14s |", name,
                                       absl::StrFormat("%.1f ms", Median(ours)), "");
    if (compare) {
      line += absl::StrFormat(" %-14s | %-14s | %-12s |", absl::StrFormat("%.1f ms", Median(other)),
                              "", absl::StrFormat("%.2f", Median(ours) / Median(other)));
    }
    std::cout << line << "\n";
  };
  ms_row("exec to registration socket", socket_ms, other_socket_ms);
  ms_row("exec to GetInfo answered", get_info_ms, other_get_info_ms);
  // Written memory when the socket appeared, median over the start-ups ("-" if never readable).
  {
    auto kb = [](const std::vector<double>& v) {
      return v.empty() ? std::string("-") : Mb(static_cast<int64_t>(Median(v)));
    };
    std::string line = absl::StrFormat("| %-32s | %-14s | %-14s |", "private memory at the socket",
                                       kb(private_kb), "");
    if (compare) {
      line += absl::StrFormat(
          " %-14s | %-14s | %-12s |", kb(other_private_kb), "",
          private_kb.empty() || other_private_kb.empty() || Median(other_private_kb) <= 0
              ? "-"
              : absl::StrFormat("%.2f", Median(private_kb) / Median(other_private_kb)));
    }
    std::cout << line << "\n";
  }
  using Field = int64_t registrar::MemoryBreakdown::*;
  const std::pair<const char*, Field> fields[] = {
      {"resident (VmRSS)", &registrar::MemoryBreakdown::rss_kb},
      {"  anonymous", &registrar::MemoryBreakdown::anon_kb},
      {"  file-backed", &registrar::MemoryBreakdown::file_kb},
      {"  code (executable sections)", &registrar::MemoryBreakdown::text_kb},
      {"  read-only data", &registrar::MemoryBreakdown::rodata_kb},
      {"  data and bss", &registrar::MemoryBreakdown::data_kb},
      {"  heap (and other anonymous)", &registrar::MemoryBreakdown::heap_kb},
      {"  stacks", &registrar::MemoryBreakdown::stacks_kb},
      {"  other", &registrar::MemoryBreakdown::other_kb},
  };
  for (const auto& [name, field] : fields) {
    std::string line = absl::StrFormat("| %-32s | %-14s | %-14s |", name,
                                       Mb(steady->registered.*field), Mb(steady->steady.*field));
    if (compare) {
      const int64_t other = other_steady->steady.*field;
      line += absl::StrFormat(
          " %-14s | %-14s | %-12s |", Mb(other_steady->registered.*field), Mb(other),
          other > 0 ? absl::StrFormat("%.2f", static_cast<double>(steady->steady.*field) / other)
                    : "-");
    }
    std::cout << line << "\n";
  }
  std::string threads_line = absl::StrFormat("| %-32s | %-14d | %-14d |", "threads",
                                             steady->registered.threads, steady->steady.threads);
  if (compare) {
    threads_line += absl::StrFormat(" %-14d | %-14d | %-12s |", other_steady->registered.threads,
                                    other_steady->steady.threads, "");
  }
  std::cout << threads_line << "\n";
  if (!steady->healthy || (compare && !other_steady->healthy)) {
    std::cout << "\nwarning: a /healthz during the steady-state traffic did not answer 200\n";
  }
  return 0;
}

}  // namespace
}  // namespace ndr

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return ndr::Run();
}
