#!/bin/bash
# filter.sh drops exactly glibc's static-NSS warnings (gold's one-line form and GNU ld's two-line
# form), keeps every other line and keeps the linker's exit status.
set -euo pipefail
filter=toolchain/quiet_link/filter.sh
fake=$(mktemp)
trap 'rm -f "$fake"' EXIT
cat > "$fake" <<'FAKE'
#!/bin/sh
cat >&2 <<'OUT'
/usr/lib/x86_64-linux-gnu/libgrpc_unsecure.a(resolve_address_posix.cc.o):function grpc_core::NativeDNSResolver::LookupHostnameBlocking(absl::string_view, absl::string_view): warning: Using 'getaddrinfo' in statically linked applications requires at runtime the shared libraries from the glibc version used for linking
ld: /sysroot/usr/lib/libglog.a(utilities.cc.o): in function `google::MyUserNameInitializer()':
(.text.startup+0xdc): warning: Using 'getpwuid_r' in statically linked applications requires at runtime the shared libraries from the glibc version used for linking
ld: (.text+0x1af0): warning: Using 'getservbyname' in statically linked applications requires at runtime the shared libraries from the glibc version used for linking
ld: warning: main.o: missing .note.GNU-stack section implies executable stack
ld: /x/libfoo.a(a.o): in function `f':
a.c:(.text+0x1): undefined reference to `g'
OUT
echo "stdout line"
exit "${FAKE_STATUS:-0}"
FAKE
chmod +x "$fake"
out=$(FAKE_STATUS=0 "$filter" "$fake" 2>&1)
expected="stdout line
ld: warning: main.o: missing .note.GNU-stack section implies executable stack
ld: /x/libfoo.a(a.o): in function \`f':
a.c:(.text+0x1): undefined reference to \`g'"
# stdout and stderr may interleave either way: compare sorted lines.
if [ "$(sort <<<"$out")" != "$(sort <<<"$expected")" ]; then
  printf 'filter.sh printed:\n%s\n--- expected (in any order):\n%s\n' "$out" "$expected" >&2
  exit 1
fi
status=0
FAKE_STATUS=3 "$filter" "$fake" >/dev/null 2>&1 || status=$?
if [ "$status" -ne 3 ]; then
  echo "filter.sh exited $status, not the linker's 3" >&2
  exit 1
fi
# A bare name is found in COMPILER_PATH, as gcc passes it.
bin=$(mktemp -d)
trap 'rm -f "$fake"; rm -rf "$bin"' EXIT
cp "$fake" "$bin/collect2"
out=$(COMPILER_PATH="/nonexistent/:$bin/" FAKE_STATUS=0 "$filter" collect2 2>&1)
if [ "$(sort <<<"$out")" != "$(sort <<<"$expected")" ]; then
  printf 'filter.sh collect2 printed:\n%s\n' "$out" >&2
  exit 1
fi
status=0
out=$(COMPILER_PATH=/nonexistent/ "$filter" collect2 2>&1) || status=$?
if [ "$status" -eq 0 ] || [[ "$out" != *"no collect2 in gcc's COMPILER_PATH"* ]]; then
  echo "filter.sh without collect2 in COMPILER_PATH: exit $status, said: $out" >&2
  exit 1
fi
echo PASS
