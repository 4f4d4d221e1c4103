"""Generates C++ protobuf and gRPC code with Debian's protoc and grpc_cpp_plugin.

Bazel's native cc_proto_library needs @com_google_protobuf, which cannot be fetched offline, so a
genrule runs the system compilers instead.
"""

def cc_grpc_library(name, src, deps = [], visibility = None):
    """Defines `name` (messages and stubs) and `name + "_mock"` (gMock stubs, testonly).

    Generated headers are included by their path from the workspace root, for example
    "api/csi/csi.grpc.pb.h".
    """
    base = src[:-len(".proto")]
    pkg = native.package_name()
    headers = [base + ".pb.h", base + ".grpc.pb.h"]
    sources = [base + ".pb.cc", base + ".grpc.pb.cc"]
    mock = base + "_mock.grpc.pb.h"
    native.genrule(
        name = name + "_codegen",
        srcs = [src],
        outs = headers + sources + [mock],
        cmd = " ".join([
            "protoc",
            "--proto_path=.",
            "--proto_path=/usr/include",
            "--cpp_out=$(GENDIR)",
            "--grpc_out=generate_mock_code=true:$(GENDIR)",
            "--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin",
            "%s/%s" % (pkg, src),
        ]),
    )
    native.cc_library(
        name = name,
        srcs = sources,
        hdrs = headers,
        deps = deps + ["//third_party:grpc"],
        visibility = visibility,
    )
    native.cc_library(
        name = name + "_mock",
        testonly = True,
        hdrs = [mock],
        deps = [
            ":" + name,
            "//third_party:gmock",
        ],
        visibility = visibility,
    )
