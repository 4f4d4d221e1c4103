#include "api/endpoint.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ndr {
namespace {

using ::testing::HasSubstr;

TEST(UnixSocketPathTest, AcceptsPathsAndUnixUrls) {
  struct Case {
    const char* endpoint;
    const char* path;
  } cases[] = {
      {"/csi/csi.sock", "/csi/csi.sock"},
      {"unix:///csi/csi.sock", "/csi/csi.sock"},
      {"unix:///var/lib/kubelet/plugins/x/csi.sock", "/var/lib/kubelet/plugins/x/csi.sock"},
      {"unix:/csi/csi.sock", "/csi/csi.sock"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> path = UnixSocketPath(c.endpoint, "--csi-address");
    ASSERT_TRUE(path.ok()) << c.endpoint << ": " << path.status();
    EXPECT_EQ(*path, c.path) << c.endpoint;
  }
}

TEST(UnixSocketPathTest, RejectsWithReason) {
  struct Case {
    std::string endpoint;
    const char* reason;
  } cases[] = {
      {"", "endpoint is empty"},
      {"tcp://127.0.0.1:10000", "unsupported scheme"},
      {"csi.sock", "not an absolute socket path"},
      {"unix://csi.sock", "not an absolute socket path"},
      {"unix:csi.sock", "not an absolute socket path"},
      {"/" + std::string(107, 'a'), "108 bytes long"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> path = UnixSocketPath(c.endpoint, "--csi-address");
    ASSERT_FALSE(path.ok()) << c.endpoint;
    EXPECT_EQ(path.status().code(), absl::StatusCode::kInvalidArgument) << c.endpoint;
    EXPECT_THAT(std::string(path.status().message()), HasSubstr(c.reason)) << c.endpoint;
    EXPECT_THAT(std::string(path.status().message()), HasSubstr("--csi-address")) << c.endpoint;
  }
}

TEST(CheckSocketPathLengthTest, BoundaryIs107Bytes) {
  EXPECT_TRUE(CheckSocketPathLength("/" + std::string(106, 'a'), "x").ok());
  EXPECT_FALSE(CheckSocketPathLength("/" + std::string(107, 'a'), "x").ok());
}

TEST(GrpcUnixTargetTest, PrefixesScheme) {
  EXPECT_EQ(GrpcUnixTarget("/csi/csi.sock"), "unix:/csi/csi.sock");
}

}  // namespace
}  // namespace ndr
