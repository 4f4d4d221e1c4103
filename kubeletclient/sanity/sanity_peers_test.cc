// `kubeletclient sanity` as root on the host, judging correct drivers that put a raw block volume
// at its target in other ways than the sample driver's default (a loop device bind-mounted on a
// file): a symbolic link to the device node, and the disk image itself (a regular file, which
// kubelet cannot unmap: the one FAIL, block/target). And whatever the verdict, nothing the judge
// made is left on the host: no mount under the test's directory, no loop device over a file in it.
//
// Needs root on the host (bind mounts and loop devices, as kubelet makes them): it skips itself,
// saying why, elsewhere; outside Bazel's sandbox, whose user namespace would make it skip.
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::PollUntil;
using ::ndr::testing::ReadFile;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kDriverName[] = "sample.csi.example.com";

// Check name -> verdict word ("PASS", "FAIL", "SKIP").
std::map<std::string, std::string> Verdicts(const std::string& output) {
  std::map<std::string, std::string> verdicts;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    for (const char* word : {"PASS", "FAIL", "SKIP"}) {
      if (absl::StartsWith(line, absl::StrCat(word, "  "))) {
        absl::string_view rest = line.substr(6);
        verdicts[std::string(rest.substr(0, rest.find(':')))] = word;
      }
    }
  }
  return verdicts;
}

std::vector<std::string> FailedOrSkipped(const std::map<std::string, std::string>& verdicts,
                                         const std::string& word) {
  std::vector<std::string> names;
  for (const auto& [name, verdict] : verdicts) {
    if (verdict == word) names.push_back(name);
  }
  return names;
}

// What of `dir` the host still holds: mounts under it (/proc/self/mountinfo) and loop devices
// whose backing file is in it (/sys/block/loop*/loop/backing_file).
std::vector<std::string> HostLeftovers(const std::string& dir) {
  std::vector<std::string> left;
  std::ifstream mountinfo("/proc/self/mountinfo");
  for (std::string line; std::getline(mountinfo, line);) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ');
    if (fields.size() > 4 && absl::StartsWith(fields[4], dir + "/")) {
      left.push_back("mounted: " + fields[4]);
    }
  }
  glob_t found;
  if (glob("/sys/block/loop*/loop/backing_file", 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) {
      std::string backing;
      if (ReadFile(found.gl_pathv[i], &backing) && absl::StrContains(backing, dir + "/")) {
        left.push_back(absl::StrCat("loop device ", found.gl_pathv[i], ": ", backing));
      }
    }
    globfree(&found);
  }
  return left;
}

// Loop devices whose backing file the kernel can no longer name ("/"): over a bind mount in a
// mount namespace that is gone.
std::set<std::string> UnnamedLoops() {
  std::set<std::string> loops;
  glob_t found;
  if (glob("/sys/block/loop*/loop/backing_file", 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) {
      std::string backing;
      if (ReadFile(found.gl_pathv[i], &backing) && (backing == "/" || backing == "/\n")) {
        loops.insert(found.gl_pathv[i]);
      }
    }
    globfree(&found);
  }
  return loops;
}

