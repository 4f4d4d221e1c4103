// RunningKubelets and NotAKubeletsRootDir against a directory laid out like /proc, and against
// the real one with a process named kubelet.
#include "kubeletclient/util/running_kubelets.h"

#include <sys/stat.h>

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/subprocess.h"
#include "test/util/poll.h"
#include "test/util/temp_dir.h"
#include "kubeletclient/util/files.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::TempDir;
using ::testing::HasSubstr;

class RunningKubeletsTest : public ::testing::Test {
 protected:
  // A process of the fake /proc: its comm and its NUL-separated command line.
  void Process(int pid, const std::string& comm, const std::vector<std::string>& args) {
    const std::string dir = proc_ + "/" + std::to_string(pid);
    ASSERT_TRUE(MakeDirs(dir, 0755).ok());
    std::string cmdline;
    for (const std::string& arg : args) cmdline += arg + '\0';
    ASSERT_TRUE(WriteFileAtomically(dir + "/comm", comm + "\n").ok());
    ASSERT_TRUE(WriteFileAtomically(dir + "/cmdline", cmdline).ok());
  }

  TempDir dir_{"kub"};
  const std::string proc_ = dir_.Join("proc");
};

TEST_F(RunningKubeletsTest, ItsRootDirFromItsFlagsOrTheDefault) {
  Process(10, "kubelet", {"/usr/bin/kubelet", "--config=/etc/kubernetes/kubelet.yaml"});
  Process(11, "kubelet", {"kubelet", "--root-dir=/srv/a", "--v=2", "--root-dir", "/srv/b"});
  Process(12, "kubelet", {"kubelet", "-root-dir=/srv/c"});
  Process(13, "kubelet-wrapper", {"kubelet", "--root-dir=/srv/d"});  // not a kubelet
  Process(14, "sleep", {"kubelet"});
  ASSERT_TRUE(MakeDirs(proc_ + "/self", 0755).ok());  // not a pid
  std::vector<RunningKubelet> found = RunningKubelets(proc_);
  std::map<int, std::string> roots;
  for (const RunningKubelet& k : found) roots[k.pid] = k.root_dir;
  EXPECT_EQ(roots, (std::map<int, std::string>{
                       {10, "/var/lib/kubelet"}, {11, "/srv/b"}, {12, "/srv/c"}}));
}

TEST_F(RunningKubeletsTest, TheSameAContainingOrAContainedDirectoryIsRefused) {
  const std::string live = dir_.Join("live");
  ASSERT_TRUE(MakeDirs(live + "/pods", 0755).ok());
  ASSERT_EQ(symlink(live.c_str(), dir_.Join("link").c_str()), 0);
  Process(42, "kubelet", {"kubelet", "--root-dir=" + live});
  struct Case {
    std::string root_dir;
    const char* said;  // "" when accepted
  } cases[] = {
      {live, "uses the root directory"},
      {live + "/", "uses the root directory"},
      {dir_.Join("link"), "uses the root directory"},          // the same, through a link
      {live + "/pods/../pods/x", "which holds it"},          // inside, even where nothing exists
      {dir_.path(), "which lies in it"},                       // holds the live one
      {dir_.Join("live-not"), ""},
      {dir_.Join("elsewhere"), ""},
  };
  for (const Case& c : cases) {
    absl::Status s = NotAKubeletsRootDir(c.root_dir, proc_);
    if (*c.said == '\0') {
      EXPECT_TRUE(s.ok()) << c.root_dir << ": " << s;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << c.root_dir;
      EXPECT_THAT(s.message(), HasSubstr(c.said)) << c.root_dir;
      EXPECT_THAT(s.message(), HasSubstr("pid 42")) << c.root_dir;
      EXPECT_THAT(s.message(), HasSubstr("give a directory of the judge's own")) << c.root_dir;
    }
  }
  // No kubelet: anything goes.
  EXPECT_TRUE(NotAKubeletsRootDir(live, dir_.Join("empty-proc")).ok());
}

// The real /proc: a process whose command is "kubelet" (a copy of sleep under that name, with
// no --root-dir: the default directory).
TEST_F(RunningKubeletsTest, ARealProcessNamedKubeletIsFound) {
  const std::string binary = dir_.Join("kubelet");
  std::string sleep;
  ASSERT_TRUE(ReadFileUpTo("/bin/sleep", 16 << 20, &sleep).ok());
  ASSERT_TRUE(WriteFileAtomically(binary, sleep).ok());
  ASSERT_EQ(chmod(binary.c_str(), 0755), 0);
  ndr::testing::Subprocess kubelet({binary, "600"}, dir_.Join("kubelet.log"));  // killed at the end
  ASSERT_TRUE(ndr::testing::PollUntil([&] {
    for (const RunningKubelet& k : RunningKubelets()) {
      if (k.pid == kubelet.pid()) return k.root_dir == "/var/lib/kubelet";
    }
    return false;
  }));
  EXPECT_THAT(NotAKubeletsRootDir("/var/lib/kubelet").message(),
              HasSubstr("pid " + std::to_string(kubelet.pid())));
}

}  // namespace
}  // namespace ndr::kubelet
