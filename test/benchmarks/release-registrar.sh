#!/usr/bin/env bash
# Builds the registrar of a release from the commit RELEASES records for it, as that commit builds
# it (-c opt, static, stripped), for test/benchmarks/figures.sh --release to compare with:
#
#   sudo bash test/benchmarks/release-registrar.sh [VERSION] OUT
#
# VERSION defaults to the newest release. The commit is cloned into a directory of its own (mktemp)
# and built there with its own test/install-deps.sh: in the build root when it has one, and
# otherwise, as releases up to 1.1.0 were, with Bazel and the Debian packages of the host (which
# that script installs when they are missing), the host then being the Debian release that
# release was built on (1.1.0: Debian 12). The clone and its Bazel output base are removed at the
# end, either way; OUT is the binary. A published release's binary is also in its release
# directory (csi-node-driver-registrar-VERSION-linux-amd64.tar.gz), which figures.sh --release
# takes as it is, installing nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
case $# in
  1) version=$(python3 "$here/version/releases.py" newest) out=$1 ;;
  2) version=$1 out=$2 ;;
  *) echo "usage: bash test/benchmarks/release-registrar.sh [VERSION] OUT" >&2; exit 2 ;;
esac
commit=$(python3 "$here/version/releases.py" commit "$version")
source "$here/toolchain/hostsafe/hostsafe.sh"

work=$(mktemp -d /tmp/ndr-release-registrar-XXXXXX)
clone=$work/src
cleanup() {
  # On the host route Bazel's output base is $work/out (--output_base): removing $work removes it.
  (cd "$clone" 2>/dev/null && bazel --output_base="$work/out" shutdown >/dev/null 2>&1) || true
  ndr_remove_tree "$work" || echo "release-registrar.sh: left $work (see above)" >&2
}
trap cleanup EXIT
git clone -q "$here" "$clone"
git -C "$clone" checkout -q "$commit"
# The tag, so that the build stamps the release's version (version/) and not a development one.
python3 "$here/version/releases.py" tag --into "$clone" "$version" >&2
cd "$clone"
echo "==> release $version, commit $commit, in $clone" >&2
# shellcheck disable=SC1091
source test/install-deps.sh
if declare -F ndr_buildroot_run >/dev/null; then
  # Builds in the build root of that commit; its output base is kept with the build root's caches.
  # The build root's Bazel keeps an output base per workspace path in its home; this clone's is
  # removed (clean --expunge) once the binary is out. The build root sees the clone and that home
  # at the same paths as here.
  ndr_bazel build -c opt //registrar:csi-node-driver-registrar.stripped >&2
  bin=$(ndr_bazel info -c opt bazel-bin 2>/dev/null)
  install -m 0755 "$bin/registrar/csi-node-driver-registrar.stripped" "$out"
  ndr_bazel clean --expunge >/dev/null 2>&1 || true
else
  host=$(. /etc/os-release && echo "$VERSION_ID")
  if grep -q 'Debian bookworm' README.md && [ "$host" != 12 ]; then
    echo "release-registrar.sh: release $version was built on Debian 12 (bookworm) and this host is" \
      "Debian $host; build it on a Debian 12 host, or give figures.sh its release directory" >&2
    exit 1
  fi
  ndr_install_deps
  bazel --output_base="$work/out" build -c opt --color=no --curses=no \
    //registrar:csi-node-driver-registrar.stripped >&2
  bin=$(bazel --output_base="$work/out" info -c opt bazel-bin 2>/dev/null)
  install -m 0755 "$bin/registrar/csi-node-driver-registrar.stripped" "$out"
fi
echo "release-registrar.sh: $out is the registrar of release $version ($("$out" --version | head -1))" >&2
