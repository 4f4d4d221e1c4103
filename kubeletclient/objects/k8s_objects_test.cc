#include "kubeletclient/objects/k8s_objects.h"

#include <chrono>
#include <cstdlib>
#include <future>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::TempDir;
using ::ndr::testing::WriteFile;
using ::testing::HasSubstr;

constexpr char kObjects[] = R"(
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, uid: u-1}
spec:
  serviceAccountName: web-sa
  volumes:
  - name: info
    csi:
      driver: sample.csi.example.com
      readOnly: true
      volumeAttributes: {color: blue}
      nodePublishSecretRef: {name: creds}
  - name: data
    persistentVolumeClaim: {claimName: data-claim, readOnly: true}
  - name: scratch
    emptyDir: {}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: data-claim, namespace: shop}
  spec: {volumeName: pv-1}
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-1}
  spec:
    accessModes: [ReadOnlyMany]
    mountOptions: [noatime]
    csi:
      driver: sample.csi.example.com
      volumeHandle: vol-17
      fsType: ext4
      nodePublishSecretRef: {name: creds, namespace: shop}
---
{"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
 "metadata": {"name": "sample.csi.example.com"},
 "spec": {"podInfoOnMount": true, "attachRequired": false,
          "volumeLifecycleModes": ["Ephemeral", "Persistent"]}}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: shop}
data: {password: aHVudGVyMg==}
stringData: {user: alice}
)";

TEST(ReadObjectsTest, ReadsEveryKindFromYamlJsonAndLists) {
  TempDir dir("obj");
  ASSERT_TRUE(WriteFile(dir.Join("all.yaml"), kObjects));
  ObjectSet objects;
  ASSERT_THAT(ReadObjects(dir.path(), &objects), IsOk());
  ASSERT_EQ(objects.pods.size(), 1u);
  const Pod& pod = objects.pods[0];
  EXPECT_EQ(pod.ns, "shop");
  EXPECT_EQ(pod.uid, "u-1");
  EXPECT_EQ(pod.service_account, "web-sa");
  ASSERT_EQ(pod.volumes.size(), 3u);
  ASSERT_TRUE(pod.volumes[0].csi.has_value());
  EXPECT_TRUE(pod.volumes[0].csi->read_only);
  EXPECT_EQ(pod.volumes[0].csi->volume_attributes.at("color"), "blue");
  EXPECT_EQ(pod.volumes[0].csi->node_publish_secret_name, "creds");
  EXPECT_EQ(pod.volumes[1].claim_name, "data-claim");
  EXPECT_TRUE(pod.volumes[1].claim_read_only);
  EXPECT_FALSE(pod.volumes[2].csi.has_value());
  EXPECT_EQ(objects.claims.at({"shop", "data-claim"}).volume_name, "pv-1");
  const PersistentVolume& pv = objects.volumes.at("pv-1");
  EXPECT_EQ(pv.csi->volume_handle, "vol-17");
  EXPECT_EQ(pv.mount_options, std::vector<std::string>{"noatime"});
  EXPECT_EQ(pv.csi->node_publish_secret, std::make_pair(std::string("shop"), std::string("creds")));
  const CsiDriverObject& driver = objects.csi_drivers.at("sample.csi.example.com");
  EXPECT_EQ(driver.pod_info_on_mount, true);
  EXPECT_EQ(driver.attach_required, false);
  EXPECT_EQ(driver.volume_lifecycle_modes.size(), 2u);
  const Secret& secret = objects.secrets.at({"shop", "creds"});
  EXPECT_EQ(secret.data.at("password"), "hunter2");
  EXPECT_EQ(secret.data.at("user"), "alice");
}

