#!/bin/bash
# Runs gcc's linker driver (collect2, $1, with the rest as its arguments) with the linker's --trace
# and records in the program it links which files from outside the build went into it: a section
# .ndr.linked_files holding one absolute path per line, sorted: each archive of which a member was
# linked (libfoo.a, not the member) and each object file linked whole (crt1.o and the like).
# The build's own objects and archives (relative paths under bazel-out) are not listed. The record
# is made from what the linker did, so a library added to a link is in it without anyone editing a
# list; images/sbom.py turns it into the images' SBOMs (Debian packages, found with dpkg).
#
# Static binaries link through here (toolchain/quiet_link/quiet.specs, via filter.sh). A failed
# link fails as before; a link whose record cannot be written fails too, saying why, rather than
# leave a program without one.
set -o pipefail
real=$1
shift
# A bare name is looked for where gcc looks for it (find_tool, shared with filter.sh).
source "$(dirname "$0")/../quiet_link/compiler_path.sh"
if [[ "$real" != */* ]]; then
  if ! found=$(find_tool "$real"); then
    echo "record.sh: no $real in gcc's COMPILER_PATH (${COMPILER_PATH:-unset})" >&2
    exit 1
  fi
  real=$found
fi
output=a.out
previous=
for arg in "$@"; do
  [ "$previous" != -o ] || output=$arg
  previous=$arg
done
trace=$(mktemp "${TMPDIR:-/tmp}/ndr-link-trace-XXXXXX")
record=$(mktemp "${TMPDIR:-/tmp}/ndr-link-record-XXXXXX")
trap 'rm -f "$trace" "$record"' EXIT
# With -t (--trace) the linker prints every input file on standard output, an archive member as
# "archive(member)" (gold, GNU ld 2.40) or "(archive)member" (older GNU ld); collect2 passes -t on.
status=0
"$real" "$@" -t >"$trace" || status=$?
grep -v '^/\|^(/\|^bazel-out/\|^(bazel-out/' "$trace"  # whatever else the linker said
[ "$status" -eq 0 ] || exit "$status"
# Absolute paths only, the member dropped, "dir/../" folded (not symlinks: dpkg knows the path as
# the package installed it).
sed -n -e 's|^(\(/[^)]*\)).*|\1|p;t' -e 's|^\(/[^(]*\)(.*)$|\1|p;t' -e 's|^\(/[^(]*\)$|\1|p' "$trace" |
  xargs -r -d '\n' realpath -s -m -- | sort -u >"$record"
if [ ! -s "$record" ]; then
  echo "record.sh: the linker's trace named no file from outside the build; cannot record what" \
    "$output was linked from" >&2
  exit 1
fi
# The objcopy of the output's architecture sits beside a cross linker; the native one is on PATH.
objcopy=$(find_tool objcopy || command -v objcopy) || {
  echo "record.sh: no objcopy in COMPILER_PATH or PATH to record what $output was linked from" >&2
  exit 1
}
if ! "$objcopy" --add-section ".ndr.linked_files=$record" \
  --set-section-flags .ndr.linked_files=readonly "$output"; then
  echo "record.sh: $objcopy could not add the record of linked files to $output" >&2
  exit 1
fi
