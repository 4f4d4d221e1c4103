# What the Kubernetes e2e check (test/e2e/real-node.sh, check 5) needs beside the node: the
# release's e2e.test, and every image its CSI mock driver's manifests name, built here (no image
# can be pulled) and imported under the names the e2e framework's registry override gives them.
# Sourced by real-node.sh.

# The release's module source (test/e2e's manifests, test/utils/image), from the module cache.
kube_module_dir() {
  local go_bin dir
  go_bin=$(command -v go || echo /usr/local/go/bin/go)
  [[ -x $go_bin ]] || { echo "no Go toolchain to read k8s.io/kubernetes@$RN_KUBE_VERSION" >&2; return 1; }
  dir=$(GOFLAGS=-mod=mod "$go_bin" mod download -json "k8s.io/kubernetes@$RN_KUBE_VERSION" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -d $dir ]] || { echo "the Go module proxy did not give k8s.io/kubernetes@$RN_KUBE_VERSION" >&2; return 1; }
  echo "$dir"
}

# The Go module of a kubernetes-csi sidecar at a tag: github.com/kubernetes-csi/external-X[/vN].
sidecar_module() {  # sidecar_module NAME TAG
  local repo major=${2%%.*}
  case $1 in
    csi-provisioner) repo=external-provisioner ;;
    csi-attacher) repo=external-attacher ;;
    csi-resizer) repo=external-resizer ;;
    csi-snapshotter) repo=external-snapshotter ;;
    *) return 1 ;;
  esac
  major=${major#v}
  if ((major >= 2)); then echo "github.com/kubernetes-csi/$repo/v$major"; else echo "github.com/kubernetes-csi/$repo"; fi
}

