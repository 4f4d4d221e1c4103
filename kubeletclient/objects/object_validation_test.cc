// The API server's rules and texts, as kubeletclient applies them. The expected texts are
// written from Kubernetes v1.26 (k8s.io/apimachinery/pkg/util/validation/validation.go,
// .../util/validation/field/errors.go, pkg/apis/core/validation/validation.go,
// pkg/apis/storage/validation/validation.go), not from this code.
#include "kubeletclient/objects/object_validation.h"

#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kLabelRule[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr char kSubdomainRule[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

TEST(GoQuoteTest, QuotesAsStrconvQuote) {
  EXPECT_EQ(GoQuote("plain"), "\"plain\"");
  EXPECT_EQ(GoQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(GoQuote(std::string("n\nt\tz\0e\x1b", 8)), "\"n\\nt\\tz\\x00e\\x1b\"");
  EXPECT_EQ(GoQuote("\xE2\x82\xAC"), "\"\xE2\x82\xAC\"");  // printable UTF-8 stays
  EXPECT_EQ(GoQuote(std::string(300, 'a')), "\"" + std::string(256, 'a') + "\"...");
}

// apimachinery validation.go IsQualifiedName: label keys, such as a driver's topology keys.
TEST(NameRulesTest, QualifiedName) {
  for (const char* good : {"zone", "topology.kubernetes.io/zone", "a_b.c-D", "example.com/X1"}) {
    EXPECT_THAT(IsQualifiedName(good), IsEmpty()) << good;
  }
  EXPECT_THAT(IsQualifiedName(std::string(63, 'a')), IsEmpty());
  EXPECT_THAT(IsQualifiedName(std::string(64, 'a')),
              ElementsAre("name part must be no more than 63 characters"));
  EXPECT_THAT(IsQualifiedName("/zone"), ElementsAre("prefix part must be non-empty"));
  EXPECT_THAT(IsQualifiedName("Example.com/zone"),
              ElementsAre(::testing::StartsWith("prefix part a lowercase RFC 1123 subdomain")));
  for (const char* bad : {"", "-zone", "zone-", "my zone", "a/b/c", "x/"}) {
    EXPECT_THAT(IsQualifiedName(bad), ::testing::Not(IsEmpty())) << bad;
  }
  EXPECT_THAT(IsQualifiedName("zone!"),
              ElementsAre(::testing::StartsWith("name part must consist of alphanumeric")));
}

TEST(NameRulesTest, Dns1123LabelAndSubdomain) {
  EXPECT_THAT(IsDns1123Label("my-name"), IsEmpty());
  EXPECT_THAT(IsDns1123Label("123-abc"), IsEmpty());
  EXPECT_THAT(IsDns1123Label(std::string(63, 'a')), IsEmpty());
  EXPECT_THAT(IsDns1123Label(std::string(64, 'a')),
              ElementsAre("must be no more than 63 characters"));
  for (const char* bad : {"", "-a", "a-", "A", "a.b", "a_b", "..", "a/b"}) {
    EXPECT_THAT(IsDns1123Label(bad), ElementsAre(kLabelRule)) << bad;
  }
  EXPECT_THAT(IsDns1123Subdomain("example.com"), IsEmpty());
  EXPECT_THAT(IsDns1123Subdomain("pvc-5f3a.b-7"), IsEmpty());
  EXPECT_THAT(IsDns1123Subdomain(std::string(253, 'a')), IsEmpty());
  EXPECT_THAT(IsDns1123Subdomain(std::string(254, 'a')),
              ElementsAre("must be no more than 253 characters"));
  for (const char* bad : {"", ".", "..", "a..b", "a.-b", "a.", "../../x", "Web", "a b"}) {
    EXPECT_THAT(IsDns1123Subdomain(bad), ElementsAre(kSubdomainRule)) << bad;
  }
  EXPECT_THAT(IsDns1123Subdomain(std::string(254, '.')),
              ElementsAre("must be no more than 253 characters", kSubdomainRule));
}

TEST(NameRulesTest, ConfigMapKeyAndPathSegment) {
  EXPECT_THAT(IsConfigMapKey("key.name"), IsEmpty());
  EXPECT_THAT(IsConfigMapKey("KEY_NAME"), IsEmpty());
  EXPECT_THAT(IsConfigMapKey(".dotfile"), IsEmpty());
  EXPECT_THAT(IsConfigMapKey("."), ElementsAre("must not be '.'"));
  EXPECT_THAT(IsConfigMapKey(".."), ElementsAre("must not be '..'"));
  EXPECT_THAT(IsConfigMapKey("..x"), ElementsAre("must not start with '..'"));
  EXPECT_THAT(IsConfigMapKey("a/b"),
              ElementsAre("a valid config key must consist of alphanumeric characters, '-', '_' "
                          "or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used "
                          "for validation is '[-._a-zA-Z0-9]+')"));
  EXPECT_THAT(IsValidPathSegmentName("d5b7a2a8-1c2e"), IsEmpty());
  EXPECT_THAT(IsValidPathSegmentName(".."), ElementsAre("may not be '..'"));
  EXPECT_THAT(IsValidPathSegmentName("."), ElementsAre("may not be '.'"));
  EXPECT_THAT(IsValidPathSegmentName("a/b%c"),
              ElementsAre("may not contain '/'", "may not contain '%'"));
}

TEST(FieldErrorsTest, PrintsAsTheApiServer) {
  FieldErrors one;
  one.Invalid("metadata.name", "Foo", "bad");
  EXPECT_THAT(one.ToStatus(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       "metadata.name: Invalid value: \"Foo\": bad"));
  FieldErrors several;
  several.Required("metadata.namespace");
  several.Duplicate("spec.volumes[1].name", "x");
  several.Duplicate("spec.volumes[1].name", "x");  // the aggregate drops repeats
  several.TooLong("spec.csi.driver", 63);
  several.NotSupported("spec.accessModes", "Sometimes", {"ReadOnlyMany", "ReadWriteOnce"});
  several.Forbidden("spec.volumes[0].csi", "may not specify more than 1 volume type");
  EXPECT_EQ(several.ToStatus().message(),
            "[metadata.namespace: Required value, spec.volumes[1].name: Duplicate value: \"x\", "
            "spec.csi.driver: Too long: must have at most 63 bytes, spec.accessModes: "
            "Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", "
            "\"ReadWriteOnce\", spec.volumes[0].csi: Forbidden: may not specify more than 1 "
            "volume type]");
  EXPECT_THAT(FieldErrors().ToStatus(), IsOk());
}

Pod ValidPod() {
  Pod pod;
  pod.name = "web-7d9c5b8f4-x2x9k";  // a generated name
  pod.ns = "shop";
  pod.uid = "d5b7a2a8-1c2e-4f5b-9b1a-3f0c2e1d4a55";
  pod.service_account = "web-sa";
  PodVolume inline_volume;
  inline_volume.name = "inline-vol";
  inline_volume.csi = CsiVolumeSource{"sample.csi.example.com", false, "", {{"color", "blue"}},
                                      "creds"};
  inline_volume.source_types = {"csi"};
  PodVolume claim;
  claim.name = "data";
  claim.claim_name = "data-web-0";
  claim.source_types = {"persistentVolumeClaim"};
  PodVolume scratch;
  scratch.name = "scratch";
  scratch.ephemeral_claim_template = true;
  scratch.source_types = {"ephemeral"};
  pod.volumes = {inline_volume, claim, scratch};
  Container app;
  app.field = "spec.containers[0]";
  app.volume_mounts = {"inline-vol", "data"};
  app.volume_devices = {"scratch"};
  app.se_linux = SeLinuxOptions{"system_u", "system_r", "container_t", "s0:c123,c456"};
  pod.containers = {app};
  return pod;
}

TEST(ValidatePodTest, RealisticPodsPass) {
  EXPECT_THAT(ValidatePod(ValidPod()), IsOk());
  Pod pod = ValidPod();
  pod.name = "db.primary-0";                   // dots are allowed in pod names
  pod.ns = std::string(63, 'n');               // the longest namespace
  pod.uid = "8d3f0b1e2c7a4b19a1f0c3d2e5b6a7f8";  // a static pod's (md5 hex)
  pod.volumes[0].csi->driver = "CSI.Example.COM";  // drivers may use capitals
  EXPECT_THAT(ValidatePod(pod), IsOk());
}

TEST(ValidatePodTest, EachRuleNamesTheFieldTheValueAndTheRule) {
  struct Case {
    const char* name;
    std::function<void(Pod*)> mutate;
    std::string error;
  } cases[] = {
      {"traversal in the UID", [](Pod* p) { p->uid = "../../../../tmp/escape-uid"; },
       "metadata.uid: Invalid value: \"../../../../tmp/escape-uid\": may not contain '/'"},
      {"UID ..", [](Pod* p) { p->uid = ".."; }, "metadata.uid: Invalid value: \"..\": may not be '..'"},
      {"UID with a newline", [](Pod* p) { p->uid = "a\nb"; },
       "metadata.uid: Invalid value: \"a\\nb\": may not contain control characters"},
      {"UID too long", [](Pod* p) { p->uid = std::string(129, 'u'); },
       "metadata.uid: Too long: must have at most 128 bytes"},
      {"name", [](Pod* p) { p->name = "Web_0"; },
       std::string("metadata.name: Invalid value: \"Web_0\": ") + kSubdomainRule},
      {"namespace", [](Pod* p) { p->ns = "shop.eu"; },
       std::string("metadata.namespace: Invalid value: \"shop.eu\": ") + kLabelRule},
      {"namespace too long", [](Pod* p) { p->ns = std::string(64, 'n'); },
       "metadata.namespace: Invalid value: \"" + std::string(64, 'n') +
           "\": must be no more than 63 characters"},
      {"service account", [](Pod* p) { p->service_account = "../sa"; },
       std::string("spec.serviceAccountName: Invalid value: \"../sa\": ") + kSubdomainRule},
      {"traversal in a volume name",
       [](Pod* p) { p->volumes[0].name = "../../../../../escape-vol"; },
       std::string("spec.volumes[0].name: Invalid value: \"../../../../../escape-vol\": ") +
           kLabelRule},
      {"volume name with a dot", [](Pod* p) { p->volumes[1].name = "my.data"; },
       std::string("spec.volumes[1].name: Invalid value: \"my.data\": ") + kLabelRule},
      {"duplicate volume name", [](Pod* p) { p->volumes[1].name = "inline-vol"; },
       "spec.volumes[1].name: Duplicate value: \"inline-vol\""},
      {"two sources",
       [](Pod* p) {
         p->volumes[1].csi = p->volumes[0].csi;
         p->volumes[1].source_types = {"persistentVolumeClaim", "csi"};
       },
       "spec.volumes[1].csi: Forbidden: may not specify more than 1 volume type"},
      {"ephemeral without a claim template",
       [](Pod* p) { p->volumes[2].ephemeral_claim_template = false; },
       "spec.volumes[2].ephemeral.volumeClaimTemplate: Required value"},
      // ValidateVolumeMounts, ValidateVolumeDevices.
      {"mount of no volume", [](Pod* p) { p->containers[0].volume_mounts.push_back("nope"); },
       "spec.containers[0].volumeMounts[2].name: Not found: \"nope\""},
      {"mount of an invalid volume",
       [](Pod* p) {
         p->volumes[1].name = "Data";
         p->containers[0].volume_mounts[1] = "Data";
       },
       "spec.containers[0].volumeMounts[1].name: Not found: \"Data\""},
      {"device of no volume", [](Pod* p) { p->containers[0].volume_devices.push_back("nope"); },
       "spec.containers[0].volumeDevices[1].name: Not found: \"nope\""},
      {"device of an inline CSI volume",
       [](Pod* p) { p->containers[0].volume_devices.push_back("inline-vol"); },
       "spec.containers[0].volumeDevices[1].name: Invalid value: \"inline-vol\": can only use "
       "volume source type of PersistentVolumeClaim or Ephemeral for block mode"},
      {"device twice", [](Pod* p) { p->containers[0].volume_devices.push_back("scratch"); },
       "spec.containers[0].volumeDevices[1].name: Invalid value: \"scratch\": must be unique"},
      {"both mount and device", [](Pod* p) { p->containers[0].volume_mounts.push_back("scratch"); },
       "spec.containers[0].volumeMounts[2].name: Invalid value: \"scratch\": must not already "
       "exist in volumeDevices"},
      {"SELinux level with a quote",
       [](Pod* p) { p->containers[0].se_linux->level = "s0\",x"; },
       "spec.containers[0].securityContext.seLinuxOptions.level: Invalid value: \"s0\\\",x\": "
       "may contain only letters, digits, '_', '.', ':', ',' and '-'"},
      {"SELinux user too long",
       [](Pod* p) { p->se_linux = SeLinuxOptions{std::string(257, 'u'), "", "", ""}; },
       "spec.securityContext.seLinuxOptions.user: Too long: must have at most 256 bytes"},
      {"driver escapes", [](Pod* p) { p->volumes[0].csi->driver = "../../x"; },
       std::string("spec.volumes[0].csi.driver: Invalid value: \"../../x\": ") + kSubdomainRule},
      {"driver too long", [](Pod* p) { p->volumes[0].csi->driver = std::string(64, 'd'); },
       "spec.volumes[0].csi.driver: Too long: must have at most 63 bytes"},
      {"secret name", [](Pod* p) { p->volumes[0].csi->node_publish_secret_name = "../creds"; },
       std::string("spec.volumes[0].csi.nodePublishSecretRef.name: Invalid value: "
                   "\"../creds\": ") +
           kSubdomainRule},
      {"empty attribute key", [](Pod* p) { p->volumes[0].csi->volume_attributes[""] = "x"; },
       "spec.volumes[0].csi.volumeAttributes: Invalid value: \"\": keys must not be empty"},
      {"attributes over 4 KiB",
       [](Pod* p) { p->volumes[0].csi->volume_attributes["big"] = std::string(4085, 'x'); },
       "spec.volumes[0].csi.volumeAttributes: Invalid value: \"4097 bytes\": must be at most "
       "4096 bytes in all, keys and values (the CSI spec's limit for a volume_context)"},
  };
  for (const Case& c : cases) {
    Pod pod = ValidPod();
    c.mutate(&pod);
    EXPECT_THAT(ValidatePod(pod), StatusIs(absl::StatusCode::kInvalidArgument, c.error))
        << c.name;
  }
}

TEST(ValidatePodTest, EveryErrorIsReported) {
  Pod pod = ValidPod();
  pod.uid = "../u";
  pod.volumes[0].name = "A";
  EXPECT_EQ(ValidatePod(pod).message(),
            absl::StrCat("[metadata.uid: Invalid value: \"../u\": may not contain '/', "
                         "spec.volumes[0].name: Invalid value: \"A\": ",
                         kLabelRule,
                         ", spec.containers[0].volumeMounts[0].name: Not found: \"inline-vol\"]"));
}

PersistentVolume ValidVolume() {
  PersistentVolume pv;
  pv.name = "pvc-5f3a9c2e-1b7d-4e8f-9a0b-c1d2e3f4a5b6";
  pv.access_modes = {"ReadWriteOnce"};
  PersistentVolume::Csi csi;
  csi.driver = "disk.csi.azure.com";
  // An Azure Disk handle: a resource ID longer than the CSI spec's 128 bytes.
  csi.volume_handle =
      "/subscriptions/01234567-89ab-cdef-0123-456789abcdef/resourceGroups/mc_shop_prod_westeurope/"
      "providers/Microsoft.Compute/disks/pvc-5f3a9c2e-1b7d-4e8f-9a0b-c1d2e3f4a5b6";
  csi.node_publish_secret = std::make_pair("shop", "creds");
  pv.csi = csi;
  return pv;
}

TEST(ValidatePersistentVolumeTest, Rules) {
  EXPECT_THAT(ValidatePersistentVolume(ValidVolume()), IsOk());
  struct Case {
    const char* name;
    std::function<void(PersistentVolume*)> mutate;
    std::string error;
  } cases[] = {
      {"traversal in the name", [](PersistentVolume* pv) { pv->name = "../../../escape-pv"; },
       std::string("metadata.name: Invalid value: \"../../../escape-pv\": ") + kSubdomainRule},
      {"no access mode", [](PersistentVolume* pv) { pv->access_modes.clear(); },
       "spec.accessModes: Required value"},
      {"unknown access mode", [](PersistentVolume* pv) { pv->access_modes = {"ReadWriteSome"}; },
       "spec.accessModes: Unsupported value: \"ReadWriteSome\": supported values: "
       "\"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\""},
      {"RWOP with another", [](PersistentVolume* pv) {
         pv->access_modes = {"ReadWriteOncePod", "ReadOnlyMany"};
       },
       "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"},
      {"driver", [](PersistentVolume* pv) { pv->csi->driver = "a/b"; },
       std::string("spec.csi.driver: Invalid value: \"a/b\": ") + kSubdomainRule},
      {"empty handle", [](PersistentVolume* pv) { pv->csi->volume_handle = ""; },
       "spec.csi.volumeHandle: Required value"},
      {"handle too long", [](PersistentVolume* pv) { pv->csi->volume_handle = std::string(1025, 'h'); },
       "spec.csi.volumeHandle: Too long: must have at most 1024 bytes"},
      {"secret name not a label",
       [](PersistentVolume* pv) { pv->csi->node_publish_secret->second = "creds.v2"; },
       std::string("spec.csi.nodePublishSecretRef.name: Invalid value: \"creds.v2\": ") +
           kLabelRule},
      {"secret namespace",
       [](PersistentVolume* pv) { pv->csi->node_publish_secret->first = ""; },
       "spec.csi.nodePublishSecretRef.namespace: Required value"},
  };
  for (const Case& c : cases) {
    PersistentVolume pv = ValidVolume();
    c.mutate(&pv);
    EXPECT_THAT(ValidatePersistentVolume(pv), StatusIs(absl::StatusCode::kInvalidArgument, c.error))
        << c.name;
  }
}

// apimachinery ValidateOwnerReferences, and ours for UIDs and claim references.
TEST(ValidateOtherObjectsTest, OwnerReferencesAndClaimReferences) {
  PersistentVolumeClaim claim{"shop", "web-scratch", "claim-uid"};
  claim.owner_references = {OwnerReference{"v1", "Pod", "web", "pod-uid", true}};
  EXPECT_THAT(ValidatePersistentVolumeClaim(claim), IsOk());
  claim.owner_references.push_back(OwnerReference{"apps/v1", "StatefulSet", "web", "ss-uid", true});
  EXPECT_THAT(ValidatePersistentVolumeClaim(claim),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Only one reference can have Controller set to true. Found \"true\" in "
                       "references for Pod/web and StatefulSet/web"));
  claim.owner_references = {OwnerReference{"apps/", "", "", "", false}};
  EXPECT_EQ(ValidatePersistentVolumeClaim(claim).message(),
            "[metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not "
            "be empty, metadata.ownerReferences.kind: Invalid value: \"\": kind must not be "
            "empty, metadata.ownerReferences.name: Invalid value: \"\": name must not be empty, "
            "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty]");
  claim.owner_references.clear();
  claim.uid = "../u";
  EXPECT_THAT(ValidatePersistentVolumeClaim(claim),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "metadata.uid: Invalid value: \"../u\": may not contain '/'"));

  PersistentVolume pv = ValidVolume();
  pv.claim_ref = ClaimReference{"shop", "data", "claim-uid"};
  EXPECT_THAT(ValidatePersistentVolume(pv), IsOk());
  pv.claim_ref = ClaimReference{"Shop", "", "a\nb"};
  EXPECT_EQ(ValidatePersistentVolume(pv).message(),
            std::string("[spec.claimRef.name: Required value, spec.claimRef.namespace: Invalid "
                        "value: \"Shop\": ") +
                kLabelRule +
                ", spec.claimRef.uid: Invalid value: \"a\\nb\": may not contain control "
                "characters]");
}

