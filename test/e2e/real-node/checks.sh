# The checks of test/e2e/real-node.sh, each reporting one result line. Sourced after the node is
# up; uses rn_kubectl, result and the RN_* settings of real-node.sh and cluster.sh.

# Polls CMD until it succeeds, up to SECONDS; quiet.
poll() {
  local seconds=$1 deadline
  shift
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
}

daemonset_ready() {
  local status
  status=$(rn_kubectl -n kube-system get daemonset sample-csi-node \
    -o 'jsonpath={.status.desiredNumberScheduled}/{.status.numberReady}' 2>/dev/null)
  [[ $status == 1/1 ]]
}

csinode_driver_json() {
  rn_kubectl get csinode "$RN_NODE" -o json 2>/dev/null |
    python3 -c '
import json, sys
for d in json.load(sys.stdin)["spec"]["drivers"] or []:
    if d["name"] == sys.argv[1]:
        print(json.dumps(d, sort_keys=True))' "$DRIVER"
}

csinode_as_expected() {
  python3 - "$(csinode_driver_json)" "$RN_NODE" <<'EOF'
import json, sys
d = json.loads(sys.argv[1] or "{}")
assert d.get("nodeID") == sys.argv[2], d
assert d.get("topologyKeys") == ["topology.sample.csi.example.com/zone"], d
assert (d.get("allocatable") or {}).get("count") == 7, d
EOF
}

node_as_expected() {
  python3 - "$(rn_kubectl get node "$RN_NODE" -o json)" "$RN_NODE" "$DRIVER" <<'EOF'
import json, sys
n = json.loads(sys.argv[1])["metadata"]
ids = json.loads(n.get("annotations", {}).get("csi.volume.kubernetes.io/nodeid", "{}"))
assert ids.get(sys.argv[3]) == sys.argv[2], ids
assert n["labels"].get("topology.sample.csi.example.com/zone") == "real-node-zone", n["labels"]
EOF
}

# The driver arguments this run adds to deploy/'s (the same for kubeletclient's prediction).
RN_DRIVER_ARGS=(--topology=topology.sample.csi.example.com/zone=real-node-zone --max_volumes_per_node=7)

# deploy/ as shipped, applied as an operator would (kubectl apply -k) through a kustomization of
# the run's own whose one change is kustomize's images: the tags of the images this run built and
# imported, in place of the release's.
deploy_overlay() {
  local tag dir=$RN_WORK/deploy
  tag=$("$RN_TOOLS/csi-node-driver-registrar" --version | head -n 1 | cut -d' ' -f2 | tr + _)
  mkdir -p "$dir"
  cat >"$dir/kustomization.yaml" <<EOF2
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $(realpath --relative-to="$dir" "$repo/deploy")
images:
- name: localhost/ndr/csi-node-driver-registrar
  newTag: "$tag"
- name: localhost/ndr/sample-csi-driver
  newTag: "$tag"
EOF2
  echo "$dir"
}

