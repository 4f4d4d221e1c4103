#include "kubeletclient/cli/shared_flags.h"

#include <string>
#include <utility>
#include <vector>

#include "gflags/gflags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"

namespace ndr::kubelet::cli {
namespace {

using ::ndr::testing::IsOk;
using ::testing::ElementsAre;

// Sets `flag` as the command line would; the test's FlagSaver restores it.
void Set(const char* flag, const char* value) {
  ASSERT_FALSE(gflags::SetCommandLineOption(flag, value).empty()) << "--" << flag << "=" << value;
}

TEST(SharedFlagsTest, HandshakeFlagsFollowTheCommandsOwn) {
  EXPECT_THAT(WithHandshakeFlags({"pod", "volume"}),
              ElementsAre("pod", "volume", "kubelet_version", "get_info_timeout",
                          "notify_timeout", "node_get_info_timeout", "ask_csi_registration"));
}

TEST(SharedFlagsTest, HandshakeDefaultsAreKubelets) {
  gflags::FlagSaver saver;
  absl::StatusOr<Handshake> handshake = HandshakeFromFlags("probe");
  ASSERT_THAT(handshake, IsOk());
  EXPECT_EQ(handshake->timeouts.get_info, absl::Seconds(1));
  EXPECT_EQ(handshake->timeouts.notify, absl::Seconds(5));
  EXPECT_EQ(handshake->csi.node_get_info_timeout, absl::Minutes(2));
  EXPECT_EQ(handshake->csi.csi_registration_timeout, absl::Seconds(1));
  EXPECT_FALSE(handshake->csi.ask_csi_registration);
  ASSERT_EQ(handshake->releases.size(), 1u);
  EXPECT_EQ(handshake->releases[0].minor, kNewestKubeletMinor);
  EXPECT_EQ(handshake->csi.release.minor, kNewestKubeletMinor);
}

TEST(SharedFlagsTest, SanityTakesSeveralReleasesInTheirOrder) {
  gflags::FlagSaver saver;
  Set("kubelet_version", "1.30,v1.27");
  Set("get_info_timeout", "300ms");
  absl::StatusOr<Handshake> handshake = HandshakeFromFlags("sanity", Releases::kSeveral);
  ASSERT_THAT(handshake, IsOk());
  ASSERT_EQ(handshake->releases.size(), 2u);
  EXPECT_EQ(handshake->releases[0].minor, 30);
  EXPECT_EQ(handshake->releases[1].minor, 27);
  EXPECT_EQ(handshake->csi.release.minor, 30);
  EXPECT_EQ(handshake->csi.csi_registration_timeout, absl::Milliseconds(300));
}

TEST(SharedFlagsTest, BadHandshakeFlagsAreRefusedByName) {
  struct Case {
    const char* name;
    std::vector<std::pair<const char*, const char*>> flags;
    Releases releases;
    std::string error;
  };
  const Case cases[] = {
      {"zero deadline", {{"notify_timeout", "0s"}}, Releases::kOne,
       "--notify-timeout: must be positive"},
      {"deadline before release", {{"get_info_timeout", "0s"}, {"kubelet_version", "1.2"}},
       Releases::kOne, "--get-info-timeout: must be positive"},
      {"list for one", {{"kubelet_version", "1.29,1.30"}}, Releases::kOne,
       "--kubelet-version: publish acts as one kubelet release; only sanity takes a list (got "
       "1.29,1.30)"},
      {"twice", {{"kubelet_version", "1.29,v1.29"}}, Releases::kSeveral,
       "--kubelet-version: 1.29 is given twice"},
      {"none", {{"kubelet_version", ""}}, Releases::kSeveral,
       "--kubelet-version: name a release, 1.26 to 1.37"},
  };
  for (const Case& c : cases) {
    gflags::FlagSaver saver;
    for (const auto& [flag, value] : c.flags) Set(flag, value);
    absl::StatusOr<Handshake> handshake = HandshakeFromFlags("publish", c.releases);
    ASSERT_FALSE(handshake.ok()) << c.name;
    EXPECT_EQ(handshake.status().message(), c.error) << c.name;
  }
}

TEST(SharedFlagsTest, PublishCommandFromFlags) {
  gflags::FlagSaver saver;
  Set("pod", "pod.yaml");
  Set("objects", "a.yaml, b/,");
  Set("allowed_inline_drivers", "x.example.com,y.example.com");
  Set("node_name", "node-1");
  Set("block_host_ops", "skip");
  Set("host_selinux", "false");
  absl::StatusOr<Handshake> handshake = HandshakeFromFlags("publish");
  ASSERT_THAT(handshake, IsOk());
  absl::StatusOr<PublishCommand> publish = PublishCommandFromFlags(*handshake);
  ASSERT_THAT(publish, IsOk());
  EXPECT_EQ(publish->pod_file, "pod.yaml");
  EXPECT_THAT(publish->object_paths, ElementsAre("a.yaml", " b/"));
  EXPECT_THAT(publish->node.allowed_inline_drivers, ElementsAre("x.example.com", "y.example.com"));
  EXPECT_EQ(publish->node.node_name, "node-1");
  EXPECT_EQ(publish->node.root_dir, "/var/lib/kubelet");
  EXPECT_FALSE(publish->node.change_host);
  EXPECT_EQ(publish->node.host_skip_reason, "--block-host-ops=skip");
  EXPECT_EQ(publish->node.release.minor, kNewestKubeletMinor);
  EXPECT_EQ(publish->service_account_issuer, "https://kubernetes.default.svc.cluster.local");
}

TEST(SharedFlagsTest, TheNodeIsThisHostUnlessNamed) {
  gflags::FlagSaver saver;
  EXPECT_FALSE(NodeNameFromFlags().empty());
  Set("node_name", "node-1");
  EXPECT_EQ(NodeNameFromFlags(), "node-1");
}

TEST(SharedFlagsTest, BadNodeFlagsAreRefusedByName) {
  struct Case {
    const char* name;
    std::vector<std::pair<const char*, const char*>> flags;
    std::string error;
  };
  const Case cases[] = {
      {"gate at one release", {{"feature_gates", "Nope=true"}},
       "--feature-gates: unrecognized feature gate: Nope (kubeletclient knows ReadWriteOncePod, "
       "SELinuxMountReadWriteOncePod, CSIVolumeHealth, CSINodeExpandSecret, SELinuxMount, "
       "SELinuxChangePolicy, RecoverVolumeExpansionFailure, "
       "MutableCSINodeAllocatableCount)"},
      {"gate at several releases",
       {{"feature_gates", "Nope=true"}, {"kubelet_version", "1.29,1.30"}},
       "--feature-gates: unrecognized feature gate: Nope (kubeletclient knows ReadWriteOncePod, "
       "SELinuxMountReadWriteOncePod, CSIVolumeHealth, CSINodeExpandSecret, SELinuxMount, "
       "SELinuxChangePolicy, RecoverVolumeExpansionFailure, "
       "MutableCSINodeAllocatableCount) (at kubelet 1.29)"},
      {"expansion recovery before 1.31",
       {{"feature_gates", "RecoverVolumeExpansionFailure=true"}, {"kubelet_version", "1.31,1.30"}},
       "--feature-gates: RecoverVolumeExpansionFailure=true at kubelet 1.30: kubeletclient models "
       "the expansion-recovery path of kubelet 1.31 and later only (1.30's alpha one marks the "
       "claim differently); give --kubelet-version=1.31 or later, or leave the gate off"},
      {"selinux", {{"host_selinux", "maybe"}},
       "--host-selinux: \"maybe\" is not true, false or auto"},
      {"host ops", {{"block_host_ops", "bad"}}, "--block-host-ops: \"bad\" is not auto or skip"},
      {"issuer", {{"block_host_ops", "skip"}, {"service_account_issuer", ""}},
       "--service-account-issuer: must not be empty"},
  };
  for (const Case& c : cases) {
    gflags::FlagSaver saver;
    for (const auto& [flag, value] : c.flags) Set(flag, value);
    absl::StatusOr<Handshake> handshake = HandshakeFromFlags("sanity", Releases::kSeveral);
    ASSERT_THAT(handshake, IsOk()) << c.name;
    absl::StatusOr<PublishCommand> publish = PublishCommandFromFlags(*handshake);
    ASSERT_FALSE(publish.ok()) << c.name;
    EXPECT_EQ(publish.status().message(), c.error) << c.name;
  }
}

}  // namespace
}  // namespace ndr::kubelet::cli