// What kubelet's volume manager reads beyond the volumes: the containers' mounts, devices and
// SELinux options; claims' ownership, phase and deletion; PVs' claim references and sources.
TEST(ReadObjectsTest, ContainersClaimsAndBindings) {
  TempDir dir("obj");
  ASSERT_TRUE(WriteFile(dir.Join("all.yaml"), R"(
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: shop, uid: u-2}
spec:
  securityContext: {seLinuxOptions: {level: "s0:c1,c2"}}
  initContainers:
  - name: init
    volumeMounts: [{name: cache, mountPath: /cache}]
  containers:
  - name: db
    securityContext: {seLinuxOptions: {user: user_u, level: "s0:c5,c6"}}
    volumeDevices: [{name: disk, devicePath: /dev/xvda}]
  ephemeralContainers:
  - name: debug
    volumeMounts: [{name: cache, mountPath: /cache}]
  volumes:
  - name: cache
  - name: disk
    ephemeral:
      volumeClaimTemplate:
        spec: {accessModes: [ReadWriteOnce], volumeMode: Block}
  - name: config
    configMap: {name: settings}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: db-disk
  namespace: shop
  uid: c-1
  deletionTimestamp: "2026-11-23T10:00:00Z"
  ownerReferences:
  - {apiVersion: v1, kind: Pod, name: db, uid: u-2, controller: true, blockOwnerDeletion: true}
spec: {volumeName: pv-2}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-2}
spec:
  accessModes: [ReadWriteOncePod]
  volumeMode: Block
  claimRef: {kind: PersistentVolumeClaim, namespace: shop, name: db-disk, uid: c-1}
  nfs: {server: nfs.example.com, path: /exports}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: sample.csi.example.com}
spec: {seLinuxMount: true}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: plain, namespace: shop}
spec: {}
)"));
  ObjectSet objects;
  ASSERT_THAT(ReadObjects(dir.path(), &objects), IsOk());
  const Pod& pod = objects.pods.at(0);
  ASSERT_EQ(pod.containers.size(), 3u);
  EXPECT_EQ(pod.containers[0].field, "spec.initContainers[0]");
  EXPECT_EQ(pod.containers[0].volume_mounts, std::vector<std::string>{"cache"});
  EXPECT_EQ(pod.containers[1].volume_devices, std::vector<std::string>{"disk"});
  EXPECT_EQ(pod.containers[1].se_linux->user, "user_u");
  EXPECT_EQ(pod.containers[1].se_linux->level, "s0:c5,c6");
  EXPECT_EQ(pod.containers[2].field, "spec.ephemeralContainers[0]");
  EXPECT_EQ(pod.se_linux->level, "s0:c1,c2");
  EXPECT_EQ(pod.volumes[0].source_type(), "emptyDir");  // the API server's default
  EXPECT_TRUE(pod.volumes[0].source_types.empty());
  EXPECT_EQ(pod.volumes[1].source_type(), "ephemeral");
  EXPECT_TRUE(pod.volumes[1].ephemeral_claim_template);
  EXPECT_EQ(pod.volumes[2].source_type(), "configMap");
  const PersistentVolumeClaim& claim = objects.claims.at({"shop", "db-disk"});
  EXPECT_EQ(claim.uid, "c-1");
  EXPECT_TRUE(claim.being_deleted);
  EXPECT_EQ(claim.phase, "Bound");
  ASSERT_EQ(claim.owner_references.size(), 1u);
  EXPECT_TRUE(claim.owner_references[0].controller);
  EXPECT_EQ(claim.owner_references[0].uid, "u-2");
  EXPECT_EQ(objects.claims.at({"shop", "plain"}).phase, "Pending");  // the API server's default
  EXPECT_FALSE(objects.claims.at({"shop", "plain"}).being_deleted);
  const PersistentVolume& pv = objects.volumes.at("pv-2");
  EXPECT_EQ(pv.volume_mode, "Block");
  EXPECT_EQ(pv.source_type, "nfs");
  EXPECT_FALSE(pv.csi.has_value());
  EXPECT_EQ(pv.claim_ref->name, "db-disk");
  EXPECT_EQ(pv.claim_ref->uid, "c-1");
  EXPECT_EQ(objects.csi_drivers.at("sample.csi.example.com").se_linux_mount, true);
}

TEST(ReadObjectsTest, CsiDriverModesDefaultToPersistent) {
  TempDir dir("obj");
  ASSERT_TRUE(WriteFile(dir.Join("d.yaml"),
                        "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: d}\n"));
  ObjectSet objects;
  ASSERT_THAT(ReadObjects(dir.Join("d.yaml"), &objects), IsOk());
  EXPECT_EQ(objects.csi_drivers.at("d").volume_lifecycle_modes,
            std::vector<std::string>{"Persistent"});
}

