#!/bin/bash
# images/sbom.py on what the links recorded (toolchain/link_record/record.sh):
# - a library added to a link is in the SBOM without anyone naming it: sbom_probe_zlib is
#   sbom_probe plus -lz, and only its SBOM has zlib's package, at the version dpkg has installed;
# - the registrar's SBOM has gRPC, protobuf, abseil and glibc, and no OpenSSL; the sample driver's
#   has OpenSSL (it verifies tokens with libcrypto);
# - an arm64 registrar's packages are arm64 ones, read from its sysroot's .ndr-files (its glibc
#   too, the current release's), and its libstdc++, from the cross compiler's own package, is
#   named as the arm64 package it holds;
# - a binary without a record, a recorded file no package owns, and a record that is not a list of
#   absolute paths are errors that name them.
# Each part is a case of its own; the arm64 one is skipped, with the reason, where arm64 is not
# built (NDR_CROSS_ARM64_MISSING).
set -uo pipefail
source test/util/shtest.sh
sbom=images/sbom.py
tmp=$(mktemp -d /tmp/ndr-sbom-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {  # ends the case it is called in (each case runs in a subshell)
  echo "FAIL: $*" >&2
  exit 1
}
# "name arch version upstream" of every Debian binary package in an SBOM, one per line.
packages() {
  python3 - "$1" <<'PYTHON'
import json, sys, urllib.parse
document = json.load(open(sys.argv[1]))
assert document["spdxVersion"] == "SPDX-2.3", document["spdxVersion"]
for package in document["packages"]:
    for ref in package.get("externalRefs", []):
        locator = ref["referenceLocator"]
        if ref["referenceType"] != "purl" or "arch=source" in locator:
            continue
        query = dict(urllib.parse.parse_qsl(locator.split("?", 1)[1]))
        print(package["name"], query["arch"], package["versionInfo"], query.get("upstream", "-"))
PYTHON
}
make_sbom() {  # binary, output, platform
  python3 "$sbom" --name test --version 1 --platform "${3:-amd64}" --output "$2" "$1"
}

a_library_added_is_named() {
  make_sbom images/sbom_probe "$tmp/probe.json" || fail "sbom.py failed on sbom_probe"
  make_sbom images/sbom_probe_zlib "$tmp/probe_zlib.json" ||
    fail "sbom.py failed on sbom_probe_zlib"
  packages "$tmp/probe.json" >"$tmp/probe.txt"
  packages "$tmp/probe_zlib.json" >"$tmp/probe_zlib.txt"
  local zlib_version
  zlib_version=$(dpkg-query -W -f='${Version}' zlib1g-dev:amd64)
  grep -qx "libc6-dev amd64 .* glibc" "$tmp/probe.txt" || fail "no glibc in $(cat "$tmp/probe.txt")"
  if grep -q "^zlib1g-dev " "$tmp/probe.txt"; then
    fail "sbom_probe does not link zlib, yet its SBOM says so: $(cat "$tmp/probe.txt")"
  fi
  grep -qxF "zlib1g-dev amd64 $zlib_version zlib" "$tmp/probe_zlib.txt" ||
    fail "sbom_probe_zlib links zlib $zlib_version; its SBOM says: $(cat "$tmp/probe_zlib.txt")"
  # Exactly one package more.
  [ "$(diff "$tmp/probe.txt" "$tmp/probe_zlib.txt" | grep -c '^[<>]')" -eq 1 ] ||
    fail "the SBOMs should differ by zlib alone: $(diff "$tmp/probe.txt" "$tmp/probe_zlib.txt")"
}

the_release_binaries() {
  make_sbom registrar/csi-node-driver-registrar "$tmp/registrar.json" || fail "sbom.py: registrar"
  packages "$tmp/registrar.json" >"$tmp/registrar.txt"
  for expected in "libgrpc-dev amd64" "libgrpc++-dev amd64" "libprotobuf-dev amd64" \
    "libabsl-dev amd64" "libc6-dev amd64" "libstdc++-14-dev amd64" "libgflags-dev amd64" \
    "libevent-dev amd64"; do
    grep -q "^$expected " "$tmp/registrar.txt" ||
      fail "the registrar's SBOM lacks $expected: $(cat "$tmp/registrar.txt")"
  done
  for absent in libssl-dev libgoogle-glog-dev libunwind-dev liblzma-dev; do
    if grep -q "^$absent " "$tmp/registrar.txt"; then
      fail "the registrar does not link $absent, yet its SBOM says so"
    fi
  done
  make_sbom test/csidriver/sample-csi-driver "$tmp/driver.json" || fail "sbom.py: sample driver"
  grep -q "^libssl-dev amd64 .* openssl$" <(packages "$tmp/driver.json") ||
    fail "the sample driver links libcrypto; its SBOM: $(packages "$tmp/driver.json")"
  # The document names the binary and its checksum.
  python3 - "$tmp/registrar.json" registrar/csi-node-driver-registrar <<'PYTHON' || fail "file entry"
import hashlib, json, sys
document = json.load(open(sys.argv[1]))
(entry,) = document["files"]
assert entry["fileName"] == "/csi-node-driver-registrar", entry
sha256 = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
assert {"algorithm": "SHA256", "checksumValue": sha256} in entry["checksums"], entry
links = [r for r in document["relationships"] if r["relationshipType"] == "STATIC_LINK"]
assert len(links) == sum(1 for p in document["packages"] if p.get("primaryPackagePurpose") == "LIBRARY")
# Trivy reads the source package from sourceInfo, and would count a source package with a purl as
# an installed package of its own (each CVE twice): sources have none.
for p in document["packages"]:
    if p.get("primaryPackagePurpose") == "LIBRARY":
        assert p["sourceInfo"].startswith("built package from: "), p
    if p.get("primaryPackagePurpose") == "SOURCE":
        assert "externalRefs" not in p, p
PYTHON
}

# Another architecture: the sysroot's packages, arm64 ones.
the_arm64_registrar() {
  local arm64=toolchain/cross/arm64_binaries/csi-node-driver-registrar.stripped
  local sysroot_grpc sysroot_libc
  make_sbom "$arm64" "$tmp/arm64.json" arm64 || fail "sbom.py: arm64 registrar"
  packages "$tmp/arm64.json" >"$tmp/arm64.txt"
  sysroot_grpc=$(awk -F'\t' '$1 ~ /libgrpc_unsecure\.a$/ {print $2 " " $3 " " $4}' \
    /var/cache/ndr-arm64-sysroot/.ndr-files)
  grep -q "^$sysroot_grpc " "$tmp/arm64.txt" ||
    fail "the arm64 registrar's SBOM should have $sysroot_grpc: $(cat "$tmp/arm64.txt")"
  # glibc is the sysroot's arm64 libc6-dev (the current release's, as on amd64), never the cross
  # compiler's own older copy (libc6-dev-arm64-cross, glibc 2.36-8).
  sysroot_libc=$(awk -F'\t' '$1 ~ /\/libc\.a$/ {print $2 " " $3 " " $4}' \
    /var/cache/ndr-arm64-sysroot/.ndr-files)
  grep -qx "$sysroot_libc glibc" "$tmp/arm64.txt" ||
    fail "the arm64 registrar's glibc should be the sysroot's $sysroot_libc:" \
      "$(cat "$tmp/arm64.txt")"
  [ "$(grep -c ' glibc$' "$tmp/arm64.txt")" -eq 1 ] ||
    fail "more than one glibc in the arm64 registrar's SBOM: $(cat "$tmp/arm64.txt")"
  # libstdc++ comes from the cross compiler's package (libstdc++-14-dev-arm64-cross, arch all),
  # listed as what it holds: arm64 libstdc++-14-dev from gcc-14, as advisories name it.
  grep -q "^libstdc++-14-dev arm64 [^ ]* gcc-14$" "$tmp/arm64.txt" ||
    fail "the arm64 registrar's libstdc++ should be libstdc++-14-dev arm64 from gcc-14:" \
      "$(cat "$tmp/arm64.txt")"
  if grep -q " amd64 \| all " "$tmp/arm64.txt"; then
    fail "an amd64 or architecture-independent package in the arm64 registrar's SBOM:" \
      "$(cat "$tmp/arm64.txt")"
  fi
}

# Errors name what is wrong.
errors_name_what_is_wrong() {
  local out
  printf 'int main() { return 0; }\n' >"$tmp/plain.c"
  cc -o "$tmp/unrecorded" "$tmp/plain.c"
  if out=$(make_sbom "$tmp/unrecorded" "$tmp/x.json" 2>&1); then
    fail "an unrecorded binary gave an SBOM"
  fi
  [[ "$out" == *"has no .ndr.linked_files section"* ]] || fail "unrecorded binary: $out"
  printf '/nonexistent/libnothing.a\n' >"$tmp/record"
  objcopy --add-section ".ndr.linked_files=$tmp/record" "$tmp/unrecorded" "$tmp/bogus"
  if out=$(make_sbom "$tmp/bogus" "$tmp/x.json" 2>&1); then
    fail "a file no package owns gave an SBOM"
  fi
  [[ "$out" == *"/nonexistent/libnothing.a (linked into"* ]] || fail "unowned file: $out"
  printf -- '--help\n' >"$tmp/record"
  objcopy --add-section ".ndr.linked_files=$tmp/record" "$tmp/unrecorded" "$tmp/optionlike"
  if out=$(make_sbom "$tmp/optionlike" "$tmp/x.json" 2>&1); then
    fail "a record with a relative path gave an SBOM"
  fi
  [[ "$out" == *"not an absolute path"* ]] || fail "relative path in a record: $out"
}

shtest_case "a library added to a link is in the SBOM, named by no one" a_library_added_is_named
shtest_case "the registrar's and the sample driver's SBOMs have what they link, and only that" \
  the_release_binaries
if [ -n "${NDR_CROSS_ARM64_MISSING:-}" ]; then
  shtest_skip "the arm64 registrar's SBOM has the arm64 sysroot's packages" \
    "arm64 is not built here: $NDR_CROSS_ARM64_MISSING"
else
  shtest_case "the arm64 registrar's SBOM has the arm64 sysroot's packages" the_arm64_registrar
fi
shtest_case "a binary without a record, an unowned file and a relative path are named errors" \
  errors_name_what_is_wrong
shtest_end