class SanityPeersTest : public ::testing::TestWithParam<std::tuple<const char*, bool>> {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root on the host: bind mounts and loop devices";
    for (const std::string& d : {csi_dir_, reg_dir_, root_}) ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
  }
  void TearDown() override {
    // Also after a failed assertion: the driver and registrar go first, then the check.
    registrar_.reset();
    driver_.reset();
    if (!IsSkipped()) {
      EXPECT_THAT(HostLeftovers(dir_.path()), IsEmpty());
    }
  }

  // The sample driver with `driver_flags`, registered by our registrar; then
  // kubeletclient sanity making host changes as kubelet does. Its exit code; output in `out`.
  int Judge(const std::vector<std::string>& driver_flags, std::string* out,
            const std::string& volume_mode = "block") {
    if (!StartDriver(driver_flags)) return -1;
    Subprocess run(SanityArgv(volume_mode), dir_.Join("sanity.log"));
    const std::optional<int> code = run.Wait();
    *out = run.Log();
    return code.value_or(-1);
  }

  // The sample driver with `driver_flags` and our registrar, registered; false (and a failure)
  // if the registration socket does not appear.
  bool StartDriver(const std::vector<std::string>& driver_flags) {
    std::vector<std::string> driver = {Runfile("test/csidriver/sample-csi-driver"),
                                       "--endpoint=" + csi_socket_, "--nodeid=node-1"};
    driver.insert(driver.end(), driver_flags.begin(), driver_flags.end());
    driver_ = std::make_unique<Subprocess>(driver, dir_.Join("driver.log"));
    registrar_ = std::make_unique<Subprocess>(
        std::vector<std::string>{
            Runfile("registrar/csi-node-driver-registrar"), "--csi-address=" + csi_socket_,
            "--kubelet-registration-path=" + csi_socket_, "--plugin-registration-path=" + reg_dir_},
        dir_.Join("registrar.log"));
    if (!PollUntil([&] { return access(reg_socket_.c_str(), F_OK) == 0; })) {
      ADD_FAILURE() << registrar_->Describe();
      return false;
    }
    return true;
  }

  std::vector<std::string> SanityArgv(const std::string& volume_mode) {
    return {Runfile("kubeletclient/kubeletclient"), "sanity",
            "--registration-socket=" + reg_socket_, "--root-dir=" + root_, "--node-name=node-1", "--volume-handle=vol-1",
            "--volume-mode=" + volume_mode, "--block-host-ops=auto", "--get-info-timeout=60s",
            "--notify-timeout=60s"};
  }

  TempDir dir_{"peer"};
  const std::string csi_dir_ = dir_.Join("csi"), reg_dir_ = dir_.Join("reg");
  const std::string root_ = dir_.Join("root"), csi_socket_ = dir_.Join("csi/csi.sock");
  const std::string reg_socket_ = reg_dir_ + "/" + kDriverName + "-reg.sock";
  std::unique_ptr<Subprocess> driver_, registrar_;
};

// Correct peers, staging or not: every block check that applies passes.
TEST_P(SanityPeersTest, ACorrectDriverPassesEveryBlockCheck) {
  const std::string publish = std::get<0>(GetParam());
  const bool staging = std::get<1>(GetParam());
  std::vector<std::string> flags = {"--block-publish=" + publish};
  if (staging) flags.push_back("--stage-unstage");
  std::string out;
  ASSERT_EQ(Judge(flags, &out), 0) << out;
  const std::map<std::string, std::string> verdicts = Verdicts(out);
  EXPECT_THAT(FailedOrSkipped(verdicts, "FAIL"), IsEmpty()) << out;
  for (const char* check : {"block/publish", "block/target", "block/restart-replay",
                            "block/second-pod", "block/teardown", "block/clean"}) {
    EXPECT_EQ(verdicts.count(check) ? verdicts.at(check) : "", "PASS") << check << "\n" << out;
  }
  EXPECT_EQ(verdicts.at("block/unstage-repeated"), staging ? "PASS" : "SKIP") << out;
}

INSTANTIATE_TEST_SUITE_P(BlockPublish, SanityPeersTest,
                         ::testing::Combine(::testing::Values("loop-bind", "symlink"),
                                            ::testing::Bool()));