TEST(ReadObjectsTest, MalformedInputNamesFileObjectAndField) {
  struct Case {
    const char* name;
    std::string text;
    const char* error;
  } cases[] = {
      {"not yaml", "kind: Pod\n  bad: [unclosed\n", "bad.yaml: line "},
      {"not an object", "- a\n- b\n", "bad.yaml: document 1: is not an object"},
      {"no kind", "apiVersion: v1\nmetadata: {name: x}\n", "bad.yaml: document 1: kind: Required value"},
      {"unknown kind", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
       "bad.yaml: ConfigMap x: kind \"ConfigMap\" is not supported"},
      {"wrong apiVersion", "apiVersion: v2\nkind: Pod\nmetadata: {name: p, uid: u}\nspec: {}\n",
       "bad.yaml: Pod p: apiVersion: \"v2\" is not supported for Pod (use v1)"},
      {"no metadata", "apiVersion: v1\nkind: Pod\nspec: {}\n", "metadata: Required value"},
      {"no uid", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n",
       "bad.yaml: Pod p: metadata.uid: Required value"},
      {"volumes not a list",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u}\nspec: {volumes: 3}\n",
       "spec.volumes: must be a list"},
      {"no driver",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u}\n"
       "spec: {volumes: [{name: a}, {name: b, csi: {readOnly: true}}]}\n",
       "bad.yaml: Pod p: spec.volumes[1].csi.driver: Required value"},
      {"bool as string",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u}\n"
       "spec: {volumes: [{name: a, csi: {driver: d, readOnly: maybe}}]}\n",
       "spec.volumes[0].csi.readOnly: must be true or false"},
      {"attribute not a string",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u}\n"
       "spec: {volumes: [{name: a, csi: {driver: d, volumeAttributes: {x: [1]}}}]}\n",
       "spec.volumes[0].csi.volumeAttributes.x: must be a string"},
      {"duplicate volume",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u}\n"
       "spec: {volumes: [{name: a}, {name: a}]}\n",
       "bad.yaml: Pod p: spec.volumes[1].name: Duplicate value: \"a\""},
      {"bad base64", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: '%%%'}\n",
       "bad.yaml: Secret s: data.k: is not valid base64"},
      {"bad mode",
       "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: d}\n"
       "spec: {volumeLifecycleModes: [Forever]}\n",
       "bad.yaml: CSIDriver d: spec.volumeLifecycleModes: Unsupported value: \"Forever\": "
       "supported values: \"Persistent\", \"Ephemeral\""},
      {"pv without handle",
       "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {csi: {driver: d}}\n",
       "bad.yaml: PersistentVolume pv: spec.csi.volumeHandle: Required value"},
      {"volume health without a reason",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u}\nspec: {}\n"
       "status: {volumeHealth: [{name: a, healthConditions: [{status: Degraded}]}]}\n",
       "bad.yaml: Pod p: status.volumeHealth[0].healthConditions[0].reason: Required value"},
      {"volume health not a list",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u}\nspec: {}\n"
       "status: {volumeHealth: {name: a}}\n",
       "status.volumeHealth: must be a list"},
  };
  for (const Case& c : cases) {
    TempDir dir("obj");
    ASSERT_TRUE(WriteFile(dir.Join("bad.yaml"), c.text));
    ObjectSet objects;
    absl::Status status = ReadObjects(dir.Join("bad.yaml"), &objects);
    EXPECT_FALSE(status.ok()) << c.name;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.error)) << c.name;
    EXPECT_THAT(std::string(status.message()), HasSubstr(dir.Join("bad.yaml"))) << c.name;
  }
}

