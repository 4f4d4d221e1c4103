#!/bin/bash
# The cross toolchains' gcc (cross.bzl): runs Debian's cross compiler for the GNU triple $1, with
# the sysroot of the Debian architecture $2 (make-sysroot.sh), on the remaining arguments. When
# either is missing it says what to do, instead of Bazel's bare "execvp(...): No such file or
# directory". Both README commands (test/demo.sh and test/run-tests.sh) install them.
triple=$1 debian_arch=$2
shift 2
compiler=/usr/bin/$triple-gcc
if [ ! -x "$compiler" ]; then
  echo "error: $compiler is missing: the $debian_arch cross build needs Debian's cross compiler." \
    "Run 'bash test/demo.sh' or 'bash test/run-tests.sh' once (they install what the build" \
    "needs), or as root: apt-get install g++-$triple qemu-user-static &&" \
    "bash toolchain/cross/make-sysroot.sh $debian_arch" >&2
  exit 1
fi
if [ ! -f "/var/cache/ndr-$debian_arch-sysroot/.ndr-packages" ]; then
  echo "error: /var/cache/ndr-$debian_arch-sysroot is missing: the $debian_arch cross build" \
    "links against Debian's $debian_arch packages unpacked there. Run 'bash test/demo.sh' or" \
    "'bash test/run-tests.sh' once, or as root: bash toolchain/cross/make-sysroot.sh" \
    "$debian_arch" >&2
  exit 1
fi
exec "$compiler" "$@"
