// controller/..., <mode>/create-volume ... delete-volume: volumes made by the driver's own
// Controller service when no handle is given, as csi-sanity makes them (judge.h).
#include "kubeletclient/sanity/judge.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

bool Judge::Provision(const std::string& prefix, const std::string& mode, const std::string& handle,
                      const std::vector<std::string>& checks, Provisioned* volume) {
  volume->capability.block = mode == "block";
  if (!handle.empty()) {
    volume->handle = handle;
    return true;
  }
  std::vector<SentCall> calls;
  SanityController controller(ControllerEndpoint(), node_.timeout, &calls);
  const std::string name = absl::StrCat(
      "kubeletclient-sanity-", prefix.substr(0, prefix.size() - 1), "-", RandomUid().substr(0, 8));
  absl::StatusOr<csi::v1::Volume> created =
      controller.CreateVolume(name, volume->capacity, volume->capability);
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
    std::vector<std::string> details;
    if (!calls.empty()) details.push_back("request: " + Describe(calls.back()));
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
  Pass(prefix + "create-volume", kCreateRef,
       absl::StrCat("volume ", volume->handle, ", ", volume->capacity, " bytes, ",
                    volume->attributes.size(), " volume_context keys"));
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
  absl::StatusOr<StringMap> context = controller.ControllerPublishVolume(
      volume->handle, driver_.node_id, volume->capability, volume->attributes);
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
                      " publish_context keys"));
  }
  objects->attachments[attachment.name] = attachment;
}

void Judge::Deprovision(const std::string& prefix, const Provisioned& volume) {
  SanityController controller(ControllerEndpoint(), node_.timeout);
  if (volume.attached) {
    if (absl::Status s = controller.ControllerUnpublishVolume(volume.handle, driver_.node_id);
        !s.ok()) {
      Fail(prefix + "controller-unpublish", kAttachRef, "ControllerUnpublishVolume failed",
           {absl::StrCat("answer: ", s.message())});
    } else {
      Pass(prefix + "controller-unpublish", kAttachRef, "detached");
    }
  }
  if (volume.created) {
    if (absl::Status s = controller.DeleteVolume(volume.handle); !s.ok()) {
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
