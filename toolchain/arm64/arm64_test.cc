// The arm64 builds of the registrar and the sample driver (built with --config=arm64's toolchain
// through a transition, see arm64.bzl), run under qemu-aarch64-static invoked directly (no
// binfmt): their ELF headers, --version, and a registration round trip of the arm64 registrar
// against the arm64 sample driver with the amd64 kubeletclient playing kubelet.
#include <elf.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/util/elf.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::testing::ElfFacts;
using ::ndr::testing::PollUntil;
using ::ndr::testing::ReadElf;
using ::ndr::testing::ReadFile;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr char kQemu[] = "/usr/bin/qemu-aarch64-static";
const char* const kRegistrar = "toolchain/arm64/binaries/csi-node-driver-registrar.stripped";
const char* const kDriver = "toolchain/arm64/binaries/sample-csi-driver.stripped";

TEST(Arm64Test, BinariesAreStaticArm64) {
  for (const char* binary : {kRegistrar, kDriver}) {
    const ElfFacts facts = ReadElf(Runfile(binary));
    EXPECT_EQ(facts.machine, EM_AARCH64) << binary;
    EXPECT_FALSE(facts.dynamic) << binary;
  }
  // And the amd64 build stays amd64.
  EXPECT_EQ(ReadElf(Runfile("kubeletclient/kubeletclient")).machine, EM_X86_64);
}

TEST(Arm64Test, VersionUnderQemu) {
  TempDir dir("arm64v");
  Subprocess version({kQemu, Runfile(kRegistrar), "--version"}, dir.Join("version.log"));
  EXPECT_EQ(version.Wait(), 0) << version.Describe();
  EXPECT_THAT(version.Log(), HasSubstr("v2.17.0-ndr"));
}

TEST(Arm64Test, RegistrationRoundTripUnderQemu) {
  TempDir dir("arm64rt");
  const std::string csi = dir.Join("csi.sock"), reg = dir.Join("reg");
  const std::string status_file = dir.Join("status.json");
  ASSERT_EQ(mkdir(reg.c_str(), 0755), 0);
  Subprocess driver({kQemu, Runfile(kDriver), "--endpoint=" + csi,
                     "--drivername=arm64.csi.example.com", "--nodeid=arm64-node"},
                    dir.Join("driver.log"));
  // Emulated, the registrar is slow: the deadlines are long enough that no attempt fails.
  Subprocess registrar(
      {kQemu, Runfile(kRegistrar), "--csi-address=" + csi, "--kubelet-registration-path=" + csi,
       "--plugin-registration-path=" + reg, "--timeout=60s"},
      dir.Join("registrar.log"));
  Subprocess kubelet({Runfile("kubeletclient/kubeletclient"), "watch",
                      "--plugin-registry-dir=" + reg, "--node-status-file=" + status_file,
                      "--node-name=arm64-node", "--get-info-timeout=60s", "--notify-timeout=60s"},
                     dir.Join("kubelet.log"));
  json status;
  ASSERT_TRUE(PollUntil([&] {
    std::string text;
    if (!ReadFile(status_file, &text)) return false;
    status = json::parse(text, nullptr, /*allow_exceptions=*/false);
    return status.is_object() && status["drivers"].contains("arm64.csi.example.com");
  })) << registrar.Describe()
      << driver.Describe() << kubelet.Describe();
  EXPECT_EQ(status["drivers"]["arm64.csi.example.com"]["endpoint"], csi);
  EXPECT_EQ(status["annotations"]["csi.volume.kubernetes.io/nodeid"],
            R"({"arm64.csi.example.com":"arm64-node"})");
  // SIGTERM reaches the emulated registrar (qemu runs it in its own process): it removes its
  // socket and exits 0, and kubelet drops the driver.
  ASSERT_TRUE(registrar.Signal(SIGTERM));
  EXPECT_EQ(registrar.Wait(), 0) << registrar.Describe();
  EXPECT_TRUE(PollUntil([&] {
    std::string text;
    if (!ReadFile(status_file, &text)) return false;
    status = json::parse(text, nullptr, /*allow_exceptions=*/false);
    return status.is_object() && status["drivers"].empty();
  })) << status.dump();
}

}  // namespace
}  // namespace ndr
