# The single-node Kubernetes of test/e2e/real-node.sh: certificates, etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, containerd and kubelet, each started in the
# background with its log under $RN_WORK/logs and waited for by polling its own health endpoint
# with a deadline; and the teardown that undoes everything they did to the host.
# Sourced by real-node.sh, which sets RN_* (see there). What a node needs set on the host and what
# kubelet changes there are written beside each step below.

rn_log() { printf '%s real-node: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# The versions of kubelet that know a setting, by minor release.
rn_minor() { local v=${RN_KUBE_VERSION#v1.}; echo "${v%%.*}"; }

# Polls CMD until it succeeds or SECONDS pass; on timeout shows the tail of LOG.
rn_wait_for() {
  local what=$1 seconds=$2 log=$3
  shift 3
  local deadline=$((SECONDS + seconds))
  rn_log "waiting for $what (up to ${seconds}s)"
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      rn_log "$what did not become ready within ${seconds}s; the last lines of $log:"
      tail -n 40 "$log" >&2 || true
      return 1
    fi
    if [[ -n ${RN_PID_OF[$what]:-} ]] && ! kill -0 "${RN_PID_OF[$what]}" 2>/dev/null; then
      rn_log "$what exited; the last lines of $log:"
      tail -n 40 "$log" >&2 || true
      return 1
    fi
    sleep 0.5
  done
  rn_log "$what is ready"
}

declare -gA RN_PID_OF=()

# Starts a component in the background: rn_start NAME COMMAND...
rn_start() {
  local name=$1
  shift
  rn_log "starting $name"
  "$@" >>"$RN_WORK/logs/$name.log" 2>&1 &
  RN_PID_OF[$name]=$!
  echo "$name $!" >>"$RN_WORK/pids"
}

rn_node_ip() {
  ip -4 -o addr show scope global 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}'
}

# --- certificates ---------------------------------------------------------------------------

rn_cert() {  # rn_cert NAME SUBJECT [SAN]
  local name=$1 subject=$2 san=${3:-}
  local pki=$RN_WORK/pki
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$pki/$name.key" -out "$pki/$name.csr" -subj "$subject" 2>/dev/null
  {
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [[ -n $san ]] && echo "subjectAltName=$san"
  } >"$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
}

rn_kubeconfig() {  # rn_kubeconfig NAME: a kubeconfig with NAME's client certificate
  local name=$1 pki=$RN_WORK/pki
  cat >"$RN_WORK/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: real-node
  cluster:
    server: https://127.0.0.1:$RN_API_PORT
    certificate-authority: $pki/ca.crt
users:
- name: $name
  user:
    client-certificate: $pki/$name.crt
    client-key: $pki/$name.key
contexts:
- name: real-node
  context: {cluster: real-node, user: $name}
current-context: real-node
EOF
}

rn_make_pki() {
  local pki=$RN_WORK/pki
  mkdir -p "$pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" -subj "/CN=ndr-real-node-ca" 2>/dev/null
  rn_cert apiserver "/CN=kube-apiserver" \
    "IP:127.0.0.1,IP:$RN_NODE_IP,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:localhost"
  rn_cert admin "/O=system:masters/CN=ndr-admin"
  rn_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  rn_cert kube-controller-manager "/CN=system:kube-controller-manager"
  rn_cert kube-scheduler "/CN=system:kube-scheduler"
  rn_cert kubelet "/O=system:nodes/CN=system:node:$RN_NODE" "IP:127.0.0.1,IP:$RN_NODE_IP,DNS:$RN_NODE"
  rn_cert kube-proxy "/CN=system:kube-proxy"
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  local n
  for n in admin kube-controller-manager kube-scheduler kubelet kube-proxy; do rn_kubeconfig "$n"; done
}

rn_kubectl() { "$RN_BIN/kubectl" --kubeconfig="$RN_WORK/admin.kubeconfig" "$@"; }

rn_curl_api() {
  curl -sf --cacert "$RN_WORK/pki/ca.crt" --cert "$RN_WORK/pki/admin.crt" \
    --key "$RN_WORK/pki/admin.key" "https://127.0.0.1:$RN_API_PORT$1"
}

# --- control plane --------------------------------------------------------------------------

rn_start_etcd() {
  rn_start etcd etcd --name=real-node --data-dir="$RN_WORK/etcd" \
    --listen-client-urls="http://127.0.0.1:$RN_ETCD_PORT" \
    --advertise-client-urls="http://127.0.0.1:$RN_ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$((RN_ETCD_PORT + 1))" \
    --initial-advertise-peer-urls="http://127.0.0.1:$((RN_ETCD_PORT + 1))" \
    --initial-cluster="real-node=http://127.0.0.1:$((RN_ETCD_PORT + 1))"
  rn_wait_for etcd 60 "$RN_WORK/logs/etcd.log" curl -sf "http://127.0.0.1:$RN_ETCD_PORT/health"
}

rn_start_apiserver() {
  local pki=$RN_WORK/pki
  # A loopback --advertise-address is refused: it advertises the machine's address, which is
  # what the kubernetes Service's endpoint becomes (pods reach 10.96.0.1:443 through kube-proxy),
  # so it serves on every address, to clients with a certificate of this run's CA only.
  rn_start kube-apiserver "$RN_BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$RN_ETCD_PORT" \
    --bind-address=0.0.0.0 --secure-port="$RN_API_PORT" --anonymous-auth=false \
    --advertise-address="$RN_NODE_IP" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-cluster-ip-range=10.96.0.0/24 \
    --authorization-mode=Node,RBAC --allow-privileged=true \
    --kubelet-preferred-address-types=InternalIP \
    ${RN_FEATURE_GATES:+--feature-gates="$RN_FEATURE_GATES"}
  rn_wait_for kube-apiserver 180 "$RN_WORK/logs/kube-apiserver.log" rn_curl_api /readyz
}

rn_start_controller_manager() {
  local pki=$RN_WORK/pki
  rn_start kube-controller-manager "$RN_BIN/kube-controller-manager" \
    --kubeconfig="$RN_WORK/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig="$RN_WORK/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig="$RN_WORK/kube-controller-manager.kubeconfig" \
    --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port="$RN_KCM_PORT" \
    --use-service-account-credentials=true \
    ${RN_FEATURE_GATES:+--feature-gates="$RN_FEATURE_GATES"}
  rn_wait_for kube-controller-manager 120 "$RN_WORK/logs/kube-controller-manager.log" \
    curl -skf "https://127.0.0.1:$RN_KCM_PORT/healthz"
}

rn_start_scheduler() {
  rn_start kube-scheduler "$RN_BIN/kube-scheduler" \
    --kubeconfig="$RN_WORK/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig="$RN_WORK/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig="$RN_WORK/kube-scheduler.kubeconfig" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port="$RN_SCHED_PORT"
  rn_wait_for kube-scheduler 120 "$RN_WORK/logs/kube-scheduler.log" \
    curl -skf "https://127.0.0.1:$RN_SCHED_PORT/healthz"
}

# --- the node -------------------------------------------------------------------------------

rn_start_containerd() {
  mkdir -p "$RN_WORK/cni/net.d" "$RN_WORK/containerd" "$RN_RUN"
  # A bridge with its own addresses, no masquerading (no iptables rule), for pods that are not
  # hostNetwork: kubelet's probes reach them on the bridge.
  cat >"$RN_WORK/cni/net.d/10-ndr-real-node.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "ndr-real-node",
  "plugins": [
    {"type": "bridge", "bridge": "$RN_BRIDGE", "isGateway": true, "isDefaultGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.77.0/24"}]],
              "dataDir": "$RN_WORK/cni/ipam"}}
  ]
}
EOF
  # restrict_oom_score_adj: root here has no CAP_SYS_RESOURCE, so runc may not lower a
  # container's oom_score_adj below its own. SystemdCgroup false: no systemd here.
  cat >"$RN_WORK/containerd/config.toml" <<EOF
