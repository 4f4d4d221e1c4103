// Builds the images with buildah (images/build-images.sh) and runs the registrar inside its
// image: --version, and a real registration round trip with the sample driver's socket mounted
// in. Needs root and buildah (test/install-deps.sh installs it); runs outside Bazel's sandbox.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::PollUntil;
using ::ndr::testing::RpcDeadline;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;

// The process in `group` whose command name is `comm` (a name is at most 15 characters), or 0.
pid_t FindInGroup(pid_t group, const std::string& comm) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state, ppid, pgid;
    rest >> state >> ppid >> pgid;
    if (stat.substr(open + 1, close - open - 1) == comm && pgid == std::to_string(group)) {
      return pid;
    }
  }
  return 0;
}

bool IsStatic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string elf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return elf.find("/lib64/ld-linux-x86-64.so.2") == std::string::npos;
}

class ImageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registrar_ = Runfile("registrar/csi-node-driver-registrar");
    driver_ = Runfile("test/csidriver/sample-csi-driver");
    if (!IsStatic(registrar_)) return;  // sanitizer builds: see the test bodies
    dir_ = new TempDir("img");
    Subprocess build({"/bin/bash", Runfile("images/build-images.sh"), registrar_, driver_,
                      dir_->Join("out"), dir_->Join("storage")},
                     dir_->Join("build.log"));
    build_exit_ = build.Wait(absl::Minutes(10)).value_or(-1);
    build_log_ = build.Log();
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    if (!IsStatic(registrar_)) GTEST_SKIP() << "sanitizer build: the binaries are not static";
    ASSERT_EQ(build_exit_, 0) << build_log_;
  }

  // buildah with the test's own storage.
  std::vector<std::string> Buildah(std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/buildah", "--storage-driver", "vfs", "--root",
                                     dir_->Join("storage/root"), "--runroot",
                                     dir_->Join("storage/run")};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  // Runs buildah to completion; returns its exit code and output.
  int RunBuildah(std::vector<std::string> args, std::string* output) {
    static int runs = 0;
    Subprocess run(Buildah(args), dir_->Join(absl::StrCat("buildah", runs++, ".log")));
    const int code = run.Wait().value_or(-1);
    *output = run.Log();
    return code;
  }

  std::string Container(const std::string& image) {
    std::string output;
    EXPECT_EQ(RunBuildah({"from", "--quiet", image}, &output), 0) << output;
    return std::string(absl::StripAsciiWhitespace(output));
  }

  static inline std::string registrar_, driver_, build_log_;
  static inline int build_exit_ = -1;
  static inline TempDir* dir_ = nullptr;
};

TEST_F(ImageTest, ArchivesAreSmall) {
  EXPECT_THAT(build_log_, HasSubstr("localhost/ndr/csi-node-driver-registrar:v2.17.0-ndr.1"));
  for (const char* archive : {"csi-node-driver-registrar.oci.tar", "sample-csi-driver.oci.tar"}) {
    struct stat st;
    ASSERT_EQ(stat(dir_->Join(std::string("out/") + archive).c_str(), &st), 0) << archive;
    EXPECT_LT(st.st_size, 5'000'000) << archive << ": the target is under 5 MB compressed";
  }
}

TEST_F(ImageTest, VersionInsideTheImage) {
  const std::string container = Container("localhost/ndr/csi-node-driver-registrar:v2.17.0-ndr.1");
  std::string output;
  EXPECT_EQ(RunBuildah({"run", "--isolation", "chroot", container, "--",
                        "/csi-node-driver-registrar", "--version"},
                       &output),
            0)
      << output;
  EXPECT_THAT(output, HasSubstr("v2.17.0-ndr.1"));
}

TEST_F(ImageTest, RegistrationRoundTripFromInsideTheImage) {
  TempDir host("imgrt");
  ASSERT_EQ(mkdir(host.Join("csi").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(host.Join("registration").c_str(), 0755), 0);
  Subprocess driver({driver_, "--endpoint=" + host.Join("csi/csi.sock"), "--nodeid=node-1"},
                    host.Join("driver.log"));
  const std::string container = Container("localhost/ndr/csi-node-driver-registrar:v2.17.0-ndr.1");
  // The manifest's layout: the driver's socket dir at /csi, kubelet's registry at /registration.
  Subprocess registrar(
      Buildah({"run", "--isolation", "chroot", "-v", host.Join("csi") + ":/csi", "-v",
               host.Join("registration") + ":/registration", container, "--",
               "/csi-node-driver-registrar", "--csi-address=/csi/csi.sock",
               "--kubelet-registration-path=/var/lib/kubelet/plugins/sample/csi.sock"}),
      host.Join("registrar.log"));
  const std::string socket = host.Join("registration/sample.csi.example.com-reg.sock");
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(PollUntil(
      [&] {
        auto stub = pluginregistration::Registration::NewStub(
            grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
        grpc::ClientContext context;
        context.set_deadline(RpcDeadline());
        return stub->GetInfo(&context, {}, &info).ok();
      }))
      << registrar.Log();
  EXPECT_EQ(info.name(), "sample.csi.example.com");
  EXPECT_EQ(info.endpoint(), "/var/lib/kubelet/plugins/sample/csi.sock");
  // SIGTERM to the registrar itself, as the kubelet's runtime sends it to a container's process
  // (signalling buildah instead makes it SIGKILL the container): the socket goes, buildah exits 0.
  const pid_t inside = FindInGroup(registrar.pid(), "csi-node-driver");
  ASSERT_NE(inside, 0) << "no registrar process under buildah";
  ASSERT_EQ(kill(inside, SIGTERM), 0);
  EXPECT_EQ(registrar.Wait(), 0) << registrar.Log();
  struct stat st;
  EXPECT_NE(lstat(socket.c_str(), &st), 0) << registrar.Log();
}

}  // namespace
}  // namespace ndr
