#!/usr/bin/env bash
# The main job: builds the project and shows it working on the built-in sample CSI driver, in a
# temporary directory under /tmp that is removed afterwards. Every step is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
source test/install-deps.sh
ndr_buildroot_reexec "$0" "$@"
ndr_install_deps

step() { printf '\n==> %s\n' "$*"; }
indent() { sed 's/^/    /'; }
# Prints, from kubeletclient publish/unpublish's JSON report, each volume's calls to the driver
# in order (one line each, secrets already redacted), its steps on the host, and its result; a
# volume kubelet's CSI plugin leaves alone is one line saying why.
calls() {
  /usr/bin/python3 -c '
import json, sys
report = json.load(sys.stdin)
node = report.get("node", {})
if "kubeletVersion" in node:
    print("(as kubelet " + node["kubeletVersion"] + "; SELinux " + node.get("seLinux", "?") + ")")
for volume in report.get("volumes", []):
    name = volume.get("volume") or volume.get("volumeDir") or volume.get("volumeDevice")
    if "skipped" in volume:
        print(name + ": skipped: " + volume["skipped"])
        continue
    print(name + ("" if "volumeMode" not in volume else " (" + volume["volumeMode"] + ")"))
    steps = volume.get("hostOperations", [])
    def host(until):
        while steps and steps[0]["afterCalls"] <= until:
            step = steps.pop(0)
            detail = " (" + step["detail"] + ")" if "detail" in step else ""
            print("    host: " + step["operation"] + " " + step["path"] + detail + ": " +
                  step["result"])
    for done, call in enumerate(volume.get("calls", [])):
        host(done)
        request = json.dumps(call["request"], sort_keys=True)
        print("    " + call["method"] + ("" if request == "{}" else " " + request))
    host(float("inf"))
    for call in volume.get("deviceCalls", []):
        request = json.dumps(call["request"], sort_keys=True)
        print("    (once every volume is out of the pod) " + call["method"] +
              ("" if request == "{}" else " " + request))
    for note in volume.get("notes", []):
        print("    (" + note + ")")
    if "claimStatus" in volume:
        print("    the claim status kubelet writes: " + volume["claimStatus"]["claim"] + " " +
              json.dumps(volume["claimStatus"]["status"], sort_keys=True))
    print("    result: " + volume["result"])
' | indent
}

