#include "kubeletclient/features/kube_features.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;

// The struct's defaults: the v1.26 goldens' baseline (kubelet_releases.h has each release's).
TEST(FeatureGatesTest, DefaultsAreTheGoldensBaselineAndFlagsChangeThem) {
  FeatureGates defaults;
  EXPECT_TRUE(defaults.read_write_once_pod);
  EXPECT_TRUE(defaults.selinux_mount_read_write_once_pod);
  EXPECT_FALSE(defaults.csi_volume_health);
  EXPECT_EQ(FeatureGatesString(defaults),
            "ReadWriteOncePod=true,SELinuxMountReadWriteOncePod=true,CSIVolumeHealth=false,"
            "CSINodeExpandSecret=true,SELinuxMount=false,SELinuxChangePolicy=false,"
            "RecoverVolumeExpansionFailure=false,MutableCSINodeAllocatableCount=false");

  absl::StatusOr<FeatureGates> gates =
      ParseFeatureGates(" CSIVolumeHealth = True,ReadWriteOncePod=0,,SELinuxMountReadWriteOncePod=f");
  ASSERT_THAT(gates, IsOk());
  EXPECT_TRUE(gates->csi_volume_health);
  EXPECT_FALSE(gates->read_write_once_pod);
  EXPECT_FALSE(gates->selinux_mount_read_write_once_pod);
  EXPECT_THAT(ParseFeatureGates(""), IsOk());
}

TEST(FeatureGatesTest, ErrorsAreComponentBases) {
  EXPECT_THAT(ParseFeatureGates("CSIVolumeHealth"),
              StatusIs(absl::StatusCode::kInvalidArgument, "missing bool value for CSIVolumeHealth"));
  EXPECT_THAT(ParseFeatureGates("CSIVolumeHealth=yes"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "invalid value of CSIVolumeHealth=yes, err: strconv.ParseBool: parsing "
                       "\"yes\": invalid syntax"));
  EXPECT_THAT(ParseFeatureGates("ReadWriteOncePod=false,NoSuchGate=true"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unrecognized feature gate: NoSuchGate (kubeletclient knows "
                       "ReadWriteOncePod, SELinuxMountReadWriteOncePod, CSIVolumeHealth, "
                       "CSINodeExpandSecret, SELinuxMount, SELinuxChangePolicy, "
                       "RecoverVolumeExpansionFailure, MutableCSINodeAllocatableCount)"));
}

}  // namespace
}  // namespace ndr::kubelet
