#!/usr/bin/env bash
# Publishes a release that images/release.sh built: pushes every image index to a registry, with
# all its platforms and attestations, then signs it and attests its documents with cosign.
#
#   bash images/publish.sh RELEASE_DIR REPOSITORY --key COSIGN_KEY [--tlog] [--cosign=PATH]
#
# e.g. bash images/publish.sh /tmp/release-1.1.0 registry.example.com/storage --key cosign.key
# pushes REPOSITORY/csi-node-driver-registrar:VERSION, REPOSITORY/sample-csi-driver:VERSION and
# REPOSITORY/kubeletclient:VERSION (the judge)
# (skopeo copy --all: the index, every platform, the BuildKit attestations), checks that each
# pushed index has the release's digest (release/digests.txt), then with cosign:
#
#   - signs each index and every manifest in it (cosign sign --recursive);
#   - attests each platform's image with its SPDX SBOM (--type spdxjson) and SLSA v1 provenance
#     (--type https://slsa.dev/provenance/v1), and each index with the release's OpenVEX
#     (--type openvex), where cosign verify-attestation and trivy --vex oci find them;
#   - signs SHA256SUMS (SHA256SUMS.sig), so that the binary archives can be checked too;
#   - writes the key's public half, cosign.pub, into RELEASE_DIR beside the release's files: hand
#     it out with them. Every verify command of the README and docs/release.md takes it from there.
#
# The provenance is attested under its predicate type's URI, not cosign's `slsaprovenance1`: for
# that name cosign (v2.6.5, pkg/cosign/attestation/attestation.go,
# generateSLSAProvenanceStatementSLSA1) decodes the predicate into in-toto-golang's SLSA v1 structs
# and encodes it again, and in-toto-golang v0.9.0 spells the spec's runDetails.metadata.invocationId
# `invocationID`, so the signed statement would not be the release's file. For any other type cosign
# keeps the JSON as it is (generateCustomPredicate). Verifying with either name finds it: both
# select the predicate type https://slsa.dev/provenance/v1.
#
# Signatures are made without the public transparency log (Rekor) unless --tlog is given: a
# release goes to an operator's own registry, whose name and image digests a public log would
# publish for anyone to read, and the machine may not reach the log at all. The key is what
# operators verify against: `cosign verify --key cosign.pub --insecure-ignore-tlog ...` (the flag
# only skips the log; signatures are still checked). COSIGN_PASSWORD must hold the key's password.
# Needs skopeo (Debian) and cosign; prints each index's digest.
set -euo pipefail
usage="usage: bash images/publish.sh RELEASE_DIR REPOSITORY --key COSIGN_KEY [--tlog] [--cosign=PATH]"
release= repository= key= tlog=false cosign=cosign
positional=()
while [ $# -gt 0 ]; do
  case $1 in
    --key) key=${2:-}; shift 2 ;;
    --key=*) key=${1#*=}; shift ;;
    --tlog) tlog=true; shift ;;
    --no-tlog) tlog=false; shift ;;  # the default; accepted for scripts that still say it
    --cosign=*) cosign=${1#*=}; shift ;;
    -*) echo "publish.sh: unknown flag $1; $usage" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
