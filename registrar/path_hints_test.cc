#include "registrar/path_hints.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ndr::registrar {
namespace {

using ::testing::HasSubstr;

TEST(PathHintsTest, AnUnwatchedRegistryNamesTheFlagAndTheUsualDirectories) {
  const std::string hint = UnwatchedRegistryHint("/registration", absl::Seconds(10));
  EXPECT_THAT(hint, HasSubstr("no GetInfo) within 10s"));
  EXPECT_THAT(hint, HasSubstr("--plugin-registration-path=/registration must be"));
  EXPECT_THAT(hint, HasSubstr("/var/lib/kubelet/plugins_registry, "
                              "/var/lib/k0s/kubelet/plugins_registry or "
                              "/var/snap/microk8s/common/var/lib/kubelet/plugins_registry"));
}

// Kubelet v1.26's refusal when NodeGetInfo cannot dial the endpoint (csi_plugin.go
// RegisterPlugin returns gRPC-Go's error as is; operation_generator.go prefixes it).
TEST(PathHintsTest, KubeletsDialFailureIsRecognised) {
  const struct {
    const char* refusal;
    const char* path;
    const char* cause;
  } cases[] = {
      // Newer gRPC-Go (today's kubelets) puts a colon after "dialing".
      {"RegisterPlugin error -- plugin registration failed with err: rpc error: code = "
       "Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix "
       "/csi/csi.sock: connect: no such file or directory\"",
       "/csi/csi.sock", "connect: no such file or directory"},
      // gRPC-Go v1.49 (kubelet v1.26) words it without the colon after "dialing"; quoted again
      // inside another message, the quotes come escaped.
      {"rpc error: code = Unavailable desc = all SubConns are in TransientFailure, latest "
       "connection error: connection error: desc = \\\"transport: Error while dialing dial unix "
       "/var/lib/kubelet/plugins/x/csi.sock: connect: connection refused\\\"",
       "/var/lib/kubelet/plugins/x/csi.sock", "connect: connection refused"},
  };
  for (const auto& c : cases) {
    const std::optional<UnreachableDriver> unreachable = KubeletCouldNotDial(c.refusal);
    ASSERT_TRUE(unreachable.has_value()) << c.refusal;
    EXPECT_EQ(unreachable->path, c.path);
    EXPECT_EQ(unreachable->cause, c.cause);
  }
  // Other refusals are not about paths.
  EXPECT_FALSE(KubeletCouldNotDial("RegisterPlugin error -- plugin validation failed with err: "
                                   "highest supported version reported by driver is 0.3.0")
                   .has_value());
  EXPECT_FALSE(KubeletCouldNotDial("dial unix : nothing").has_value());
}

TEST(PathHintsTest, AnUnreachableDriverNamesTheFlagTheHostPathAndTheContainerPath) {
  const std::string hint = UnreachableDriverHint({"/csi/csi.sock", "connect: no such file"},
                                                 "/csi/csi.sock", "/csi/csi.sock",
                                                 "hostpath.csi.k8s.io");
  EXPECT_THAT(hint, HasSubstr("--kubelet-registration-path=/csi/csi.sock: connect: no such file."));
  EXPECT_THAT(hint, HasSubstr("not in this container (here the driver answers at "
                              "--csi-address=/csi/csi.sock)"));
  EXPECT_THAT(hint, HasSubstr("/var/lib/kubelet/plugins/hostpath.csi.k8s.io/csi.sock, "));
  EXPECT_THAT(UnreachableDriverHint({"/other", "x"}, "/csi/csi.sock", "/csi/csi.sock", "d"),
              HasSubstr("(it dialled /other)"));
}

}  // namespace
}  // namespace ndr::registrar
