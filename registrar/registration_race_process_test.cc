// Registrars as they run in containers: each the PID 1 of a PID namespace of its own, several in
// one registration directory (a node's boot, several CSI drivers). The real binary as real
// processes (unshare --pid --fork --mount-proc), each against a sample CSI driver of its own on
// real unix sockets, with this test playing kubelet.
//
// Every registrar has the same process ID, so nothing derived from it tells their temporary
// sockets apart (registration_server.h): these tests fail where one registrar's start removes, or
// stumbles over, another's temporary socket.
//
// Needs root for the PID namespaces: it skips itself, saying why, without it. Outside Bazel's
// sandbox (tags "local"), whose namespaces would get in the way.
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::DirEntries;
using ::ndr::testing::PollUntil;
using ::ndr::testing::ReadFile;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::ndr::testing::WriteFile;

constexpr char kRegistrar[] = "registrar/csi-node-driver-registrar";
constexpr char kDriver[] = "test/csidriver/sample-csi-driver";
constexpr char kKubeletPath[] = "/var/lib/kubelet/plugins/sample/csi.sock";
// What registrars named their temporary socket when they drew it from the process ID and a count
// from 0: the name of every registrar's first socket in a container.
constexpr char kPid1FirstName[] = ".ndr-1-0.sock";

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

bool IsSocket(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

ino_t Inode(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// GetInfo's driver name from the registration socket at `socket`, as kubelet asks; "" if the
// call fails.
std::string InfoName(const std::string& socket) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel =
      grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
  grpc::ClientContext context;
  context.set_deadline(::ndr::testing::RpcDeadline());
  pluginregistration::PluginInfo info;
  return pluginregistration::Registration::NewStub(channel)->GetInfo(&context, {}, &info).ok()
             ? info.name()
             : "";
}

// A unix socket bound at `path` and never listening; -1 if it cannot be made.
int BoundSocket(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The process IDs of process `pid` as its own PID namespace and those above it see it, innermost
// last (/proc/PID/status, NSpid); empty if it cannot be read.
std::vector<std::string> NamespacePids(pid_t pid) {
  std::string status;
  if (!ReadFile(absl::StrCat("/proc/", pid, "/status"), &status)) return {};
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (absl::ConsumePrefix(&line, "NSpid:")) {
      return absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    }
  }
  return {};
}

// Whether the process unshare(1) (`unshare_pid`) started, which execs the registrar, is PID 1 of
// a PID namespace of its own.
bool RunsAsPid1(pid_t unshare_pid) {
  std::string children;
  if (!ReadFile(absl::StrCat("/proc/", unshare_pid, "/task/", unshare_pid, "/children"),
                &children)) {
    return false;
  }
  int child = 0;
  const std::vector<std::string> ids = absl::StrSplit(children, ' ', absl::SkipEmpty());
  if (ids.size() != 1 || !absl::SimpleAtoi(ids[0], &child)) return false;
  const std::vector<std::string> pids = NamespacePids(child);
  return pids.size() >= 2 && pids.back() == "1";
}

class RegistrationRaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) {
      GTEST_SKIP() << "needs root: each registrar runs in a PID namespace of its own "
                      "(unshare --pid), as in a container";
    }
    ASSERT_EQ(mkdir(dir_.Join("csi").c_str(), 0755), 0);
  }

  // The sample driver answering `name`, serving on csi/<name>.sock; waits until it listens.
  std::unique_ptr<Subprocess> StartDriver(const std::string& name) {
    auto driver = std::make_unique<Subprocess>(
        std::vector<std::string>{Runfile(kDriver), "--endpoint=" + DriverSocket(name),
                                 "--drivername=" + name, "--nodeid=node-1"},
        dir_.Join(name + ".driver.log"));
    EXPECT_TRUE(PollUntil([&] { return IsSocket(DriverSocket(name)) || !driver->Running(); }) &&
                driver->Running())
        << driver->Describe();
    return driver;
  }

  std::string DriverSocket(const std::string& name) { return dir_.Join("csi/" + name + ".sock"); }

  // The registrar for the driver `name`, registering in `reg_dir`, as PID 1 of a new PID
  // namespace: unshare forks that process, and sh, PID 1, execs the registrar. With `gate`, sh
  // first opens the FIFO `gate`, creates `ready` and waits until the FIFO's end of file, so that
  // registrars given one gate start when the test closes it, all at the same moment.
  std::unique_ptr<Subprocess> StartPid1Registrar(const std::string& name,
                                                 const std::string& reg_dir,
                                                 const std::string& log,
                                                 const std::string& gate = "",
                                                 const std::string& ready = "") {
    const std::string script =
        gate.empty() ? "shift 2; exec \"$@\""
                     : "exec 3<\"$1\" && : >\"$2\" && read -r go <&3; shift 2; exec 3<&- \"$@\"";
    return std::make_unique<Subprocess>(
        std::vector<std::string>{"/usr/bin/unshare", "--pid", "--fork", "--mount-proc",
                                 "--kill-child", "/bin/sh", "-c", script, "sh", gate, ready,
                                 Runfile(kRegistrar), "--csi-address=" + DriverSocket(name),
                                 std::string("--kubelet-registration-path=") + kKubeletPath,
                                 "--plugin-registration-path=" + reg_dir, "--timeout=60s"},
        log);
  }

  TempDir dir_{"race"};
};

