#!/usr/bin/env bash
# Bazel where this project builds, on every supported host: on Debian 13 the host's own Bazel; on
# any other Debian host (Debian 12, say), the Debian 13 build root's, made first if it is not there
# (toolchain/buildroot/buildroot.sh, about a minute, once; as root or with sudo). The arguments are
# Bazel's, and the current directory is kept. The build root mounts /tmp and the checkout; a
# program run with `bazel run` that must see another directory of the host names it first with
# --bind=DIR (ignored on Debian 13, where nothing is in between):
#   bash test/bazel.sh test //registrar/...
#   bash test/bazel.sh run //test:registrar-conformance -- --registrar-binary=/tmp/registrar
#   bash test/bazel.sh --bind=/var/lib/kubelet run //test:registrar-conformance -- ...
# It installs nothing: a target that needs the test suite's packages or the cross sysroots needs
# `bash test/run-tests.sh` (or `--quick`) to have run once.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/install-deps.sh"
binds=()
while [ $# -gt 0 ] && [[ $1 == --bind=* ]]; do
  [ -d "${1#--bind=}" ] || { echo "test/bazel.sh: $1: no such directory" >&2; exit 2; }
  binds+=("$1")
  shift
done
if [ $# -eq 0 ]; then
  echo "usage: bash test/bazel.sh [--bind=DIR]... BAZEL_COMMAND [ARGS...]" \
    "(e.g. test //registrar/...)" >&2
  exit 2
fi
ndr_buildroot_reexec "${binds[@]}" "$0" "$@"
command -v bazel >/dev/null ||
  { echo "test/bazel.sh: no bazel here; run 'bash test/run-tests.sh --quick' once" >&2; exit 1; }
# Which cross sysroots there are, as the test suite tells Bazel: the same value, so no refetch.
ndr_export_cross_sysroots
exec bazel "$@"