TEST(ReadObjectsTest, JsonFileIsReadAsJson) {
  TempDir dir("obj");
  ASSERT_TRUE(WriteFile(dir.Join("pod.json"), R"( {"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "p", "uid": "u", "namespace": null},
      "spec": {"volumes": [{"name": "a", "csi": {"driver": "d", "readOnly": true,
               "volumeAttributes": {"k": "v: not yaml"}}}]}})"));
  // With a UTF-8 byte order mark and multi-byte text, as editors write it.
  ASSERT_TRUE(WriteFile(dir.Join("bom.json"),
                        "\xEF\xBB\xBF{\"apiVersion\": \"v1\", \"kind\": \"Secret\", "
                        "\"metadata\": {\"name\": \"s\"}, \"stringData\": {\"k\": \"\xE2\x82\xAC\xF0\x9F\x98\x80\"}}"));
  ObjectSet secrets;
  ASSERT_THAT(ReadObjects(dir.Join("bom.json"), &secrets), IsOk());
  EXPECT_EQ(secrets.secrets.at({"default", "s"}).data.at("k"), "\xE2\x82\xAC\xF0\x9F\x98\x80");
  absl::StatusOr<Pod> pod = ReadPod(dir.Join("pod.json"));
  ASSERT_THAT(pod.status(), IsOk());
  EXPECT_EQ(pod->ns, "default");
  ASSERT_TRUE(pod->volumes[0].csi.has_value());
  EXPECT_TRUE(pod->volumes[0].csi->read_only);
  EXPECT_EQ(pod->volumes[0].csi->volume_attributes.at("k"), "v: not yaml");
}

// status.volumeHealth: what kubelet's last health round wrote, which the next compares with.
TEST(ReadPodTest, VolumeHealthFromTheStatus) {
  TempDir dir("obj");
  ASSERT_TRUE(WriteFile(dir.Join("pod.yaml"), R"(apiVersion: v1
kind: Pod
metadata: {name: p, uid: u}
spec: {volumes: [{name: a}, {name: b}]}
status:
  volumeHealth:
  - name: a
    healthConditions:
    - {status: Inaccessible, reason: Gone, message: no disk}
    - {status: Degraded, reason: Slow}
  - {name: b}
)"));
  absl::StatusOr<Pod> pod = ReadPod(dir.Join("pod.yaml"));
  ASSERT_THAT(pod.status(), IsOk());
  ASSERT_EQ(pod->volume_health.size(), 2u);
  EXPECT_EQ(pod->volume_health[0].name, "a");
  ASSERT_EQ(pod->volume_health[0].conditions.size(), 2u);
  EXPECT_EQ(pod->volume_health[0].conditions[0].status, "Inaccessible");
  EXPECT_EQ(pod->volume_health[0].conditions[0].message, "no disk");
  EXPECT_EQ(pod->volume_health[0].conditions[1].reason, "Slow");
  EXPECT_EQ(pod->volume_health[1].name, "b");
  EXPECT_TRUE(pod->volume_health[1].conditions.empty());
}

// Text that yaml-cpp 0.7's LoadAll would loop on for ever, allocating (the ',' is never consumed),
// malformed JSON, and bytes that are not UTF-8: each is refused, promptly, saying where.
TEST(ReadObjectsTest, UnreadableTextIsRefusedPromptlySayingWhere) {
  struct Case {
    const char* name;
    std::string text;
    const char* error;
  } cases[] = {
      {"stray comma", ",\n", "bad.yaml: line 1, column 1: unexpected ','"},
      {"comma after a document", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n---\n ,\n",
       "bad.yaml: line 5, column 2: unexpected ','"},
      {"malformed JSON", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":o\"name\":\"j\"}",
       "bad.yaml: invalid JSON: parse error at line 1, column 44"},
      {"two JSON objects", "{\"kind\": \"Pod\"}\n{\"kind\": \"Pod\"}\n",
       "bad.yaml: invalid JSON: parse error at line 2, column 1"},
      {"not UTF-8", "apiVersion: v1\nkind: Secret\nmetadata: {name: \"s\xC3\x28\"}\n",
       "bad.yaml: line 3, column 20: byte 0xc3 is not valid UTF-8"},
      {"UTF-16 surrogate as UTF-8", "kind: \xED\xA0\x80\n",
       "bad.yaml: line 1, column 7: byte 0xed is not valid UTF-8"},
      {"truncated at the end", "kind: \xE2\x82", "line 1, column 7: byte 0xe2 is not valid UTF-8"},
      {"JSON too deep", absl::StrCat(absl::StrJoin(std::vector<std::string>(100, "{\"a\": ["), ""), "1",
                                      absl::StrJoin(std::vector<std::string>(100, "]}"), "")),
       "bad.yaml: JSON nested deeper than 64 levels"},
  };
  for (const Case& c : cases) {
    TempDir dir("obj");
    ASSERT_TRUE(WriteFile(dir.Join("bad.yaml"), c.text));
    ObjectSet objects;
    // A regression would never return and would eat memory: stop the whole test then.
    auto parsed = std::async(std::launch::async,
                             [&] { return ReadObjects(dir.Join("bad.yaml"), &objects); });
    if (parsed.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      ADD_FAILURE() << c.name << ": ReadObjects did not return within 60 s";
      std::_Exit(1);
    }
    absl::Status status = parsed.get();
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.error)) << c.name;
  }
}

