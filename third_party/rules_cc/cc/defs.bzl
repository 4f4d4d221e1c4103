"""Stand-in for @rules_cc//cc:defs.bzl that Bazel 4.2.3 can load offline.

Bazel 4.2.3 only needs this file to export the native C++ rules; Debian's bazel-rules-cc 0.0.4
loads symbols that 4.2.3 does not have.
"""

cc_binary = native.cc_binary
cc_import = native.cc_import
cc_library = native.cc_library
cc_proto_library = native.cc_proto_library
cc_test = native.cc_test
cc_toolchain = native.cc_toolchain
cc_toolchain_suite = native.cc_toolchain_suite
fdo_prefetch_hints = native.fdo_prefetch_hints
fdo_profile = native.fdo_profile
objc_import = native.objc_import
objc_library = native.objc_library
