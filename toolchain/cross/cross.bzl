"""Cross toolchains (Debian's cross compilers and an unpacked sysroot) and cross builds of targets
inside the host's build, for every architecture in arches.bzl."""

load("@bazel_tools//tools/cpp:unix_cc_toolchain_config.bzl", "cc_toolchain_config")
load(":arches.bzl", "ARCHES")

GCC_VERSION = "14"

def sysroot(arch):
    return "/var/cache/ndr-%s-sysroot" % ARCHES[arch].debian

def cross_toolchain(arch):
    """`<arch>_toolchain`, the cc_toolchain_suite --config=<arch> selects, and what it needs.

    The configuration is Bazel's own for Unix gcc toolchains, filled in as Bazel's
    auto-configuration fills it for the host compiler, with the cross tools and the sysroot.
    Every tool is the gcc wrapper's (gcc.sh), which says what to install when the cross compiler
    is missing.
    """
    a = ARCHES[arch]
    root = sysroot(arch)
    gcc_dir = "/usr/lib/gcc-cross/%s/%s" % (a.triple, GCC_VERSION)
    tools = "/usr/bin/" + a.triple + "-"

    # `manual`: outside --config=<arch> (and the transition below), `bazel build //...` would
    # analyse the suite for the host's cpu, which it has no toolchain for.
    native.cc_toolchain_suite(
        name = arch + "_toolchain",
        tags = ["manual"],
        toolchains = {
            a.cpu: ":" + arch + "_cc_toolchain",
            a.cpu + "|gcc": ":" + arch + "_cc_toolchain",
        },
    )
    native.cc_toolchain(
        name = arch + "_cc_toolchain",
        all_files = ":" + arch + "_tools",
        ar_files = ":empty",
        as_files = ":empty",
        compiler_files = ":" + arch + "_tools",
        dwp_files = ":empty",
        linker_files = ":" + arch + "_tools",
        objcopy_files = ":empty",
        strip_files = ":empty",
        supports_param_files = 1,
        toolchain_config = ":" + arch + "_config",
        toolchain_identifier = a.triple,
    )
    cc_toolchain_config(
        name = arch + "_config",
        abi_libc_version = "glibc",
        abi_version = "gcc",
        compile_flags = [
            "-U_FORTIFY_SOURCE",
            "-fstack-protector",
            "-Wall",
            "-Wunused-but-set-parameter",
            "-Wno-free-nonheap-object",
            "-fno-omit-frame-pointer",
            # armhf's gcc notes that GCC 7.1 changed how some arguments are passed: a concern for
            # ABIs between objects built by old and new compilers, which one static link is not.
            "-Wno-psabi",
            # The search path the cross compiler would use, with its own copy of glibc (the
            # cross-toolchain package's, the one the cross compiler was built with, which lags
            # Debian's security updates) replaced by that architecture's current libc6-dev from the sysroot,
            # the same glibc as the amd64 build's: C++'s headers, gcc's, then the architecture's
            # packages' (glibc's, the kernel's, every library's), then /usr/include, which then
            # supplies only architecture-independent header-only libraries.
            "-nostdinc",
            "-isystem",
            "/usr/%s/include/c++/%s" % (a.triple, GCC_VERSION),
            "-isystem",
            "/usr/%s/include/c++/%s/%s" % (a.triple, GCC_VERSION, a.triple),
            "-isystem",
            "/usr/%s/include/c++/%s/backward" % (a.triple, GCC_VERSION),
            "-isystem",
            gcc_dir + "/include",
            "-isystem",
            root + "/usr/include/" + a.triple,
            "-isystem",
            root + "/usr/include",
            "-isystem",
            "/usr/include",
        ],
        compiler = "gcc",
        coverage_compile_flags = ["--coverage"],
        coverage_link_flags = ["--coverage"],
        cpu = a.cpu,
        cxx_builtin_include_directories = [
            gcc_dir + "/include",
            "/usr/%s/include/c++/%s" % (a.triple, GCC_VERSION),
            "/usr/%s/include/c++/%s/%s" % (a.triple, GCC_VERSION, a.triple),
            "/usr/%s/include/c++/%s/backward" % (a.triple, GCC_VERSION),
            root + "/usr/include",
            "/usr/include",
        ],
        cxx_flags = ["-std=c++17"],
        dbg_compile_flags = ["-g"],
        host_system_name = "x86_64-linux-gnu",
        link_flags = [
            # GNU ld, not gold: gold's static aarch64 links leave the unwinder without frame data
            # (a thrown exception then aborts the program).
            "-Wl,-no-as-needed",
            "-Wl,-z,relro,-z,now",
            "-pass-exit-codes",
            # The sysroot's glibc (crt1.o and the rest, libc.a, libm.a) before the cross
            # compiler's own: -B for the start files, -L for the libraries.
            "-B" + root + "/usr/lib/" + a.triple + "/",
            "-L" + root + "/usr/lib/" + a.triple,
        ],
        link_libs = [
            "-lstdc++",
            "-lm",
        ],
        opt_compile_flags = [
            "-g0",
            "-O2",
            "-D_FORTIFY_SOURCE=1",
            "-DNDEBUG",
            "-ffunction-sections",
            "-fdata-sections",
        ],
        opt_link_flags = ["-Wl,--gc-sections"],
        supports_start_end_lib = False,
        target_libc = "glibc",
        target_system_name = a.triple,
        tool_paths = {
            "ar": tools + "ar",
            "cpp": tools + "cpp",
            "dwp": tools + "dwp",
            "gcc": arch + "_gcc.sh",
            "gcov": tools + "gcov",
            "llvm-cov": "/bin/false",  # coverage only; these toolchains have none
            "ld": tools + "ld",
            "nm": tools + "nm",
            "objcopy": tools + "objcopy",
            "objdump": tools + "objdump",
            "strip": tools + "strip",
        },
        toolchain_identifier = a.triple,
        unfiltered_compile_flags = [
            "-fno-canonical-system-headers",
            "-Wno-builtin-macro-redefined",
            "-D__DATE__=\"redacted\"",
            "-D__TIMESTAMP__=\"redacted\"",
            "-D__TIME__=\"redacted\"",
        ],
    )

