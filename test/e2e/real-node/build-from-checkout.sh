#!/usr/bin/env bash
# Builds one command of a Go project at a tag, from a git checkout (or bare clone) the user has,
# for projects the Go module proxy does not serve (csi-driver-host-path, node-driver-registrar).
# Uses the project's vendored modules when it has them; statically (CGO_ENABLED=0); does nothing
# if OUT is there.
#
#   build-from-checkout.sh GIT_DIR TAG PACKAGE_IN_REPO OUT
#   e.g. build-from-checkout.sh ~/src/csi-driver-host-path v1.17.1 cmd/hostpathplugin /var/cache/ndr-real-node/sidecars/hostpathplugin-v1.17.1
set -euo pipefail
repo=${1:?usage: build-from-checkout.sh GIT_DIR TAG PACKAGE OUT}
tag=${2:?}
package=${3:?}
out=${4:?}
[[ -x $out ]] && exit 0
go_bin=$(command -v go || echo /usr/local/go/bin/go)
[[ -x $go_bin ]] || { echo "build-from-checkout.sh: no Go toolchain to build $repo $tag" >&2; exit 2; }
git -C "$repo" rev-parse --verify -q "$tag^{commit}" >/dev/null ||
  { echo "build-from-checkout.sh: $repo has no tag $tag (git fetch --tags there first)" >&2; exit 1; }
src=$out.src
rm -rf "$src"
mkdir -p "$src"
git -C "$repo" archive "$tag" | tar -x -C "$src"
mode=mod
[[ -f $src/vendor/modules.txt ]] && mode=vendor
echo "building $package of $repo at $tag (-mod=$mode)" >&2
(cd "$src" && GOFLAGS=-mod=$mode GOTOOLCHAIN=local CGO_ENABLED=0 "$go_bin" build -trimpath \
  -ldflags "-s -w -X main.version=$tag" -o "$out" "./$package")
rm -rf "$src"