version = 2
root = "$RN_WORK/containerd/root"
state = "$RN_RUN/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$RN_RUN/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$RN_PAUSE_IMAGE"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$RN_RUN/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$RN_WORK/cni/net.d"
EOF
  rn_start containerd containerd --config "$RN_WORK/containerd/config.toml"
  rn_wait_for containerd 60 "$RN_WORK/logs/containerd.log" \
    ctr --address "$RN_RUN/containerd.sock" version
}

rn_ctr() { ctr --address "$RN_RUN/containerd.sock" -n k8s.io "$@"; }

rn_start_kubelet() {
  local minor own_minor
  # The kubelet's own release decides which settings it knows (RN_KUBELET_BIN may be an older
  # one than the control plane's, as in the day-two upgrade).
  own_minor=$("${RN_KUBELET_BIN:-$RN_BIN/kubelet}" --version 2>/dev/null | sed -n 's/^Kubernetes v1\.\([0-9]*\)\..*/\1/p')
  minor=${own_minor:-$(rn_minor)}
  mkdir -p "$RN_WORK/volume-plugins"
  {
    cat <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $RN_WORK/pki/ca.crt}
authorization: {mode: AlwaysAllow}
tlsCertFile: $RN_WORK/pki/kubelet.crt
tlsPrivateKeyFile: $RN_WORK/pki/kubelet.key
cgroupDriver: cgroupfs
failSwapOn: false
# Leave the host's iptables alone (otherwise kubelet's KUBE-* chains stay behind after the run).
makeIPTablesUtilChains: false
volumePluginDir: $RN_WORK/volume-plugins
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
    # This machine is on cgroup v1, which kubelet refuses from v1.35 unless told (the field
    # exists from v1.31).
    ((minor >= 31)) && echo "failCgroupV1: false"
    ((minor >= 27)) && echo "containerRuntimeEndpoint: unix://$RN_RUN/containerd.sock"
  } >"$RN_WORK/kubelet-config.yaml"
  local extra=()
  ((minor < 27)) && extra+=(--container-runtime-endpoint="unix://$RN_RUN/containerd.sock")
  rn_start kubelet "${RN_KUBELET_BIN:-$RN_BIN/kubelet}" --config="$RN_WORK/kubelet-config.yaml" \
    --kubeconfig="$RN_WORK/kubelet.kubeconfig" --hostname-override="$RN_NODE" \
    --node-ip="$RN_NODE_IP" --v=2 ${RN_FEATURE_GATES:+--feature-gates="$RN_FEATURE_GATES"} \
    "${extra[@]}"
  rn_wait_for kubelet 120 "$RN_WORK/logs/kubelet.log" curl -sf http://127.0.0.1:10248/healthz
  # RN_KUBELET_NO_NODE_WAIT=1: the API server is away on purpose, and kubelet cannot say the
  # node is Ready; its own health is all there is to wait for.
  [[ -n ${RN_KUBELET_NO_NODE_WAIT:-} ]] && return 0
  rn_wait_for "node $RN_NODE Ready" 180 "$RN_WORK/logs/kubelet.log" rn_node_ready
}

