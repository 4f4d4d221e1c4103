// Where a process's resident memory is, by kind, for the registrar's benchmark: its program's
// code (executable sections), read-only data (every other read-only section: rodata, unwind
// tables, Go's pclntab...), writable data (data and bss), heap (brk and other anonymous memory),
// and stacks (the main thread's, and glibc's thread stacks: 8 MiB anonymous mappings behind a
// guard page). Sections come from the program file's ELF section headers, resident pages from
// /proc/PID/pagemap's present bit (no privilege needed for that bit) and /proc/PID/smaps.
//
// Works for any static ELF program (ours, Go's). Reads /proc; thread-compatible.
#ifndef NDR_REGISTRAR_MEMORY_BREAKDOWN_H_
#define NDR_REGISTRAR_MEMORY_BREAKDOWN_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace ndr::registrar {

struct MemoryBreakdown {
  // /proc/PID/status, in kB.
  int64_t rss_kb = 0, anon_kb = 0, file_kb = 0;
  int threads = 0;
  // Resident kB by kind.
  int64_t text_kb = 0, rodata_kb = 0, data_kb = 0, heap_kb = 0, stacks_kb = 0, other_kb = 0;
};

absl::StatusOr<MemoryBreakdown> MeasureMemory(pid_t pid, const std::string& program);

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_MEMORY_BREAKDOWN_H_
