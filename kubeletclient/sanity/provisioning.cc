#include "kubeletclient/sanity/provisioning.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/csi/csi_client.h"
#include "kubeletclient/objects/object_validation.h"

namespace ndr::kubelet {
namespace {

constexpr char kPrefix[] = "csi.storage.k8s.io/";
constexpr char kFsTypeKey[] = "csi.storage.k8s.io/fstype";

// One kind of secret's keys in the parameters (controller.go secretParamsMap): the reserved
// name and namespace keys, and for four of them the deprecated unprefixed ones.
struct SecretKeys {
  const char* what;
  const char* deprecated_name;
  const char* deprecated_namespace;
  const char* name;
  const char* ns;
};

constexpr SecretKeys kDefault = {"Default", nullptr, nullptr, "csi.storage.k8s.io/secret-name",
                                 "csi.storage.k8s.io/secret-namespace"};
constexpr SecretKeys kProvisioner = {"Provisioner", "csiProvisionerSecretName",
                                     "csiProvisionerSecretNamespace",
                                     "csi.storage.k8s.io/provisioner-secret-name",
                                     "csi.storage.k8s.io/provisioner-secret-namespace"};
constexpr SecretKeys kControllerPublish = {
    "ControllerPublish", "csiControllerPublishSecretName", "csiControllerPublishSecretNamespace",
    "csi.storage.k8s.io/controller-publish-secret-name",
    "csi.storage.k8s.io/controller-publish-secret-namespace"};
constexpr SecretKeys kNodeStage = {"NodeStage", "csiNodeStageSecretName",
                                   "csiNodeStageSecretNamespace",
                                   "csi.storage.k8s.io/node-stage-secret-name",
                                   "csi.storage.k8s.io/node-stage-secret-namespace"};
constexpr SecretKeys kNodePublish = {"NodePublish", "csiNodePublishSecretName",
                                     "csiNodePublishSecretNamespace",
                                     "csi.storage.k8s.io/node-publish-secret-name",
                                     "csi.storage.k8s.io/node-publish-secret-namespace"};
constexpr SecretKeys kControllerExpand = {
    "ControllerExpand", nullptr, nullptr, "csi.storage.k8s.io/controller-expand-secret-name",
    "csi.storage.k8s.io/controller-expand-secret-namespace"};
constexpr SecretKeys kNodeExpand = {"NodeExpand", nullptr, nullptr,
                                    "csi.storage.k8s.io/node-expand-secret-name",
                                    "csi.storage.k8s.io/node-expand-secret-namespace"};
constexpr SecretKeys kControllerModify = {
    "ControllerModify", nullptr, nullptr, "csi.storage.k8s.io/controller-modify-secret-name",
    "csi.storage.k8s.io/controller-modify-secret-namespace"};

// verifyAndGetSecretNameAndNamespaceTemplate: the name and namespace templates of `keys`
// ("" and "" when the class names none), or the error.
absl::Status Templates(const SecretKeys& keys, const std::map<std::string, std::string>& params,
                       std::string* name, std::string* ns, std::vector<std::string>* warnings) {
  int names = 0, namespaces = 0;
  auto take = [&](const char* key, std::string* out, int* count, bool deprecated,
                  const char* instead) {
    if (key == nullptr) return;
    auto it = params.find(key);
    if (it == params.end()) return;
    *out = it->second;
    ++*count;
    if (deprecated) {
      warnings->push_back(absl::StrCat("\"", key,
                                       "\" is deprecated and will be removed in a future release, "
                                       "please use \"",
                                       instead, "\" instead"));
    }
  };
  take(keys.deprecated_name, name, &names, true, keys.name);
  take(keys.deprecated_namespace, ns, &namespaces, true, keys.ns);
  take(keys.name, name, &names, false, nullptr);
  take(keys.ns, ns, &namespaces, false, nullptr);
  if (names > 1 || namespaces > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        keys.what, " secrets specified in parameters with both \"csi\" and \"", kPrefix,
        "\" keys"));
  }
  if (names != namespaces) {
    return absl::InvalidArgumentError(
        absl::StrCat("either name and namespace for ", keys.what,
                     " secrets specified, Both must be specified"));
  }
  if (names == 1 && (name->empty() || ns->empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat(keys.what,
                     " secrets specified in parameters but value of either namespace or name is "
                     "empty"));
  }
  return absl::OkStatus();
}