// A temporary socket at the name every registrar's first one had in a container, left by a
// registrar killed before its rename (a regular file, a socket bound and closed) or held by one
// about to listen (bound, open): a registrar that is PID 1 starts and registers beside it, and
// leaves it as it is.
TEST_F(RegistrationRaceTest, Pid1StartsBesideAnotherRegistrarsTemporarySocketAndLeavesIt) {
  const std::string name = "stale.csi.example.com";
  auto driver = StartDriver(name);
  enum class Stale { kRegularFile, kClosedSocket, kOpenSocket };
  for (Stale stale : {Stale::kRegularFile, Stale::kClosedSocket, Stale::kOpenSocket}) {
    const std::string label = absl::StrCat("case", static_cast<int>(stale));
    SCOPED_TRACE(label);
    const std::string reg_dir = dir_.Join(label);
    ASSERT_EQ(mkdir(reg_dir.c_str(), 0755), 0);
    const std::string other = reg_dir + "/" + kPid1FirstName;
    int held = -1;
    if (stale == Stale::kRegularFile) {
      ASSERT_TRUE(WriteFile(other, "another registrar's"));
    } else {
      held = BoundSocket(other);
      ASSERT_GE(held, 0) << other;
      if (stale == Stale::kClosedSocket) {
        close(held);
        held = -1;
      }
    }
    const ino_t inode = Inode(other);

    auto registrar = StartPid1Registrar(name, reg_dir, dir_.Join(label + ".log"));
    const std::string reg_socket = reg_dir + "/" + name + "-reg.sock";
    ASSERT_TRUE(PollUntil([&] { return InfoName(reg_socket) == name || !registrar->Running(); }));
    EXPECT_TRUE(registrar->Running()) << registrar->Describe();
    EXPECT_TRUE(RunsAsPid1(registrar->pid())) << "the setup did not make the registrar PID 1";
    EXPECT_EQ(InfoName(reg_socket), name) << registrar->Describe();
    EXPECT_EQ(Inode(other), inode) << other << " was removed or replaced";
    EXPECT_THAT(DirEntries(reg_dir),
                ::testing::UnorderedElementsAre(kPid1FirstName, name + "-reg.sock"));
    if (stale == Stale::kRegularFile) {
      std::string contents;
      ASSERT_TRUE(ReadFile(other, &contents));
      EXPECT_EQ(contents, "another registrar's");
    }
    if (held >= 0) close(held);
  }
}

