#!/bin/bash
# A static program linked with static.specs unwinds (exceptions, backtraces) through its
# .eh_frame_hdr; and the shipped programs have that header and start with crtbegin.o, which
# registers no frames (crtbeginT.o's frame_dummy calls __register_frame_info, which since GCC 13
# reads the whole .eh_frame at start). Static binaries only: the plain stage.
set -euo pipefail
source test/util/shtest.sh

probe_unwinds() {
  local out
  out=$(toolchain/static_start/unwind_probe 2>&1) || { echo "$out"; return 1; }
  [ "$out" = ok ] || { echo "unwind_probe printed: $out"; return 1; }
}
has_eh_frame_header() {
  readelf -lW "$1" | grep -q GNU_EH_FRAME ||
    { echo "readelf -l $1 shows no GNU_EH_FRAME: not linked with static.specs"; return 1; }
}
registers_no_frames() {
  # crtbeginT.o's frame_dummy (run before main) calls __register_frame_info; crtbegin.o's does not.
  local code
  code=$(objdump -d --disassemble=frame_dummy "$1")
  grep -q '<frame_dummy>:' <<<"$code" || { echo "objdump finds no frame_dummy in $1"; return 1; }
  ! grep -q 'call.*<__register_frame_info>' <<<"$code" ||
    { echo "$1 registers .eh_frame at start (crtbeginT.o's frame_dummy):"; echo "$code"; return 1; }
}

shtest_case "a static program with static.specs catches an exception and backtraces" probe_unwinds
for program in toolchain/static_start/unwind_probe registrar/csi-node-driver-registrar \
    test/csidriver/sample-csi-driver kubeletclient/kubeletclient; do
  shtest_case "$program has a PT_GNU_EH_FRAME header" has_eh_frame_header "$program"
  shtest_case "$program registers no frames at start (crtbegin.o, not crtbeginT.o)" \
    registers_no_frames "$program"
done
shtest_end