def _cross_transition_impl(settings, attr):
    a = ARCHES[attr.arch]
    return {
        "//command_line_option:cpu": a.cpu,
        "//command_line_option:crosstool_top": "//toolchain/cross:%s_toolchain" % attr.arch,
        # Sanitizer configs (--config=asan and friends) apply to the amd64 tests only: their
        # flags would make these binaries dynamic, and qemu runs static ones.
        "//command_line_option:copt": ["-Wall", "-Wno-sign-compare"],
        "//command_line_option:linkopt": [],
        "//third_party:sanitizer": False,
        "//command_line_option:strip": "sometimes",
    }

_cross_transition = transition(
    implementation = _cross_transition_impl,
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

def _cross_files_impl(ctx):
    outs = []
    for f in ctx.files.srcs:
        out = ctx.actions.declare_file(ctx.label.name + "/" + f.basename)
        ctx.actions.run_shell(
            inputs = [f],
            outputs = [out],
            command = 'cp "$1" "$2"',
            arguments = [f.path, out.path],
            mnemonic = "CopyCross",
            progress_message = "Copying the %s build of %s" % (ctx.attr.arch, f.basename),
        )
        outs.append(out)
    return [DefaultInfo(files = depset(outs), runfiles = ctx.runfiles(files = outs))]

cross_files = rule(
    doc = "The files of `srcs` built for `arch` (arches.bzl), copied to NAME/<basename>.",
    implementation = _cross_files_impl,
    attrs = {
        "arch": attr.string(mandatory = True, values = ARCHES.keys()),
        "srcs": attr.label_list(allow_files = True, cfg = _cross_transition),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
)
