"""The Linux architectures built beside the host's amd64, and what each is called where."""

# name: the name of the --config (.bazelrc), of the targets here and of the test.
#   cpu:     Bazel's --cpu for it (the key of its toolchain suite)
#   debian:  Debian's architecture: the sysroot's packages (make-sysroot.sh)
#   triple:  the GNU triple of Debian's cross compiler and of its multiarch directories
#   qemu:    the user-mode emulator that runs its binaries here
#   oci:     the image index's platform: architecture and variant
ARCHES = {
    "arm64": struct(
        cpu = "aarch64",
        debian = "arm64",
        triple = "aarch64-linux-gnu",
        qemu = "/usr/bin/qemu-aarch64-static",
        oci_architecture = "arm64",
        oci_variant = "",
    ),
    "armv7": struct(
        cpu = "armv7",
        debian = "armhf",
        triple = "arm-linux-gnueabihf",
        qemu = "/usr/bin/qemu-arm-static",
        oci_architecture = "arm",
        oci_variant = "v7",
    ),
    "ppc64le": struct(
        cpu = "ppc64le",
        debian = "ppc64el",
        triple = "powerpc64le-linux-gnu",
        qemu = "/usr/bin/qemu-ppc64le-static",
        oci_architecture = "ppc64le",
        oci_variant = "",
    ),
    "s390x": struct(
        cpu = "s390x",
        debian = "s390x",
        triple = "s390x-linux-gnu",
        qemu = "/usr/bin/qemu-s390x-static",
        oci_architecture = "s390x",
        oci_variant = "",
    ),
}
