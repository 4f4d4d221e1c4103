#include "kubeletclient/csi/vol_data.h"

#include <sys/stat.h>

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

// What Go's json.NewEncoder(f).Encode(map[string]string{...}) writes (encoding/json: sorted
// keys, compact, HTML-escaped, newline-terminated), written out by hand.
TEST(EncodeVolDataTest, GoJsonEncoderBytes) {
  EXPECT_EQ(EncodeVolData({{"volumeHandle", "vol-1"}, {"driverName", "d.example.com"}}),
            "{\"driverName\":\"d.example.com\",\"volumeHandle\":\"vol-1\"}\n");
  EXPECT_EQ(EncodeVolData({}), "{}\n");
  EXPECT_EQ(EncodeVolData({{"k", "a<b>&c\"d\\e\nf\tg\x01h\x7f"}}),
            "{\"k\":\"a\\u003cb\\u003e\\u0026c\\\"d\\\\e\\nf\\tg\\u0001h\x7f\"}\n");
  // UTF-8 kept, U+2028 escaped, invalid bytes replaced.
  EXPECT_EQ(EncodeVolData({{"k", "\xE2\x82\xAC\xE2\x80\xA8\xFF"}}),
            "{\"k\":\"\xE2\x82\xAC\\u2028\\ufffd\"}\n");
}

TEST(LoadVolumeRefTest, ChecksWhatItReads) {
  TempDir dir("voldata");
  const std::string path = dir.Join("vol_data.json");
  ASSERT_THAT(SaveVolData(path, {{kVolDataDriverName, "d.example.com"},
                                 {kVolDataVolumeHandle, "vol-1"},
                                 {kVolDataLifecycleMode, "Persistent"}}),
              IsOk());
  absl::StatusOr<VolumeRef> ref = LoadVolumeRef(path);
  ASSERT_THAT(ref.status(), IsOk());
  EXPECT_EQ(ref->driver, "d.example.com");
  EXPECT_EQ(ref->handle, "vol-1");
  EXPECT_EQ(ref->data.at(kVolDataLifecycleMode), "Persistent");

  struct Case {
    std::string contents;
    absl::StatusCode code;
    std::string error;
  } cases[] = {
      {R"({"driverName": "../../x", "volumeHandle": "h"})", absl::StatusCode::kInvalidArgument,
       "vol_data.json: driverName: Invalid value: \"../../x\""},
      {R"({"driverName": "d", "volumeHandle": ""})", absl::StatusCode::kInvalidArgument,
       "vol_data.json: volumeHandle: Required value"},
      {R"({"driverName": "d"})", absl::StatusCode::kInvalidArgument,
       "vol_data.json: volumeHandle: Required value"},
      {R"({"driverName": "d", "volumeHandle": 7})", absl::StatusCode::kInvalidArgument,
       "vol_data.json: malformed: \"volumeHandle\" is not a string"},
      {"[1]", absl::StatusCode::kInvalidArgument, "malformed: not a JSON object"},
      {std::string(70000, ' '), absl::StatusCode::kInvalidArgument, "larger than 65536 bytes"},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(::ndr::testing::WriteFile(path, c.contents));
    EXPECT_THAT(LoadVolumeRef(path).status(), StatusIs(c.code, c.error)) << c.contents;
  }
  EXPECT_THAT(LoadVolumeRef(dir.Join("missing.json")).status(),
              StatusIs(absl::StatusCode::kNotFound, "no such file"));
}

TEST(RemoveMountDirTest, RemovesTheMountDirTheDataAndTheirDirectoryOnly) {
  TempDir dir("rmd");
  const std::string volume = dir.Join("vol");
  ASSERT_EQ(mkdir(volume.c_str(), 0750), 0);
  ASSERT_EQ(mkdir((volume + "/mount").c_str(), 0750), 0);
  ASSERT_TRUE(::ndr::testing::WriteFile(volume + "/vol_data.json", "{}\n"));
  ASSERT_THAT(RemoveMountDir(volume + "/mount"), IsOk());
  struct stat st;
  EXPECT_NE(stat(volume.c_str(), &st), 0);
  EXPECT_EQ(stat(dir.path().c_str(), &st), 0);
  EXPECT_THAT(RemoveMountDir(volume + "/mount"), IsOk());  // already gone: fine
  // A mount dir the driver did not empty is not removed, and nothing else is either.
  ASSERT_EQ(mkdir(volume.c_str(), 0750), 0);
  ASSERT_EQ(mkdir((volume + "/mount").c_str(), 0750), 0);
  ASSERT_TRUE(::ndr::testing::WriteFile(volume + "/mount/leftover", "x"));
  ASSERT_TRUE(::ndr::testing::WriteFile(volume + "/vol_data.json", "{}\n"));
  EXPECT_THAT(RemoveMountDir(volume + "/mount"),
              StatusIs(absl::StatusCode::kInternal, "kubernetes.io/csi: failed to remove dir [" +
                                                        volume + "/mount]: Directory not empty"));
  EXPECT_EQ(stat((volume + "/vol_data.json").c_str(), &st), 0);
}

}  // namespace
}  // namespace ndr::kubelet
