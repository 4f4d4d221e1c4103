#include "kubeletclient/features/kubelet_releases.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;

TEST(KubeletReleasesTest, ReleasesAreSpelledAsKubernetesSpellsThem) {
  EXPECT_EQ(*ParseKubeletRelease("1.29"), 29);
  EXPECT_EQ(*ParseKubeletRelease("v1.29"), 29);
  EXPECT_EQ(*ParseKubeletRelease("1.37.2"), 37);
  EXPECT_EQ(*ParseKubeletRelease("v1.26.15"), 26);
  for (const char* bad : {"1.25", "1.38", "2.29", "1", "1.29.x", "v1.29.6.1", "", "latest",
                          "1.-29", "1.29.-1"}) {
    EXPECT_THAT(ParseKubeletRelease(bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "is not a kubelet release kubeletclient knows: give 1.26 to 1.37, such "
                         "as 1.37 or v1.29.6"))
        << bad;
  }
}

// kube_features.go of each release, as docs/kubelet-versions.md tabulates it.
TEST(KubeletReleasesTest, DefaultsFollowEachRelease) {
  FeatureGates v126 = DefaultFeatureGates(26);
  EXPECT_EQ(FeatureGatesString(v126),
            "ReadWriteOncePod=false,SELinuxMountReadWriteOncePod=false,CSIVolumeHealth=false,"
            "CSINodeExpandSecret=false");
  EXPECT_EQ(FeatureGatesString(DefaultFeatureGates(27)),
            "ReadWriteOncePod=true,SELinuxMountReadWriteOncePod=false,CSIVolumeHealth=false,"
            "CSINodeExpandSecret=true");
  const std::string current =
      "ReadWriteOncePod=true,SELinuxMountReadWriteOncePod=true,CSIVolumeHealth=false,"
      "CSINodeExpandSecret=true";
  for (int minor = 28; minor <= kNewestKubeletMinor; ++minor) {
    EXPECT_EQ(FeatureGatesString(DefaultFeatureGates(minor)), current) << minor;
  }
  // The newest release's defaults are kubeletclient's own.
  EXPECT_EQ(FeatureGatesString(DefaultFeatureGates(kNewestKubeletMinor)),
            FeatureGatesString(FeatureGates()));
}

TEST(KubeletReleasesTest, StagesAndLocks) {
  EXPECT_EQ(GateAt("ReadWriteOncePod", 26)->stage, GateStage::kAlpha);
  EXPECT_EQ(GateAt("ReadWriteOncePod", 28)->stage, GateStage::kBeta);
  EXPECT_TRUE(GateAt("ReadWriteOncePod", 29)->locked);
  EXPECT_TRUE(GateAt("ReadWriteOncePod", 30)->locked);
  EXPECT_FALSE(GateAt("ReadWriteOncePod", 31).has_value());
  EXPECT_FALSE(GateAt("CSINodeExpandSecret", 37).has_value());
  EXPECT_FALSE(GateAt("SELinuxMountReadWriteOncePod", 27)->default_on);
  EXPECT_FALSE(GateAt("SELinuxMountReadWriteOncePod", 35)->locked);
  EXPECT_TRUE(GateAt("SELinuxMountReadWriteOncePod", 36)->locked);
  EXPECT_EQ(GateAt("CSIVolumeHealth", 37)->stage, GateStage::kAlpha);
  EXPECT_FALSE(GateAt("NoSuchGate", 30).has_value());
}

TEST(KubeletReleasesTest, FlagsAreRefusedAsThatReleasesKubeletRefusesThem) {
  absl::StatusOr<FeatureGates> gates = ParseFeatureGatesAt("ReadWriteOncePod=true", 26);
  ASSERT_THAT(gates, IsOk());
  EXPECT_TRUE(gates->read_write_once_pod);
  EXPECT_FALSE(gates->csi_node_expand_secret);  // 1.26's default stays
  EXPECT_THAT(ParseFeatureGatesAt("ReadWriteOncePod=false", 28), IsOk());
  EXPECT_THAT(ParseFeatureGatesAt("ReadWriteOncePod=true", 29), IsOk());  // its locked value
  EXPECT_THAT(ParseFeatureGatesAt("ReadWriteOncePod=false", 29),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "cannot set feature gate ReadWriteOncePod to false, feature is locked to "
                       "true"));
  EXPECT_THAT(ParseFeatureGatesAt("CSINodeExpandSecret=true", 31),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unrecognized feature gate: CSINodeExpandSecret (kubelet 1.31 no longer "
                       "has it: its behaviour is always on)"));
  EXPECT_THAT(ParseFeatureGatesAt("SELinuxMountReadWriteOncePod=false", 35), IsOk());
  EXPECT_THAT(ParseFeatureGatesAt("SELinuxMountReadWriteOncePod=false", 36),
              StatusIs(absl::StatusCode::kInvalidArgument, "feature is locked to true"));
  EXPECT_THAT(ParseFeatureGatesAt("CSIVolumeHealth=true", 37), IsOk());
  EXPECT_THAT(ParseFeatureGatesAt("NoSuchGate=true", 37),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unrecognized feature gate: NoSuchGate (kubeletclient knows"));
  EXPECT_THAT(ParseFeatureGatesAt("CSIVolumeHealth", 37),
              StatusIs(absl::StatusCode::kInvalidArgument, "missing bool value for CSIVolumeHealth"));
}

}  // namespace
}  // namespace ndr::kubelet