TEST(ValidateOtherObjectsTest, ClaimsSecretsAndCsiDrivers) {
  EXPECT_THAT(ValidatePersistentVolumeClaim({"shop", "data-web-0", "pv-1"}), IsOk());
  EXPECT_THAT(ValidatePersistentVolumeClaim({"shop", "../claim", "pv-1"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "metadata.name: Invalid value: \"../claim\""));
  EXPECT_THAT(ValidatePersistentVolumeClaim({"Shop", "c", "pv-1"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "metadata.namespace: Invalid value: \"Shop\""));

  EXPECT_THAT(ValidateSecret({"shop", "creds", {{"password", "x"}, {".dockerconfigjson", "{}"}}}),
              IsOk());
  EXPECT_THAT(ValidateSecret({"shop", "creds", {{"../key", "x"}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "data[../key]: Invalid value: \"../key\": a valid config key must consist"));
  EXPECT_THAT(ValidateSecret({"shop", "creds", {{"k", std::string(1024 * 1024 + 1, 'x')}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "data: Too long: must have at most 1048576 bytes"));
  EXPECT_THAT(ValidateSecret({"shop", "a/b", {}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "metadata.name: Invalid value: \"a/b\""));

  EXPECT_THAT(ValidateCsiDriverObject({"sample.csi.example.com", false, true, {"Ephemeral"}}),
              IsOk());
  EXPECT_THAT(ValidateCsiDriverObject({"../../x", false, true, {"Persistent"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       std::string("metadata.name: Invalid value: \"../../x\": ") + kSubdomainRule));
  EXPECT_THAT(ValidateCsiDriverObject({"d", std::nullopt, std::nullopt, {"Forever"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "spec.volumeLifecycleModes: Unsupported value: \"Forever\": supported "
                       "values: \"Persistent\", \"Ephemeral\""));
  CsiDriverObject periodic{"d", std::nullopt, std::nullopt, {"Persistent"}};
  periodic.node_allocatable_update_period_seconds = 10;
  EXPECT_THAT(ValidateCsiDriverObject(periodic), IsOk());
  periodic.node_allocatable_update_period_seconds = 9;
  EXPECT_THAT(ValidateCsiDriverObject(periodic),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 9: must be "
                       "greater than or equal to 10 seconds"));
}

TEST(ValidateFieldTest, CsiDriverNameAndVolumeHandle) {
  FieldErrors errors;
  ValidateCsiDriverName("", "driverName", &errors);
  // An empty name is both required and not a subdomain, as ValidateCSIDriverName reports it.
  EXPECT_EQ(errors.ToStatus().message(),
            std::string("[driverName: Required value, driverName: Invalid value: \"\": ") +
                kSubdomainRule + "]");
  FieldErrors handle;
  ValidateVolumeHandle("vol-1", "volumeHandle", &handle);
  EXPECT_THAT(handle.ToStatus(), IsOk());
}

}  // namespace
}  // namespace ndr::kubelet