TEST(ReadPodTest, ExactlyOnePod) {
  TempDir dir("obj");
  ASSERT_TRUE(WriteFile(dir.Join("none.yaml"), "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"));
  EXPECT_THAT(std::string(ReadPod(dir.Join("none.yaml")).status().message()),
              HasSubstr("must hold exactly one Pod; it holds 0"));
  EXPECT_THAT(std::string(ReadPod(dir.Join("missing.yaml")).status().message()),
              HasSubstr("missing.yaml: no such file or directory"));
}

// What kubelet reads after the mount: sizes, claim conditions, the expand secret, tokenRequests,
// requiresRepublish, ServiceAccounts.
TEST(ReadObjectsTest, SizesTokensAndServiceAccounts) {
  ObjectSet objects;
  ASSERT_THAT(ParseObjects(R"(apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {volumeName: pv-1, resources: {requests: {storage: 2Gi}}}
status:
  phase: Bound
  capacity: {storage: 1536Mi}
  conditions: [{type: FileSystemResizePending, status: 'True', reason: r, message: m}]
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
spec:
  accessModes: [ReadWriteOnce]
  capacity: {storage: 2e9}
  csi: {driver: d.example.com, volumeHandle: h, nodeExpandSecretRef: {name: grow, namespace: shop}}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: d.example.com}
spec:
  requiresRepublish: true
  tokenRequests: [{audience: vault, expirationSeconds: 3600}, {audience: ''}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: web, namespace: shop, uid: sa-1}
)",
                           "after.yaml", &objects),
              IsOk());
  const PersistentVolumeClaim& claim = objects.claims.at({"shop", "data"});
  EXPECT_EQ(claim.requested->value(), int64_t{2} << 30);
  EXPECT_EQ(claim.capacity->String(), "1536Mi");
  ASSERT_EQ(claim.conditions.size(), 1u);
  EXPECT_EQ(claim.conditions[0].type, "FileSystemResizePending");
  EXPECT_EQ(claim.conditions[0].message, "m");
  const PersistentVolume& pv = objects.volumes.at("pv-1");
  EXPECT_EQ(pv.capacity->value(), 2000000000);
  EXPECT_EQ(pv.csi->node_expand_secret, std::make_pair(std::string("shop"), std::string("grow")));
  const CsiDriverObject& driver = objects.csi_drivers.at("d.example.com");
  EXPECT_TRUE(driver.requires_republish);
  ASSERT_EQ(driver.token_requests.size(), 2u);
  EXPECT_EQ(driver.token_requests[0].audience, "vault");
  EXPECT_EQ(driver.token_requests[0].expiration_seconds, 3600);
  EXPECT_EQ(driver.token_requests[1].audience, "");
  EXPECT_FALSE(driver.token_requests[1].expiration_seconds.has_value());
  EXPECT_EQ(objects.service_accounts.at({"shop", "web"}).uid, "sa-1");
}