// `text` resolved (ResolveTemplate) and checked by `valid` (a validation function's messages),
// in getSecretReference's words; `what` is "namespace name" or "secret name".
absl::StatusOr<std::string> ResolveChecked(
    const std::string& text, const std::map<std::string, std::string>& params,
    std::vector<std::string> (*valid)(absl::string_view), const char* what) {
  absl::StatusOr<std::string> resolved = ResolveTemplate(text, params);
  if (!resolved.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("error resolving value \"", text, "\": ", resolved.status().message()));
  }
  if (!valid(*resolved).empty()) {
    return absl::InvalidArgumentError(
        *resolved == text ? absl::StrCat("\"", text, "\" is not a valid ", what)
                          : absl::StrCat("\"", text, "\" resolved to \"", *resolved,
                                         "\" which is not a valid ", what));
  }
  return resolved;
}

// getSecretReference: the class's reference for `keys` (or its default one), resolved.
absl::StatusOr<std::optional<SecretRef>> Reference(const SecretKeys& keys,
                                                   const ProvisionInput& input,
                                                   std::vector<std::string>* warnings) {
  const std::map<std::string, std::string>& params = input.storage_class->parameters;
  std::string name, ns;
  if (absl::Status s = Templates(keys, params, &name, &ns, warnings); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "failed to get name and namespace template from params: ", s.message()));
  }
  if (name.empty() && ns.empty()) {
    if (absl::Status s = Templates(kDefault, params, &name, &ns, warnings); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "failed to get default name and namespace template from params: ", s.message()));
    }
  }
  if (name.empty() && ns.empty()) return std::nullopt;
  // The namespace may use the PV's name and the claim's namespace; the name also the claim's
  // name (and its annotations, of which the judge's claims have none).
  absl::StatusOr<std::string> resolved_ns =
      ResolveChecked(ns, {{"pv.name", input.pv_name}, {"pvc.namespace", input.claim_namespace}},
                     IsDns1123Label, "namespace name");
  if (!resolved_ns.ok()) return resolved_ns.status();
  absl::StatusOr<std::string> resolved_name =
      ResolveChecked(name,
                     {{"pv.name", input.pv_name},
                      {"pvc.name", input.claim_name},
                      {"pvc.namespace", input.claim_namespace}},
                     IsDns1123Subdomain, "secret name");
  if (!resolved_name.ok()) return resolved_name.status();
  return SecretRef{*resolved_ns, *resolved_name};
}

// A topology term: segments sorted by key (topology.go topologyTerm).
using Term = std::vector<std::pair<std::string, std::string>>;

// topologyTerm.subset: every segment of `t` is in `other`.
bool Subset(const Term& t, const Term& other) {
  for (const auto& segment : t) {
    if (std::find(other.begin(), other.end(), segment) == other.end()) return false;
  }
  return true;
}

// topology.go flatten: the OR of each term's AND of ORs, distributed out.
std::vector<Term> Flatten(const std::vector<TopologySelectorTerm>& allowed) {
  std::vector<Term> terms;
  for (const TopologySelectorTerm& selector : allowed) {
    std::vector<Term> partial;
    for (const TopologySelectorTerm::Expression& e : selector.match_label_expressions) {
      std::vector<Term> next;
      for (const std::string& value : e.values) {
        if (partial.empty()) {
          next.push_back({{e.key, value}});
        } else {
          for (Term t : partial) {
            t.emplace_back(e.key, value);
            next.push_back(t);
          }
        }
      }
      partial = next;
    }
    terms.insert(terms.end(), partial.begin(), partial.end());
  }
  for (Term& t : terms) std::sort(t.begin(), t.end());
  return terms;
}

