#include "kubeletclient/csi/volume_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;
using ::ndr::testing::TempDir;

TEST(CleanPathTest, AsGoFilepathClean) {
  EXPECT_EQ(CleanPath("/a/b/../c/./d//"), "/a/c/d");
  EXPECT_EQ(CleanPath("/../../x"), "/x");
  EXPECT_EQ(CleanPath("/"), "/");
  EXPECT_EQ(CleanPath("a/../../b"), "../b");
  EXPECT_EQ(CleanPath("a/.."), ".");
  EXPECT_EQ(CleanPath("root/pods/../../.."), "..");
}

TEST(PathUnderRootTest, KubeletsLayout) {
  absl::StatusOr<PodVolumePaths> paths =
      PodVolumePathsFor("/var/lib/kubelet/", "d5b7a2a8-1c2e", "pvc-1.data");
  ASSERT_THAT(paths.status(), IsOk());
  EXPECT_EQ(paths->dir, "/var/lib/kubelet/pods/d5b7a2a8-1c2e/volumes/kubernetes.io~csi/pvc-1.data");
  EXPECT_EQ(paths->mount, paths->dir + "/mount");
  EXPECT_EQ(paths->vol_data, paths->dir + "/vol_data.json");
  EXPECT_EQ(*PodCsiVolumesDir("/var/lib/kubelet", "u"),
            "/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi");
  // A root that does not exist yet is fine: nothing under it can lead anywhere.
  EXPECT_THAT(PathUnderRoot("/nonexistent/root", {"pods", "u"}).status(), IsOk());
  EXPECT_EQ(*PathUnderRoot("relative/root", {"pods", "u"}), "relative/root/pods/u");
  // A part is joined, never taken as a new root.
  EXPECT_EQ(*PathUnderRoot("/var/lib/kubelet", {"pods", "/etc"}), "/var/lib/kubelet/pods/etc");
}