prepare_e2e() {
  local module sidecars=$RN_CACHE/sidecars images=$RN_WORK/images
  module=$(kube_module_dir) || return 1
  if [[ ! -x $RN_BIN/e2e.test ]]; then
    rn_log "building e2e.test of $RN_KUBE_VERSION (cold: about 15 minutes on 2 cores)"
    (cd "$RN_BIN.src" && GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 go test -c -trimpath \
      -ldflags "-s -w" -o "$RN_BIN/e2e.test" k8s.io/kubernetes/test/e2e) >&2 ||
      { echo "building e2e.test failed (above)" >&2; return 1; }
  fi
  local image name tag binary
  for image in $(sed -n 's/^ *image: registry\.k8s\.io\/sig-storage\/\(.*\)$/\1/p' \
    "$module"/test/e2e/testing-manifests/storage-csi/mock/*.yaml | sort -u); do
    name=${image%%:*} tag=${image#*:}
    # Both become file names here: nothing from the manifests may leave the cache directory.
    if [[ ! $name =~ ^[a-z0-9][a-z0-9-]*$ || ! $tag =~ ^v[0-9][0-9A-Za-z.-]*$ || $tag == *..* ]]; then
      echo "the mock driver's manifests name an image this script does not know how to build: $image" >&2
      return 1
    fi
    binary=$sidecars/$name-$tag
    case $name in
      csi-snapshotter) continue ;;  # the tests run here take no snapshots
      csi-node-driver-registrar)
        RN_REGISTRAR_TAG=$tag
        # The Go registrar for the side-by-side run: the release this project replaces
        # (RN_GO_REGISTRAR_TAG), whichever the manifests name; both run under the manifests' name.
        binary=$sidecars/$name-$RN_GO_REGISTRAR_TAG
        if [[ -n $RN_SOURCE && -d $RN_SOURCE/node-driver-registrar ]] &&
          bash "$here/real-node/build-from-checkout.sh" "$RN_SOURCE/node-driver-registrar" \
            "$RN_GO_REGISTRAR_TAG" cmd/csi-node-driver-registrar "$binary" >&2; then
          RN_GO_REGISTRAR_IMAGE=localhost/ndr/go-csi-node-driver-registrar:$RN_GO_REGISTRAR_TAG
          pack go-registrar "$RN_GO_REGISTRAR_IMAGE" "/csi-node-driver-registrar=$binary" &&
            rn_ctr images import "$images/go-registrar.tar" >&2 || return 1
        else
          rn_log "no Go registrar $RN_GO_REGISTRAR_TAG (give --source-dir with a node-driver-registrar clone): ours runs alone"
        fi
        continue ;;
      hostpathplugin)
        [[ -n $RN_SOURCE && -d $RN_SOURCE/csi-driver-host-path ]] || {
          echo "the mock driver (hostpathplugin $tag) is built from a csi-driver-host-path clone: give --source-dir" >&2
          return 1
        }
        bash "$here/real-node/build-from-checkout.sh" "$RN_SOURCE/csi-driver-host-path" "$tag" \
          cmd/hostpathplugin "$binary" >&2 || return 1 ;;
      *)
        # From the Go module proxy; older tags it does not serve (csi-provisioner v3.3.0,
        # csi-attacher v4.0.0, csi-resizer v1.6.0 of v1.26's manifests) from a clone.
        local repo_name=external-${name#csi-}
        if ! bash "$here/real-node/build-go-command.sh" "$(sidecar_module "$name" "$tag")" "$tag" \
          "cmd/$name" "$binary" >&2; then
          [[ -n $RN_SOURCE && -d $RN_SOURCE/$repo_name ]] || {
            echo "$name $tag: the Go module proxy does not serve it; give --source-dir with a $repo_name clone" >&2
            return 1
          }
          bash "$here/real-node/build-from-checkout.sh" "$RN_SOURCE/$repo_name" "$tag" "cmd/$name" \
            "$binary" >&2 || return 1
        fi ;;
    esac
    local tools=()
    # The mock driver mounts (bind mounts of its data directory) with mount(8), which its
    # upstream image has from Alpine: here busybox's, with its applets.
    [[ $name == hostpathplugin ]] &&
      tools=(/bin/busybox=/bin/busybox $(/bin/busybox --list | grep -vx busybox | sed 's|.*|/bin/&->busybox|'))
    pack "$name-$tag" "localhost/ndr/sig-storage/$name:$tag" "/$name=$binary" "${tools[@]}" &&
      rn_ctr images import "$images/$name-$tag.tar" >&2 || return 1
  done
  # busybox and pause: this script's own, under every name the release's e2e asks for.
  for tag in $(sed -n 's/^ *image: registry\.k8s\.io\/e2e-test-images\/busybox:\(.*\)$/\1/p' \
      "$module"/test/e2e/testing-manifests/storage-csi/mock/*.yaml) \
    $(sed -n 's/.*configs\[BusyBox\] = Config{list.PromoterE2eRegistry, "busybox", "\(.*\)"}.*/\1/p' \
      "$module/test/utils/image/manifest.go"); do
    rn_ctr images tag --force "$RN_BUSYBOX_IMAGE" "localhost/ndr/e2e-test-images/busybox:$tag" >/dev/null || return 1
  done
  tag=$(sed -n 's/.*configs\[Pause\] = Config{list.GcRegistry, "pause", "\(.*\)"}.*/\1/p' \
    "$module/test/utils/image/manifest.go")
  rn_ctr images tag --force "$RN_PAUSE_IMAGE" "localhost/ndr/gc/pause:$tag" >/dev/null || return 1
  [[ -n ${RN_REGISTRAR_TAG:-} ]] || { echo "the mock driver's manifests name no registrar image" >&2; return 1; }
  local all
  all=$(rn_ctr images ls -q) || return 1
  RN_REGISTRAR_IMAGE=$(sed -n '/^localhost\/ndr\/csi-node-driver-registrar:/{p;q}' <<<"$all")
  [[ -n $RN_REGISTRAR_IMAGE ]] || { echo "our registrar's image is not in containerd" >&2; return 1; }
}