// Other correct drivers, in both modes: one that fills its staging directory only at the first
// publish, one that reports no stats. No FAIL; what does not apply is skipped, saying why.
TEST_F(SanityPeersTest, ADriverThatStagesLazilyPassesInBothModes) {
  std::string out;
  ASSERT_EQ(Judge({"--stage-unstage", "--lazy-staging"}, &out, "filesystem,block"), 0) << out;
  const std::map<std::string, std::string> verdicts = Verdicts(out);
  EXPECT_THAT(FailedOrSkipped(verdicts, "FAIL"), IsEmpty()) << out;
  for (const char* mode : {"filesystem", "block"}) {
    for (const char* check : {"publish", "restart-replay", "second-pod", "teardown",
                              "unstage-repeated", "clean"}) {
      const std::string name = absl::StrCat(mode, "/", check);
      EXPECT_EQ(verdicts.count(name) ? verdicts.at(name) : "", "PASS") << name << "\n" << out;
    }
  }
}

TEST_F(SanityPeersTest, ADriverWithoutStatsPassesAndItsStatsAreSkipped) {
  std::string out;
  ASSERT_EQ(Judge({"--no-stats"}, &out, "filesystem,block"), 0) << out;
  const std::map<std::string, std::string> verdicts = Verdicts(out);
  EXPECT_THAT(FailedOrSkipped(verdicts, "FAIL"), IsEmpty()) << out;
  EXPECT_THAT(out, HasSubstr("SKIP  filesystem/stats: the driver lacks the GET_VOLUME_STATS node "
                             "capability"));
  EXPECT_THAT(out, HasSubstr("SKIP  block/stats: the driver lacks the GET_VOLUME_STATS node "
                             "capability"));
  EXPECT_EQ(verdicts.at("filesystem/clean"), "PASS") << out;
  EXPECT_EQ(verdicts.at("block/clean"), "PASS") << out;
}

// A driver that checks the propagation of kubelet's directories (as csi-digitalocean does before
// every mount): it works under kubelet, which makes its root directory shared at start
// (kubelet.go setupDataDirs, MakeRShared), so the judge must do the same, and undo it
// (TearDown checks that nothing, the root's own bind mount included, is left).
TEST_F(SanityPeersTest, ADriverThatChecksMountPropagationPassesAsUnderKubelet) {
  std::string out;
  ASSERT_EQ(Judge({"--stage-unstage", "--require-shared-propagation"}, &out, "filesystem,block"),
            0)
      << out << driver_->Log();
  EXPECT_THAT(FailedOrSkipped(Verdicts(out), "FAIL"), IsEmpty()) << out;
  EXPECT_THAT(driver_->Log(), ::testing::Not(HasSubstr("is not shared"))) << driver_->Log();
}

// A block volume's capacity must be its device's size: statfs of the device node's file system
// (/dev's) is a number that merely looks right.
TEST_F(SanityPeersTest, ABlockCapacityThatIsNotTheDevicesSizeFails) {
  std::string out;
  ASSERT_EQ(Judge({"--stage-unstage", "--faults=block-stats-of-dev"}, &out), 1) << out;
  const std::map<std::string, std::string> verdicts = Verdicts(out);
  EXPECT_THAT(FailedOrSkipped(verdicts, "FAIL"), ::testing::ElementsAre("block/stats")) << out;
  EXPECT_THAT(out, HasSubstr("FAIL  block/stats: the volume's capacity is not the size of its "
                             "device"));
  EXPECT_THAT(out, HasSubstr("is not the size of the device at " + root_ +
                             "/plugins/kubernetes.io/csi/volumeDevices/sanity-block-1/dev/"));
}

