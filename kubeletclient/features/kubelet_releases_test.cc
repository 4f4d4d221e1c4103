#include "kubeletclient/features/kubelet_releases.h"

#include "absl/strings/str_cat.h"
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
  // A patch other than the newest read may behave otherwise: refused, saying what to give.
  EXPECT_THAT(ParseKubeletRelease("v1.36.0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "\"v1.36.0\": kubeletclient models 1.36 as 1.36.3, the newest patch read, "
                       "and 1.36.0 may differ from it (docs/kubelet-versions.md); give 1.36 to act "
                       "as 1.36.3"));
  EXPECT_EQ(*ParseKubeletRelease("1.36.3"), 36);
}

// kube_features.go of each release, as docs/kubelet-versions.md tabulates it.
TEST(KubeletReleasesTest, DefaultsFollowEachRelease) {
  auto defaults = [](int minor) { return FeatureGatesString(DefaultFeatureGates(minor)); };
  EXPECT_EQ(defaults(26),
            "ReadWriteOncePod=false,SELinuxMountReadWriteOncePod=false,CSIVolumeHealth=false,"
            "CSINodeExpandSecret=false,SELinuxMount=false,SELinuxChangePolicy=false,"
            "RecoverVolumeExpansionFailure=false,MutableCSINodeAllocatableCount=false");
  EXPECT_EQ(defaults(27),
            "ReadWriteOncePod=true,SELinuxMountReadWriteOncePod=false,CSIVolumeHealth=false,"
            "CSINodeExpandSecret=true,SELinuxMount=false,SELinuxChangePolicy=false,"
            "RecoverVolumeExpansionFailure=false,MutableCSINodeAllocatableCount=false");
  // 1.28 to 1.31: SELinuxMountReadWriteOncePod on; SELinuxMount (1.30) off.
  for (int minor = 28; minor <= 31; ++minor) {
    EXPECT_EQ(defaults(minor),
              "ReadWriteOncePod=true,SELinuxMountReadWriteOncePod=true,CSIVolumeHealth=false,"
              "CSINodeExpandSecret=true,SELinuxMount=false,SELinuxChangePolicy=false,"
              "RecoverVolumeExpansionFailure=false,MutableCSINodeAllocatableCount=false")
        << minor;
  }
  // 1.32: expansion recovery on; 1.33: SELinuxChangePolicy on.
  EXPECT_EQ(defaults(32),
            "ReadWriteOncePod=true,SELinuxMountReadWriteOncePod=true,CSIVolumeHealth=false,"
            "CSINodeExpandSecret=true,SELinuxMount=false,SELinuxChangePolicy=false,"
            "RecoverVolumeExpansionFailure=true,MutableCSINodeAllocatableCount=false");
  // 1.33 to 1.36: SELinuxChangePolicy on; MutableCSINodeAllocatableCount on from 1.35.
  for (int minor = 33; minor <= 36; ++minor) {
    EXPECT_EQ(defaults(minor),
              absl::StrCat("ReadWriteOncePod=true,SELinuxMountReadWriteOncePod=true,"
                           "CSIVolumeHealth=false,CSINodeExpandSecret=true,SELinuxMount=false,"
                           "SELinuxChangePolicy=true,RecoverVolumeExpansionFailure=true,"
                           "MutableCSINodeAllocatableCount=",
                           minor >= 35 ? "true" : "false"))
        << minor;
  }
  // 1.37: SELinuxMount GA and on.
  EXPECT_EQ(defaults(37),
            "ReadWriteOncePod=true,SELinuxMountReadWriteOncePod=true,CSIVolumeHealth=false,"
            "CSINodeExpandSecret=true,SELinuxMount=true,SELinuxChangePolicy=true,"
            "RecoverVolumeExpansionFailure=true,MutableCSINodeAllocatableCount=true");
  // The struct's defaults are the v1.26 goldens' baseline: 1.28's.
  EXPECT_EQ(FeatureGatesString(FeatureGates()), defaults(28));
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
  EXPECT_FALSE(GateAt("SELinuxMount", 29).has_value());
  EXPECT_EQ(GateAt("SELinuxMount", 33)->stage, GateStage::kBeta);
  EXPECT_FALSE(GateAt("SELinuxMount", 36)->default_on);
  EXPECT_TRUE(GateAt("SELinuxMount", 37)->default_on);
  EXPECT_FALSE(GateAt("SELinuxMount", 37)->locked);
  EXPECT_TRUE(GateAt("SELinuxChangePolicy", 36)->locked);
  EXPECT_FALSE(GateAt("RecoverVolumeExpansionFailure", 33)->locked);
  EXPECT_TRUE(GateAt("RecoverVolumeExpansionFailure", 34)->locked);
  EXPECT_FALSE(GateAt("MutableCSINodeAllocatableCount", 32).has_value());
  EXPECT_FALSE(GateAt("MutableCSINodeAllocatableCount", 34)->default_on);
  EXPECT_TRUE(GateAt("MutableCSINodeAllocatableCount", 35)->default_on);
  EXPECT_TRUE(GateAt("MutableCSINodeAllocatableCount", 36)->locked);
}

// The behaviours without a gate: each from its release on, none before.
TEST(KubeletReleasesTest, BehavioursFromTheirRelease) {
  for (const ReleaseBehaviourInfo& info : ReleaseBehaviours()) {
    KubeletRelease before{info.since - 1}, from{info.since}, newest{kNewestKubeletMinor};
    EXPECT_FALSE(before.Has(info.behaviour)) << info.name;
    EXPECT_TRUE(from.Has(info.behaviour)) << info.name;
    EXPECT_TRUE(newest.Has(info.behaviour)) << info.name;
    EXPECT_FALSE(KubeletRelease().Has(info.behaviour)) << info.name << ": the struct is 1.26";
  }
  EXPECT_TRUE(KubeletRelease{29}.Has(ReleaseBehaviour::kShortVersionRefusalTexts));
  EXPECT_FALSE(KubeletRelease{33}.Has(ReleaseBehaviour::kDeviceVolDataOnlyForStagingDrivers));
  EXPECT_TRUE(KubeletRelease{34}.Has(ReleaseBehaviour::kDeviceVolDataOnlyForStagingDrivers));
  EXPECT_FALSE(KubeletRelease{34}.Has(ReleaseBehaviour::kTokensInSecretsField));
  EXPECT_TRUE(KubeletRelease{35}.Has(ReleaseBehaviour::kTokensInSecretsField));
  EXPECT_FALSE(KubeletRelease{36}.Has(ReleaseBehaviour::kNoVolumeConditionFromStats));
  EXPECT_EQ(KubeletRelease{37}.Name(), "1.37");
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
  EXPECT_THAT(ParseFeatureGatesAt("SELinuxMount=true", 29),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unrecognized feature gate: SELinuxMount (kubelet 1.29 does not have it "
                       "yet: it came in 1.30)"));
  EXPECT_THAT(ParseFeatureGatesAt("SELinuxMount=false", 37), IsOk());  // GA, not locked
  EXPECT_THAT(ParseFeatureGatesAt("RecoverVolumeExpansionFailure=false", 34),
              StatusIs(absl::StatusCode::kInvalidArgument, "feature is locked to true"));
  EXPECT_THAT(ParseFeatureGatesAt("NoSuchGate=true", 37),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unrecognized feature gate: NoSuchGate (kubeletclient knows"));
  EXPECT_THAT(ParseFeatureGatesAt("CSIVolumeHealth", 37),
              StatusIs(absl::StatusCode::kInvalidArgument, "missing bool value for CSIVolumeHealth"));
}

}  // namespace
}  // namespace ndr::kubelet
