#include "kubeletclient/sanity/provisioning.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace ndr::kubelet {
namespace {

// Each expectation is what external-provisioner v6.3 does with the same class
// (pkg/controller/controller.go prepareProvision, topology.go GenerateAccessibilityRequirements).

StorageClass Class() {
  StorageClass sc;
  sc.name = "fast";
  sc.provisioner = "disk.csi.example.com";
  return sc;
}

ProvisionInput Input(const StorageClass& sc) {
  ProvisionInput input;
  input.storage_class = &sc;
  input.pv_name = "kubeletclient-sanity-filesystem-1234abcd";
  input.claim_namespace = "kubeletclient-sanity";
  input.claim_name = "sanity-fs-1";
  input.bytes = 1 << 30;
  return input;
}

// The segments in key order (a protobuf map has none of its own).
std::string Segments(const csi::v1::Topology& t) {
  std::map<std::string, std::string> sorted(t.segments().begin(), t.segments().end());
  std::string out;
  for (const auto& [key, value] : sorted) out += key + "=" + value + ";";
  return out;
}

TEST(PlanProvision, StripsTheReservedKeysAndKeepsTheRest) {
  StorageClass sc = Class();
  sc.parameters = {{"type", "ssd"},
                   {"csi.storage.k8s.io/fstype", "xfs"},
                   {"csi.storage.k8s.io/provisioner-secret-name", "creds"},
                   {"csi.storage.k8s.io/provisioner-secret-namespace", "storage"},
                   {"csiNodeStageSecretName", "stage"},
                   {"csiNodeStageSecretNamespace", "storage"}};
  sc.mount_options = {"noatime"};
  absl::StatusOr<ProvisionPlan> plan = PlanProvision(Input(sc));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto& params = plan->request.parameters();
  EXPECT_EQ(params.size(), 3u);  // the deprecated unprefixed keys stay
  EXPECT_EQ(params.at("type"), "ssd");
  EXPECT_EQ(params.count("csi.storage.k8s.io/fstype"), 0u);
  EXPECT_EQ(params.at("csiNodeStageSecretName"), "stage");
  EXPECT_EQ(plan->request.name(), "kubeletclient-sanity-filesystem-1234abcd");
  EXPECT_EQ(plan->request.capacity_range().required_bytes(), 1 << 30);
  ASSERT_EQ(plan->request.volume_capabilities_size(), 1);
  const csi::v1::VolumeCapability& capability = plan->request.volume_capabilities(0);
  EXPECT_EQ(capability.mount().fs_type(), "xfs");
  ASSERT_EQ(capability.mount().mount_flags_size(), 1);
  EXPECT_EQ(capability.mount().mount_flags(0), "noatime");
  EXPECT_EQ(capability.access_mode().mode(),
            csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  EXPECT_EQ(plan->fs_type, "xfs");
  EXPECT_EQ(plan->provisioner_secret, (SecretRef{"storage", "creds"}));
  EXPECT_EQ(plan->node_stage_secret, (SecretRef{"storage", "stage"}));
  EXPECT_FALSE(plan->node_publish_secret.has_value());
  EXPECT_EQ(plan->warnings.size(), 2u);  // the two deprecated keys
  EXPECT_FALSE(plan->request.has_accessibility_requirements());
}

TEST(PlanProvision, ABlockVolumeHasNoFsTypeOrMountFlags) {
  StorageClass sc = Class();
  sc.parameters = {{"csi.storage.k8s.io/fstype", "ext4"}};
  sc.mount_options = {"noatime"};
  ProvisionInput input = Input(sc);
  input.block = true;
  absl::StatusOr<ProvisionPlan> plan = PlanProvision(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->request.volume_capabilities(0).has_block());
  EXPECT_EQ(plan->fs_type, "");
}

TEST(PlanProvision, RefusesWhatTheProvisionerRefuses) {
  auto error = [](std::map<std::string, std::string> params) {
    StorageClass sc = Class();
    sc.parameters = std::move(params);
    absl::StatusOr<ProvisionPlan> plan = PlanProvision(Input(sc));
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(plan.status().message());
  };
  EXPECT_EQ(error({{"csi.storage.k8s.io/unknown", "x"}}),
            "failed to strip CSI Parameters of prefixed keys: found unknown parameter key "
            "\"csi.storage.k8s.io/unknown\" with reserved namespace csi.storage.k8s.io/");
  EXPECT_EQ(error({{"fsType", "ext4"}, {"csi.storage.k8s.io/fstype", "xfs"}}),
            "fstype specified in parameters with both \"fstype\" and "
            "\"csi.storage.k8s.io/fstype\" keys");
  EXPECT_EQ(error({{"csi.storage.k8s.io/node-stage-secret-name", "s"}}),
            "failed to get name and namespace template from params: either name and namespace "
            "for NodeStage secrets specified, Both must be specified");
  EXPECT_EQ(error({{"csiProvisionerSecretName", "a"},
                   {"csiProvisionerSecretNamespace", "b"},
                   {"csi.storage.k8s.io/provisioner-secret-name", "a"},
                   {"csi.storage.k8s.io/provisioner-secret-namespace", "b"}}),
            "failed to get name and namespace template from params: Provisioner secrets "
            "specified in parameters with both \"csi\" and \"csi.storage.k8s.io/\" keys");
  EXPECT_EQ(error({{"csi.storage.k8s.io/node-publish-secret-name", "${pvc.annotations['x']}"},
                   {"csi.storage.k8s.io/node-publish-secret-namespace", "ns"}}),
            "error resolving value \"${pvc.annotations['x']}\": invalid tokens: "
            "[\"pvc.annotations['x']\"]");
  EXPECT_EQ(error({{"csi.storage.k8s.io/node-publish-secret-name", "Bad_Name"},
                   {"csi.storage.k8s.io/node-publish-secret-namespace", "ns"}}),
            "\"Bad_Name\" is not a valid secret name");
  EXPECT_EQ(error({{"csi.storage.k8s.io/node-publish-secret-name", "s"},
                   {"csi.storage.k8s.io/node-publish-secret-namespace", "${pvc.name}"}}),
            "error resolving value \"${pvc.name}\": invalid tokens: [\"pvc.name\"]");
}

TEST(PlanProvision, ResolvesTemplatesAndFallsBackToTheDefaultSecret) {
  StorageClass sc = Class();
  sc.parameters = {{"csi.storage.k8s.io/secret-name", "default-creds"},
                   {"csi.storage.k8s.io/secret-namespace", "storage"},
                   {"csi.storage.k8s.io/node-publish-secret-name", "${pvc.name}-publish"},
                   {"csi.storage.k8s.io/node-publish-secret-namespace", "${pvc.namespace}"}};
  absl::StatusOr<ProvisionPlan> plan = PlanProvision(Input(sc));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->node_publish_secret,
            (SecretRef{"kubeletclient-sanity", "sanity-fs-1-publish"}));
  // Every other call falls back to the default secret.
  EXPECT_EQ(plan->provisioner_secret, (SecretRef{"storage", "default-creds"}));
  EXPECT_EQ(plan->node_stage_secret, (SecretRef{"storage", "default-creds"}));
  EXPECT_EQ(plan->node_expand_secret, (SecretRef{"storage", "default-creds"}));
  EXPECT_TRUE(plan->request.parameters().empty());
}

TEST(PlanProvision, ImmediateBindingAsksForTheNodesTopology) {
  StorageClass sc = Class();
  ProvisionInput input = Input(sc);
  input.topology = true;
  input.node_topology = {{"topology.example.com/zone", "a"}, {"topology.example.com/rack", "1"}};
  absl::StatusOr<ProvisionPlan> plan = PlanProvision(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const csi::v1::TopologyRequirement& r = plan->request.accessibility_requirements();
  ASSERT_EQ(r.requisite_size(), 1);
  EXPECT_EQ(Segments(r.requisite(0)), "topology.example.com/rack=1;topology.example.com/zone=a;");
  ASSERT_EQ(r.preferred_size(), 1);
}

TEST(PlanProvision, NoTopologyCapabilityNoRequirement) {
  StorageClass sc = Class();
  sc.allowed_topologies = {{{{"topology.example.com/zone", {"a"}}}}};
  ProvisionInput input = Input(sc);
  input.topology = false;
  absl::StatusOr<ProvisionPlan> plan = PlanProvision(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->request.has_accessibility_requirements());
}

TEST(PlanProvision, AllowedTopologiesAreFlattenedAndTheSelectedNodeIsPreferred) {
  StorageClass sc = Class();
  sc.volume_binding_mode = "WaitForFirstConsumer";
  // zone in {a, b} AND rack in {1}, OR zone in {c}
  sc.allowed_topologies = {
      {{{"topology.example.com/zone", {"a", "b"}}, {"topology.example.com/rack", {"1"}}}},
      {{{"topology.example.com/zone", {"c"}}}}};
  ProvisionInput input = Input(sc);
  input.topology = true;
  input.node_topology = {{"topology.example.com/zone", "b"}, {"topology.example.com/rack", "1"}};
  absl::StatusOr<ProvisionPlan> plan = PlanProvision(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const csi::v1::TopologyRequirement& r = plan->request.accessibility_requirements();
  // Sorted: shorter terms first, then by segments.
  ASSERT_EQ(r.requisite_size(), 3);
  EXPECT_EQ(Segments(r.requisite(0)), "topology.example.com/zone=c;");
  EXPECT_EQ(Segments(r.requisite(1)), "topology.example.com/rack=1;topology.example.com/zone=a;");
  EXPECT_EQ(Segments(r.requisite(2)), "topology.example.com/rack=1;topology.example.com/zone=b;");
  // Preferred: the requisite rotated to start at the selected node's term.
  ASSERT_EQ(r.preferred_size(), 3);
  EXPECT_EQ(Segments(r.preferred(0)), "topology.example.com/rack=1;topology.example.com/zone=b;");
  EXPECT_EQ(Segments(r.preferred(1)), "topology.example.com/zone=c;");
  EXPECT_EQ(Segments(r.preferred(2)), "topology.example.com/rack=1;topology.example.com/zone=a;");
}

TEST(PlanProvision, ANodeOutsideTheAllowedTopologiesIsNeverSelected) {
  StorageClass sc = Class();
  sc.volume_binding_mode = "WaitForFirstConsumer";
  sc.allowed_topologies = {{{{"topology.example.com/zone", {"a"}}}}};
  ProvisionInput input = Input(sc);
  input.topology = true;
  // The class does not fit the node: bad input.
  input.node_topology = {{"topology.example.com/zone", "z"}};
  EXPECT_EQ(PlanProvision(input).status().code(), absl::StatusCode::kInvalidArgument);
  // The driver claims topology but gives the node none: no key for the selected node, the
  // driver's doing.
  input.node_topology.clear();
  EXPECT_EQ(PlanProvision(input).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(PlanProvision, ImmediateBindingRotatesByTheClaimNamesHash) {
  StorageClass sc = Class();
  sc.allowed_topologies = {{{{"zone", {"a", "b", "c"}}}}};
  ProvisionInput input = Input(sc);
  input.topology = true;
  // A StatefulSet's claim "data-www-4": the hash of its set's name, offset by its index.
  input.claim_name = "data-www-4";
  absl::StatusOr<ProvisionPlan> plan = PlanProvision(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Go's hash/fnv New32 of "www" is 946209706 (go1.x, printed by a two-line program): (946209706
  // + 4) % 3 = 2, so the rotation starts at the third term.
  const int first = 2;
  const char* zones[] = {"a", "b", "c"};
  EXPECT_EQ(Segments(plan->request.accessibility_requirements().preferred(0)),
            std::string("zone=") + zones[first] + ";");
  // The same set's other member starts one further on.
  input.claim_name = "data-www-5";
  plan = PlanProvision(input);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Segments(plan->request.accessibility_requirements().preferred(0)),
            std::string("zone=") + zones[(first + 1) % 3] + ";");
}

TEST(AccessibleFrom, ANodeMatchesATermWhoseSegmentsItHasAll) {
  google::protobuf::RepeatedPtrField<csi::v1::Topology> accessible;
  EXPECT_TRUE(AccessibleFrom(accessible, {}));  // no affinity: any node
  (*accessible.Add()->mutable_segments())["zone"] = "a";
  auto* two = accessible.Add()->mutable_segments();
  (*two)["zone"] = "b";
  (*two)["rack"] = "1";
  EXPECT_TRUE(AccessibleFrom(accessible, {{"zone", "a"}, {"rack", "9"}}));
  EXPECT_TRUE(AccessibleFrom(accessible, {{"zone", "b"}, {"rack", "1"}}));
  EXPECT_FALSE(AccessibleFrom(accessible, {{"zone", "b"}, {"rack", "2"}}));
  EXPECT_FALSE(AccessibleFrom(accessible, {}));
}

TEST(ResolveTemplate, ExpandsAsGosOsExpand) {
  const std::map<std::string, std::string> params = {{"pv.name", "pv-1"}, {"x", "X"}};
  EXPECT_EQ(*ResolveTemplate("${pv.name}-secret", params), "pv-1-secret");
  EXPECT_EQ(*ResolveTemplate("$x-y", params), "X-y");
  EXPECT_EQ(*ResolveTemplate("a$", params), "a$");
  EXPECT_EQ(*ResolveTemplate("a$-b", params), "a$-b");
  EXPECT_EQ(ResolveTemplate("${nope}", params).status().message(), "invalid tokens: [\"nope\"]");
}

}  // namespace
}  // namespace ndr::kubelet