work=$(mktemp -d /tmp/ndr-demo-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # If the demo stopped half-way as root: the block volume's bind mounts and loop devices first.
  # kubelet's loop device holds the bind mount open, and the bind mount the driver's loop device:
  # loop devices, then mounts, then loop devices again.
  detach_loops() {
    for f in /sys/block/loop*/loop/backing_file; do
      if [ -r "$f" ] && grep -q "^$work" "$f"; then
        losetup -d "/dev/$(basename "$(dirname "$(dirname "$f")")")" 2>/dev/null || true
      fi
    done
  }
  if [ "$(id -u)" -eq 0 ]; then
    detach_loops
    { grep -o " $work[^ ]*" /proc/self/mounts 2>/dev/null || true; } | sort -r |
      while read -r m; do umount "$m" 2>/dev/null || true; done
    detach_loops
  fi
  # Never across a mount point: one still there is named, and the directory kept.
  ndr_remove_tree "$work" || echo "warning: $work was not removed (see above)" >&2
  bazel shutdown >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Waits for a unix socket to appear; only a hang takes the 2 minutes (a busy machine is slow, not
# broken).
wait_for_socket() {
  for _ in $(seq 1 2400); do [ -S "$1" ] && return 0; sleep 0.05; done
  echo "error: $1 did not appear within 2 minutes" >&2
  return 1
}
# Waits for a file to contain a string, as long.
wait_for_text() {
  for _ in $(seq 1 2400); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "error: $1 did not mention $2 within 2 minutes" >&2
  return 1
}

step "Building (bazel build; the first build takes a few minutes)"
# shellcheck disable=SC2046
bazel build $(ndr_bazel_flags) //test/csidriver:sample-csi-driver //test/csidriver:csi-client \
  //registrar:csi-node-driver-registrar //kubeletclient:kubeletclient
bin=$(bazel info bazel-bin 2>/dev/null)
mkdir -p "$work/csi" "$work/plugins_registry"
driver_socket="$work/csi/csi.sock"
registry="$work/plugins_registry"

step "The service-account signing key the API server would use, and its public keys (kubeletclient jwks)"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/sa.key" 2>/dev/null
"$bin/kubeletclient/kubeletclient" jwks --service-account-key-file="$work/sa.key" \
  >"$work/jwks.json"
indent < "$work/jwks.json"

step "Starting the sample CSI driver on $driver_socket (it stages, as block-storage drivers do, and verifies the tokens it gets against that JWKS)"
"$bin/test/csidriver/sample-csi-driver" --endpoint="unix://$driver_socket" \
  --nodeid=demo-node --topology=topology.sample.csi.example.com/zone=zone-a \
  --max-volumes-per-node=8 --stage-unstage --token-jwks="$work/jwks.json" 2>"$work/driver.log" &
pids+=($!)
wait_for_socket "$driver_socket"
indent < "$work/driver.log"

step "Asking the driver who it is (CSI Identity and Node calls over its socket)"
"$bin/test/csidriver/csi-client" --endpoint="unix://$driver_socket" | indent

step "Starting the kubelet side, watching $registry"
"$bin/kubeletclient/kubeletclient" watch --plugin-registry-dir="$registry" \
  --node-status-file="$work/node-status.json" --node-name=demo-node 2>"$work/kubelet.log" &
pids+=($!)
wait_for_text "$work/node-status.json" nodeName

step "Starting our registrar beside the driver ($("$bin/registrar/csi-node-driver-registrar" --version | head -n 1))"
"$bin/registrar/csi-node-driver-registrar" --csi-address="$driver_socket" \
  --kubelet-registration-path="$driver_socket" --plugin-registration-path="$registry" \
  2>"$work/registrar.log" &
registrar_pid=$!
pids+=($registrar_pid)
wait_for_text "$work/node-status.json" sample.csi.example.com
indent < "$work/registrar.log"
echo "    registration directory:"
ls -l "$registry" | tail -n +2 | indent

step "What the kubelet side did"
indent < "$work/kubelet.log"

step "The node status kubelet would publish ($work/node-status.json), first lines"
head -n 30 "$work/node-status.json" | indent
echo "    ..."

step "One more handshake with the registration socket (kubeletclient probe), first lines"
"$bin/kubeletclient/kubeletclient" probe \
  --registration-socket="$registry/sample.csi.example.com-reg.sock" 2>/dev/null | head -n 18 |
  indent
echo "    ..."

step "A pod with three CSI volumes and an emptyDir (test/demo/pod.yaml), the driver's CSIDriver object, and the objects of its persistent volumes and of the pod's service account"
indent < test/demo/pod.yaml
echo "    ---"
indent < test/demo/csidriver.yaml
echo "    ---"
indent < test/demo/volume.yaml

kubelet_release=$("$bin/kubeletclient/kubeletclient" publish --help 2>/dev/null |
  grep -A1 -- '-kubelet-version string' | sed -n 's/.*(default "\([0-9.]*\)").*/\1/p')
step "Publishing the pod's volumes as kubelet $kubelet_release would (kubeletclient publish): every call to the driver"
echo "    The persistent volume: WaitForAttach (its VolumeAttachment is attached; its metadata is"
echo "    the publish context), MountDevice (NodeStageVolume), SetUp (NodePublishVolume); the"
echo "    inline volume: SetUp only; the raw block volume: WaitForAttach, SetUpDevice"
echo "    (NodeStageVolume), MapPodDevice (NodePublishVolume: the driver puts a device at a file)"
echo "    and kubelet's mapping: a bind mount, the pod's link and a loop device (as root; said"
echo "    skipped otherwise). The emptyDir is not the CSI plugin's: skipped, and said so."
echo "    NodeGetCapabilities is asked as often as kubelet asks it. The filesystem volumes get a"
echo "    service-account token for demo-vault in their volume context (shown redacted), signed"
echo "    with the key above as the API server signs it."
echo "    The kubelet side acts as kubelet $kubelet_release, the newest release it models (the default"
echo "    of --kubelet-version, which takes 1.26 to 1.37: docs/kubelet-versions.md), on a node with"
echo "    SELinux (--host-selinux=true), so that the persistent volumes' mounts carry the pod's"
echo "    context=\"...\" option, as the CSIDriver's seLinuxMount: true asks."
kubelet_flags=(--plugin-registry-dir="$registry" --root-dir="$work/kubelet" --node-name=demo-node
  --allowed-inline-drivers=sample.csi.example.com --service-account-key-file="$work/sa.key"
  --host-selinux=true)
"$bin/kubeletclient/kubeletclient" publish --pod=test/demo/pod.yaml \
  --objects=test/demo/csidriver.yaml,test/demo/volume.yaml "${kubelet_flags[@]}" 2>/dev/null |
  calls
pod_dir="$work/kubelet/pods/0b2c8d9e-5f4a-4c3b-8a71-6d1e2f3a4b5c/volumes/kubernetes.io~csi"
device_dir=$(ls -d "$work"/kubelet/plugins/kubernetes.io/csi/sample.csi.example.com/*)

step "What the pod would see in its inline volume (one file per volume_context key)"
for f in "$pod_dir"/pod-info/mount/*; do
  printf '    %-42s %s\n' "$(basename "$f")" "$(cat "$f")"
done
echo "    vol_data.json: $(cat "$pod_dir/pod-info/vol_data.json")"

step "The token the driver got for the inline volume: verified against the JWKS, recorded (never the token itself)"
/usr/bin/python3 -c '
import json, sys
for audience, entry in json.load(open(sys.argv[1])).items():
    claims = entry.get("claims", {})
    print("    audience %s: verified %s, subject %s, pod %s, expires %s" % (
        audience, entry["verified"], claims.get("sub"),
        claims.get("kubernetes.io", {}).get("pod", {}).get("name"), entry["expirationTimestamp"]))
' "$pod_dir/pod-info/mount/.sample-csi-tokens.json"

step "The persistent volume: its device directory, staged by the driver, and the pod's directory"
echo "    $device_dir/vol_data.json: $(cat "$device_dir/vol_data.json")"
echo "    what the driver recorded when it staged globalmount/ (no secret on disk):"
indent < "$device_dir/globalmount/.sample-csi-staged" | indent
echo "    $pod_dir/pv-demo-data/vol_data.json:"
echo "      $(cat "$pod_dir/pv-demo-data/vol_data.json")"

step "The raw block volume: what the pod's container gets as /dev/xvda"
pod_devices="$work/kubelet/pods/0b2c8d9e-5f4a-4c3b-8a71-6d1e2f3a4b5c/volumeDevices/kubernetes.io~csi"
block_dir="$work/kubelet/plugins/kubernetes.io/csi/volumeDevices"
echo "    $pod_devices/pv-demo-disk -> $(readlink "$pod_devices/pv-demo-disk")"
echo "    the publish file: $(stat -c '%F' "$block_dir/publish/pv-demo-disk/0b2c8d9e-5f4a-4c3b-8a71-6d1e2f3a4b5c")"
echo "    $block_dir/pv-demo-disk/data/vol_data.json:"
echo "      $(cat "$block_dir/pv-demo-disk/data/vol_data.json")"
if grep -q " $block_dir/pv-demo-disk/dev/" /proc/self/mounts 2>/dev/null; then
  echo "    the bind mount kubelet makes (from /proc/self/mounts):"
  grep " $block_dir/pv-demo-disk/dev/" /proc/self/mounts | cut -d' ' -f1,2 | indent | indent
fi

step "Volume stats, as kubelet collects them (kubeletclient stats, with the CSIVolumeHealth gate on)"
echo "    NodeGetCapabilities (GET_VOLUME_STATS) and NodeGetVolumeStats with the path kubelet passes;"
echo "    then, as kubelet 1.37's volume health manager, NodeGetVolumeHealth of each persistent volume"
echo "    and NodeGetStorageHealth of the driver (kubelet 1.26 to 1.36 read NodeGetVolumeStats'"
echo "    volume_condition instead: --kubelet-version=1.36 shows that)."
"$bin/kubeletclient/kubeletclient" stats --pod=test/demo/pod.yaml \
  --objects=test/demo/csidriver.yaml,test/demo/volume.yaml "${kubelet_flags[@]}" \
  --feature-gates=CSIVolumeHealth=true 2>/dev/null | /usr/bin/python3 -c '
import json, sys
report = json.load(sys.stdin)
for v in report["volumes"]:
    if "capacity" in v:
        print("    %-9s capacity %d, used %d, available %d, inodes %d (free %d)" % (
            v["volume"], v["capacity"], v["used"], v["available"], v["inodes"], v["inodesFree"]))
        if "volumeHealth" in v:
            print("    %-9s health: %s" % ("", json.dumps(v["volumeHealth"])))
    else:
        print("    %-9s %s" % (v["volume"], v.get("skipped") or v.get("result")))
for probe in report.get("storageHealthProbes", []):
    print("    storage health of %s: %s" % (probe["driver"], json.dumps(probe["storageHealth"])))
'

step "The volume is resized: the claim asks for 2Gi and the PV has grown (the external resizer's part), so kubelet expands it on the node (kubeletclient expand)"
sed -e 's/requests: {storage: 1Gi}/requests: {storage: 2Gi}/' -e 's/^    storage: 1Gi$/    storage: 2Gi/' \
  test/demo/volume.yaml >"$work/volume-resized.yaml"
"$bin/kubeletclient/kubeletclient" expand --pod=test/demo/pod.yaml --volume=data \
  --objects=test/demo/csidriver.yaml,"$work/volume-resized.yaml" "${kubelet_flags[@]}" \
  2>/dev/null | calls

step "The same stats in kubelet's Prometheus families (kubeletclient stats --format=prometheus)"
"$bin/kubeletclient/kubeletclient" stats --pod=test/demo/pod.yaml --format=prometheus \
  --objects=test/demo/csidriver.yaml,"$work/volume-resized.yaml" "${kubelet_flags[@]}" \
  --feature-gates=CSIVolumeHealth=true 2>/dev/null | grep -E '^kubelet_volume_stats_(capacity|used)_bytes|^# TYPE kubelet_volume_stats_capacity' | indent

step "Kubelet's periodic remount for a requiresRepublish driver (kubeletclient republish, two syncs 30 minutes apart on kubelet's clock)"
echo "    No NodeStageVolume: SetUp again for each filesystem volume, MapPodDevice for the block"
echo "    one; the token is kubelet's cached one until 80% of its hour has passed."
"$bin/kubeletclient/kubeletclient" republish --pod=test/demo/pod.yaml --rounds=2 --interval=30m \
  --objects=test/demo/csidriver.yaml,"$work/volume-resized.yaml" "${kubelet_flags[@]}" \
  2>/dev/null | /usr/bin/python3 -c '
import json, sys
for r in json.load(sys.stdin)["rounds"]:
    print("    round %d at %s:" % (r["round"], r["clock"]))
    for v in r["volumes"]:
        tokens = [n for n in v.get("notes", []) if "token" in n]
        print("      %-9s %s%s" % (v["volume"], v.get("skipped") or v.get("result"),
                                 ("; " + tokens[0]) if tokens else ""))
'

step "Tearing the volumes down in kubelet's order (kubeletclient unpublish reads vol_data.json back)"
echo "    As kubelet's reconciler: every volume out of the pod first (TearDown: NodeUnpublishVolume;"
echo "    the block volume: the loop device, the link and the bind mount, then UnmapPodDevice:"
echo "    NodeUnpublishVolume), then, as no other pod on the node uses them, the devices"
echo "    (UnmountDevice and TearDownDevice: NodeUnstageVolume), and the device directory goes."
"$bin/kubeletclient/kubeletclient" unpublish --pod=test/demo/pod.yaml \
  --plugin-registry-dir="$registry" --root-dir="$work/kubelet" 2>/dev/null | calls
[ ! -e "$pod_dir/pod-info" ] && [ ! -e "$pod_dir/pv-demo-data" ] && [ ! -e "$device_dir" ] &&
  [ ! -e "$pod_devices/pv-demo-disk" ] && [ ! -e "$block_dir/pv-demo-disk" ] &&
  echo "    the pod's volume directories and links, $device_dir and $block_dir/pv-demo-disk are gone"

step "Judging the driver by what kubelet will do to it (kubeletclient sanity, both volume modes)"
echo "    The restart replay, tokens and republish, a second and a read-only pod, stats, online"
echo "    expansion, repeated unpublish and unstage, inline and generic ephemeral volumes, and"
echo "    nothing left behind; on a root directory of its own, with the demo's CSIDriver object."
mkdir -p "$work/sanity-root"
"$bin/kubeletclient/kubeletclient" sanity \
  --registration-socket="$registry/sample.csi.example.com-reg.sock" \
  --root-dir="$work/sanity-root" --volume-handle=demo-sanity-vol --node-name=demo-node \
  --objects=test/demo/csidriver.yaml --service-account-key-file="$work/sa.key" \
  2>/dev/null | cut -c1-150 | indent

step "Stopping the registrar with SIGTERM: its socket goes, the driver is deregistered"
kill -TERM "$registrar_pid"
wait "$registrar_pid"
for _ in $(seq 1 2400); do
  grep -q sample.csi.example.com "$work/node-status.json" || break
  sleep 0.05
done
tail -n 1 "$work/registrar.log" | indent
tail -n 2 "$work/kubelet.log" | indent
echo "    drivers left in the node status: $(grep -c '"nodeID"' "$work/node-status.json" || true)"

step "Done"