# kube-proxy in iptables mode: pods that are not hostNetwork reach the API server through the
# kubernetes Service (the CSI mock driver's sidecars do). It changes no conntrack sysctl here and
# opens no node port on loopback; its rules go with `kube-proxy --cleanup` in the teardown.
rn_start_kube_proxy() {
  {
    cat <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $RN_WORK/kube-proxy.kubeconfig}
hostnameOverride: $RN_NODE
mode: iptables
clusterCIDR: 10.244.77.0/24
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
healthzBindAddress: 127.0.0.1:10356
metricsBindAddress: 127.0.0.1:10349
EOF
    (($(rn_minor) >= 27)) && echo "iptables: {localhostNodePorts: false}"
  } >"$RN_WORK/kube-proxy-config.yaml"
  rn_start kube-proxy "$RN_BIN/kube-proxy" --config="$RN_WORK/kube-proxy-config.yaml"
  rn_wait_for kube-proxy 60 "$RN_WORK/logs/kube-proxy.log" curl -sf http://127.0.0.1:10356/healthz
}

rn_node_ready() {
  [[ "$(rn_kubectl get node "$RN_NODE" \
    -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

# --- what the host looked like, and teardown ------------------------------------------------

RN_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward
  net.ipv4.conf.all.route_localnet)

rn_host_snapshot() {  # rn_host_snapshot FILE: what must be the same after the teardown
  {
    echo "# mounts"
    awk '{print $5}' /proc/self/mountinfo | grep -E "^(/var/lib/kubelet|$RN_WORK|$RN_RUN|/run/netns)" | sort
    echo "# interfaces"
    ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^($RN_BRIDGE|veth)" | sort
    echo "# iptables"
    { iptables-save 2>/dev/null; ip6tables-save 2>/dev/null; } | grep -E '^[:-].*KUBE-' | sort
    command -v nft >/dev/null && nft list tables 2>/dev/null | sort
    echo "# network namespaces"
    ls -d /run/netns/cni-* 2>/dev/null
    echo "# cgroups"
    find /sys/fs/cgroup -maxdepth 2 -type d -name kubepods 2>/dev/null | sort
    echo "# processes"
    for pid in $(cat "$RN_WORK/pids" 2>/dev/null | awk '{print $2}'); do
      kill -0 "$pid" 2>/dev/null && echo "still running: $pid"
    done
    pgrep -f "containerd-shim-runc-v2 .*-address $RN_RUN/containerd.sock" 2>/dev/null | sed 's/^/shim /'
    echo "# sysctls"
    for s in "${RN_SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done
    echo "# paths"
    find /var/lib/kubelet /var/log/pods /var/log/containers "$RN_RUN" 2>/dev/null | sort
    # containerd's shims and ctr use /run/containerd whatever their state directory
    # (test/util/run-containerd.sh).
    find /run/containerd 2>/dev/null | sort
  } >"$1" 2>/dev/null
}

rn_umount_under() {  # unmounts everything mounted under $1, deepest first
  local m
  awk '{print $5}' /proc/self/mountinfo | grep -E "^$1(/|$)" | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || rn_log "could not unmount $m"
  done
}

rn_remove_cgroups() {  # removes every kubepods cgroup, leaves first
  local top
  for top in $(find /sys/fs/cgroup -maxdepth 2 -type d -name kubepods 2>/dev/null); do
    # Only this run's: one that was there before is someone else's.
    grep -qx "$top" "$RN_WORK/host.before" 2>/dev/null && continue
    find "$top" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    [[ -d $top ]] && rn_log "cgroup $top is still there"
  done
}

# KUBE-* iptables chains that were not there before this run, with the rules that jump to them:
# kube-proxy --cleanup leaves KUBE-FIREWALL (kubelet makes it too, where makeIPTablesUtilChains
# is on: pkg/kubelet/kubelet_network_linux.go syncIPTablesRules, v1.37.2).
rn_remove_kube_chains() {
  local tool table chain rule
  for tool in iptables ip6tables; do
    command -v "$tool" >/dev/null || continue
    for table in filter nat mangle; do
      for chain in $("$tool" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(KUBE-[^ ]*\)$/\1/p'); do
        grep -qx ":$chain - \[0:0\]" "$RN_WORK/host.before" 2>/dev/null && continue
        "$tool" -t "$table" -S | grep -- "-j $chain\( \|$\)" | grep -v "^-A KUBE-" | sed 's/^-A //' |
          while read -r rule; do eval "$tool -t $table -D $rule" 2>/dev/null || true; done
      done
      for chain in $("$tool" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(KUBE-[^ ]*\)$/\1/p'); do
        grep -qx ":$chain - \[0:0\]" "$RN_WORK/host.before" 2>/dev/null && continue
        "$tool" -t "$table" -F "$chain" 2>/dev/null || true
      done
      for chain in $("$tool" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(KUBE-[^ ]*\)$/\1/p'); do
        grep -qx ":$chain - \[0:0\]" "$RN_WORK/host.before" 2>/dev/null && continue
        "$tool" -t "$table" -X "$chain" 2>/dev/null || rn_log "could not remove $tool chain $chain in $table"
      done
    done
  done
}

rn_teardown() {
  rn_log "tearing down"
  # Pods' containers first, while containerd still knows them, then the components, newest first.
  if [[ -S $RN_RUN/containerd.sock ]]; then
    local pid
    if [[ -n ${RN_PID_OF[kubelet]:-} ]]; then kill "${RN_PID_OF[kubelet]}" 2>/dev/null || true; fi
    for t in $(rn_ctr tasks ls -q 2>/dev/null); do rn_ctr tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
    local deadline=$((SECONDS + 30))
    while [[ -n "$(rn_ctr tasks ls -q 2>/dev/null | head -1)" ]] && ((SECONDS < deadline)); do
      for t in $(rn_ctr tasks ls -q 2>/dev/null); do rn_ctr tasks delete -f "$t" >/dev/null 2>&1 || true; done
      sleep 0.5
    done
    for c in $(rn_ctr containers ls -q 2>/dev/null); do rn_ctr containers delete "$c" >/dev/null 2>&1 || true; done
  fi
  if [[ -f $RN_WORK/pids ]]; then
    tac "$RN_WORK/pids" | while read -r name pid; do
      # A pid from a run that was killed may belong to another process by now.
      tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "$name" || continue
      kill "$pid" 2>/dev/null || continue
      local deadline=$((SECONDS + 20))
      while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
      kill -9 "$pid" 2>/dev/null || true
    done
  fi
  pkill -9 -f "containerd-shim-runc-v2 .*-address $RN_RUN/containerd.sock" 2>/dev/null || true
  # kube-proxy's rules (iptables chains, and nftables tables where it made them).
  if [[ -x ${RN_BIN:-}/kube-proxy && -f $RN_WORK/kube-proxy-config.yaml ]]; then
    "$RN_BIN/kube-proxy" --cleanup --config="$RN_WORK/kube-proxy-config.yaml" \
      >>"$RN_WORK/logs/kube-proxy-cleanup.log" 2>&1 ||
      rn_log "kube-proxy --cleanup failed (its log: $RN_WORK/logs/kube-proxy-cleanup.log)"
  fi
  rn_remove_kube_chains
  # Network namespaces that containerd's CNI made, then the bridge.
  for ns in /run/netns/cni-*; do
    [[ -e $ns ]] || continue
    grep -qx "$ns" "$RN_WORK/host.before" 2>/dev/null && continue  # not this run's
    umount "$ns" 2>/dev/null || umount -l "$ns" 2>/dev/null || true
    rm -f "$ns"
  done
  ip link del "$RN_BRIDGE" 2>/dev/null || true
  rn_umount_under /var/lib/kubelet
  rn_umount_under "$RN_RUN"
  rn_umount_under "$RN_WORK"
  rn_remove_cgroups
  # sysctls kubelet and the bridge plugin set
  if [[ -f $RN_WORK/sysctls.before ]]; then
    while IFS== read -r key value; do sysctl -qw "$key=$value" || true; done <"$RN_WORK/sysctls.before"
  fi
  # Paths that did not exist before this run (only known once a run has recorded them).
  if [[ -f $RN_WORK/paths.before ]]; then
    find /var/lib/kubelet /var/log/pods /var/log/containers -depth 2>/dev/null |
      grep -vxF -f "$RN_WORK/paths.before" | while read -r p; do rm -rf --one-file-system -- "$p"; done
  fi
  ndr_run_containerd_restore "$RN_WORK/run-containerd.before"
  rm -rf --one-file-system -- "$RN_RUN"
}
