#!/usr/bin/env bash
# Builds the Kubernetes node and control-plane binaries of one release from the Kubernetes Go
# modules (the Go module proxy), with the machine's Go, into a cache directory, so that a second
# run builds nothing. Nothing of what it fetches or builds is inside the checkout.
#
#   build-kube.sh VERSION OUT_DIR [MODULES_DIR]
#       e.g. build-kube.sh v1.37.2 /var/cache/ndr-real-node/kube/v1.37.2
#
# A staging module that the Go module proxy does not serve at that version (here, for v1.26.15:
# k8s.io/controller-manager, k8s.io/kube-controller-manager, k8s.io/kube-proxy and, for e2e.test,
# k8s.io/sample-apiserver v0.26.15) is taken from
# MODULES_DIR/NAME@VERSION if that holds its source, e.g. from a clone of
# github.com/kubernetes/NAME:  git -C NAME archive --prefix=NAME@v0.26.15/ v0.26.15 | tar -x -C MODULES_DIR
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, k8s.io/client-go, ...) at v0.0.0
# and replaces them with ./staging/src/...; a module that requires k8s.io/kubernetes must replace
# each of them with its published release, v0.N.x for v1.N.x. The list is read from the release's
# own go.mod, not kept here.
set -euo pipefail

version=${1:?usage: build-kube.sh VERSION OUT_DIR}
out=${2:?usage: build-kube.sh VERSION OUT_DIR}
modules_dir=${3:-$(dirname "$(dirname "$out")")/modules}
binaries=(kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl)

if [[ ! $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "build-kube.sh: '$version' is not a Kubernetes release such as v1.37.2" >&2
  exit 2
fi
minor=${BASH_REMATCH[1]}
staging_version="v0.${minor}.${BASH_REMATCH[2]}"

all_built() {
  local b
  for b in "${binaries[@]}"; do [[ -x $out/$b ]] || return 1; done
}
if all_built && [[ "$("$out/kubelet" --version 2>/dev/null)" == "Kubernetes $version" ]]; then
  echo "kube $version: cached in $out"
  exit 0
fi

go_bin=$(command -v go || echo /usr/local/go/bin/go)
if [[ ! -x $go_bin ]]; then
  echo "build-kube.sh: no Go toolchain (go on PATH or /usr/local/go/bin/go); building Kubernetes $version needs one, or give --kube-bin-dir" >&2
  exit 2
fi

work=$out.src
mkdir -p "$work" "$out"
cd "$work"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
# The release's own go.mod names its staging modules.
kube_gomod=$("$go_bin" mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
if [[ ! -f $kube_gomod ]]; then
  echo "build-kube.sh: the Go module proxy did not give k8s.io/kubernetes@$version" >&2
  exit 1
fi
{
  echo "module ndr.local/kube-build"
  echo
  echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$kube_gomod")"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/k8s\.io/[a-z0-9-]*$#\1#p' "$kube_gomod" |
    while read -r module; do
      local_copy=$modules_dir/${module#k8s.io/}@$staging_version
      if [[ -f $local_copy/go.mod ]]; then
        echo "replace $module => $local_copy"
      elif "$go_bin" mod download -json "$module@$staging_version" | grep -q '"Error"'; then
        echo "build-kube.sh: the Go module proxy does not serve $module@$staging_version; put its" \
          "source in $local_copy (git -C ${module#k8s.io/} archive --prefix=${module#k8s.io/}@$staging_version/" \
          "$staging_version | tar -x -C $modules_dir, in a clone of github.com/kubernetes/${module#k8s.io/})" >&2
        echo "missing $module"
      else
        echo "replace $module => $module $staging_version"
      fi
    done
} > go.mod
if grep -q '^missing ' go.mod; then
  exit 1
fi
touch go.sum

pkg=k8s.io/component-base/version
cgv=k8s.io/client-go/pkg/version
ldflags="-s -w"
for p in $pkg $cgv; do
  ldflags+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=$minor"
  ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
targets=()
for b in "${binaries[@]}"; do targets+=("k8s.io/kubernetes/cmd/$b"); done
echo "kube $version: building ${binaries[*]} with $("$go_bin" version | cut -d' ' -f3) (a cold build takes about 6 minutes on 2 cores)"
"$go_bin" build -trimpath -ldflags "$ldflags" -o "$out/" "${targets[@]}"
"$out/kubelet" --version
