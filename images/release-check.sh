#!/usr/bin/env bash
# Checks a release end to end with the real tools an operator uses, and prints one table:
#
#   bash images/release-check.sh [VERSION] --source-uri=URI [--tools-dir=DIR] [--keep]
#
# VERSION defaults to the newest release RELEASES records; its commit is its tag's or, without a
# tag, the record's, and its platforms are the record's (version/releases.py). --source-uri (or
# $NDR_SOURCE_URI) is handed to release.sh: where the release's source is published. Needs root,
# Go (/usr/local/go) and the Go module proxy (to build the tools once), and Debian's skopeo,
# containerd and runc (installed when missing); not part of the test suite. In order:
#
#  1. images/release.sh VERSION, twice, in two new directories at two different times (each
#     builds the commit in a clean clone with a clean output base): the same SHA256SUMS, byte for
#     byte. As root, release.sh first upgrades linked packages Debian has newer versions of. Every
#     image index has exactly the platforms RELEASES records, and every provenance names them.
#  2. A real OCI registry on 127.0.0.1 (distribution's `registry`, built from the Go module proxy).
#  3. images/publish.sh, as a maintainer publishes: skopeo pushes every image index with all its
#     platforms and attestations (the pushed digests must be the release's), and cosign (Go module
#  4. proxy), with a key pair made here, signs each index and its images and attests each
#     platform's SBOM and provenance and each index's VEX, signs SHA256SUMS, and leaves the public
#     key, cosign.pub, in the release's directory. Without the transparency log, as publish.sh
#     signs by default; verification skips the log (--insecure-ignore-tlog) and checks the
#     signatures against the key alone.
#  5. cosign verify and verify-attestation, and the attested documents are the release's files;
#     then the verify block of the release's own README exactly as it is written (its R= line set
#     to this registry), run in the release's directory with cosign.pub from there.
#  6. syft and trivy, in their default modes, read each platform's image from the registry: each
#     must list exactly the Debian packages of that platform's SBOM, with their versions and purls.
#  7. trivy's vulnerability findings for each platform, then with the release's VEX applied, as a
#     file (--vex FILE) and as found beside the image (--vex oci). Trivy's own database comes from
#     ghcr.io/mirror.gcr.io; where it cannot be downloaded (here), the check builds one (trivydb/)
#     from the Debian advisories recorded in images/vex/statements.yaml and says so in the table.
#  8. containerd pulls the registrar, the sample driver and the judge (kubeletclient) from the
#     registry, as a node does, runs each one's --version, and a registration round trip: the
#     driver's container and the registrar's, sharing a socket directory, answer kubeletclient
#     probe, run from the judge's image as kubelet (which then dials the driver through the same
#     directory for NodeGetInfo).
#
# Every check is a row: PASS, FAIL with what was wrong, or NOT RUN with why; the exit status is 1
# if any is not PASS. --tools-dir keeps the built tools (default /var/cache/ndr-release-check);
# --keep leaves the registry, containerd and the work directory for a look.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version= tools=/var/cache/ndr-release-check keep=false source_uri=${NDR_SOURCE_URI:-}
for arg in "$@"; do
  case $arg in
    --source-uri=*) source_uri=${arg#*=} ;;
    --tools-dir=*) tools=${arg#*=} ;;
    --keep) keep=true ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "release-check.sh: unknown flag $arg (see --help)" >&2; exit 2 ;;
    *) version=$arg ;;
  esac
done
cd "$top"
if [ -z "$version" ]; then
  version=$(python3 version/releases.py newest) ||
    { echo "release-check.sh: RELEASES records no release; name the VERSION" >&2; exit 2; }
fi

# --- what this needs, said before anything runs ----------------------------------------------
missing=()
[ "$(id -u)" -eq 0 ] || missing+=("root: pushing to containerd and running containers need it (sudo bash images/release-check.sh)")
export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || missing+=("Go: install it at /usr/local/go (the Go module proxy builds registry, cosign, syft and trivy with it)")
commit=$(python3 version/releases.py commit "$version" 2>&1) ||
  missing+=("release $version: ${commit#releases.py: }")
recorded=$(python3 version/releases.py platforms "$version" 2>&1) ||
  missing+=("release $version's platforms: ${recorded#releases.py: }")
checked_uri=$(python3 images/source_uri.py "$source_uri" 2>&1) ||
  missing+=("the source URI (--source-uri=URI or NDR_SOURCE_URI): ${checked_uri#source_uri: }")