// topologyTerm.compare: by length, then segment by segment.
bool TermLess(const Term& a, const Term& b) {
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

// getPVCNameHashAndIndexOffset (as pkg/volume/util's): FNV-1 (32 bits) of the claim's name, or of
// the part a StatefulSet's claims share, and the StatefulSet index.
void NameHashAndIndex(const std::string& claim_name, uint32_t* hash, uint32_t* index) {
  std::string hashed = claim_name;
  *index = 0;
  const size_t dash = claim_name.rfind('-');
  uint32_t id;
  if (dash != std::string::npos && absl::SimpleAtoi(claim_name.substr(dash + 1), &id) &&
      claim_name.substr(dash + 1).find_first_not_of("0123456789") == std::string::npos) {
    *index = id;
    hashed = claim_name.substr(0, dash);
    const size_t inner = hashed.rfind('-');
    if (inner != std::string::npos) hashed = hashed.substr(inner + 1);
  }
  uint32_t h = 2166136261u;
  for (unsigned char c : hashed) {
    h *= 16777619u;
    h ^= c;
  }
  *hash = h;
}

void AddTerms(const std::vector<Term>& terms,
              google::protobuf::RepeatedPtrField<csi::v1::Topology>* out) {
  for (const Term& t : terms) {
    if (t.empty()) continue;
    csi::v1::Topology* topology = out->Add();
    for (const auto& [key, value] : t) (*topology->mutable_segments())[key] = value;
  }
}

// GenerateAccessibilityRequirements for one node, the selected one when binding waits for the
// first consumer; nullopt: no requirement.
absl::StatusOr<std::optional<csi::v1::TopologyRequirement>> Accessibility(
    const ProvisionInput& input) {
  const StorageClass& sc = *input.storage_class;
  const bool selected = sc.volume_binding_mode == "WaitForFirstConsumer";
  const Term node(input.node_topology.begin(), input.node_topology.end());  // sorted by key
  if (selected && node.empty()) {
    // topologyKeysLookup finds no key in the node's CSINode entry.
    return absl::FailedPreconditionError(
        "no topology key found for node: the driver has VOLUME_ACCESSIBILITY_CONSTRAINTS but its "
        "NodeGetInfo gave no accessible_topology");
  }
  std::vector<Term> requisite;
  if (!sc.allowed_topologies.empty()) {
    requisite = Flatten(sc.allowed_topologies);
  } else {
    // aggregateTopologies over the nodes with the driver: this one. Without a selected node
    // only because --immediate-topology is on by default.
    if (!node.empty()) requisite.push_back(node);
    if (requisite.empty()) {
      return absl::FailedPreconditionError(
          "no available topology found: the driver has VOLUME_ACCESSIBILITY_CONSTRAINTS but its "
          "NodeGetInfo gave no accessible_topology");
    }
  }
  std::sort(requisite.begin(), requisite.end(), TermLess);
  requisite.erase(std::unique(requisite.begin(), requisite.end()), requisite.end());
  requisite.erase(std::remove_if(requisite.begin(), requisite.end(),
                                 [](const Term& t) { return t.empty(); }),
                  requisite.end());
  if (requisite.empty()) return std::nullopt;
  std::vector<Term> preferred;
  if (!selected) {
    uint32_t hash, index;
    NameHashAndIndex(input.claim_name, &hash, &index);
    const size_t i = (hash + index) % static_cast<uint32_t>(requisite.size());
    preferred.assign(requisite.begin() + i, requisite.end());
    preferred.insert(preferred.end(), requisite.begin(), requisite.begin() + i);
  } else {
    for (size_t i = 0; i < requisite.size(); ++i) {
      if (Subset(requisite[i], node)) {
        preferred.assign(requisite.begin() + i, requisite.end());
        preferred.insert(preferred.end(), requisite.begin(), requisite.begin() + i);
        break;
      }
    }
    if (preferred.empty()) {
      // The scheduler would not have chosen this node: it is outside allowedTopologies. The
      // class does not fit the node: bad input, not the driver's doing.
      std::vector<std::string> node_text;
      for (const auto& [key, value] : node) node_text.push_back(key + "=" + value);
      return absl::InvalidArgumentError(absl::StrCat(
          "the node's topology (", absl::StrJoin(node_text, ", "),
          ") is not in the StorageClass's allowedTopologies: the scheduler would never bind a "
          "claim of this class to this node"));
    }
  }
  csi::v1::TopologyRequirement requirement;
  AddTerms(requisite, requirement.mutable_requisite());
  AddTerms(preferred, requirement.mutable_preferred());
  return requirement;
}

}  // namespace

absl::StatusOr<std::string> ResolveTemplate(const std::string& text,
                                            const std::map<std::string, std::string>& params) {
  std::string out;
  std::vector<std::string> missing;
  auto name_char = [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    std::string name;
    if (text[i + 1] == '{') {
      const size_t end = text.find('}', i + 2);
      if (end == std::string::npos || end == i + 2) {  // bad syntax: Go eats "${"
        i += 1;
        continue;
      }
      name = text.substr(i + 2, end - i - 2);
      i = end;
    } else if (name_char(text[i + 1])) {
      size_t end = i + 1;
      while (end < text.size() && name_char(text[end])) ++end;
      name = text.substr(i + 1, end - i - 1);
      i = end - 1;
    } else {
      out += text[i];  // "$" not followed by a name stays
      continue;
    }
    auto it = params.find(name);
    if (it == params.end()) {
      missing.push_back(name);
    } else {
      out += it->second;
    }
  }
  if (!missing.empty()) {
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    std::vector<std::string> quoted;
    for (const std::string& m : missing) quoted.push_back("\"" + m + "\"");
    return absl::InvalidArgumentError(
        absl::StrCat("invalid tokens: [", absl::StrJoin(quoted, " "), "]"));
  }
  return out;
}

