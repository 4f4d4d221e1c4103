// --automaxprocs for real: the registrar in a cgroup whose CPU limit is one core, on a node of
// eight CPUs, starts fewer threads with the flag than without it, and says why in its log.
//
// The node is made in a mount namespace of the registrar's own: a directory that lists eight CPUs
// bound over /sys/devices/system/cpu, which is where glibc's sysconf(_SC_NPROCESSORS_CONF) counts
// them (glibc 2.36, get_nprocs_conf) and so where gRPC learns the host's CPUs. On this project's
// two-CPU machines gRPC's pools are already at their floor of two threads, so the difference only
// shows on a larger node. The cgroup is real (cgroup v1 cpu controller, or v2 with cpu enabled).
// Needs root and a writable cgroup filesystem: it skips itself, saying why, without them.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::PollUntil;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::ndr::testing::WriteFile;

constexpr int kFakeCpus = 8;

bool IsSocket(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// A cgroup of its own limited to one CPU, removed when the object goes away (its processes must
// be gone by then). ok() is false, with why(), where none can be made.
class OneCpuCgroup {
 public:
  OneCpuCgroup() {
    const std::string name = absl::StrCat("ndr-automaxprocs-", getpid());
    struct Candidate {
      const char* parent;
      const char* file;
      const char* value;
    } candidates[] = {
        {"/sys/fs/cgroup/cpu", "cpu.cfs_quota_us", "100000"},  // period 100000 by default
        {"/sys/fs/cgroup/cpu,cpuacct", "cpu.cfs_quota_us", "100000"},
        {"/sys/fs/cgroup", "cpu.max", "100000 100000"},  // v2
    };
    for (const Candidate& c : candidates) {
      if (access(absl::StrCat(c.parent, "/cgroup.procs").c_str(), W_OK) != 0) continue;
      const std::string dir = absl::StrCat(c.parent, "/", name);
      if (mkdir(dir.c_str(), 0755) != 0) {
        why_ = absl::StrCat("mkdir ", dir, ": ", strerror(errno));
        continue;
      }
      if (!WriteFile(absl::StrCat(dir, "/", c.file), c.value)) {
        why_ = absl::StrCat("cannot write ", dir, "/", c.file);
        rmdir(dir.c_str());
        continue;
      }
      dir_ = dir;
      return;
    }
    if (why_.empty()) why_ = "no writable cgroup filesystem with the cpu controller (not root?)";
  }
  ~OneCpuCgroup() {
    if (!dir_.empty()) rmdir(dir_.c_str());
  }

  bool ok() const { return !dir_.empty(); }
  const std::string& why() const { return why_; }
  std::string procs() const { return dir_ + "/cgroup.procs"; }

 private:
  std::string dir_;
  std::string why_;
};

// The threads of process `pid` by name (/proc/PID/task/*/comm).
std::map<std::string, int> Threads(pid_t pid) {
  std::map<std::string, int> threads;
  const std::string tasks = absl::StrCat("/proc/", pid, "/task");
  for (const std::string& tid : ::ndr::testing::DirEntries(tasks)) {
    std::ifstream comm(absl::StrCat(tasks, "/", tid, "/comm"));
    std::string name;
    std::getline(comm, name);
    ++threads[name];
  }
  return threads;
}

int Total(const std::map<std::string, int>& threads) {
  int total = 0;
  for (const auto& [name, count] : threads) total += count;
  return total;
}

std::string Describe(const std::map<std::string, int>& threads) {
  std::string out;
  for (const auto& [name, count] : threads) absl::StrAppend(&out, count, "x ", name, "; ");
  return out;
}

struct RegistrarRun {
  std::map<std::string, int> threads;
  std::string log;
};

// The registrar on the fake eight-CPU node, in the one-CPU cgroup, with `flags`; its threads once
// it serves the registration socket and, if `event_engine` is given, once that many event_engine
// threads have started (gRPC starts them as the registrar starts serving; on a busy machine the
// last may come a moment after the first answer), or the deadline passed.
RegistrarRun RunOnFakeNode(const OneCpuCgroup& cgroup, const std::vector<std::string>& flags,
                           int event_engine = 0) {
  TempDir dir("amp");
  const std::string cpus = dir.Join("cpus");
  mkdir(cpus.c_str(), 0755);
  for (int i = 0; i < kFakeCpus; ++i) mkdir(absl::StrCat(cpus, "/cpu", i).c_str(), 0755);
  for (const char* file : {"possible", "present", "online"}) {
    WriteFile(absl::StrCat(cpus, "/", file), absl::StrCat("0-", kFakeCpus - 1, "\n"));
  }
  mkdir(dir.Join("csi").c_str(), 0755);
  mkdir(dir.Join("registration").c_str(), 0755);
  const std::string csi = dir.Join("csi/csi.sock");
  Subprocess driver({Runfile("test/csidriver/sample-csi-driver"), "--endpoint=" + csi},
                    dir.Join("driver.log"));
  EXPECT_TRUE(PollUntil([&] { return IsSocket(csi); })) << driver.Describe();

  // unshare(1) execs its command and sh execs the registrar: one pid throughout.
  std::string command = absl::StrCat(
      "mount --bind ", cpus, " /sys/devices/system/cpu && echo $$ > ", cgroup.procs(),
      " && exec ", Runfile("registrar/csi-node-driver-registrar"), " --csi-address=", csi,
      " --kubelet-registration-path=/var/lib/kubelet/plugins/sample/csi.sock",
      " --plugin-registration-path=", dir.Join("registration"));
  for (const std::string& flag : flags) absl::StrAppend(&command, " ", flag);
  Subprocess registrar(
      {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", command},
      dir.Join("registrar.log"));
  const std::string socket = dir.Join("registration/sample.csi.example.com-reg.sock");
  RegistrarRun run;
  if (!PollUntil([&] { return IsSocket(socket) || !registrar.Running(); }) ||
      !registrar.Running()) {
    ADD_FAILURE() << "the registrar did not register: " << registrar.Describe();
    return run;
  }
  // gRPC runs while someone is connected (registration_server.h): a kubelet's GetInfo, its
  // channel kept open, holds it running while the threads are counted.
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  grpc::ClientContext context;
  context.set_deadline(::ndr::testing::RpcDeadline());
  pluginregistration::PluginInfo info;
  const grpc::Status status =
      pluginregistration::Registration::NewStub(channel)->GetInfo(&context, {}, &info);
  if (!status.ok()) ADD_FAILURE() << "GetInfo: " << status.error_message();
  if (event_engine > 0) {
    (void)PollUntil([&] {
      const std::map<std::string, int> threads = Threads(registrar.pid());
      return threads.count("event_engine") && threads.at("event_engine") >= event_engine;
    });
  }
  run.threads = Threads(registrar.pid());
  run.log = registrar.Log();
  registrar.Signal(SIGTERM);
  EXPECT_EQ(registrar.Wait(), 0) << registrar.Describe();
  return run;
}

TEST(AutomaxprocsProcessTest, OneCpuLimitOnAnEightCpuNodeStartsFewerThreads) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: a mount namespace and a cgroup of its own";
  OneCpuCgroup cgroup;
  if (!cgroup.ok()) GTEST_SKIP() << "no cgroup could be made: " << cgroup.why();

  const RegistrarRun without = RunOnFakeNode(cgroup, {}, kFakeCpus);
  const RegistrarRun with = RunOnFakeNode(cgroup, {"--automaxprocs"});
  // gRPC's EventEngine keeps Clamp(CPUs, 2, 32) worker threads, named event_engine, from the
  // start: eight on this node, two when told of one CPU (and never more than one more while
  // it is busy).
  EXPECT_GE(without.threads.count("event_engine") ? without.threads.at("event_engine") : 0,
            kFakeCpus)
      << "without the flag: " << Describe(without.threads) << "\n" << without.log;
  EXPECT_LT(with.threads.count("event_engine") ? with.threads.at("event_engine") : 0, kFakeCpus)
      << "with --automaxprocs: " << Describe(with.threads) << "\n" << with.log;
  EXPECT_LT(Total(with.threads), Total(without.threads))
      << "without: " << Describe(without.threads) << "\nwith: " << Describe(with.threads);
  RecordProperty("threads_without", Total(without.threads));
  RecordProperty("threads_with", Total(with.threads));

  EXPECT_TRUE(absl::StrContains(
      with.log, "\"automaxprocs: sizing thread pools by the container's CPU limit\" cpus=1 "
                "cpuLimit=\"1\" hostCPUs=8"))
      << with.log;
  EXPECT_FALSE(absl::StrContains(without.log, "automaxprocs")) << without.log;
}

}  // namespace
}  // namespace ndr