if [ ${#missing[@]} -gt 0 ]; then
  echo "release-check.sh: cannot run; missing:" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  exit 2
fi
source test/install-deps.sh
source test/util/run-containerd.sh
ndr_install_host_deps python3 python3-yaml skopeo containerd runc || exit 2

work=$(mktemp -d /tmp/ndr-rc-XXXXXX)
run=  # containerd's state and sockets (section 8), a directory of its own too
log=$work/log
mkdir "$log"
rows=()
failed=0
row() {  # check, outcome, seconds, detail
  rows+=("| $1 | $2 | $3 s | $4 |")
  [ "$2" = PASS ] || failed=$((failed + 1))
  echo "[$2] $1: $4" >&2
}
now() { date +%s; }
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  if ! $keep; then
    # Whatever is still mounted beneath them is unmounted first; nothing across a mount is removed.
    ndr_remove_tree "$work"
    [ -z "$run" ] || ndr_remove_tree "$run"
  fi
}
trap cleanup EXIT

# --- the tools, built once from the Go module proxy ---------------------------------------------
# They run as root: their directory, and every one above it, can be changed by no one but root
# (hostsafe.sh). One release check builds them at a time.
for dir in "$tools" "$tools/bin"; do
  if [ -d "$dir" ] && [ ! -L "$dir" ]; then
    ndr_check_private_dir "$dir" "the tools' directory (--tools-dir)"
  else
    ndr_make_private_dir "$dir" "the tools' directory (--tools-dir)" 0755
  fi || exit 2
done
ndr_lock tools_lock "$tools/lock" exclusive "the release check's tools" || exit 2
build_tool() {  # name, package, version, [env...]
  local name=$1 package=$2 module_version=$3
  shift 3
  if [ -x "$tools/bin/$name" ] && go version -m "$tools/bin/$name" 2>/dev/null |
      grep -q "[[:space:]]$module_version\([[:space:]]\|$\)"; then
    return 0
  fi
  echo "==> building $name $module_version from the Go module proxy (once; kept in $tools)" >&2
  (cd "$work" && env GOBIN="$tools/bin" GOFLAGS=-buildvcs=false "$@" go install "$package@$module_version") \
    >"$log/build-$name.log" 2>&1
}
started=$(now)
tool_errors=()
build_tool registry github.com/distribution/distribution/v3/cmd/registry v3.1.2 || tool_errors+=(registry)
build_tool cosign github.com/sigstore/cosign/v2/cmd/cosign v2.6.5 || tool_errors+=(cosign)
build_tool syft github.com/anchore/syft/cmd/syft v1.57.1 || tool_errors+=(syft)
# trivy v0.74 uses encoding/json/v2, an experiment of Go 1.25 and 1.26 (its own build sets it).
build_tool trivy github.com/aquasecurity/trivy/cmd/trivy v0.74.0 GOEXPERIMENT=jsonv2 || tool_errors+=(trivy)
(cd images/release-check/trivydb && go build -o "$tools/bin/trivydb" .) >"$log/build-trivydb.log" 2>&1 ||
  tool_errors+=(trivydb)
ndr_unlock "$tools_lock"
if [ ${#tool_errors[@]} -gt 0 ]; then
  for t in "${tool_errors[@]}"; do
    echo "release-check.sh: building $t failed; its log:" >&2
    tail -n 15 "$log/build-$t.log" >&2
  done
  row "tools (registry v3.1.2, cosign v2.6.5, syft v1.57.1, trivy v0.74.0)" FAIL $(($(now) - started)) \
    "could not build ${tool_errors[*]} (is the Go module proxy reachable? GOPROXY=$(go env GOPROXY))"
  printf '%s\n' "| check | outcome | time | detail |" "|---|---|---|---|" "${rows[@]}"
  exit 1
fi
T=$tools/bin

# --- 1. the release, twice --------------------------------------------------------------------
one=$work/release-1 two=$work/release-2
started=$(now)
if bash images/release.sh "$version" "$one" --source-uri="$source_uri" --platforms="$recorded" \
    >"$log/release-1.log" 2>&1; then
  first=$(($(now) - started))
  # Another moment: the clock's second has moved on during the first build, whatever the machine.
  started=$(now)
  if bash images/release.sh "$version" "$two" --source-uri="$source_uri" --platforms="$recorded" \
      >"$log/release-2.log" 2>&1; then
    if cmp -s "$one/SHA256SUMS" "$two/SHA256SUMS"; then
      row "release.sh $version twice: two clean clones, output bases and times" PASS \
        "$first + $(($(now) - started))" \
        "$(wc -l <"$one/SHA256SUMS") files, byte for byte the same; $(grep -c ' index ' "$one/digests.txt") image indexes: $(sed -n 's/^\(.*\) index \(sha256:.\{12\}\).*/\1 \2…/p' "$one/digests.txt" | paste -sd ';' | sed 's/;/; /g')"
    else
      row "release.sh $version twice" FAIL "$first + $(($(now) - started))" \
        "the two releases differ: $(diff "$one/SHA256SUMS" "$two/SHA256SUMS" | grep '^[<>]' | tr '\n' ' ')"
    fi
  else
    row "release.sh $version twice" FAIL "$first + $(($(now) - started))" "the second build failed: $(tail -n 3 "$log/release-2.log" | tr '\n' ' ')"
  fi
else
  row "release.sh $version" FAIL $(($(now) - started)) "the build failed: $(tail -n 5 "$log/release-1.log" | tr '\n' ' ')"
  printf '%s\n' "| check | outcome | time | detail |" "|---|---|---|---|" "${rows[@]}"
  exit 1
fi
release=$one
tag=$version  # release versions have no "+", so the tag is the version

# The release's images: for each, its index digest and each platform's manifest digest.
python3 - "$release" >"$work/images.tsv" <<'PYTHON'
import json, sys, tarfile, os
release = sys.argv[1]
for archive in sorted(f for f in os.listdir(release) if f.endswith(".oci.tar")):
    with tarfile.open(os.path.join(release, archive)) as tar:
        blob = lambda d: json.load(tar.extractfile("blobs/sha256/" + d["digest"].split(":")[1]))
        top = json.load(tar.extractfile("index.json"))["manifests"][0]
        for entry in blob(top)["manifests"]:
            p = entry["platform"]
            if p["os"] != "linux":
                continue
            platform = p["architecture"] + ("/" + p["variant"] if p.get("variant") else "")
            print("\t".join([archive[:-len(".oci.tar")], top["digest"], platform, entry["digest"]]))
PYTHON
programs=$(cut -f1 "$work/images.tsv" | sort -u)
# The platforms: each index's, and each provenance's list, exactly as RELEASES records them.
started=$(now)
if platforms_problems=$(python3 - "$release" "$work/images.tsv" "$recorded" <<'PYTHON'
import glob, json, os, sys
release, tsv, recorded = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
problems = []
indexes = {}
for line in open(tsv):
    program, _, platform, _ = line.rstrip("\n").split("\t")
    indexes.setdefault(program, []).append(platform)
for program, platforms in sorted(indexes.items()):
    if sorted(platforms) != sorted(recorded):
        problems.append(f"{program}'s index has {','.join(platforms)}")
provenances = sorted(glob.glob(os.path.join(release, "*.provenance.json")))
for path in provenances:
    listed = json.load(open(path))["predicate"]["buildDefinition"]["externalParameters"].get(
        "platforms", [])
    if listed != ["linux/" + p for p in recorded]:
        problems.append(f"{os.path.basename(path)} names {','.join(listed) or 'no platforms'}")
if not provenances:
    problems.append("no provenance")
print("; ".join(problems))
sys.exit(1 if problems else 0)
PYTHON
); then
  row "the release's platforms are RELEASES' record" PASS $(($(now) - started)) \
    "$recorded: every image index has exactly these, and every provenance names them"
else
  row "the release's platforms are RELEASES' record ($recorded)" FAIL $(($(now) - started)) \
    "$platforms_problems"
fi

# --- 2. a registry ------------------------------------------------------------------------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
registry=127.0.0.1:$port
cat >"$work/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $work/registry-data
http:
  addr: $registry
EOF
started=$(now)
"$T/registry" serve "$work/registry.yml" >"$log/registry.log" 2>&1 &
pids+=($!)
up=false
for _ in $(seq 1 100); do
  curl -fsS "http://$registry/v2/" >/dev/null 2>&1 && { up=true; break; }
  kill -0 "${pids[-1]}" 2>/dev/null || break
  sleep 0.1
done
if $up; then
  row "registry (distribution v3.1.2) on $registry" PASS $(($(now) - started)) "serving /v2/"
else
  row "registry (distribution v3.1.2)" FAIL $(($(now) - started)) "did not answer /v2/ within 10 s: $(tail -n 3 "$log/registry.log" | tr '\n' ' ')"
fi

# --- 3 and 4. publish: push, sign, attest (images/publish.sh, as a maintainer publishes) ---------
export COSIGN_PASSWORD=release-check COSIGN_YES=true
cosign=("$T/cosign")
signed=false
started=$(now)
if (cd "$work" && "${cosign[@]}" generate-key-pair) >"$log/cosign-keys.log" 2>&1 &&
    bash images/publish.sh "$release" "$registry/ndr" --key "$work/cosign.key" \
      --cosign="$T/cosign" >"$log/publish.log" 2>&1 && cmp -s "$work/cosign.pub" "$release/cosign.pub"; then
  signed=true
  row "publish.sh: skopeo copy --all, cosign sign --recursive and attest (key pair made here; without the transparency log, publish.sh's default)" \
    PASS $(($(now) - started)) \
    "every index pushed with its platforms and attestations at the release's digest; every index and image signed; per platform the SPDX SBOM and SLSA v1 provenance attested, per index the OpenVEX; SHA256SUMS signed; cosign.pub beside the release's files"
else
  row "publish.sh: push, sign, attest" FAIL $(($(now) - started)) \
    "$(tail -n 3 "$log/cosign-keys.log" "$log/publish.log" 2>/dev/null | tr '\n' ' ')"
fi

started=$(now)
if $signed; then
  problems=()
  verified=0
  for program in $programs; do
    digest=$(awk -F'\t' -v p="$program" '$1 == p {print $2; exit}' "$work/images.tsv")
    "${cosign[@]}" verify --key "$work/cosign.pub" --insecure-ignore-tlog \
      "$registry/ndr/$program:$tag" >"$work/verify-$program.json" 2>>"$log/cosign-verify.log" ||
      problems+=("$program: cosign verify failed")
    # The attested documents, verified, must be the release's files.
    check_attestation() {  # ref, type, expected predicate file
      local out=$work/att-$RANDOM.json
      if ! "${cosign[@]}" verify-attestation --key "$work/cosign.pub" --insecure-ignore-tlog \
          --type "$2" "$1" >"$out" 2>>"$log/cosign-verify.log"; then
        problems+=("$1 $2: verify-attestation failed")
        return
      fi
      python3 - "$out" "$3" <<'PYTHON' || { problems+=("$1 $2: the attested predicate is not the release's"); return; }
import base64, json, sys
expected = json.load(open(sys.argv[2]))
for line in open(sys.argv[1]):
    if line.strip():
        statement = json.loads(base64.b64decode(json.loads(line)["payload"]))
        if statement["predicate"] == expected:
            sys.exit(0)
sys.exit(1)
PYTHON
      verified=$((verified + 1))
    }
    while IFS=$'\t' read -r _ _ platform manifest; do
      slug=linux-${platform//\//}
      python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["predicate"]))' \
        "$release/$program-$slug.provenance.json" >"$work/$program-$slug.slsa.json"
      check_attestation "$registry/ndr/$program@$manifest" spdxjson "$release/$program-$slug.spdx.json"
      check_attestation "$registry/ndr/$program@$manifest" https://slsa.dev/provenance/v1 "$work/$program-$slug.slsa.json"
    done < <(awk -F'\t' -v p="$program" '$1 == p' "$work/images.tsv")
    check_attestation "$registry/ndr/$program@$digest" openvex "$release/$program.openvex.json"
  done
  if [ ${#problems[@]} -eq 0 ]; then
    row "cosign verify, verify-attestation (the key alone, --insecure-ignore-tlog)" PASS $(($(now) - started)) \
      "signatures of every index; $verified attestations, each predicate the release's own file"
  else
    row "cosign verify, verify-attestation" FAIL $(($(now) - started)) "$(IFS=';'; echo "${problems[*]}")"
  fi
else
  row "cosign verify, verify-attestation" "NOT RUN" 0 "nothing was signed (above)"
fi

# --- 6. syft and trivy list the packages ----------------------------------------------------------
# trivy's vulnerability database: its own where it can be downloaded, else one made here.
trivy_cache=$work/trivy-cache
export TRIVY_DISABLE_TELEMETRY=true TRIVY_NO_PROGRESS=true TRIVY_INSECURE=true
export SYFT_REGISTRY_INSECURE_USE_HTTP=true SYFT_CHECK_FOR_APP_UPDATE=false
started=$(now)
if timeout 120 "$T/trivy" image --cache-dir "$trivy_cache" --download-db-only >"$log/trivy-db.log" 2>&1; then
  db_source="Trivy's own database (downloaded)"
else
  python3 - images/vex/statements.yaml "$NDR_BUILDROOT_VERSION_ID" >"$work/advisories.json" <<'PYTHON'
import json, sys, yaml
data = yaml.safe_load(open(sys.argv[1]))
release = sys.argv[2]  # the Debian release the images are built from (toolchain/buildroot/)
advisories = {}
for s in data["statements"]:
    fixed = str(s.get("debian_fixed", "none"))
    advisories[(s["source"], s["vulnerability"])] = {
        "release": release, "source": s["source"], "vulnerability": s["vulnerability"],
        "fixed": "" if fixed == "none" else fixed, "severity": s.get("severity", "UNKNOWN")}
print(json.dumps(list(advisories.values())))
PYTHON
  "$T/trivydb" --cache-dir "$trivy_cache" "$work/advisories.json" >"$log/trivydb.log" 2>&1
  db_source="a database made here from the Debian advisories in images/vex/statements.yaml ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/advisories.json") advisories), since Trivy's own could not be downloaded ($(grep -o 'failed to download[^"]*' "$log/trivy-db.log" | head -n 1 | cut -c1-80))"
fi

scanned=() list_problems=() counts=()
while IFS=$'\t' read -r program index platform manifest; do
  ref=$registry/ndr/$program:$tag
  slug=linux-${platform//\//}
  sbom=$release/$program-$slug.spdx.json
  out=$work/scan-$program-$slug
  "$T/syft" "registry:$ref" --platform "linux/$platform" -o syft-json >"$out.syft.json" 2>"$log/syft-$program-$slug.log" ||
    list_problems+=("syft $program $platform failed")
  "$T/trivy" image --cache-dir "$trivy_cache" --skip-db-update --skip-java-db-update --offline-scan \
    --platform "linux/$platform" --scanners vuln --list-all-pkgs --format json "$ref" \
    >"$out.trivy.json" 2>"$log/trivy-$program-$slug.log" || list_problems+=("trivy $program $platform failed")
  "$T/trivy" image --cache-dir "$trivy_cache" --skip-db-update --skip-java-db-update --offline-scan \
    --platform "linux/$platform" --scanners vuln --format json --vex "$release/$program.openvex.json" \
    "$ref" >"$out.trivy-vex.json" 2>>"$log/trivy-$program-$slug.log" || list_problems+=("trivy --vex FILE $program $platform failed")
  "$T/trivy" image --cache-dir "$trivy_cache" --skip-db-update --skip-java-db-update --offline-scan \
    --platform "linux/$platform" --scanners vuln --format json --vex oci \
    "$ref" >"$out.trivy-vexoci.json" 2>>"$log/trivy-$program-$slug.log" || list_problems+=("trivy --vex oci $program $platform failed")
  result=$(python3 - "$sbom" "$out" "$program" "$platform" "$NDR_BUILDROOT_VERSION_ID" <<'PYTHON'
import json, sys, urllib.parse
# debian: the Debian release every package must come from, the base (toolchain/buildroot/).
sbom_path, out, program, platform, debian = sys.argv[1:]
sbom = json.load(open(sbom_path))
want = {}
for p in sbom["packages"]:
    for ref in p.get("externalRefs", []):
        if ref["referenceType"] == "purl" and "arch=source" not in ref["referenceLocator"]:
            want[p["name"]] = (p["versionInfo"], ref["referenceLocator"])
problems = []
def qualifiers(purl):
    return dict(urllib.parse.parse_qsl(purl.split("?", 1)[1])) if "?" in purl else {}
# syft: name, version and purl (arch, distro, upstream) of every dpkg package.
try:
    syft = json.load(open(out + ".syft.json"))
    got = {a["name"]: (a["version"], a.get("purl", "")) for a in syft["artifacts"] if a["type"] == "deb"}
    if set(got) != set(want):
        problems.append(f"syft lists {sorted(set(got) ^ set(want))} differently")
    for name, (version, purl) in got.items():
        if name in want and version != want[name][0]:
            problems.append(f"syft: {name} {version}, SBOM {want[name][0]}")
        q = qualifiers(purl)
        if not purl.startswith(f"pkg:deb/debian/") or q.get("distro") != f"debian-{debian}" or \
                q.get("arch") != qualifiers(want.get(name, ("", "?a=b"))[1]).get("arch"):
            problems.append(f"syft: purl {purl}")
    syft_count = len(got)
except (OSError, ValueError, KeyError) as e:
    problems.append(f"syft output: {e}"); syft_count = 0
# trivy: the OS, and name, version, source and purl of every package.
def trivy_findings(path):
    report = json.load(open(path))
    return report, [(v["PkgName"], v["VulnerabilityID"]) for r in report.get("Results", [])
                    for v in r.get("Vulnerabilities") or []]
try:
    report, before = trivy_findings(out + ".trivy.json")
    os_ = report.get("Metadata", {}).get("OS", {})
    if (os_.get("Family"), str(os_.get("Name", "")).split(".")[0]) != ("debian", debian):
        problems.append(f"trivy detected OS {os_}")
    packages = {p["Name"]: p for r in report.get("Results", []) for p in r.get("Packages") or []}
    if set(packages) != set(want):
        problems.append(f"trivy lists {sorted(set(packages) ^ set(want))} differently")
    for name, p in packages.items():
        version = p.get("Version", "") + ("-" + p["Release"] if p.get("Release") else "")
        if p.get("Epoch"):
            version = f"{p['Epoch']}:{version}"
        if name in want and version != want[name][0]:
            problems.append(f"trivy: {name} {version}, SBOM {want[name][0]}")
        purl = p.get("Identifier", {}).get("PURL", "")
        if not purl.startswith(f"pkg:deb/debian/{urllib.parse.quote(name)}@") or \
                qualifiers(purl).get("distro", "").split(".")[0] != f"debian-{debian}":
            problems.append(f"trivy: purl {purl}")
    trivy_count = len(packages)
    _, with_file = trivy_findings(out + ".trivy-vex.json")
    _, with_oci = trivy_findings(out + ".trivy-vexoci.json")
except (OSError, ValueError, KeyError) as e:
    problems.append(f"trivy output: {e}"); trivy_count = 0; before = with_file = with_oci = []
print(json.dumps({"sbom": len(want), "syft": syft_count, "trivy": trivy_count,
                  "before": len(before), "vex_file": len(with_file), "vex_oci": len(with_oci),
                  "left": sorted({v for _, v in with_file}), "problems": problems}))
PYTHON
)
  scanned+=("$program|$platform|$result")
done <"$work/images.tsv"
summary=$(python3 - "${scanned[@]}" <<'PYTHON'
import json, sys
rows, problems = [], []
for item in sys.argv[1:]:
    program, platform, result = item.split("|", 2)
    r = json.loads(result)
    problems += [f"{program} {platform}: {p}" for p in r["problems"]]
    rows.append(f"{program} {platform}: SBOM {r['sbom']}, syft {r['syft']}, trivy {r['trivy']} packages; "
                f"findings {r['before']}, with VEX file {r['vex_file']}, with VEX from the registry {r['vex_oci']}"
                + (f" ({', '.join(r['left'])})" if r["left"] else ""))
print(json.dumps({"rows": rows, "problems": problems}))
PYTHON
)
python3 -c 'import json,sys; print("\n".join(json.loads(sys.argv[1])["rows"]))' "$summary" >"$work/scanners.txt"
problems=$(python3 -c 'import json,sys; print("; ".join(json.loads(sys.argv[1])["problems"]))' "$summary")
[ ${#list_problems[@]} -eq 0 ] || problems="${list_problems[*]} $problems"
# No image scanned is a failure, never a vacuous pass.
[ ${#scanned[@]} -gt 0 ] || problems="no image was scanned (the release's images.tsv lists none) $problems"
if [ -z "$problems" ]; then
  row "syft, trivy (default mode, from the registry): the SBOM's packages, versions, purls" PASS \
    $(($(now) - started)) "every platform of every image: the same packages as its SBOM (details below)"
else
  row "syft, trivy: the SBOM's packages" FAIL $(($(now) - started)) "$problems"
fi
vex_ok=$(python3 - "${scanned[@]}" <<'PYTHON'
import json, sys
ok = len(sys.argv) > 1 and all(json.loads(i.split("|", 2)[2])["vex_file"] == json.loads(i.split("|", 2)[2])["vex_oci"] and
         json.loads(i.split("|", 2)[2])["vex_file"] < json.loads(i.split("|", 2)[2])["before"]
         for i in sys.argv[1:])
print("yes" if ok else "no")
PYTHON
)
if [ "$vex_ok" = yes ]; then
  row "trivy applies the release's VEX (--vex FILE and --vex oci)" PASS 0 \
    "on every platform fewer findings, the same with the file and with the attestation; vulnerability data: $db_source"
else
  row "trivy applies the release's VEX" FAIL 0 "see the per-platform counts below; vulnerability data: $db_source"
fi

# --- the README's verify block, word for word, as an operator runs it ---------------------------
started=$(now)
if $signed; then
  # The fenced block after the "release-check runs this block" comment of the release's own README
  # (the commit's, which names that release), not this checkout's; only its R= line is set, to
  # this registry.
  git show "$commit:README.md" >"$work/README.release.md" 2>"$work/readme-verify.err"
  if python3 - "$work/README.release.md" "$registry/ndr" >"$work/readme-verify.sh" \
      2>>"$work/readme-verify.err" <<'PYTHON'; then
import re, sys
text = open(sys.argv[1]).read()
marker = text.find("<!-- release-check: ")
fence = text.find("```sh\n", marker)
end = text.find("```\n", fence + 6)
if marker < 0 or fence < 0 or end < 0:
    sys.exit("the release's README.md has no '<!-- release-check: ' comment before a ```sh block: "
             "it names no verify commands to run")
block = text[fence + 6:end]
lines = block.splitlines()
assignments = [i for i, line in enumerate(lines) if line.startswith("R=")]
if len(assignments) != 1:
    sys.exit(f"the README's verify block sets R {len(assignments)} times, not once")
lines[assignments[0]] = re.sub(r"^R=\S+", "R=" + sys.argv[2], lines[assignments[0]])
print("\n".join(lines))
PYTHON
    if (cd "$release" && env PATH="$T:$PATH" TRIVY_CACHE_DIR="$trivy_cache" TRIVY_SKIP_DB_UPDATE=true \
        TRIVY_SKIP_JAVA_DB_UPDATE=true TRIVY_OFFLINE_SCAN=true \
        bash -euo pipefail "$work/readme-verify.sh") >"$log/readme-verify.log" 2>&1; then
      row "the README's verify commands, word for word (R= set to this registry), with the release's cosign.pub" \
        PASS $(($(now) - started)) "$(grep -c . "$work/readme-verify.sh") lines: $(grep -oE '^(cosign [a-z-]+|trivy image|sha256sum)' "$work/readme-verify.sh" | paste -sd, | sed 's/,/, /g'): every one exited 0"
    else
      row "the README's verify commands, word for word" FAIL $(($(now) - started)) \
        "$(tail -n 4 "$log/readme-verify.log" | tr '\n' ' ')"
    fi
  else
    row "the README's verify commands, word for word" FAIL 0 "$(tr '\n' ' ' <"$work/readme-verify.err")"
  fi
else
  row "the README's verify commands, word for word" "NOT RUN" 0 "nothing was signed (above)"
fi

# --- 8. containerd, as a node ---------------------------------------------------------------------
started=$(now)
run=$(mktemp -d /tmp/ndr-rc-run-XXXXXX)
mkdir "$work/containerd"
ndr_run_containerd_note "$work/run-containerd.before"
cat >"$work/containerd/config.toml" <<EOF
version = 2
root = "$work/containerd/root"
state = "$run/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$run/containerd.sock"
EOF
containerd --config "$work/containerd/config.toml" >"$log/containerd.log" 2>&1 &
pids+=($!)
ctr=(ctr --address "$run/containerd.sock" -n ndr-release-check)
# runc's state and the tasks' FIFOs in this run's directory, not under /run/containerd.
ctr_run=("${ctr[@]}" run --runc-root "$run/runc" --fifo-dir "$run/fifo")
up=false
for _ in $(seq 1 100); do
  "${ctr[@]}" version >/dev/null 2>&1 && { up=true; break; }
  sleep 0.1
done
node_problems=()
if ! $up; then
  node_problems+=("containerd did not start: $(tail -n 3 "$log/containerd.log" | tr '\n' ' ')")
else
  for program in $programs; do
    "${ctr[@]}" images pull --plain-http "$registry/ndr/$program:$tag" >"$log/pull-$program.log" 2>&1 ||
      node_problems+=("pulling $program: $(tail -n 2 "$log/pull-$program.log" | tr '\n' ' ')")
    got=$("${ctr_run[@]}" --rm "$registry/ndr/$program:$tag" "rc-version-$program" \
      "/$program" --version 2>&1)
    [[ "$got" == "$program $version"$'\n'"commit: $commit"$'\n'* ]] ||
      node_problems+=("$program --version in its container said: $got")
  done
  mkdir "$run/csi" "$run/registration"
  "${ctr_run[@]}" -d --mount "type=bind,src=$run/csi,dst=/csi,options=rbind:rw" \
    "$registry/ndr/sample-csi-driver:$tag" rc-driver /sample-csi-driver \
    --endpoint=unix:///csi/csi.sock --nodeid=release-check >"$log/run-driver.log" 2>&1 ||
    node_problems+=("running the driver: $(tail -n 2 "$log/run-driver.log" | tr '\n' ' ')")
  "${ctr_run[@]}" -d --mount "type=bind,src=$run/csi,dst=/csi,options=rbind:rw" \
    --mount "type=bind,src=$run/registration,dst=/registration,options=rbind:rw" \
    "$registry/ndr/csi-node-driver-registrar:$tag" rc-registrar /csi-node-driver-registrar \
    --csi-address=/csi/csi.sock --kubelet-registration-path="$run/csi/csi.sock" \
    >"$log/run-registrar.log" 2>&1 ||
    node_problems+=("running the registrar: $(tail -n 2 "$log/run-registrar.log" | tr '\n' ' ')")
  socket=$run/registration/sample.csi.example.com-reg.sock
  for _ in $(seq 1 100); do [ -S "$socket" ] && break; sleep 0.1; done
  # Kubelet's handshake from the judge's image, which sees the sockets at the host's paths.
  if grep -qx kubeletclient <<<"$programs"; then
    probe=$("${ctr_run[@]}" --rm --mount "type=bind,src=$run/csi,dst=$run/csi,options=rbind:rw" \
      --mount "type=bind,src=$run/registration,dst=$run/registration,options=rbind:rw" \
      "$registry/ndr/kubeletclient:$tag" rc-probe /kubeletclient probe --notify \
      --registration-socket="$socket" 2>&1) && [[ "$probe" == *'"name": "sample.csi.example.com"'* ]] &&
      [[ "$probe" == *'"nodeId": "release-check"'* ]] ||
      node_problems+=("kubeletclient probe of $socket from the judge's image: $(echo "$probe" | tail -n 3 | tr '\n' ' ')")
  else
    node_problems+=("release $version has no judge's image (kubeletclient) to probe the registration with")
  fi
  for task in rc-registrar rc-driver; do
    "${ctr[@]}" tasks kill -s SIGTERM "$task" >/dev/null 2>&1
    for _ in $(seq 1 50); do "${ctr[@]}" tasks ls 2>/dev/null | grep -q "^$task " || break; sleep 0.1; done
    "${ctr[@]}" tasks rm -f "$task" >/dev/null 2>&1
    "${ctr[@]}" containers rm "$task" >/dev/null 2>&1
  done
  [ ! -e "$socket" ] || node_problems+=("the registrar left its socket after SIGTERM")
  for program in $programs; do "${ctr[@]}" images rm "$registry/ndr/$program:$tag" >/dev/null 2>&1; done
fi
kill "${pids[-1]}" 2>/dev/null && wait "${pids[-1]}" 2>/dev/null
ndr_run_containerd_restore "$work/run-containerd.before"
# runc leaves the namespace's cgroup (every hierarchy's ndr-release-check), empty, once its
# containers are gone.
for dir in /sys/fs/cgroup/ndr-release-check /sys/fs/cgroup/*/ndr-release-check; do
  [ -d "$dir" ] || continue
  rmdir "$dir" 2>/dev/null || node_problems+=("$dir is left, not empty")
done
ndr_run_containerd_note "$work/run-containerd.after"
diff "$work/run-containerd.before" "$work/run-containerd.after" >/dev/null ||
  node_problems+=("left behind under /run/containerd: $(comm -13 "$work/run-containerd.before" "$work/run-containerd.after" | tr '\n' ' ')")
if ndr_remove_tree "$run"; then
  run=
else
  node_problems+=("$run could not be removed (above)")
fi
if [ ${#node_problems[@]} -eq 0 ]; then
  row "containerd pulls and runs them as a node would" PASS $(($(now) - started)) \
    "the host's platform of $(echo $programs | sed 's/ /, /g') pulled from each index; each --version names $version and ${commit:0:12}; driver and registrar containers register through the shared socket (kubeletclient probe from the judge's image, as kubelet); SIGTERM removes the socket"
else
  row "containerd pulls and runs them" FAIL $(($(now) - started)) "$(IFS=';'; echo "${node_problems[*]}")"
fi

# --- the table --------------------------------------------------------------------------------
echo
echo "release-check of $version (${commit:0:12}), $(date -u +%Y-%m-%d), $(nproc) cores:"
printf '%s\n' "| check | outcome | time | detail |" "|---|---|---|---|" "${rows[@]}"
echo
echo "Scanners per platform (packages listed; trivy's findings before and after the VEX):"
sed 's/^/  /' "$work/scanners.txt"
echo
echo "$(( ${#rows[@]} - failed )) passed, $failed not passed; logs in $log$($keep && echo '' || echo ' (removed; --keep keeps them)')"
[ "$failed" -eq 0 ]
