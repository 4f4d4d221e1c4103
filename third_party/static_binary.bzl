"""Fully static binaries, for FROM-scratch images."""

def static_cc_binary(name, deps = [], **kwargs):
    """A cc_binary linked fully statically, with unused sections dropped.

    Sanitizer builds (--config=asan/ubsan/tsan) cannot link statically; they get an ordinary
    dynamic binary.
    """
    native.cc_binary(
        name = name,
        features = select({
            "//third_party:sanitizer_build": [],
            "//conditions:default": ["fully_static_link"],
        }),
        linkopts = select({
            "//third_party:sanitizer_build": [],
            "//conditions:default": [
                "-static",
                "-Wl,--gc-sections",
            ],
        }) + select({
            # gcc links through toolchain/quiet_link/filter.sh, which keeps glibc's warnings about
            # NSS functions in static programs out of the output (they do not apply), and
            # toolchain/link_record/record.sh, which records in the program which Debian files
            # it was linked from (for the images' SBOMs); and starts the program with crtbegin.o
            # and an .eh_frame_hdr (toolchain/static_start/static.specs says why).
            "//third_party:sanitizer_build": [],
            "//conditions:default": [
                "-specs=toolchain/quiet_link/quiet.specs",
                "-specs=toolchain/static_start/static.specs",
            ],
        }),
        additional_linker_inputs = select({
            "//third_party:sanitizer_build": [],
            "//conditions:default": [
                "//toolchain/quiet_link:files",
                "//toolchain/link_record:files",
                "//toolchain/static_start:files",
            ],
        }),
        deps = deps,
        **kwargs
    )