TEST(PathUnderRootTest, RefusesEveryWayOut) {
  struct Case {
    const char* name;
    std::string root;
    std::vector<std::string> parts;
    const char* error;
  } cases[] = {
      {"a UID climbing out", "/var/lib/kubelet",
       {"pods", "../../../../tmp/escape-uid", "volumes"},
       "is \"/tmp/escape-uid/volumes\", which is not inside the root directory: refused"},
      {"a volume name climbing out", "/var/lib/kubelet",
       {"pods", "u", "volumes", "kubernetes.io~csi", "../../../../../escape-vol", "mount"},
       "is \"/var/lib/escape-vol/mount\", which is not inside"},
      {"the root itself", "/var/lib/kubelet", {"pods", ".."}, "is \"/var/lib/kubelet\", which is not inside"},
      {"a sibling with the root as prefix", "/var/lib/kubelet", {"../kubelet2"},
       "is \"/var/lib/kubelet2\", which is not inside"},
      {"a NUL byte", "/var/lib/kubelet", {"pods", std::string("u\0/../..", 8)}, "holds a NUL byte"},
      {"an empty root", "", {"pods"}, "--root-dir is empty"},
      {"a relative root", "root", {"..", "x"}, "is \"x\", which is not inside"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> path = PathUnderRoot(c.root, c.parts);
    EXPECT_THAT(path.status(), StatusIs(absl::StatusCode::kInvalidArgument, c.error)) << c.name;
  }
}

TEST(PathUnderRootTest, RefusesASymbolicLinkLeadingOut) {
  TempDir dir("paths");
  const std::string root = dir.Join("root"), outside = dir.Join("outside");
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(outside.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/pods").c_str(), 0755), 0);
  ASSERT_EQ(symlink(outside.c_str(), (root + "/pods/planted").c_str()), 0);
  EXPECT_THAT(PathUnderRoot(root, {"pods", "planted", "volumes"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "goes through \"" + root + "/pods/planted\", which resolves to \"" +
                           outside + "\", outside the root directory"));
  // A link that stays inside is fine, and so is a root that is itself a link.
  ASSERT_EQ(symlink((root + "/pods").c_str(), (root + "/alias").c_str()), 0);
  EXPECT_THAT(PathUnderRoot(root, {"alias", "x"}).status(), IsOk());
  ASSERT_EQ(symlink(root.c_str(), dir.Join("link-to-root").c_str()), 0);
  EXPECT_THAT(PathUnderRoot(dir.Join("link-to-root"), {"pods", "u"}).status(), IsOk());
}

// csi_block.go's paths, all named after the PV (and the pod for the per-pod ones).
TEST(BlockPathsTest, KubeletsLayout) {
  absl::StatusOr<BlockPaths> paths = BlockPathsFor("/var/lib/kubelet", "uid-1", "pvc-1");
  ASSERT_THAT(paths.status(), IsOk());
  const std::string devices = "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices";
  EXPECT_EQ(paths->staging, devices + "/staging/pvc-1");
  EXPECT_EQ(paths->publish_dir, devices + "/publish/pvc-1");
  EXPECT_EQ(paths->publish, devices + "/publish/pvc-1/uid-1");
  EXPECT_EQ(paths->volume_dir, devices + "/pvc-1");
  EXPECT_EQ(paths->global_map, devices + "/pvc-1/dev");
  EXPECT_EQ(paths->global_map_pod, devices + "/pvc-1/dev/uid-1");
  EXPECT_EQ(paths->data_dir, devices + "/pvc-1/data");
  EXPECT_EQ(paths->vol_data, devices + "/pvc-1/data/vol_data.json");
  EXPECT_EQ(paths->pod_map_dir, "/var/lib/kubelet/pods/uid-1/volumeDevices/kubernetes.io~csi");
  EXPECT_EQ(paths->pod_map, paths->pod_map_dir + "/pvc-1");
  EXPECT_EQ(*PodCsiVolumeDevicesDir("/var/lib/kubelet", "uid-1"), paths->pod_map_dir);
}

// A PV name or a pod UID that would leave the root, or share kubelet's own directories, is
// refused, whichever path it would reach first.
TEST(BlockPathsTest, RefusesNamesThatLeaveOrCollide) {
  for (const auto& [uid, pv, error] : std::initializer_list<std::tuple<std::string, std::string, std::string>>{
           {"uid-1", "../../../../../../escape", "may not contain '/'"},
           {"uid-1", "..", "the PV name \"..\" of a raw block volume may not be '..'"},
           {"uid-1", "", "the PV name \"\" of a raw block volume may not be empty"},
           {"a/b", "pv-1", "the pod UID \"a/b\" of a raw block volume may not contain '/'"},
           {"../../..", "pv-1", "may not contain '/'"},
           {"uid-1", "staging", "would share kubelet's directory"},
           {"uid-1", "publish", "would share kubelet's directory"},
           {"uid-1", std::string("pv\0x", 4), "holds a NUL byte"},
       }) {
    EXPECT_THAT(BlockPathsFor("/var/lib/kubelet", uid, pv).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, error))
        << uid << " " << pv;
  }
}

// The entries that are links or devices by design are not resolved: a pod's link to a device
// outside the root is kubelet's own doing, not an escape. The directories above them still are.
TEST(BlockPathsTest, LeavesAreNotFollowedDirectoriesAre) {
  TempDir dir("paths");
  const std::string root = dir.Join("root");
  const std::string pod_dir = root + "/pods/uid-1/volumeDevices/kubernetes.io~csi";
  ASSERT_EQ(system(("mkdir -p " + pod_dir).c_str()), 0);
  ASSERT_EQ(symlink("/dev/null", (pod_dir + "/pv-1").c_str()), 0);
  EXPECT_THAT(BlockPathsFor(root, "uid-1", "pv-1").status(), IsOk());
  // A planted link on the way is refused.
  ASSERT_EQ(system(("rm -r " + root + "/pods/uid-1/volumeDevices").c_str()), 0);
  ASSERT_EQ(symlink(dir.path().c_str(), (root + "/pods/uid-1/volumeDevices").c_str()), 0);
  EXPECT_THAT(BlockPathsFor(root, "uid-1", "pv-1").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "outside the root directory"));
}

}  // namespace
}  // namespace ndr::kubelet
