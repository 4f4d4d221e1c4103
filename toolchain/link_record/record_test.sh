#!/bin/bash
# record.sh puts exactly the linker's absolute input files (archives without their members, paths
# folded) into the output's .ndr.linked_files, passes on whatever else the linker printed and its
# exit status, and refuses to leave a program without a record.
set -euo pipefail
record=toolchain/link_record/record.sh
tmp=$(mktemp -d /tmp/ndr-record-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# A linker that "links" /bin/true to its -o and prints a trace in both archive-member forms.
cat >"$tmp/collect2" <<'FAKE'
#!/bin/bash
out=
while [ $# -gt 0 ]; do
  [ "$1" = -o ] && out=$2
  [ "$1" = -t ] && trace=1
  shift
done
cp /bin/true "$out"
if [ -n "${trace:-}" ]; then
  echo /usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/crt1.o
  echo bazel-out/k8-opt/bin/registrar/_objs/main.o
  echo "/usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/libc.a(printf.o)"
  echo "/usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/libc.a(malloc.o)"
  echo "(/usr/lib/x86_64-linux-gnu/libz.a)deflate.o"
  echo "bazel-out/k8-opt/bin/api/libcsi.a(csi.pb.o)"
fi
echo "a note from the linker"
exit "${FAKE_STATUS:-0}"
FAKE
chmod +x "$tmp/collect2"

out=$("$record" "$tmp/collect2" -o "$tmp/prog" main.o) || fail "record.sh failed: $out"
[ "$out" = "a note from the linker" ] || fail "the linker's own output was not passed on: $out"
expected="/usr/lib/x86_64-linux-gnu/crt1.o
/usr/lib/x86_64-linux-gnu/libc.a
/usr/lib/x86_64-linux-gnu/libz.a"
objcopy --dump-section ".ndr.linked_files=$tmp/section" "$tmp/prog" "$tmp/prog.copy"
actual=$(cat "$tmp/section")
[ "$actual" = "$expected" ] || fail "recorded:
$actual
expected:
$expected"
"$tmp/prog" || fail "the recorded program no longer runs"

# The linker's failure is the link's, with nothing recorded.
status=0
FAKE_STATUS=3 "$record" "$tmp/collect2" -o "$tmp/prog2" >/dev/null 2>&1 || status=$?
[ "$status" -eq 3 ] || fail "exit status $status, not the linker's 3"

# A bare name is found in COMPILER_PATH, as gcc passes it.
COMPILER_PATH="/nonexistent/:$tmp/" "$record" collect2 -o "$tmp/prog3" >/dev/null ||
  fail "collect2 not found in COMPILER_PATH"
status=0
out=$(COMPILER_PATH=/nonexistent/ "$record" collect2 -o "$tmp/prog4" 2>&1) || status=$?
[ "$status" -ne 0 ] && [[ "$out" == *"no collect2 in gcc's COMPILER_PATH"* ]] ||
  fail "a missing collect2: exit $status, $out"

# A trace without a single outside file cannot be right (every program links crt1.o, libc.a).
cat >"$tmp/quiet" <<'FAKE'
#!/bin/bash
while [ $# -gt 0 ]; do [ "$1" = -o ] && cp /bin/true "$2"; shift; done
FAKE
chmod +x "$tmp/quiet"
status=0
out=$("$record" "$tmp/quiet" -o "$tmp/prog5" 2>&1) || status=$?
[ "$status" -ne 0 ] && [[ "$out" == *"named no file from outside the build"* ]] ||
  fail "an empty trace: exit $status, $out"
echo PASS
