// One architecture's builds of the registrar, the sample driver and kubeletclient (NDR_CROSS_ARCH,
// set by the <arch>_test target; built with that architecture's toolchain through a transition,
// see cross.bzl), run under its qemu-<arch>-static invoked directly (no binfmt): their ELF
// headers, --version, and a registration round trip of that architecture's registrar against its
// sample driver with the amd64 kubeletclient playing kubelet and that architecture's kubeletclient
// probing the registration socket, ending with SIGTERM.
#include <elf.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <map>
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

// What a binary for each architecture must be, as the Go registrar's image index promises it.
struct Arch {
  const char* qemu;
  int machine;  // e_machine
  int bits;
  bool big_endian;
};

const std::map<std::string, Arch>& Arches() {
  static const auto* arches = new std::map<std::string, Arch>{
      {"arm64", {"/usr/bin/qemu-aarch64-static", EM_AARCH64, 64, false}},
      {"armv7", {"/usr/bin/qemu-arm-static", EM_ARM, 32, false}},
      {"ppc64le", {"/usr/bin/qemu-ppc64le-static", EM_PPC64, 64, false}},
      {"s390x", {"/usr/bin/qemu-s390x-static", EM_S390, 64, true}},
  };
  return *arches;
}

class CrossTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* name = getenv("NDR_CROSS_ARCH");
    ASSERT_NE(name, nullptr) << "NDR_CROSS_ARCH is not set (the <arch>_test target sets it)";
    arch_name_ = name;
    // An architecture whose sysroot could not be made is not built: skipped, never passed.
    const char* missing = getenv("NDR_CROSS_MISSING");
    if (missing != nullptr && *missing != '\0') {
      GTEST_SKIP() << arch_name_ << " is not built on this machine: " << missing;
    }
    auto it = Arches().find(arch_name_);
    ASSERT_NE(it, Arches().end()) << "unknown NDR_CROSS_ARCH " << arch_name_;
    arch_ = it->second;
    registrar_ = Runfile("toolchain/cross/" + arch_name_ +
                         "_binaries/csi-node-driver-registrar.stripped");
    driver_ = Runfile("toolchain/cross/" + arch_name_ + "_binaries/sample-csi-driver.stripped");
    kubeletclient_ = Runfile("toolchain/cross/" + arch_name_ + "_binaries/kubeletclient.stripped");
  }

  std::string arch_name_, registrar_, driver_, kubeletclient_;
  Arch arch_{};
};

TEST_F(CrossTest, BinariesAreStaticAndOfTheArchitecture) {
  for (const std::string& binary : {registrar_, driver_, kubeletclient_}) {
    SCOPED_TRACE(binary);
    const ElfFacts facts = ReadElf(binary);
    EXPECT_EQ(facts.machine, arch_.machine);
    EXPECT_EQ(facts.bits, arch_.bits);
    EXPECT_EQ(facts.big_endian, arch_.big_endian);
    EXPECT_FALSE(facts.dynamic);
    if (arch_name_ == "armv7") {
      // linux/arm/v7 is the hard-float EABI (armhf), and the code is for ARMv7: the build
      // attributes say so (readelf from binutils, which reads any architecture's).
      EXPECT_NE(facts.flags & EF_ARM_ABI_FLOAT_HARD, 0u);
      TempDir dir("crossattr");
      Subprocess readelf({"/usr/bin/readelf", "-A", binary}, dir.Join("readelf.log"));
      EXPECT_EQ(readelf.Wait(), 0) << readelf.Describe();
      EXPECT_THAT(readelf.Log(), HasSubstr("Tag_CPU_arch: v7"));
    }
    if (arch_name_ == "ppc64le") {
      EXPECT_EQ(facts.flags & 3u, 2u) << "the ELFv2 ABI, as ppc64le Linux requires";
    }
  }
  // And the host's build stays amd64.
  EXPECT_EQ(ReadElf(Runfile("kubeletclient/kubeletclient")).machine, EM_X86_64);
}