absl::StatusOr<ProvisionPlan> PlanProvision(const ProvisionInput& input) {
  const StorageClass& sc = *input.storage_class;
  ProvisionPlan plan;
  // prepareProvision: the fsType from "fstype" (any case, deprecated) or the reserved key.
  int fs_types = 0;
  std::string fs_type;
  for (const auto& [key, value] : sc.parameters) {
    const bool legacy = absl::AsciiStrToLower(key) == "fstype";
    if (legacy || key == kFsTypeKey) {
      fs_type = value;
      ++fs_types;
    }
    if (legacy) {
      plan.warnings.push_back(absl::StrCat("\"fstype\" is deprecated and will be removed in a future "
                                           "release, please use \"",
                                           kFsTypeKey, "\" instead"));
    }
  }
  if (fs_types > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fstype specified in parameters with both \"fstype\" and \"", kFsTypeKey, "\" keys"));
  }
  csi::v1::CreateVolumeRequest& request = plan.request;
  request.set_name(input.pv_name);
  request.mutable_capacity_range()->set_required_bytes(input.bytes);
  // getVolumeCapability: block, or mount with the fsType and the class's mount options.
  csi::v1::VolumeCapability* capability = request.add_volume_capabilities();
  capability->mutable_access_mode()->set_mode(CsiAccessMode(input.access_mode, false));
  if (input.block) {
    capability->mutable_block();
  } else {
    capability->mutable_mount()->set_fs_type(fs_type);
    for (const std::string& option : sc.mount_options) {
      capability->mutable_mount()->add_mount_flags(option);
    }
    plan.fs_type = fs_type;
  }
  plan.mount_options = sc.mount_options;
  if (input.topology) {
    absl::StatusOr<std::optional<csi::v1::TopologyRequirement>> requirement = Accessibility(input);
    if (!requirement.ok()) return requirement.status();
    if (requirement->has_value()) *request.mutable_accessibility_requirements() = **requirement;
  }
  struct {
    const SecretKeys& keys;
    std::optional<SecretRef>* out;
  } references[] = {{kProvisioner, &plan.provisioner_secret},
                    {kControllerPublish, &plan.controller_publish_secret},
                    {kNodeStage, &plan.node_stage_secret},
                    {kNodePublish, &plan.node_publish_secret},
                    {kControllerExpand, &plan.controller_expand_secret},
                    {kNodeExpand, &plan.node_expand_secret}};
  for (const auto& [keys, out] : references) {
    absl::StatusOr<std::optional<SecretRef>> ref = Reference(keys, input, &plan.warnings);
    if (!ref.ok()) return ref.status();
    *out = *ref;
  }
  // The controller-modify reference is checked as the provisioner checks it, and not used.
  if (absl::StatusOr<std::optional<SecretRef>> modify =
          Reference(kControllerModify, input, &plan.warnings);
      !modify.ok()) {
    return modify.status();
  }
  // removePrefixedParameters: the reserved keys go, an unknown one is an error; the deprecated
  // unprefixed secret keys stay.
  static const char* const kKnown[] = {
      kFsTypeKey,           kDefault.name,           kDefault.ns,
      kProvisioner.name,    kProvisioner.ns,         kControllerPublish.name,
      kControllerPublish.ns, kNodeStage.name,        kNodeStage.ns,
      kNodePublish.name,    kNodePublish.ns,         kControllerExpand.name,
      kControllerExpand.ns, kNodeExpand.name,        kNodeExpand.ns,
      kControllerModify.name, kControllerModify.ns};
  for (const auto& parameter : sc.parameters) {
    const std::string& key = parameter.first;
    if (!absl::StartsWith(key, kPrefix)) {
      (*request.mutable_parameters())[key] = parameter.second;
      continue;
    }
    if (std::find_if(std::begin(kKnown), std::end(kKnown),
                     [&](const char* known) { return key == known; }) == std::end(kKnown)) {
      return absl::InvalidArgumentError(
          absl::StrCat("failed to strip CSI Parameters of prefixed keys: found unknown parameter "
                       "key \"",
                       key, "\" with reserved namespace ", kPrefix));
    }
  }
  return plan;
}

bool AccessibleFrom(const google::protobuf::RepeatedPtrField<csi::v1::Topology>& accessible,
                    const std::map<std::string, std::string>& node) {
  if (accessible.empty()) return true;
  for (const csi::v1::Topology& topology : accessible) {
    bool all = true;
    for (const auto& [key, value] : topology.segments()) {
      auto it = node.find(key);
      all = all && it != node.end() && it->second == value;
    }
    if (all) return true;
  }
  return false;
}

}  // namespace ndr::kubelet