// A block target that is a regular file: kubelet (v1.26.15 to v1.37.2) maps it but can never
// unmap it. One FAIL, block/target, naming why; the teardown is not judged, and the judge still
// leaves nothing behind (TearDown checks the host).
TEST_F(SanityPeersTest, ARegularFileAtABlockTargetFailsTheTargetCheckOnly) {
  std::string out;
  ASSERT_EQ(Judge({"--block-publish=file", "--stage-unstage"}, &out), 1) << out;
  const std::map<std::string, std::string> verdicts = Verdicts(out);
  EXPECT_THAT(FailedOrSkipped(verdicts, "FAIL"), ::testing::ElementsAre("block/target")) << out;
  EXPECT_THAT(out, HasSubstr("is a regular file (with a file mounted on it), not a device"));
  EXPECT_THAT(out, HasSubstr("unmapBindMountDevice removes anything else without unmounting it"));
  EXPECT_EQ(verdicts.at("block/teardown"), "SKIP") << out;
  EXPECT_THAT(out, HasSubstr("SKIP  block/teardown: cannot be judged: kubelet cannot tear down a block "
                             "volume whose target is not a device"));
  EXPECT_EQ(verdicts.at("block/clean"), "PASS") << out;
  EXPECT_EQ(verdicts.at("block/unstage-repeated"), "PASS") << out;
}

}  // namespace
}  // namespace ndr

