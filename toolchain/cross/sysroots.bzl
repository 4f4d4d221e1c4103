"""Which architectures' sysroots this machine has (make-sysroot.sh), read when Bazel starts.

An architecture whose sysroot could not be made (its Debian packages are not served, say) is not
built; its test is reported as skipped with the reason, and the image builds, which need every
platform, refuse. make-sysroot.sh writes the reason to /var/cache/ndr-<debian>-sysroot.unavailable.
"""

load(":arches.bzl", "ARCHES")

def _sysroots_impl(rctx):
    missing = {}
    for arch, a in ARCHES.items():
        root = "/var/cache/ndr-%s-sysroot" % a.debian
        if rctx.path(root + "/.ndr-packages").exists:
            continue
        why = rctx.path(root + ".unavailable")
        if why.exists:
            missing[arch] = rctx.read(why).strip()
        else:
            missing[arch] = ("its sysroot %s is not made: run `bash toolchain/cross/make-sysroot.sh %s`" %
                             (root, a.debian))
    rctx.file("BUILD.bazel", "")
    rctx.file("missing.bzl", "# Made by toolchain/cross/sysroots.bzl.\nMISSING = %r\n" % missing)

# `local`: read again whenever Bazel fetches; NDR_CROSS_SYSROOTS (test/install-deps.sh sets it to
# the sysroots' state) makes that happen when a sysroot is made or found missing.
cross_sysroots = repository_rule(
    implementation = _sysroots_impl,
    local = True,
    environ = ["NDR_CROSS_SYSROOTS"],
)
