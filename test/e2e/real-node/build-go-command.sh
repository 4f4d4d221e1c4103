#!/usr/bin/env bash
# Builds one command of a Go module at a release, from the Go module proxy, as that module's own
# main module (so that its go.mod's replace directives hold, which `go install pkg@version`
# refuses), statically (CGO_ENABLED=0), into OUT unless OUT is already there.
#
#   build-go-command.sh MODULE VERSION PACKAGE_IN_MODULE OUT
#   e.g. build-go-command.sh github.com/kubernetes-csi/external-attacher/v4 v4.13.0 cmd/csi-attacher /var/cache/ndr-real-node/sidecars/csi-attacher-v4.13.0
set -euo pipefail
module=${1:?usage: build-go-command.sh MODULE VERSION PACKAGE OUT}
version=${2:?}
package=${3:?}
out=${4:?}
[[ -x $out ]] && exit 0
go_bin=$(command -v go || echo /usr/local/go/bin/go)
[[ -x $go_bin ]] || { echo "build-go-command.sh: no Go toolchain to build $module $version" >&2; exit 2; }
dir=$(GOFLAGS=-mod=mod "$go_bin" mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -d $dir ]] || { echo "build-go-command.sh: the Go module proxy did not give $module@$version" >&2; exit 1; }
src=$out.src
rm -rf "$src"
mkdir -p "$(dirname "$out")"
cp -r "$dir" "$src"
chmod -R u+w "$src"
echo "building $module $version ./$package" >&2
(cd "$src" && GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 "$go_bin" build -trimpath -ldflags "-s -w" -o "$out" "./$package")
rm -rf "$src"