TEST(ReadObjectsTest, BadSizesAreTheApiServersErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: p}\nspec: {accessModes: "
       "[ReadWriteOnce], capacity: {storage: 10 gigs}}\n",
       "spec.capacity.storage: Invalid value: \"10 gigs\": quantities must match"},
      {"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: p}\nspec: {accessModes: "
       "[ReadWriteOnce], capacity: {storage: -1Gi}}\n",
       "spec.capacity[storage]: Invalid value: \"-1Gi\": must be greater than or equal to 0"},
      {"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {resources: "
       "{requests: {storage: '0'}}}\n",
       "spec.resources[storage]: Invalid value: \"0\": must be greater than zero"},
      {"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nstatus: {capacity: "
       "{storage: 9Ei}}\n",
       "quantity 9Ei is too large"},
      {"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: Bad_Name}\n",
       "metadata.name: Invalid value: \"Bad_Name\""},
  };
  for (const auto& [text, error] : cases) {
    ObjectSet objects;
    EXPECT_THAT(std::string(ParseObjects(text, "bad.yaml", &objects).message()), HasSubstr(error))
        << text;
  }
}

TEST(ReadObjectsTest, StorageClassesWithTheApiServersDefaultsAndRules) {
  ObjectSet objects;
  ASSERT_THAT(ParseObjects(R"(apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: disk.csi.example.com
parameters: {type: ssd, csi.storage.k8s.io/fstype: xfs}
mountOptions: [noatime]
allowVolumeExpansion: true
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.example.com/zone, values: [a, b]}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: plain}
provisioner: disk.csi.example.com
)",
                           "classes.yaml", &objects),
              IsOk());
  ASSERT_EQ(objects.storage_classes.size(), 2u);
  const StorageClass& fast = objects.storage_classes.at("fast");
  EXPECT_EQ(fast.parameters.at("type"), "ssd");
  EXPECT_EQ(fast.mount_options, std::vector<std::string>{"noatime"});
  EXPECT_EQ(fast.allow_volume_expansion, true);
  EXPECT_EQ(fast.volume_binding_mode, "WaitForFirstConsumer");
  ASSERT_EQ(fast.allowed_topologies.size(), 1u);
  EXPECT_EQ(fast.allowed_topologies[0].match_label_expressions[0].values,
            (std::vector<std::string>{"a", "b"}));
  // SetDefaults_StorageClass.
  const StorageClass& plain = objects.storage_classes.at("plain");
  EXPECT_EQ(plain.reclaim_policy, "Delete");
  EXPECT_EQ(plain.volume_binding_mode, "Immediate");
  EXPECT_FALSE(plain.allow_volume_expansion.has_value());

  const std::string head = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: s}\n";
  struct Case {
    std::string text;
    const char* error;
  } cases[] = {
      {head, "sc.yaml: StorageClass s: provisioner: Required value"},
      {head + "provisioner: d\nreclaimPolicy: Recycle\n",
       "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\""},
      {head + "provisioner: d\nvolumeBindingMode: Later\n",
       "volumeBindingMode: Unsupported value: \"Later\""},
      {head + "provisioner: d\nallowedTopologies: [{matchLabelExpressions: [{key: z, values: []}]}]\n",
       "allowedTopologies[0].matchLabelExpressions[0].values: Required value"},
      {head + "provisioner: d\nallowedTopologies: [{matchLabelExpressions: [{key: z, values: [a]}]}, "
              "{matchLabelExpressions: [{key: z, values: [a]}]}]\n",
       "allowedTopologies[1].matchLabelExpressions: Duplicate value"},
      {head + "provisioner: d\nallowedTopologies: [{matchLabelExpressions: [{key: z, values: [\"a b\"]}]}]\n",
       "allowedTopologies[0].matchLabelExpressions[0].values[0]: Invalid value: \"a b\""},
      {head + "provisioner: \"bad/driver/name\"\n", "provisioner: Invalid value"},
      {"apiVersion: storage.k8s.io/v1beta1\nkind: StorageClass\nmetadata: {name: s}\nprovisioner: d\n",
       "is not supported for StorageClass"},
  };
  for (const Case& c : cases) {
    ObjectSet bad;
    absl::Status s = ParseObjects(c.text, "sc.yaml", &bad);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.error)) << c.text;
    EXPECT_TRUE(bad.storage_classes.empty());
  }
}

}  // namespace
}  // namespace ndr::kubelet
