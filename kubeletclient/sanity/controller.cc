// controller/..., <mode>/create-volume ... delete-volume: volumes made by the driver's own
// Controller service when no handle is given, as csi-sanity makes them (judge.h).
#include "kubeletclient/sanity/judge.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kubeletclient/sanity/provisioning.h"

namespace ndr::kubelet::sanity {

constexpr char kCreateRef[] =
    "not kubelet's: the external-provisioner's CreateVolume (and DeleteVolume at the end), "
    "whose volume_context becomes the PV's volumeAttributes, as csi-sanity makes volumes";
constexpr char kAttachRef[] =
    "not kubelet's: the external-attacher's ControllerPublishVolume to the node's ID (and "
    "ControllerUnpublishVolume at the end), whose publish_context becomes the VolumeAttachment's "
    "attachmentMetadata, which kubelet's WaitForAttach hands to NodeStageVolume and "
    "NodePublishVolume";

std::string Judge::ControllerEndpoint() const {
  return options_.controller_address.empty() ? driver_.endpoint : options_.controller_address;
}

namespace {

// What a StorageClass's secret reference is for, and the secrets file's keys for the same calls.
struct ClassSecret {
  std::optional<SecretRef> ProvisionPlan::*ref;
  const char* what;
  std::vector<const char*> file_keys;
};
const std::vector<ClassSecret>& ClassSecrets() {
  static const std::vector<ClassSecret> secrets = {
      {&ProvisionPlan::provisioner_secret, "CreateVolume and DeleteVolume",
       {"CreateVolumeSecret", "DeleteVolumeSecret"}},
      {&ProvisionPlan::controller_publish_secret,
       "ControllerPublishVolume and ControllerUnpublishVolume",
       {"ControllerPublishVolumeSecret", "ControllerUnpublishVolumeSecret"}},
      {&ProvisionPlan::node_stage_secret, "NodeStageVolume", {"NodeStageVolumeSecret"}},
      {&ProvisionPlan::node_publish_secret, "NodePublishVolume", {"NodePublishVolumeSecret"}},
      {&ProvisionPlan::controller_expand_secret, "ControllerExpandVolume", {}},
      {&ProvisionPlan::node_expand_secret, "NodeExpandVolume", {}},
  };
  return secrets;
}

}  // namespace

absl::StatusOr<StringMap> Judge::SecretData(const SecretRef& ref) const {
  auto it = given_.secrets.find(ref);
  if (it == given_.secrets.end()) {
    return absl::NotFoundError(absl::StrCat("Secret ", ref.first, "/", ref.second,
                                            " is not among --objects"));
  }
  return it->second.data;
}

absl::StatusOr<ProvisionPlan> Judge::PlanFromClass(const std::string& volume_name,
                                                   const std::string& claim_name,
                                                   const Provisioned& volume) const {
  ProvisionInput input;
  input.storage_class = storage_class_;
  input.pv_name = volume_name;
  input.claim_namespace = kNamespace;
  input.claim_name = claim_name;
  input.bytes = volume.capacity;
  input.access_mode = volume.capability.access_mode;
  input.block = volume.capability.block;
  input.topology = controller_.accessibility;
  input.node_topology = driver_.topology;
  return PlanProvision(input);
}

std::string Judge::ClaimName(const std::string& scenario, int index) {
  if (scenario == "generic-ephemeral") return "sanity-e-data";  // <pod>-<volume>: ephemeral.cc
  return absl::StrCat("sanity-", scenario == "block" ? "block" : "fs", "-", index);
}

bool Judge::PrepareProvisioning(const std::vector<std::string>& scenarios) {
  if (!options_.storage_class.empty()) {
    auto it = given_.storage_classes.find(options_.storage_class);
    if (it == given_.storage_classes.end()) {
      report_.error = absl::StrCat("--storage-class=", options_.storage_class,
                                   ": no StorageClass of that name among --objects");
      return false;
    }
    if (it->second.provisioner != driver_.name) {
      report_.error = absl::StrCat("--storage-class=", options_.storage_class, ": its provisioner is ",
                                   it->second.provisioner, ", not the driver judged (", driver_.name,
                                   "): the external-provisioner of ", driver_.name,
                                   " never makes its volumes");
      return false;
    }
    storage_class_ = &it->second;
  } else {
    std::vector<std::string> names;
    for (const auto& [name, storage_class] : given_.storage_classes) {
      if (storage_class.provisioner == driver_.name) names.push_back(name);
    }
    if (names.size() > 1) {
      report_.error = absl::StrCat("--objects has ", names.size(), " StorageClasses of driver ",
                                   driver_.name, " (", absl::StrJoin(names, ", "),
                                   "): say which with --storage-class=NAME");
      return false;
    }
    if (names.size() == 1) storage_class_ = &given_.storage_classes.at(names.front());
  }
  if (storage_class_ == nullptr) return true;
  // The class checked for each volume to be made, named as the judge names them: what the
  // external-provisioner refuses, and the Secrets it names, are bad input, said before anything
  // is sent.
  const std::string where = absl::StrCat("StorageClass ", storage_class_->name, ": ");
  for (const std::string& scenario : scenarios) {
    Provisioned trial;
    trial.capability.block = scenario == "block";
    const std::string trial_name = absl::StrCat("kubeletclient-sanity-", scenario, "-00000000");
    absl::StatusOr<ProvisionPlan> plan = PlanFromClass(trial_name, ClaimName(scenario, 1), trial);
    if (!plan.ok() && plan.status().code() == absl::StatusCode::kInvalidArgument) {
      report_.error = where + std::string(plan.status().message());
      return false;
    }
    if (!plan.ok()) continue;  // about the driver's topology: the create-volume check says it
    for (const ClassSecret& secret : ClassSecrets()) {
      const std::optional<SecretRef>& ref = (*plan).*(secret.ref);
      if (!ref.has_value()) continue;
      for (const char* key : secret.file_keys) {
        if (secrets_.Find(key) != nullptr) {
          report_.error = absl::StrCat(
              where, "it names Secret ", ref->first, "/", ref->second, " for ", secret.what,
              ", and --secrets-file has ", key, " for the same call: keep one of them");
          return false;
        }
      }
      if (absl::StatusOr<StringMap> data = SecretData(*ref); !data.ok()) {
        report_.error = absl::StrCat(
            where, "it names Secret ", ref->first, "/", ref->second, " for ", secret.what,
            " of the ", scenario, " volume (claim ", kNamespace, "/", ClaimName(scenario, 1),
            "), which is not among --objects: add that Secret to --objects",
            ref->second.find(trial_name) != std::string::npos
                ? " (its name is made from the PV's name, ${pv.name}, and the judge's volumes are "
                  "named kubeletclient-sanity-<scenario>-<random>: name the Secret without "
                  "${pv.name} to judge with it)"
                : "");
        return false;
      }
    }
  }
  return true;
}

bool Judge::Provision(const std::string& prefix, const std::string& mode, const std::string& handle,
                      const std::string& claim_name, const std::vector<std::string>& checks,
                      Provisioned* volume) {
  volume->capability.block = mode == "block";
  // The secrets file's node secrets, for every volume; a StorageClass's own replace them below.
  if (secrets_.Find("NodeStageVolumeSecret") != nullptr) {
    volume->node_stage_secret = SecretRef{kNamespace, kFileNodeStageSecret};
  }
  if (secrets_.Find("NodePublishVolumeSecret") != nullptr) {
    volume->node_publish_secret = SecretRef{kNamespace, kFileNodePublishSecret};
  }
  if (!handle.empty()) {
    volume->handle = handle;
    return true;
  }
  auto file_secrets = [&](const char* key) {
    const StringMap* secrets = secrets_.Find(key);
    return secrets == nullptr ? StringMap() : *secrets;
  };
  const std::string name = absl::StrCat(
      "kubeletclient-sanity-", prefix.substr(0, prefix.size() - 1), "-", RandomUid().substr(0, 8));
  csi::v1::CreateVolumeRequest request;
  std::vector<std::string> notes;
  std::optional<csi::v1::TopologyRequirement> requirement;
  volume->delete_secrets = file_secrets("DeleteVolumeSecret");
  volume->publish_secrets = file_secrets("ControllerPublishVolumeSecret");
  volume->unpublish_secrets = file_secrets("ControllerUnpublishVolumeSecret");
  if (storage_class_ == nullptr) {
    request.set_name(name);
    request.mutable_capacity_range()->set_required_bytes(volume->capacity);
    const StringMap create_secrets = file_secrets("CreateVolumeSecret");
    request.mutable_secrets()->insert(create_secrets.begin(), create_secrets.end());
  } else {
    absl::StatusOr<ProvisionPlan> plan = PlanFromClass(name, claim_name, *volume);
    if (!plan.ok()) {
      Fail(prefix + "create-volume", kCreateRef,
           absl::StrCat("the external-provisioner would not call CreateVolume for StorageClass ",
                        storage_class_->name),
           {std::string(plan.status().message())});
      SkipChecks(prefix, checks, "no volume to judge with");
      return false;
    }
    request = plan->request;
    notes.push_back(absl::StrCat("StorageClass ", storage_class_->name, " (",
                                 storage_class_->volume_binding_mode, ", reclaimPolicy ",
                                 storage_class_->reclaim_policy, ")"));
    for (const std::string& warning : plan->warnings) notes.push_back("warning: " + warning);
    // The references were found at the start (PrepareProvisioning); a name made from the PV's
    // could still be missing.
    auto data = [&](const std::optional<SecretRef>& ref, StringMap* out) {
      if (!ref.has_value()) return absl::OkStatus();
      absl::StatusOr<StringMap> found = SecretData(*ref);
      if (!found.ok()) return found.status();
      *out = *found;
      return absl::OkStatus();
    };
    StringMap create_secrets = file_secrets("CreateVolumeSecret");
    absl::Status found = data(plan->provisioner_secret, &create_secrets);
    if (found.ok()) found = data(plan->provisioner_secret, &volume->delete_secrets);
    if (found.ok()) found = data(plan->controller_publish_secret, &volume->publish_secrets);
    if (found.ok()) found = data(plan->controller_publish_secret, &volume->unpublish_secrets);
    if (!found.ok()) {
      const std::string why = absl::StrCat("bad input: StorageClass ", storage_class_->name,
                                           " names a Secret that is not given: ", found.message());
      Skip(prefix + "create-volume", kCreateRef, why);
      SkipChecks(prefix, checks, why);
      return false;
    }
    request.mutable_secrets()->insert(create_secrets.begin(), create_secrets.end());
    volume->fs_type = plan->fs_type;
    volume->mount_options = plan->mount_options;
    volume->capability.fs_type = plan->fs_type;
    volume->capability.mount_flags = plan->mount_options;
    if (plan->node_stage_secret.has_value()) volume->node_stage_secret = plan->node_stage_secret;
    if (plan->node_publish_secret.has_value()) {
      volume->node_publish_secret = plan->node_publish_secret;
    }
    volume->node_expand_secret = plan->node_expand_secret;
    volume->retained = storage_class_->reclaim_policy == "Retain";
    if (request.has_accessibility_requirements()) requirement = request.accessibility_requirements();
  }
  if (request.volume_capabilities().empty()) {
    csi::v1::VolumeCapability* capability = request.add_volume_capabilities();
    capability->mutable_access_mode()->set_mode(
        CsiAccessMode(volume->capability.access_mode, false));
    if (volume->capability.block) {
      capability->mutable_block();
    } else {
      capability->mutable_mount();
    }
  }
  std::vector<SentCall> calls;
  SanityController controller(ControllerEndpoint(), node_.timeout, &calls);
  absl::StatusOr<csi::v1::Volume> created = controller.CreateVolume(request);
  // Everything sent is shown (secrets redacted), on a PASS too.
  const std::string sent = calls.empty() ? "" : "request: " + Describe(calls.back());
  if (!created.ok()) {
    const absl::StatusCode code = created.status().code();
    if (options_.volume_modes.empty() && (code == absl::StatusCode::kInvalidArgument ||
                                          code == absl::StatusCode::kUnimplemented ||
                                          code == absl::StatusCode::kFailedPrecondition)) {
      // The driver refuses the mode where it first can, as publish may: not asked for, skipped.
      const std::string why =
          absl::StrCat("the driver refuses ", mode, " volumes at CreateVolume: ",
                       created.status().message());
      Skip(prefix + "create-volume", kCreateRef, why);
      SkipChecks(prefix, checks, why);
      return false;
    }
    std::vector<std::string> details = notes;
    details.push_back(sent);
    details.push_back(absl::StrCat("answer: ", created.status().message()));
    Fail(prefix + "create-volume", kCreateRef, "CreateVolume failed", details);
    SkipChecks(prefix, checks, "no volume to judge with");
    return false;
  }
  volume->created = true;
  volume->handle = created->volume_id();
  volume->attributes =
      StringMap(created->volume_context().begin(), created->volume_context().end());
  if (created->capacity_bytes() > 0) volume->capacity = created->capacity_bytes();
  std::vector<std::string> details = notes;
  details.push_back(sent);
  if (!AccessibleFrom(created->accessible_topology(), driver_.topology)) {
    // The PV's node affinity (its accessible_topology) excludes this node.
    std::vector<std::string> where;
    for (const csi::v1::Topology& t : created->accessible_topology()) {
      std::vector<std::string> segments;
      for (const auto& [key, value] : t.segments()) segments.push_back(key + "=" + value);
      where.push_back("{" + absl::StrJoin(segments, ", ") + "}");
    }
    details.push_back("accessible_topology: " + absl::StrJoin(where, " "));
    // Outside every requisite term that holds this node alone: the driver broke the request
    // (CSI: the volume MUST be accessible from at least one requisite topology). Otherwise the
    // class let it go elsewhere, and the scheduler would run its pods there.
    bool only_this_node = requirement.has_value() && !requirement->requisite().empty();
    if (only_this_node) {
      for (const csi::v1::Topology& t : requirement->requisite()) {
        only_this_node = only_this_node && AccessibleFrom(
            google::protobuf::RepeatedPtrField<csi::v1::Topology>(&t, &t + 1), driver_.topology);
      }
    }
    if (only_this_node) {
      Fail(prefix + "create-volume", kCreateRef,
           "the created volume is not accessible from the requisite topology CreateVolume asked "
           "for (this node's)",
           details);
      SkipChecks(prefix, checks, "no volume this node can use");
    } else {
      Skip(prefix + "create-volume", kCreateRef,
           "the volume was made where this node cannot use it (its accessible_topology is "
           "another; the scheduler would run its pods elsewhere): give allowedTopologies or "
           "WaitForFirstConsumer that keep it on this node");
      SkipChecks(prefix, checks, "no volume this node can use");
    }
    Deprovision(prefix, *volume);
    return false;
  }
  Pass(prefix + "create-volume", kCreateRef,
       absl::StrCat("volume ", volume->handle, ", ", volume->capacity, " bytes, ",
                    volume->attributes.size(), " volume_context keys"),
       details);
  return true;
}

void Judge::Attach(const std::string& prefix, const std::string& pv_name, Provisioned* volume,
                   ObjectSet* objects) {
  const CsiDriverObject& csi_driver = objects->csi_drivers.at(driver_.name);
  if (!volume->created || !controller_.publish_unpublish ||
      !csi_driver.attach_required.value_or(true)) {
    return;
  }
  std::vector<SentCall> calls;
  SanityController controller(ControllerEndpoint(), node_.timeout, &calls);
  absl::StatusOr<StringMap> context =
      controller.ControllerPublishVolume(volume->handle, driver_.node_id, volume->capability,
                                         volume->attributes, volume->publish_secrets);
  VolumeAttachment attachment;
  attachment.name = AttachmentName(volume->handle, driver_.name, node_.node_name);
  attachment.attacher = driver_.name;
  attachment.node_name = node_.node_name;
  attachment.persistent_volume_name = pv_name;
  if (!context.ok()) {
    // Kubelet's WaitForAttach then fails the publish with the attachment's error.
    attachment.attach_error = std::string(context.status().message());
    std::vector<std::string> details;
    if (!calls.empty()) details.push_back("request: " + Describe(calls.back()));
    details.push_back(absl::StrCat("answer: ", context.status().message()));
    Fail(prefix + "controller-publish", kAttachRef, "ControllerPublishVolume failed", details);
  } else {
    volume->attached = true;
    attachment.attached = true;
    attachment.attachment_metadata = *context;
    Pass(prefix + "controller-publish", kAttachRef,
         absl::StrCat("attached to node ID ", driver_.node_id, ", ", context->size(),
                      " publish_context keys"),
         {calls.empty() ? "" : "request: " + Describe(calls.back())});
  }
  objects->attachments[attachment.name] = attachment;
}

void Judge::Deprovision(const std::string& prefix, const Provisioned& volume) {
  SanityController controller(ControllerEndpoint(), node_.timeout);
  if (volume.attached) {
    if (absl::Status s = controller.ControllerUnpublishVolume(volume.handle, driver_.node_id,
                                                              volume.unpublish_secrets);
        !s.ok()) {
      Fail(prefix + "controller-unpublish", kAttachRef, "ControllerUnpublishVolume failed",
           {absl::StrCat("answer: ", s.message())});
    } else {
      Pass(prefix + "controller-unpublish", kAttachRef, "detached");
    }
  }
  if (volume.created && volume.retained) {
    Skip(prefix + "delete-volume", kCreateRef,
         absl::StrCat("the StorageClass's reclaimPolicy is Retain: volume ", volume.handle,
                      " is left on the driver's storage, as a cluster leaves it; delete it there"));
  } else if (volume.created) {
    if (absl::Status s = controller.DeleteVolume(volume.handle, volume.delete_secrets); !s.ok()) {
      Fail(prefix + "delete-volume", kCreateRef, "DeleteVolume failed",
           {absl::StrCat("answer: ", s.message())});
    } else {
      Pass(prefix + "delete-volume", kCreateRef,
           absl::StrCat("volume ", volume.handle, " deleted"));
    }
  }
}

bool Judge::ReadControllerCapabilities(const std::vector<std::string>& without_handle) {
  const std::string ref =
      "not kubelet's: GetPluginCapabilities and ControllerGetCapabilities, as csi-sanity asks "
      "before it creates volumes";
  const std::string no_handle =
      options_.volume_handles.empty() && options_.scenario_handles.empty()
          ? "no --volume-handle was given"
          : absl::StrCat("no --volume-handle was given for ", absl::StrJoin(without_handle, ", "));
  SanityController controller(ControllerEndpoint(), node_.timeout);
  absl::StatusOr<ControllerCapabilities> capabilities = controller.Capabilities();
  if (!capabilities.ok()) {
    Fail("controller/capabilities", ref, "the driver's capabilities could not be read",
         {std::string(capabilities.status().message())});
    report_.error = no_handle + ", and the driver's controller capabilities could not be read";
    return false;
  }
  controller_ = *capabilities;
  if (!controller_.create_delete) {
    report_.error = absl::StrCat(
        no_handle, ", and driver ", driver_.name, " cannot create volumes (",
        controller_.service ? "its Controller service lacks CREATE_DELETE_VOLUME"
                            : "it has no Controller service",
        "): give --volume-handle=H, a volume the driver knows (or SCENARIO=H for each of ",
        absl::StrJoin(without_handle, ", "), ")");
    return false;
  }
  Pass("controller/capabilities", ref,
       absl::StrCat("CONTROLLER_SERVICE: CREATE_DELETE_VOLUME",
                    controller_.publish_unpublish ? ", PUBLISH_UNPUBLISH_VOLUME" : ""));
  return true;
}

}  // namespace ndr::kubelet::sanity
