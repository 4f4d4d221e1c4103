// kubelet's refusal texts, composed as kubelet composes them (operation_generator.go
// GenerateRegisterPluginFunc, csi_plugin.go, nodeinfomanager.go; v1.26.0 to v1.37.2), each
// classified.
#include "registrar/kubelet_refusal.h"

#include <string>

#include "absl/strings/str_cat.h"

#include "gtest/gtest.h"

namespace ndr::registrar {
namespace {

constexpr char kRegistrationFailed[] =
    "RegisterPlugin error -- plugin registration failed with err: ";
constexpr char kValidationFailed[] =
    "RegisterPlugin error -- plugin validation failed with err: validation failed for CSI Driver "
    "d.example.com at endpoint /var/lib/kubelet/plugins/d/csi.sock: kubernetes.io/csi: "
    "ValidatePlugin for CSI driver \"d.example.com\" failed. ";

RefusalKind KindOf(const std::string& text) { return ClassifyKubeletRefusal(text).kind; }

TEST(KubeletRefusalTest, TheApiServerAwayIsTransient) {
  // updateNode and updateCSINode after their four attempts, with what the API server's absence
  // looks like to client-go.
  for (const std::string cause :
       {"Get \"https://10.0.0.1:6443/api/v1/nodes/n1\": dial tcp 10.0.0.1:6443: connect: "
        "connection refused",
        "Get \"https://10.0.0.1:6443/api/v1/nodes/n1\": net/http: TLS handshake timeout",
        "the server was unable to return a response in the time allotted, but may still be "
        "processing the request (get nodes n1)",
        "the server has received too many requests and has asked us to try again later (get "
        "nodes n1)",
        "Too many requests, please try again later.",
        "an error on the server (\"\") has prevented the request from succeeding (get nodes n1)",
        "[Operation cannot be fulfilled on nodes \"n1\": the object has been modified, "
        "etcdserver: request timed out]"}) {
    EXPECT_EQ(KindOf(std::string(kRegistrationFailed) +
                     "error updating Node object with CSI driver node info: error updating node: "
                     "timed out waiting for the condition; caused by: " + cause),
              RefusalKind::kTransient)
        << cause;
    EXPECT_EQ(KindOf(std::string(kRegistrationFailed) +
                     "error updating CSINode object with CSI driver node info: error updating "
                     "CSINode: timed out waiting for the condition; caused by: " + cause),
              RefusalKind::kTransient)
        << cause;
  }
  const KubeletRefusal node = ClassifyKubeletRefusal(
      std::string(kRegistrationFailed) +
      "error updating Node object with CSI driver node info: error updating node: timed out "
      "waiting for the condition; caused by: connection refused");
  EXPECT_EQ(node.why, "kubelet could not update the Node object (API server unreachable or busy)");
}

TEST(KubeletRefusalTest, ADriverNotReadyIsTransient) {
  for (const char* rpc :
       {"rpc error: code = DeadlineExceeded desc = context deadline exceeded",
        "rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while "
        "dialing: dial unix /var/lib/kubelet/plugins/d/csi.sock: connect: connection refused\"",
        "rpc error: code = ResourceExhausted desc = too many requests",
        "rpc error: code = Aborted desc = another operation is under way"}) {
    EXPECT_EQ(KindOf(std::string(kRegistrationFailed) + rpc), RefusalKind::kTransient) << rpc;
  }
  // v1.35 and later: a CSINode of an earlier node of this name, deleted on the way.
  EXPECT_EQ(KindOf(std::string(kRegistrationFailed) +
                   "error updating CSINode object with CSI driver node info: error updating "
                   "CSINode: timed out waiting for the condition; caused by: CSINode \"n1\" was "
                   "owned by different node (oldNodeID=\"a\", newNodeID=\"b\"), deleted it"),
            RefusalKind::kTransient);
}

// Only what kubelet's and the API server's source show will pass by itself is retried; the rest
// ends the registrar, as every refusal ends the Go registrar.
TEST(KubeletRefusalTest, OtherDriverCodesAndOtherApiErrorsAreNotTransient) {
  for (const char* code : {"Internal", "NotFound", "PermissionDenied", "FailedPrecondition",
                           "Unknown", "Unauthenticated", "OutOfRange"}) {
    const KubeletRefusal refusal = ClassifyKubeletRefusal(
        absl::StrCat(kRegistrationFailed, "rpc error: code = ", code, " desc = the driver says"));
    EXPECT_EQ(refusal.kind, RefusalKind::kPermanent) << code;
    EXPECT_EQ(refusal.why, absl::StrCat("the driver's NodeGetInfo failed with code ", code,
                                        ", which does not say to retry"));
  }
  for (const std::string& cause : {
           // An admission webhook's denial (apiserver webhook/errors ToStatusErr).
           std::string("admission webhook \"nodes.policy.example.com\" denied the request: "
                       "labels may not change"),
           // The Node is gone (deleted); kubelet does not make it again by itself.
           std::string("nodes \"n1\" not found"),
           std::string("Unauthorized"),
       }) {
    EXPECT_EQ(KindOf(std::string(kRegistrationFailed) +
                     "error updating Node object with CSI driver node info: error updating node: "
                     "timed out waiting for the condition; caused by: " + cause),
              RefusalKind::kPermanent)
        << cause;
  }
  EXPECT_EQ(ClassifyKubeletRefusal(std::string(kRegistrationFailed) +
                                   "error updating CSINode object with CSI driver node info: "
                                   "error updating CSINode: timed out waiting for the condition; "
                                   "caused by: Unauthorized")
                .why,
            "kubelet could not update the CSINode object, for a reason that does not pass by "
            "itself");
}

TEST(KubeletRefusalTest, WhatNoRetryChangesIsPermanent) {
  for (const std::string& text : {
           std::string(kRegistrationFailed) +
               "error adding CSI driver node info: driverNodeID must not be empty",
           // A collision inside the Node update's aggregate: the update is what failed, the
           // collision is why, and it stays.
           std::string(kRegistrationFailed) +
               "error updating Node object with CSI driver node info: error updating node: timed "
               "out waiting for the condition; caused by: detected topology value collision: "
               "driver reported \"topology.x/zone\":\"a\" but existing label is "
               "\"topology.x/zone\":\"b\"",
           std::string(kRegistrationFailed) +
               "error updating Node object with CSI driver node info: error updating node: timed "
               "out waiting for the condition; caused by: failed to parse node's "
               "\"csi.volume.kubernetes.io/nodeid\" annotation value (\"{\") err=unexpected end "
               "of JSON input",
           std::string(kRegistrationFailed) +
               "error updating CSINode object with CSI driver node info: error updating CSINode: "
               "timed out waiting for the condition; caused by: CSINode.storage.k8s.io \"n1\" is "
               "invalid: spec.drivers[0].name: Invalid value: \"D_X\": a lowercase RFC 1123 "
               "subdomain must consist of lower case alphanumeric characters",
           std::string(kRegistrationFailed) + "driver name is empty",
           // v1.26-v1.28 and v1.29+ wordings of an unsupported version.
           std::string(kValidationFailed) +
               "None of the versions specified [\"0.3.0\"] are supported. err=highest supported "
               "version reported by driver is 0.3.0, must be v1.x",
           std::string(kValidationFailed) +
               "None of the versions specified [\"0.3.0\"] are supported. err=highest supported "
               "version reported is 0.3.0, must be v1.x",
           std::string(kValidationFailed) + "Plugin returned an empty list for supported versions",
           std::string(kValidationFailed) +
               "Another driver with the same name is already registered with a higher supported "
               "version: \"1.0.0\"",
           std::string("RegisterPlugin error -- no handler registered for plugin type: FancyPlugin "
                       "at socket /registration/d-reg.sock"),
           // Nothing at --kubelet-registration-path: waiting does not move the socket.
           std::string(kRegistrationFailed) +
               "rpc error: code = Unavailable desc = connection error: desc = \"transport: Error "
               "while dialing: dial unix /var/lib/kubelet/plugins/d/csi.sock: connect: no such "
               "file or directory\"",
           std::string(kRegistrationFailed) +
               "rpc error: code = Unimplemented desc = unknown method NodeGetInfo",
       }) {
    EXPECT_EQ(KindOf(text), RefusalKind::kPermanent) << text;
  }
}

TEST(KubeletRefusalTest, AnyOtherTextIsUnknown) {
  for (const char* text : {"", "conformance: kubelet refused this plugin",
                           "RegisterPlugin error -- test refuses"}) {
    const KubeletRefusal refusal = ClassifyKubeletRefusal(text);
    EXPECT_EQ(refusal.kind, RefusalKind::kUnknown) << text;
    EXPECT_FALSE(refusal.why.empty());
  }
  EXPECT_EQ(RefusalKindName(RefusalKind::kTransient), "transient");
  EXPECT_EQ(RefusalKindName(RefusalKind::kPermanent), "permanent");
  EXPECT_EQ(RefusalKindName(RefusalKind::kUnknown), "unknown");
}

}  // namespace
}  // namespace ndr::registrar