// Three registrars, each PID 1 of its own PID namespace and each for a driver of its own, started
// at the same moment in one registration directory (a node's boot with three CSI drivers), 50
// times: all register every time, each socket answering with its own driver's name, and no
// temporary socket is left behind.
TEST_F(RegistrationRaceTest, ThreePid1RegistrarsStartingTogetherAllRegister) {
  constexpr int kRounds = 50;
  constexpr int kRegistrars = 3;
  const std::string names[kRegistrars] = {"a.csi.example.com", "b.csi.example.com",
                                          "c.csi.example.com"};
  std::unique_ptr<Subprocess> drivers[kRegistrars];
  for (int i = 0; i < kRegistrars; ++i) drivers[i] = StartDriver(names[i]);
  const absl::Time began = absl::Now();
  int rounds = 0;
  for (; rounds < kRounds; ++rounds) {
    const std::string round = dir_.Join(absl::StrCat("r", rounds));
    SCOPED_TRACE(round);
    const std::string reg_dir = round + "/reg";
    const std::string gate = round + "/gate";
    ASSERT_EQ(mkdir(round.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(reg_dir.c_str(), 0755), 0);
    ASSERT_EQ(mkfifo(gate.c_str(), 0600), 0);
    // The gate's only writer: opening a FIFO for reading and writing does not wait for a reader.
    // Close-on-exec, so that no child holds it open.
    const int gate_fd = open(gate.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(gate_fd, 0) << strerror(errno);
    std::unique_ptr<Subprocess> registrars[kRegistrars];
    for (int i = 0; i < kRegistrars; ++i) {
      registrars[i] = StartPid1Registrar(names[i], reg_dir, round + "/" + names[i] + ".log", gate,
                                         round + "/" + names[i] + ".ready");
    }
    auto all = [&](auto&& holds) {
      for (int i = 0; i < kRegistrars; ++i) {
        if (!holds(i)) return false;
      }
      return true;
    };
    auto all_running = [&] { return all([&](int i) { return registrars[i]->Running(); }); };
    auto describe = [&] {
      std::string text;
      for (int i = 0; i < kRegistrars; ++i) absl::StrAppend(&text, registrars[i]->Describe(), "\n");
      return text;
    };
    const bool all_waiting = PollUntil([&] {
      return all([&](int i) { return Exists(round + "/" + names[i] + ".ready"); }) ||
             !all_running();
    });
    close(gate_fd);  // all read the end of file at once
    ASSERT_TRUE(all_waiting && all_running()) << describe();

    std::vector<std::string> sockets;
    for (int i = 0; i < kRegistrars; ++i) sockets.push_back(reg_dir + "/" + names[i] + "-reg.sock");
    ASSERT_TRUE(PollUntil([&] {
      return all([&](int i) { return InfoName(sockets[i]) == names[i]; }) || !all_running();
    }));
    for (int i = 0; i < kRegistrars; ++i) {
      EXPECT_TRUE(registrars[i]->Running()) << registrars[i]->Describe();
      EXPECT_EQ(InfoName(sockets[i]), names[i]) << registrars[i]->Describe();
    }
    EXPECT_THAT(DirEntries(reg_dir),
                ::testing::UnorderedElementsAre(names[0] + "-reg.sock", names[1] + "-reg.sock",
                                                names[2] + "-reg.sock"));
    if (rounds == 0) {
      for (int i = 0; i < kRegistrars; ++i) {
        EXPECT_TRUE(RunsAsPid1(registrars[i]->pid()))
            << "the setup did not make the registrar PID 1: " << registrars[i]->Describe();
      }
    }
    // The first round that fails says why; the rest would only repeat it.
    if (HasFailure()) break;
  }  // all registrars killed (SIGKILL), as a node's reboot would
  const absl::Duration took = absl::Now() - began;
  RecordProperty("rounds", rounds);
  RecordProperty("seconds", absl::StrCat(absl::ToDoubleSeconds(took)));
  std::cout << rounds << " rounds in " << absl::FormatDuration(took) << "\n";
}

}  // namespace
}  // namespace ndr
