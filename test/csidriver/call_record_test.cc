#include "test/csidriver/call_record.h"

#include <sys/stat.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "api/csi/csi.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::sample {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<nlohmann::json> Lines(const std::string& path) {
  std::string text;
  EXPECT_TRUE(ndr::testing::ReadFile(path, &text));
  std::vector<nlohmann::json> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(nlohmann::json::parse(text.substr(start, end - start)));
  }
  EXPECT_EQ(start, text.size()) << "the last line is not complete";
  return lines;
}

// The shape of `kubeletclient publish`'s "calls" entries, secrets redacted, one line each,
// appended to what an earlier driver left.
TEST(CallRecordTest, AppendsOneJsonLinePerCallInKubeletclientsShape) {
  ndr::testing::TempDir dir("rec");
  const std::string path = dir.Join("calls.jsonl");
  ASSERT_TRUE(ndr::testing::WriteFile(path, "{\"method\":\"Probe\",\"request\":{}}\n"));
  auto record = CallRecord::Open(path);
  ASSERT_THAT(record, IsOk());
  csi::v1::NodePublishVolumeRequest publish;
  publish.set_volume_id("vol-1");
  publish.set_target_path("/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/pv/mount");
  publish.mutable_secrets()->insert({"password", "hunter2"});
  publish.mutable_volume_context()->insert(
      {"csi.storage.k8s.io/serviceAccount.tokens", "{\"a\":{\"token\":\"jwt-secret\"}}"});
  (*record)->Add("NodePublishVolume", publish);
  (*record)->Add("NodeGetCapabilities", csi::v1::NodeGetCapabilitiesRequest());

  std::string text;
  ASSERT_TRUE(ndr::testing::ReadFile(path, &text));
  EXPECT_THAT(text, Not(HasSubstr("hunter2")));
  EXPECT_THAT(text, Not(HasSubstr("jwt-secret")));
  std::vector<nlohmann::json> lines = Lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["method"], "Probe");
  EXPECT_EQ(lines[1], nlohmann::json::parse(R"js({"method": "NodePublishVolume", "request": {
      "volume_id": "vol-1",
      "target_path": "/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/pv/mount",
      "secrets": {"password": "(redacted)"},
      "volume_context": {"csi.storage.k8s.io/serviceAccount.tokens": "(redacted)"}}})js"));
  EXPECT_EQ(lines[2], nlohmann::json::parse(R"({"method":"NodeGetCapabilities","request":{}})"));
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "an existing file keeps its mode";
}

TEST(CallRecordTest, NewFileIsPrivate) {
  ndr::testing::TempDir dir("rec");
  ASSERT_THAT(CallRecord::Open(dir.Join("new.jsonl")), IsOk());
  struct stat st;
  ASSERT_EQ(stat(dir.Join("new.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// Calls arrive on gRPC's threads at once; each line stays whole.
TEST(CallRecordTest, ConcurrentCallsNeverInterleave) {
  ndr::testing::TempDir dir("rec");
  auto record = CallRecord::Open(dir.Join("calls.jsonl"));
  ASSERT_THAT(record, IsOk());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&record, t] {
      csi::v1::NodeStageVolumeRequest stage;
      stage.set_volume_id(std::string(5000, 'a' + t));
      for (int i = 0; i < 50; ++i) (*record)->Add("NodeStageVolume", stage);
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<nlohmann::json> lines = Lines(dir.Join("calls.jsonl"));
  ASSERT_EQ(lines.size(), 400u);
  for (const nlohmann::json& line : lines) {
    const std::string id = line["request"]["volume_id"];
    EXPECT_EQ(id, std::string(5000, id[0]));
  }
}

TEST(CallRecordTest, RefusesRelativePathsAndSymbolicLinks) {
  EXPECT_THAT(CallRecord::Open("calls.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--record=calls.jsonl: give an absolute path of a file to append to"));
  ndr::testing::TempDir dir("rec");
  ASSERT_EQ(symlink("/etc/passwd", dir.Join("link").c_str()), 0);
  EXPECT_THAT(CallRecord::Open(dir.Join("link")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "(a symbolic link: give the file itself)"));
  EXPECT_THAT(CallRecord::Open(dir.Join("missing/calls.jsonl")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "cannot open it for appending: No such file or directory"));
}

}  // namespace
}  // namespace ndr::sample
