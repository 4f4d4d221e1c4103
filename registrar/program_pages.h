// Keeps only the program's code that runs resident, once start-up is over.
//
// The registrar is one static binary of which about 6 MB is gRPC's and protobuf's code and
// read-only data. What runs in steady state (answering kubelet and /healthz) is a small part of
// it, spread over the whole text, and the kernel maps 64 kB around every page fault of a file
// mapping from the page cache ("fault-around"): within a minute of traffic nearly all of the text
// is mapped, and counts in the registrar's resident memory, though most of it never runs again.
//
// ReleaseProgramPages() registers the program file's read-only mappings (text and rodata; never a
// mapping holding a page of its own, such as RELRO) with a userfaultfd in asynchronous
// write-protect mode, which the kernel serves itself and which turns fault-around off for them
// (mm/memory.c uffd_disable_fault_around; any memory type since Linux 6.7's
// UFFD_FEATURE_WP_ASYNC), then unmaps them (MADV_DONTNEED: their clean, file-backed pages come
// back from the page cache when touched). From then on a page is mapped when it runs, alone: what
// is resident is what runs. Nothing is evicted from the page cache and no fault reaches user
// space; a write to those pages, which never happens, is resolved by the kernel as usual.
//
// Where the kernel or a seccomp profile refuses userfaultfd (older kernels, container runtimes'
// default profiles), nothing changes and the error says why. The descriptor stays open for the
// process's life (closing it would unregister the mappings). Call it from one thread, once.
#ifndef NDR_REGISTRAR_PROGRAM_PAGES_H_
#define NDR_REGISTRAR_PROGRAM_PAGES_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace ndr::registrar {

struct ReleasedPages {
  int mappings = 0;             // of the program file, read-only and unmodified
  int64_t bytes = 0;            // their size
  int64_t resident_before = 0;  // of them, resident before (bytes)
};

absl::StatusOr<ReleasedPages> ReleaseProgramPages();

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_PROGRAM_PAGES_H_