# 1. deploy/ (our registrar beside the sample driver), unchanged, becomes Ready, kubelet registers
# the plugin through our socket, a pod's inline volume gets the pod's information (podInfoOnMount),
# and the API server holds what kubelet learnt.
check_registration() {
  local name=registration deployed out uid
  deployed=$(deploy_overlay)
  rn_kubectl apply -k "$deployed" >&2 || {
    result FAIL $name "kubectl apply -k of deploy/ (its images' tags rewritten, nothing else) failed"
    return
  }
  if ! rn_kubectl -n kube-system rollout status daemonset sample-csi-node --timeout=180s >&2 ||
    ! poll 60 daemonset_ready; then
    rn_kubectl -n kube-system describe pods -l app.kubernetes.io/name=sample-csi-node >&2
    result FAIL $name "deploy/ as shipped did not become Ready within 180 s (pods described above)"
    return
  fi
  # As shipped, deploy/ gives pods their information.
  poll 120 rn_kubectl -n default get serviceaccount default >/dev/null 2>&1
  inline_pod deploy-info | rn_kubectl apply -f - >&2
  if ! poll 120 pod_running default deploy-info; then
    rn_kubectl -n default describe pod deploy-info >&2
    result FAIL $name "with deploy/ as shipped, a pod with an inline volume did not run (described above)"
    return
  fi
  uid=$(rn_kubectl -n default get pod deploy-info -o 'jsonpath={.metadata.uid}')
  out=$(volume_files "$uid" info)
  rn_kubectl -n default delete pod deploy-info --wait=true --timeout=120s >&2
  if ! python3 - "$out" "$uid" <<'EOF2'; then
import json, sys
files, uid = json.loads(sys.argv[1]), sys.argv[2]
want = {"pod.name": "deploy-info", "pod.namespace": "default", "pod.uid": uid,
        "serviceAccount.name": "default"}
for key, value in want.items():
    assert [v for k, v in files.items() if k.endswith(key)] == [value], (key, files)
EOF2
    result FAIL $name "with deploy/ as shipped, the inline volume does not hold the pod's information: $out"
    return
  fi
  # The manifests' driver reports no topology and no volume limit; this run gives it both, so
  # that the CSINode and Node fields they lead to are checked too.
  # It also records every request it receives (--record, in its socket directory on the host),
  # for the comparison with kubeletclient (prediction.sh), and the registrar says
  # --requires-publish-pod (the deploy/csiregistration overlay's change), which check 2 shows a
  # real kubelet never asks about.
  local arg patch=()
  for arg in "${RN_DRIVER_ARGS[@]}" --record=/csi/calls.jsonl; do
    patch+=("{\"op\": \"add\", \"path\": \"/spec/template/spec/containers/0/args/-\", \"value\": \"$arg\"}")
  done
  patch+=("{\"op\": \"add\", \"path\": \"/spec/template/spec/containers/1/args/-\", \"value\": \"--requires-publish-pod\"}")
  rn_kubectl -n kube-system patch daemonset sample-csi-node --type=json \
    -p "[$(IFS=,; echo "${patch[*]}")]" >&2 || {
    result FAIL $name "patching the DaemonSet's driver arguments failed"
    return
  }
  # The patched template's pod, not the first one's: rollout status waits for the update.
  if ! rn_kubectl -n kube-system rollout status daemonset sample-csi-node --timeout=180s >&2 ||
    ! poll 60 daemonset_ready; then
    rn_kubectl -n kube-system describe pods -l app.kubernetes.io/name=sample-csi-node >&2
    result FAIL $name "the DaemonSet did not become Ready within 180 s (pods described above)"
    return
  fi
  local problems=() socket=/var/lib/kubelet/plugins_registry/$DRIVER-reg.sock
  local endpoint=/var/lib/kubelet/plugins/$DRIVER/csi.sock
  poll 60 grep -q "Register new plugin with name: $DRIVER at endpoint: $endpoint" \
    "$RN_WORK/logs/kubelet.log" ||
    problems+=("kubelet's log has no 'Register new plugin with name: $DRIVER at endpoint: $endpoint'")
  grep -q "RegisterPlugin started.*$socket" "$RN_WORK/logs/kubelet.log" ||
    problems+=("kubelet's log does not show it registering through $socket")
  # Polled: the first pod (before the patch) may have registered first, without topology, and
  # kubelet rewrites both objects when the patched one registers.
  poll 60 csinode_as_expected ||
    problems+=("CSINode's entry for $DRIVER is not nodeID $RN_NODE, the zone key and allocatable 7: $(csinode_driver_json)")
  poll 60 node_as_expected || problems+=("the Node's nodeid annotation or zone label is wrong or missing")
  if ((${#problems[@]})); then
    result FAIL $name "$(IFS=';'; echo "${problems[*]}")"
  else
    result PASS $name "deploy/ as shipped (images' tags rewritten only) Ready, and a pod's inline volume holds the pod's name, namespace, UID and service account (podInfoOnMount); kubelet registered $DRIVER through $socket; CSINode: nodeID $RN_NODE, topology key and allocatable 7; Node: nodeid annotation and zone label"
  fi
}

registrations() {  # how often kubelet's log says it registered the driver
  grep -c "Register new plugin with name: $DRIVER at" "$RN_WORK/logs/kubelet.log"
}
more_registrations_than() { (($(registrations) > $1)); }

container_id() {  # the containerd ID of a container of the DaemonSet's pod
  rn_kubectl -n kube-system get pods -l app.kubernetes.io/name=sample-csi-node -o json |
    python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    for c in p["status"].get("containerStatuses", []):
        if c["name"] == sys.argv[1] and c.get("state", {}).get("running"):
            print(c["containerID"].split("//", 1)[1])' "$1"
}
restarted() { [[ -n $(container_id "$1") && $(container_id "$1") != "$2" ]]; }

# 4. What a node does to the registrar: kubelet restarted, the driver container killed, the
# registrar container killed, the registration socket deleted by hand. After each, kubelet must
# register the driver again (a new "Register new plugin" line in its log) and the CSINode must
# still list it.
check_survival() {
  local name=survival problems=() done_=() before id
  local socket=/var/lib/kubelet/plugins_registry/$DRIVER-reg.sock

  before=$(registrations)
  kill "${RN_PID_OF[kubelet]}"
  poll 60 bash -c "! kill -0 ${RN_PID_OF[kubelet]}"
  if rn_start_kubelet && poll 120 more_registrations_than "$before"; then
    done_+=("kubelet restarted: registered again")
  else
    problems+=("after kubelet's restart it did not register $DRIVER again")
  fi

  before=$(registrations)
  id=$(container_id sample-csi-driver)
  rn_ctr tasks kill -s SIGKILL "$id" >&2
  if poll 120 restarted sample-csi-driver "$id" && poll 120 daemonset_ready &&
    [[ -n $(csinode_driver_json) ]]; then
    done_+=("driver killed: restarted, still registered")
  else
    problems+=("after the driver container was killed the pod did not come back Ready with $DRIVER registered")
  fi

  before=$(registrations)
  id=$(container_id csi-node-driver-registrar)
  rn_ctr tasks kill -s SIGKILL "$id" >&2
  if poll 120 restarted csi-node-driver-registrar "$id" && poll 120 more_registrations_than "$before" &&
    [[ -n $(csinode_driver_json) ]]; then
    done_+=("registrar killed: registered again")
  else
    problems+=("after our registrar's container was killed kubelet did not register $DRIVER again")
  fi

  before=$(registrations)
  rm -f "$socket"
  if poll 120 more_registrations_than "$before" && [[ -S $socket ]]; then
    done_+=("socket deleted: recreated and registered again")
  else
    problems+=("after $socket was deleted kubelet did not register $DRIVER again")
  fi

  if ((${#problems[@]})); then
    result FAIL $name "$(IFS=';'; echo "${problems[*]}")"
  else
    result PASS $name "$(IFS=';'; echo "${done_[*]}")"
  fi
}

pod_running() {
  [[ "$(rn_kubectl -n "$1" get pod "$2" -o 'jsonpath={.status.phase}' 2>/dev/null)" == Running ]]
}

# The files the sample driver wrote into a pod's inline volume, as JSON {file: contents}.
volume_files() {  # volume_files POD_UID VOLUME
  python3 - "/var/lib/kubelet/pods/$1/volumes/kubernetes.io~csi/$2/mount" <<'EOF2'
import json, os, sys
root = sys.argv[1]
files = {}
for dirpath, _, names in os.walk(root):
    for n in names:
        p = os.path.join(dirpath, n)
        with open(p, errors="replace") as f:
            files[os.path.relpath(p, root)] = f.read()
print(json.dumps(files, sort_keys=True))
EOF2
}

inline_pod() {  # inline_pod NAME: a pod (our pause image) with one inline volume of the driver
  cat <<EOF2
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  automountServiceAccountToken: false
  containers:
  - name: app
    image: $RN_PAUSE_IMAGE
    volumeMounts: [{name: info, mountPath: /info, readOnly: true}]
  volumes:
  - name: info
    csi:
      driver: $DRIVER
      readOnly: true
      volumeAttributes: {greeting: hello from the real node}
EOF2
}

# One inline pod: runs it, reads what the driver wrote, deletes it. Prints the files as JSON.
# CASE names it in the record of the driver's requests (prediction.sh).
run_inline_pod() {  # run_inline_pod POD CASE
  local pod=$1 case=$2 uid
  record_mark "$case" publish-from
  inline_pod "$pod" | rn_kubectl apply -f - >&2 || return 1
  poll 120 pod_running default "$pod" || { rn_kubectl -n default describe pod "$pod" >&2; return 1; }
  record_mark "$case" publish-to
  record_capture "$case" "$pod" >&2
  uid=$(rn_kubectl -n default get pod "$pod" -o 'jsonpath={.metadata.uid}')
  echo "{\"uid\": \"$uid\", \"files\": $(volume_files "$uid" info)}"
  rn_kubectl -n default delete pod "$pod" --wait=true --timeout=120s >&2
  # The pod object goes once kubelet has torn its volumes down; the record has it by then.
  poll 120 record_has_since "$(record_mark_of "$case" publish-to)" NodeUnpublishVolume "$uid" &&
    record_mark "$case" unpublish-to
}

# 2. A pod with an inline ephemeral CSI volume: with podInfoOnMount in the CSIDriver the driver
# gets the pod's name, namespace, UID and service account (csi.storage.k8s.io/pod.*); with it
# false, our registrar's --requires-publish-pod is all there is, and an unmodified kubelet never
# asks for it (CSIRegistration.GetCSIDriverInfo is this project's API, not kubelet's).
check_inline_ephemeral() {
  local name=inline-ephemeral out problems=() said=()
  poll 120 rn_kubectl -n default get serviceaccount default
  if ! out=$(run_inline_pod inline-info inline-info); then
    result FAIL $name "the pod with an inline volume did not run (described above)"
    return
  fi
  if python3 - "$out" <<'EOF2'; then
import json, sys
d = json.loads(sys.argv[1]); f = d["files"]
want = {"pod.name": "inline-info", "pod.namespace": "default", "pod.uid": d["uid"],
        "serviceAccount.name": "default"}
got = {k: v for k, v in f.items() if k.startswith("csi.storage.k8s.io")}
for key, value in want.items():
    match = [v for k, v in got.items() if k.endswith(key)]
    assert match == [value], (key, value, got)
assert [v for k, v in f.items() if k.endswith("greeting")] == ["hello from the real node"], f
EOF2
    said+=("podInfoOnMount true: the volume holds the pod's name, namespace, UID and service account")
  else
    problems+=("podInfoOnMount true: the volume's files are not the pod's: $out")
  fi

  # podInfoOnMount false: the CSIDriver is recreated without it; the registrar still says
  # requires_publish_pod (check 1 gave it --requires-publish-pod, as deploy/csiregistration does).
  rn_kubectl delete csidriver "$DRIVER" >&2
  sed 's/podInfoOnMount: true/podInfoOnMount: false/' "$repo/deploy/csidriver.yaml" | rn_kubectl apply -f - >&2
  if ! out=$(run_inline_pod inline-no-info inline-no-info); then
    problems+=("podInfoOnMount false: the pod did not run")
  elif python3 - "$out" <<'EOF2'; then
import json, sys
f = json.loads(sys.argv[1])["files"]
assert not [k for k in f if k.startswith("csi.storage.k8s.io/pod") or "serviceAccount" in k], f
EOF2
    said+=("podInfoOnMount false with --requires-publish-pod: no pod information, as expected of an unmodified kubelet $RN_KUBE_VERSION, which never calls GetCSIDriverInfo")
  else
    problems+=("podInfoOnMount false: pod information arrived, which an unmodified kubelet cannot have sent: $out")
  fi
  rn_kubectl delete csidriver "$DRIVER" >&2
  rn_kubectl apply -f "$repo/deploy/csidriver.yaml" >&2
  if ((${#problems[@]})); then
    result FAIL $name "$(IFS=';'; echo "${problems[*]}")"
  else
    result PASS $name "$(IFS=';'; echo "${said[*]}")"
  fi
}

# --- 3. a persistent volume -------------------------------------------------------------------

controller_manifests() {
  cat <<EOF2
apiVersion: v1
kind: ServiceAccount
metadata: {name: sample-csi-controller, namespace: kube-system}
---
# A test fixture, not a deployment guide: the sidecars' own RBAC files are not what is tested.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: sample-csi-controller}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: sample-csi-controller, namespace: kube-system}]
---
# The sample driver's Controller service with the real external-provisioner and
# external-attacher beside it. hostNetwork, and the API server's loopback address in place of
# the kubernetes Service's: this node runs no kube-proxy.
apiVersion: v1
kind: Pod
metadata: {name: sample-csi-controller, namespace: kube-system}
spec:
  serviceAccountName: sample-csi-controller
  hostNetwork: true
  containers:
  - name: driver
    image: localhost/ndr/sample-csi-driver:$("$RN_TOOLS/csi-node-driver-registrar" --version | head -n 1 | cut -d' ' -f2 | tr + _)
    args: [--endpoint=unix:///csi/csi.sock, --drivername=$DRIVER, --nodeid=controller, --controller]
    volumeMounts: [{name: socket-dir, mountPath: /csi}]
  - name: csi-provisioner
    image: $RN_PROVISIONER_IMAGE
    args: [--csi-address=/csi/csi.sock, --v=2]
    env: &api
    - {name: KUBERNETES_SERVICE_HOST, value: 127.0.0.1}
    - {name: KUBERNETES_SERVICE_PORT, value: "$RN_API_PORT"}
    volumeMounts: [{name: socket-dir, mountPath: /csi}]
  - name: csi-attacher
    image: $RN_ATTACHER_IMAGE
    args: [--csi-address=/csi/csi.sock, --v=2]
    env: *api
    volumeMounts: [{name: socket-dir, mountPath: /csi}]
  volumes:
  - {name: socket-dir, emptyDir: {}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sample}
provisioner: $DRIVER
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: sample
  resources: {requests: {storage: 1Gi}}
EOF2
}

pv_pod() {
  cat <<EOF2
apiVersion: v1
kind: Pod
metadata: {name: pv-user, namespace: default}
spec:
  automountServiceAccountToken: false
  containers:
  - name: app
    image: $RN_BUSYBOX_IMAGE
    command: [/bin/busybox, sh, -c, "echo written by the pod > /data/pod-wrote && /bin/busybox cat /data/pod-wrote && /bin/busybox ls /data && exec /bin/busybox sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: data}}
EOF2
}

pvc_bound() {
  [[ "$(rn_kubectl -n default get pvc data -o 'jsonpath={.status.phase}' 2>/dev/null)" == Bound ]]
}
attachment_state() {  # "true" once the PV's VolumeAttachment for this node says attached
  rn_kubectl get volumeattachments -o json | python3 -c '
import json, sys
for v in json.load(sys.stdin)["items"]:
    if v["spec"]["source"].get("persistentVolumeName") == sys.argv[1] and v["spec"]["nodeName"] == sys.argv[2]:
        print(str(v.get("status", {}).get("attached", False)).lower())' "$1" "$RN_NODE"
}
attached() { [[ "$(attachment_state "$1")" == true ]]; }
detached() { [[ -z "$(attachment_state "$1")" ]]; }
pod_gone() { ! rn_kubectl -n "$1" get pod "$2" >/dev/null 2>&1; }
pod_says() { rn_kubectl -n default logs pv-user 2>/dev/null | grep -q "$1"; }

# 3. A claim provisioned by the real external-provisioner from the sample driver's controller,
# attached by the real attach/detach controller and external-attacher, staged and published by
# the real kubelet, written and read by the pod; the pod deleted: unpublished, unstaged,
# detached, nothing left under kubelet's root.
check_persistent_volume() {
  local name=persistent-volume problems=() said=()
  # The driver as a persistent-volume driver: attach required, staging advertised.
  rn_kubectl delete csidriver "$DRIVER" >&2
  rn_kubectl apply -f - >&2 <<EOF2
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: $DRIVER}
spec:
  attachRequired: true
  podInfoOnMount: true
  volumeLifecycleModes: [Persistent, Ephemeral]
EOF2
  # deploy/ is an inline-volume deployment (its CSIDriver lists Ephemeral only), so its driver
  # container sees only kubelet's pods directory; staging needs kubelet's CSI staging directory
  # too, as every persistent-volume driver's DaemonSet mounts it.
  rn_kubectl -n kube-system patch daemonset sample-csi-node --type=json -p '[
    {"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--stage-unstage"},
    {"op": "add", "path": "/spec/template/spec/volumes/-", "value":
      {"name": "staging-dir", "hostPath": {"path": "/var/lib/kubelet/plugins/kubernetes.io/csi", "type": "DirectoryOrCreate"}}},
    {"op": "add", "path": "/spec/template/spec/containers/0/volumeMounts/-", "value":
      {"name": "staging-dir", "mountPath": "/var/lib/kubelet/plugins/kubernetes.io/csi"}}]' >&2
  rn_kubectl -n kube-system rollout status daemonset sample-csi-node --timeout=180s >&2
  controller_manifests | rn_kubectl apply -f - >&2
  if ! poll 180 pvc_bound; then
    rn_kubectl -n kube-system logs sample-csi-controller -c csi-provisioner --tail=30 >&2
    result FAIL $name "the claim was not provisioned and bound within 180 s (provisioner's log above)"
    return
  fi
  local pv
  pv=$(rn_kubectl -n default get pvc data -o 'jsonpath={.spec.volumeName}')
  said+=("claim bound to $pv by external-provisioner")
  record_mark persistent publish-from
  pv_pod | rn_kubectl apply -f - >&2
  if ! poll 180 pod_running default pv-user; then
    rn_kubectl -n default describe pod pv-user >&2
    result FAIL $name "the pod using $pv did not run within 180 s (described above)"
    return
  fi
  record_mark persistent publish-to
  record_capture persistent pv-user data >&2
  attached "$pv" && said+=("attached (VolumeAttachment)") || problems+=("no attached VolumeAttachment for $pv")
  poll 60 pod_says "written by the pod" && said+=("written and read by the pod") ||
    problems+=("the pod did not write and read its volume: $(rn_kubectl -n default logs pv-user 2>&1 | head -5)")
  local uid staging target
  uid=$(rn_kubectl -n default get pod pv-user -o 'jsonpath={.metadata.uid}')
  target=/var/lib/kubelet/pods/$uid/volumes/kubernetes.io~csi/$pv/mount
  staging=$(find /var/lib/kubelet/plugins/kubernetes.io/csi -mindepth 2 -maxdepth 3 -name globalmount 2>/dev/null | head -1)
  [[ -f $target/pod-wrote ]] && said+=("published at $target") || problems+=("nothing the pod wrote at $target")
  [[ -n $staging ]] && said+=("staged at ${staging#/var/lib/kubelet/}") || problems+=("no staging directory under plugins/kubernetes.io/csi")

  rn_kubectl -n default delete pod pv-user --wait=true --timeout=120s >&2
  poll 120 pod_gone default pv-user || problems+=("the pod was not deleted")
  poll 120 detached "$pv" && said+=("after deletion detached") || problems+=("$pv stayed attached after the pod was deleted")
  # Detached only once kubelet has unstaged it (the node's volumesInUse); the record has that.
  poll 60 record_has_since "$(record_mark_of persistent publish-to)" NodeUnstageVolume "\"volume_id\":\"" &&
    record_mark persistent unpublish-to
  [[ ! -e /var/lib/kubelet/pods/$uid ]] || problems+=("/var/lib/kubelet/pods/$uid is still there")
  # kubelet removes the volume's own directory (globalmount, vol_data.json and their parent:
  # csi_mounter.go removeMountDir, v1.26.15 and v1.37.2) and keeps the driver's directory above
  # it, empty, as it does on every node: anything inside that is left over.
  local left
  left=$(find /var/lib/kubelet/plugins/kubernetes.io/csi -mindepth 2 2>/dev/null | head -5)
  [[ -z $left ]] && said+=("unpublished and unstaged, nothing left under kubelet's root") ||
    problems+=("left under kubelet's root: $left")
  rn_kubectl -n default delete pvc data --wait=true --timeout=120s >&2
  if ((${#problems[@]})); then
    result FAIL $name "$(IFS=';'; echo "${problems[*]}")"
  else
    result PASS $name "$(IFS=';'; echo "${said[*]}")"
  fi
}

# --- 5. Kubernetes' own CSI mock e2e tests ----------------------------------------------------

# The "CSI Mock" tests about pod info on mount (inline ephemeral volumes among them),
# service-account tokens and requiresRepublish, from the release's own test/e2e. Their names
# changed when v1.27 split test/e2e/storage/csi_mock_volume.go into csi_mock/: the first half
# is v1.27's and later, the second v1.26's.
E2E_FOCUS='CSI Mock (workload info|volume service account token)|CSI mock volume (CSI workload information using mock driver|CSIServiceAccountToken)'

# --e2e=full: every test of the release's CSI mock suite that one node without SELinux,
# snapshots or a cloud can run (v1.27 and later: test/e2e/storage/csimock/; v1.26:
# csi_mock_volume.go, "CSI mock volume"). --e2e=volume-health: the tests of the CSIVolumeHealth
# feature (csi_node_volume_health.go), with the gate on (real-node.sh sets it).
E2E_SKIP='\[Serial\]|\[Disruptive\]|\[Feature:'
E2E_FULL_FOCUS='\[sig-storage\] (CSI Mock|CSI mock volume|MutableCSINodeAllocatableCount)'
E2E_HEALTH_FOCUS='\[sig-storage\] CSI Mock Node Volume Health \[FeatureGate:CSIVolumeHealth\]'
E2E_HEALTH_SKIP='\[Serial\]|\[Disruptive\]'

# The e2e framework's registry override (KUBE_TEST_REPO_LIST), which e2e.test reads as it starts.
e2e_repo_list() {
  cat >"$RN_WORK/repo-list.yaml" <<EOF2
sigStorageRegistry: localhost/ndr/sig-storage
promoterE2eRegistry: localhost/ndr/e2e-test-images
gcRegistry: localhost/ndr/gc
EOF2
}

# One run of e2e.test against this node with the registrar image REGISTRAR_IMAGE standing in for
# registry.k8s.io/sig-storage/csi-node-driver-registrar:$RN_REGISTRAR_TAG (the mock driver's
# manifests name that image; the e2e framework's own registry override, KUBE_TEST_REPO_LIST, moves every
# registry.k8s.io image to localhost/ndr/..., where this script imported its own builds).
# Writes RN_WORK/e2e-LABEL/junit.xml and report.json (Ginkgo's JSON report) and prints "passed
# failed skipped seconds". FOCUS and SKIP default to check 5's.
run_e2e() {
  local label=$1 registrar_image=$2 report=$RN_WORK/e2e-$1
  local focus=${3:-$E2E_FOCUS} skip=${4:-$E2E_SKIP}
  rn_ctr images tag --force "$registrar_image" \
    "localhost/ndr/sig-storage/csi-node-driver-registrar:$RN_REGISTRAR_TAG" >/dev/null || return 1
  mkdir -p "$report"
  e2e_repo_list
  local start=$SECONDS
  rm -f "$report/junit.xml" "$report/report.json"
  # The suite's own timeout is an hour by default; a chunk of the whole suite takes longer.
  KUBE_TEST_REPO_LIST=$RN_WORK/repo-list.yaml "$RN_BIN/e2e.test" \
    --kubeconfig="$RN_WORK/admin.kubeconfig" --provider=skeleton \
    --ginkgo.focus="$focus" --ginkgo.skip="$skip" --ginkgo.timeout=24h \
    --ginkgo.no-color --ginkgo.junit-report="$report/junit.xml" \
    --ginkgo.json-report="$report/report.json" --report-dir="$report" \
    >"$RN_WORK/logs/e2e-$label.log" 2>&1
  python3 - "$report/junit.xml" "$((SECONDS - start))" <<'EOF2'
import sys, xml.etree.ElementTree as ET
# The specs ("[It] ..."), not ginkgo's suite nodes, which JUnit lists as cases too.
cases = [c for c in ET.parse(sys.argv[1]).getroot().iter("testcase") if "[It]" in c.get("name", "")]
p = f = s = 0
for c in cases:
    if c.find("skipped") is not None: s += 1
    elif c.find("failure") is not None or c.find("error") is not None: f += 1
    else: p += 1
print(p, f, s, sys.argv[2])
EOF2
}

# Per test: name and outcome, from a JUnit report (skipped tests left out).
e2e_outcomes() {
  python3 - "$1" <<'EOF2'
import sys, xml.etree.ElementTree as ET
for c in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if c.find("skipped") is not None or "[It]" not in c.get("name", ""): continue
    bad = c.find("failure") is not None or c.find("error") is not None
    name = c.get("name").replace("[It] ", "").replace(" [sig-storage]", "").replace("[sig-storage] ", "")
    print(("FAIL" if bad else "PASS") + "\t" + "%.0f" % float(c.get("time", "0")) + "\t" + name)
EOF2
}

check_kubernetes_e2e() {
  local name=kubernetes-e2e ours go
  if [[ ! -x $RN_BIN/e2e.test ]]; then
    result FAIL $name "no e2e.test in $RN_BIN"
    return
  fi
  if ! ours=$(run_e2e ours "$RN_REGISTRAR_IMAGE"); then
    result FAIL $name "e2e.test with our registrar did not run (log: $RN_WORK/logs/e2e-ours.log)"
    return
  fi
  read -r op of os_ osec <<<"$ours"
  e2e_outcomes "$RN_WORK/e2e-ours/junit.xml" >"$RN_WORK/e2e-ours.txt"
  if [[ -n ${RN_GO_REGISTRAR_IMAGE:-} ]] && go=$(run_e2e go "$RN_GO_REGISTRAR_IMAGE"); then
    read -r gp gf gs gsec <<<"$go"
    e2e_outcomes "$RN_WORK/e2e-go/junit.xml" >"$RN_WORK/e2e-go.txt"
    local differences
    differences=$(diff <(cut -f1,3 "$RN_WORK/e2e-ours.txt" | sort -t$'\t' -k2) \
      <(cut -f1,3 "$RN_WORK/e2e-go.txt" | sort -t$'\t' -k2) | grep '^[<>]' || true)
    {
      echo "outcome, seconds and name of each test: ours | Go registrar $RN_GO_REGISTRAR_TAG"
      join -t$'\t' -1 3 -2 3 <(sort -t$'\t' -k3 "$RN_WORK/e2e-ours.txt") <(sort -t$'\t' -k3 "$RN_WORK/e2e-go.txt")
    } >"$RN_WORK/e2e-comparison.txt"
    if ((of == 0 && op > 0)) && [[ -z $differences ]]; then
      result PASS $name "'$E2E_FOCUS': ours $op passed, $of failed in ${osec}s; Go registrar $RN_GO_REGISTRAR_TAG $gp passed, $gf failed in ${gsec}s (each in the place of the manifests' $RN_REGISTRAR_TAG); same outcome for every test ($RN_WORK/e2e-comparison.txt)"
    else
      result FAIL $name "ours $op passed, $of failed; Go registrar $RN_GO_REGISTRAR_TAG $gp passed, $gf failed; differences: $differences (logs: $RN_WORK/logs/e2e-*.log)"
    fi
  elif ((of == 0 && op > 0)); then
    result FAIL $name "ours: $op passed, 0 failed in ${osec}s; the side-by-side run with the Go registrar $RN_GO_REGISTRAR_TAG did not run (give --source-dir with a node-driver-registrar clone)"
  else
    result FAIL $name "ours: $op passed, $of failed, $os_ skipped (failures in $RN_WORK/e2e-ours.txt, log $RN_WORK/logs/e2e-ours.log)"
  fi
}

# --- 5, --e2e=full or --e2e=volume-health: the whole suite, resumable ---------------------------

# Runs what is still missing of the set (E2E_SET: full or volume-health) with ours and with the Go
# registrar, at most E2E_LIMIT tests (0: all), or again what E2E_RERUN asks (failed, differ or a
# regex on the name); keeps each test's outcome per registrar in RN_CACHE/e2e/VERSION/SET/ (a
# rerun of real-node.sh goes on from there), and judges the table of all of them: PASS once
# every test has an outcome with both and they are the same, FAIL where they differ, SKIP while
# tests are left to run.
check_kubernetes_e2e_suite() {
  local name=kubernetes-e2e store=$RN_CACHE/e2e/$RN_KUBE_VERSION/$E2E_SET suite focus skip
  suite="python3 $here/real-node/e2e_suite.py"
  if [[ $E2E_SET == volume-health ]]; then
    focus=$E2E_HEALTH_FOCUS skip=$E2E_HEALTH_SKIP
  else
    focus=$E2E_FULL_FOCUS skip=$E2E_SKIP
  fi
  if [[ ! -x $RN_BIN/e2e.test ]]; then
    result FAIL $name "no e2e.test in $RN_BIN"
    return
  fi
  if [[ -z ${RN_GO_REGISTRAR_IMAGE:-} ]]; then
    result FAIL $name "--e2e=$E2E_SET compares ours with the Go registrar $RN_GO_REGISTRAR_TAG test by test: give --source-dir with a node-driver-registrar clone"
    return
  fi
  mkdir -p "$store"
  e2e_repo_list
  # The tests: what the release's e2e.test would run of the set (a dry run runs nothing).
  KUBE_TEST_REPO_LIST=$RN_WORK/repo-list.yaml "$RN_BIN/e2e.test" \
    --kubeconfig="$RN_WORK/admin.kubeconfig" --provider=skeleton --ginkgo.dry-run \
    --ginkgo.focus="$focus" --ginkgo.skip="$skip" --ginkgo.no-color \
    --ginkgo.json-report="$RN_WORK/e2e-dry-run.json" >"$RN_WORK/logs/e2e-dry-run.log" 2>&1
  if ! $suite list "$RN_WORK/e2e-dry-run.json" >"$store/tests.txt" || [[ ! -s $store/tests.txt ]]; then
    result FAIL $name "e2e.test's dry run listed no tests for '$focus' (log: $RN_WORK/logs/e2e-dry-run.log)"
    return
  fi
  $suite plan "$store/tests.txt" "$store/ours.tsv" "$store/go.tsv" --limit="$E2E_LIMIT" \
    ${E2E_RERUN:+--rerun="$E2E_RERUN"} >"$RN_WORK/e2e-plan.txt" || {
    result FAIL $name "could not plan the run (--e2e-rerun=$E2E_RERUN?)"
    return
  }
  local planned commit
  planned=$(wc -l <"$RN_WORK/e2e-plan.txt")
  commit=$RN_COMMIT
  if ((planned > 0)); then
    rn_log "e2e --e2e=$E2E_SET: $planned of $(wc -l <"$store/tests.txt") tests, with ours, then with the Go registrar $RN_GO_REGISTRAR_TAG"
    local label image tag mine
    for label in ours go; do
      # Each registrar runs the planned tests its own store lacks (a run stopped between the two
      # is not redone with the first), and with both those a rerun asks for.
      $suite plan "$store/tests.txt" "$store/ours.tsv" "$store/go.tsv" --limit="$E2E_LIMIT" \
        ${E2E_RERUN:+--rerun="$E2E_RERUN"} --for="$label" >"$RN_WORK/e2e-plan-$label.txt"
      mine=$(wc -l <"$RN_WORK/e2e-plan-$label.txt")
      if ((mine == 0)); then
        rn_log "e2e with $label: nothing of the plan is missing"
        continue
      fi
      # Each row says which registrar gave it: our commit, or the Go registrar's tag.
      if [[ $label == ours ]]; then
        image=$RN_REGISTRAR_IMAGE tag=$commit
      else
        image=$RN_GO_REGISTRAR_IMAGE tag=$RN_GO_REGISTRAR_TAG
      fi
      rn_log "e2e with $label: $mine tests"
      run_e2e "$label" "$image" "$($suite focus "$RN_WORK/e2e-plan-$label.txt")" "$skip" >/dev/null
      if [[ -f $RN_WORK/e2e-$label/report.json ]]; then
        rn_log "e2e with $label: $($suite record "$RN_WORK/e2e-$label/report.json" "$store/$label.tsv" "$tag" --planned="$RN_WORK/e2e-plan-$label.txt") outcomes recorded"
      else
        rn_log "e2e with $label wrote no report (log: $RN_WORK/logs/e2e-$label.log)"
      fi
    done
  fi
  $suite table "$store/tests.txt" "$store/ours.tsv" "$store/go.tsv" >"$store/table.md" || {
    result FAIL $name "could not read the outcomes in $store"
    return
  }
  local total both same differ missing
  read -r total both same differ missing < <(sed -n 's/^SUMMARY total=\([0-9]*\) both=\([0-9]*\) same=\([0-9]*\) differ=\([0-9]*\) missing=\([0-9]*\)$/\1 \2 \3 \4 \5/p' "$store/table.md")
  local said="--e2e=$E2E_SET, $RN_KUBE_VERSION: $total tests; with both registrars $both, the same outcome $same, different $differ, not yet run with both $missing (this run: $planned); table: $store/table.md"
  # The same outcome is a drop-in's verdict; a test that fails with both is named all the same,
  # to be told apart (this node, the release, a flake) with --e2e-rerun.
  local both_failed
  both_failed=$(grep -E '^\| .* \| FAIL, [0-9]+ s \| FAIL, [0-9]+ s \| yes \|$' "$store/table.md" | cut -d'|' -f2 | sed 's/^ //; s/ $//')
  [[ -n $both_failed ]] && said+="; failed with both: $(tr '\n' ';' <<<"$both_failed")"
  if ((differ > 0)); then
    result FAIL $name "$said; different: $(grep -F '| **no** |' "$store/table.md" | cut -d'|' -f2 | tr '\n' ';')"
  elif ((missing > 0)); then
    result SKIP $name "$said; run again to go on"
  else
    result PASS $name "$said"
  fi
}