[ ${#positional[@]} -eq 2 ] && [ -n "$key" ] || { echo "$usage" >&2; exit 2; }
release=${positional[0]} repository=${positional[1]%/}
fail() {
  echo "publish.sh: $*" >&2
  exit 1
}
# The release's directory, and every directory above it, can be changed by no one but root and
# whoever runs this (hostsafe.sh), and nothing in it is a symbolic link: what is checked here is
# what is pushed and signed, and what is written here (cosign.pub, SHA256SUMS.sig) lands in it.
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../toolchain/hostsafe/hostsafe.sh
source "$top/toolchain/hostsafe/hostsafe.sh"
ndr_check_private_dir "$release" "the release directory" ||
  fail "publish from a directory only root (or you) can change, as images/release.sh makes OUT_DIR"
release=$(cd "$release" && pwd -P)
links=$(find "$release" -mindepth 1 -maxdepth 1 -type l -printf '%f ')
[ -z "$links" ] || fail "$release holds symbolic links ($links); a release directory holds the" \
  "files release.sh wrote, not links: remove them, or publish from a new images/release.sh OUT_DIR"
[ -f "$release/SHA256SUMS" ] && [ -f "$release/digests.txt" ] ||
  fail "$release is not a release directory (no SHA256SUMS or digests.txt; make one with images/release.sh)"
(cd "$release" && sha256sum --quiet -c SHA256SUMS) ||
  fail "$release does not match its SHA256SUMS: a file was changed or is missing"
[ -f "$key" ] || fail "no cosign key at $key (cosign generate-key-pair makes one)"
command -v skopeo >/dev/null || fail "skopeo is missing: apt-get install skopeo"
command -v "$cosign" >/dev/null || fail "cosign is missing: go install github.com/sigstore/cosign/v2/cmd/cosign@v2.6.5, or --cosign=PATH"
[ -n "${COSIGN_PASSWORD+set}" ] || fail "set COSIGN_PASSWORD to the key's password (empty for none)"
export COSIGN_YES=true
tlog_flags=()
$tlog || tlog_flags=(--tlog-upload=false)
# Scratch files (cosign's messages, the provenance predicates), removed however the script ends.
scratch=$(mktemp -d /tmp/ndr-publish-XXXXXX)
signature= public_key=
trap 'rm -rf "$scratch"; rm -f ${signature:+"$signature"} ${public_key:+"$public_key"}' EXIT
# The key's public half, beside the release's files; a cosign.pub already there must be this key's.
public=$("$cosign" public-key --key "$key" 2>"$scratch/public-key.err") ||
  fail "cosign public-key --key $key: $(cat "$scratch/public-key.err")"
if [ -f "$release/cosign.pub" ] && [ "$(cat "$release/cosign.pub")" != "$public" ]; then
  fail "$release/cosign.pub is another key's: this release was published with another key." \
    "Publish with that key, or remove cosign.pub and SHA256SUMS.sig to publish it anew"
fi
# Plain HTTP for a registry on this machine, as cosign itself allows for localhost.
tls=()
case $repository in localhost:* | localhost/* | 127.0.0.1:* | 127.0.0.1/*) tls=(--dest-tls-verify=false) ;; esac

# Each image: its name, tag, index digest, and each platform with its manifest digest.
images=$(python3 - "$release" <<'PYTHON'
import json, os, re, sys, tarfile
release = sys.argv[1]
for archive in sorted(f for f in os.listdir(release) if f.endswith(".oci.tar")):
    with tarfile.open(os.path.join(release, archive)) as tar:
        blob = lambda d: json.load(tar.extractfile("blobs/sha256/" + d["digest"].split(":")[1]))
        top = json.load(tar.extractfile("index.json"))["manifests"][0]
        tag = top["annotations"]["org.opencontainers.image.ref.name"]
        for entry in blob(top)["manifests"]:
            p = entry["platform"]
            if p["os"] == "linux":
                platform = p["architecture"] + p.get("variant", "")
                # It names the release's files of that platform: a plain word, or refused.
                if not re.fullmatch(r"[a-z0-9]+", platform):
                    sys.exit(f"{archive}: platform {platform!r} is not a plain architecture name")
                print(archive[:-len(".oci.tar")], tag, top["digest"], platform, entry["digest"])
PYTHON
)
[ -n "$images" ] || fail "$release holds no image archive"

for program in $(cut -d' ' -f1 <<<"$images" | sort -u); do
  read -r _ tag digest _ <<<"$(grep -m1 "^$program " <<<"$images")"
  grep -q " index $digest\$" "$release/digests.txt" ||
    fail "$program's archive holds index $digest, which digests.txt does not list"
  echo "==> $repository/$program:$tag"
  skopeo copy --quiet --all "${tls[@]}" "oci-archive:$release/$program.oci.tar" \
    "docker://$repository/$program:$tag"
  pushed=sha256:$(skopeo inspect --raw "${tls[@]/dest-/}" "docker://$repository/$program:$tag" |
    sha256sum | cut -d' ' -f1)
  [ "$pushed" = "$digest" ] || fail "$repository/$program:$tag is $pushed after the push, not $digest"
  "$cosign" sign --key "$key" "${tlog_flags[@]}" --recursive "$repository/$program@$digest" >/dev/null
  while read -r _ _ _ platform manifest; do
    predicate=$scratch/predicate.json  # one at a time; no name from the release's files
    python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["predicate"]))' \
      "$release/$program-linux-$platform.provenance.json" >"$predicate"
    "$cosign" attest --key "$key" "${tlog_flags[@]}" --type spdxjson \
      --predicate "$release/$program-linux-$platform.spdx.json" "$repository/$program@$manifest" >/dev/null
    "$cosign" attest --key "$key" "${tlog_flags[@]}" --type https://slsa.dev/provenance/v1 \
      --predicate "$predicate" "$repository/$program@$manifest" >/dev/null
  done < <(grep "^$program " <<<"$images")
  "$cosign" attest --key "$key" "${tlog_flags[@]}" --type openvex \
    --predicate "$release/$program.openvex.json" "$repository/$program@$digest" >/dev/null
  echo "    $digest: pushed, signed (index and images), SBOM and provenance per platform, VEX attested"
done
# What is written into the release's directory goes to a new file there first (mktemp), renamed
# into place when complete: never through whatever else is at that name.
signature=$(mktemp "$release/.SHA256SUMS.sig.XXXXXX")
public_key=$(mktemp "$release/.cosign.pub.XXXXXX")
"$cosign" sign-blob --key "$key" "${tlog_flags[@]}" --output-signature "$signature" \
  "$release/SHA256SUMS" >/dev/null
printf '%s\n' "$public" >"$public_key"
chmod 0644 "$signature" "$public_key"
mv -T -- "$signature" "$release/SHA256SUMS.sig"
mv -T -- "$public_key" "$release/cosign.pub"
signature= public_key=
echo "==> $release/cosign.pub: the public key to verify it all with; SHA256SUMS signed (SHA256SUMS.sig)"
