"""arm64 builds of targets inside an amd64 build, for tests that run them under qemu."""

def _arm64_transition_impl(settings, attr):
    return {
        "//command_line_option:cpu": "aarch64",
        "//command_line_option:crosstool_top": "//toolchain/arm64:toolchain",
        # Sanitizer configs (--config=asan and friends) apply to the amd64 tests only: their
        # flags would make these binaries dynamic, and qemu runs static ones.
        "//command_line_option:copt": ["-Wall", "-Wno-sign-compare"],
        "//command_line_option:linkopt": [],
        "//third_party:sanitizer": False,
        "//command_line_option:strip": "sometimes",
    }

_arm64_transition = transition(
    implementation = _arm64_transition_impl,
    inputs = [],
    outputs = [
        "//command_line_option:cpu",
        "//command_line_option:crosstool_top",
        "//command_line_option:copt",
        "//command_line_option:linkopt",
        "//third_party:sanitizer",
        "//command_line_option:strip",
    ],
)

def _arm64_files_impl(ctx):
    outs = []
    for f in ctx.files.srcs:
        out = ctx.actions.declare_file(ctx.label.name + "/" + f.basename)
        ctx.actions.run_shell(
            inputs = [f],
            outputs = [out],
            command = 'cp "$1" "$2"',
            arguments = [f.path, out.path],
            mnemonic = "CopyArm64",
        )
        outs.append(out)
    return [DefaultInfo(files = depset(outs), runfiles = ctx.runfiles(files = outs))]

arm64_files = rule(
    doc = "The files of `srcs` built for arm64, copied to NAME/<basename>.",
    implementation = _arm64_files_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = True, cfg = _arm64_transition),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
)
