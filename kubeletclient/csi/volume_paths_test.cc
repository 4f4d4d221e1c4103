#include "kubeletclient/csi/volume_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

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

}  // namespace
}  // namespace ndr::kubelet