namespace ndr {
namespace {

// Whether process `pid` is stopped (state T in /proc/PID/stat).
bool Stopped(pid_t pid) {
  std::string stat;
  if (!ReadFile(absl::StrCat("/proc/", pid, "/stat"), &stat)) return false;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T';
}

std::string MountNamespace(const std::string& pid) {
  char target[128] = {};
  const ssize_t n = readlink(("/proc/" + pid + "/ns/mnt").c_str(), target, sizeof(target) - 1);
  return n > 0 ? std::string(target, n) : "";
}

// The judge killed with SIGKILL while block and filesystem volumes are published and mapped (loop
// devices, bind mounts, the driver's staging and publish mounts): it ran in a mount namespace of
// its own, and its cleaner, left in the host's, undoes everything under its root directory once
// it is gone, saying so.
TEST_F(SanityPeersTest, AJudgeKilledMidRunLeavesNothingOnTheHost) {
  ASSERT_TRUE(StartDriver({"--stage-unstage", "--block-publish=loop-bind"}));
  const std::set<std::string> unnamed_before = UnnamedLoops();
  setenv("KUBELETCLIENT_SANITY_TEST_STOP_AFTER", "block/second-pod", 1);
  Subprocess run(SanityArgv("filesystem,block"), dir_.Join("killed.log"));
  unsetenv("KUBELETCLIENT_SANITY_TEST_STOP_AFTER");
  ASSERT_TRUE(PollUntil([&] { return Stopped(run.pid()); })) << run.Log();
  EXPECT_NE(MountNamespace(std::to_string(run.pid())), MountNamespace("self"));
  EXPECT_THAT(HostLeftovers(dir_.path()), ::testing::Not(IsEmpty()));  // something to clean
  const std::string out = run.Log();
  const size_t at = out.find("a cleaner (pid ");
  ASSERT_NE(at, std::string::npos) << out;
  const pid_t cleaner = atoi(out.c_str() + at + strlen("a cleaner (pid "));
  ASSERT_GT(cleaner, 0) << out;
  ASSERT_TRUE(run.Signal(SIGKILL));
  run.Wait();
  // Nothing of the judge's under its root directory, nor its loop devices (over bind mounts in
  // its namespace, which the kernel names "/" once that is gone).
  auto judges = [&] {
    std::vector<std::string> left = HostLeftovers(root_);
    for (const std::string& loop : UnnamedLoops()) {
      if (!unnamed_before.count(loop)) left.push_back("unnamed loop device " + loop);
    }
    return left;
  };
  EXPECT_TRUE(PollUntil([&] { return kill(cleaner, 0) != 0 && judges().empty(); }))
      << ::testing::PrintToString(judges()) << run.Log();
  EXPECT_THAT(run.Log(), HasSubstr("kubeletclient sanity: the judge left its loop device"));
  // What is left is the driver's own: the loop device of the block volume the killed judge had
  // staged, as a driver keeps it for a kubelet killed mid-run until NodeUnstageVolume. Detached
  // here as that call would (TearDown checks that nothing else is left).
  for (const std::string& left : HostLeftovers(dir_.path())) {
    EXPECT_THAT(left, HasSubstr(csi_dir_ + "/sample-csi-data/")) << left;
    const std::string device = "/dev/" + std::vector<std::string>(absl::StrSplit(left, '/'))[3];
    Subprocess losetup({"/usr/sbin/losetup", "-d", device}, dir_.Join("losetup.log"));
    EXPECT_EQ(losetup.Wait(), 0) << losetup.Log();
  }
  EXPECT_TRUE(PollUntil([&] { return HostLeftovers(dir_.path()).empty(); }))
      << ::testing::PrintToString(HostLeftovers(dir_.path()));
}

std::vector<int> WriteEndsOfPipesReadBy(pid_t pid) {
  std::vector<int> opened;
  const std::string fds = absl::StrCat("/proc/", pid, "/fd");
  DIR* dir = opendir(fds.c_str());
  if (dir == nullptr) return opened;
  while (const dirent* entry = readdir(dir)) {
    char target[64] = {};
    const std::string link = absl::StrCat(fds, "/", entry->d_name);
    if (readlink(link.c_str(), target, sizeof(target) - 1) <= 0 ||
        !absl::StartsWith(target, "pipe:")) {
      continue;
    }
    std::string info;
    if (!ReadFile(absl::StrCat("/proc/", pid, "/fdinfo/", entry->d_name), &info)) continue;
    const size_t flags = info.find("flags:");
    if (flags == std::string::npos) continue;
    if ((strtol(info.c_str() + flags + strlen("flags:"), nullptr, 8) & O_ACCMODE) != O_RDONLY) {
      continue;
    }
    const int fd = open(link.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) opened.push_back(fd);
  }
  closedir(dir);
  return opened;
}

// The cleaner keeps the root directory's lock, inherited from the judge, until it has cleaned
// up: a judge started there after the first was killed, while its cleaner has not finished (kept
// waiting here, by a write end of its pipe held open), is refused, naming the cleaner; once the
// cleaner has ended, nothing is left.
TEST_F(SanityPeersTest, TheCleanerHoldsTheRootDirUntilItHasCleanedUp) {
  ASSERT_TRUE(StartDriver({"--stage-unstage"}));
  setenv("KUBELETCLIENT_SANITY_TEST_STOP_AFTER", "filesystem/second-pod", 1);
  Subprocess run(SanityArgv("filesystem"), dir_.Join("killed.log"));
  unsetenv("KUBELETCLIENT_SANITY_TEST_STOP_AFTER");
  ASSERT_TRUE(PollUntil([&] { return Stopped(run.pid()); })) << run.Log();
  const std::string out = run.Log();
  const size_t at = out.find("a cleaner (pid ");
  ASSERT_NE(at, std::string::npos) << out;
  const pid_t cleaner = atoi(out.c_str() + at + strlen("a cleaner (pid "));
  ASSERT_GT(cleaner, 0) << out;
  std::vector<int> holding = WriteEndsOfPipesReadBy(cleaner);
  ASSERT_FALSE(holding.empty());
  ASSERT_TRUE(run.Signal(SIGKILL));
  run.Wait();
  Subprocess second(SanityArgv("filesystem"), dir_.Join("second.log"));
  EXPECT_EQ(second.Wait(), 1) << second.Log();
  EXPECT_THAT(second.Log(),
              HasSubstr(absl::StrCat("sanity: --root-dir=", root_,
                                     " is in use by another judge: pid ", cleaner, " (")));
  EXPECT_THAT(second.Log(),
              HasSubstr("the cleaner of a judge that has ended, still undoing what it left"));
  EXPECT_EQ(kill(cleaner, 0), 0);  // still there, waiting
  for (int fd : holding) close(fd);
  EXPECT_TRUE(PollUntil([&] { return kill(cleaner, 0) != 0 && HostLeftovers(root_).empty(); }))
      << ::testing::PrintToString(HostLeftovers(root_)) << run.Log();
}

}  // namespace
}  // namespace ndr