TEST_F(CrossTest, VersionUnderQemu) {
  TempDir dir("crossv");
  Subprocess version({arch_.qemu, registrar_, "--version"}, dir.Join("version.log"));
  EXPECT_EQ(version.Wait(), 0) << version.Describe();
  EXPECT_THAT(version.Log(), ::testing::StartsWith("csi-node-driver-registrar "));
  EXPECT_THAT(version.Log(), HasSubstr("\nmatches: node-driver-registrar v2.17.0"));
  Subprocess judge({arch_.qemu, kubeletclient_, "--version"}, dir.Join("kubeletclient.log"));
  EXPECT_EQ(judge.Wait(), 0) << judge.Describe();
  EXPECT_THAT(judge.Log(), ::testing::StartsWith("kubeletclient "));
}

TEST_F(CrossTest, RegistrationRoundTripAndSigtermUnderQemu) {
  TempDir dir("crossrt");
  const std::string csi = dir.Join("csi.sock"), reg = dir.Join("reg");
  const std::string status_file = dir.Join("status.json");
  const std::string name = arch_name_ + ".csi.example.com";
  ASSERT_EQ(mkdir(reg.c_str(), 0755), 0);
  Subprocess driver({arch_.qemu, driver_, "--endpoint=" + csi, "--drivername=" + name,
                     "--nodeid=" + arch_name_ + "-node"},
                    dir.Join("driver.log"));
  // Emulated, the registrar is slow: the deadlines are long enough that no attempt fails.
  Subprocess registrar({arch_.qemu, registrar_, "--csi-address=" + csi,
                        "--kubelet-registration-path=" + csi, "--plugin-registration-path=" + reg,
                        "--timeout=60s"},
                       dir.Join("registrar.log"));
  Subprocess kubelet({Runfile("kubeletclient/kubeletclient"), "watch",
                      "--plugin-registry-dir=" + reg, "--node-status-file=" + status_file,
                      "--node-name=" + arch_name_ + "-node", "--get-info-timeout=60s",
                      "--notify-timeout=60s"},
                     dir.Join("kubelet.log"));
  json status;
  auto read_status = [&] {
    std::string text;
    if (!ReadFile(status_file, &text)) return false;
    status = json::parse(text, nullptr, /*allow_exceptions=*/false);
    return status.is_object();
  };
  ASSERT_TRUE(PollUntil([&] { return read_status() && status["drivers"].contains(name); }))
      << registrar.Describe() << driver.Describe() << kubelet.Describe();
  EXPECT_EQ(status["drivers"][name]["endpoint"], csi);
  EXPECT_EQ(status["annotations"]["csi.volume.kubernetes.io/nodeid"],
            json({{name, arch_name_ + "-node"}}).dump());
  // That architecture's kubeletclient, read-only: the handshake up to the verdict.
  Subprocess probe({arch_.qemu, kubeletclient_, "probe",
                    "--registration-socket=" + reg + "/" + name + "-reg.sock",
                    "--get-info-timeout=60s"},
                   dir.Join("probe.log"));
  EXPECT_EQ(probe.Wait(), 0) << probe.Describe();
  EXPECT_THAT(probe.Log(), HasSubstr("\"nodeId\": \"" + arch_name_ + "-node\""));
  EXPECT_THAT(probe.Log(), HasSubstr("\"verdictNotSent\""));
  // SIGTERM reaches the emulated registrar (qemu runs it in its own process): it removes its
  // socket and exits 0, and kubelet drops the driver.
  ASSERT_TRUE(registrar.Signal(SIGTERM));
  EXPECT_EQ(registrar.Wait(), 0) << registrar.Describe();
  struct stat st;
  EXPECT_NE(lstat((reg + "/" + name + "-reg.sock").c_str(), &st), 0);
  EXPECT_TRUE(PollUntil([&] { return read_status() && status["drivers"].empty(); }))
      << status.dump();
}

}  // namespace
}  // namespace ndr
