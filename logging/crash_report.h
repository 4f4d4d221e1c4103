// The crash report: what a program writes to its log when it dies of a fatal signal (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT; so also a failed NDR_LOG(FATAL) and std::terminate), in the
// format it logs in, so that `kubectl logs --previous` says how it died:
//
//   F1202 04:31:02.123456      12 crash_report.cc:301] "Fatal signal" signal="SIGSEGV"
//     code="SEGV_MAPERR" addr="0x0" tid=14 thread="grpcpp_sync_ser"
//     function="ndr::registrar::Registrar::Run()" stack=<
//   	@ 0x00005581c2a3b4c1 ndr::registrar::Registrar::Run()
//   	@ 0x00005581c2a1f0e2 main
//    >
//
// (one line up to "stack=", wrapped here), or one JSON object with --logging-format=json. Then the
// program dies of the same signal, so that its exit status and core dump are what they would have
// been without the report. The report's first part (up to the stack) also becomes the container's
// termination message (program/termination_message.h), unless one was written before.
//
// The handler is this project's own: abseil's InstallFailureSignalHandler writes a report of its
// own, unformatted, to stderr before calling a writer, handles SIGTERM (which the registrar uses to
// shut down), and gives neither the faulting address nor the thread. The pieces it is made of are
// abseil's (the symbolizer and demangler); the stack is walked by the C++ unwinder (from each
// function's unwind table, which every Debian library and our code carry, so no frame pointers are
// needed). Everything in the handler is async-signal-safe: fixed buffers, no locks, no
// allocation, write(2). A handler that hangs is ended by an alarm after 10 s.
#ifndef NDR_LOGGING_CRASH_REPORT_H_
#define NDR_LOGGING_CRASH_REPORT_H_

#include <csignal>
#include <cstddef>
#include <cstdint>

namespace ndr::logging {

// Installs the report for the fatal signals and std::terminate, and an alternate signal stack
// for the calling thread (so that a stack overflow there is reported too). `argv0` is main's
// argv[0]. Call first in main, before any thread starts.
void InstallCrashReport(const char* argv0);

// The format the report is written in; logging::Init sets it from the logging flags.
struct CrashReportFormat {
  bool json = false;
  bool skip_headers = false;
  bool add_dir_header = false;
};
void SetCrashReportFormat(const CrashReportFormat& format);

// What a report says, for FormatCrashReport.
struct CrashFacts {
  int signal = 0;
  int code = 0;                  // siginfo's si_code
  uintptr_t address = 0;         // si_addr, for SIGSEGV, SIGBUS, SIGFPE, SIGILL
  int sender = 0;                // si_pid, for a signal sent by a process
  int64_t tid = 0;
  const char* thread_name = "";  // as prctl(PR_GET_NAME) gives it
  int64_t unix_micros = 0;       // when
  int64_t utc_offset_seconds = 0;  // local time's, for klog's header
  int pid = 0;
  const uintptr_t* frames = nullptr;  // program counters, innermost first
  const char* const* names = nullptr;  // each frame's function, or nullptr when unknown
  int frame_count = 0;
};

// Writes the report into `out` (at most `size` bytes, cut if longer, `size` > 0) and returns its
// length, ending in '\n'. Without the stack (`with_stack` false) and in text without headers, it
// is the termination message. Async-signal-safe.
size_t FormatCrashReport(const CrashFacts& facts, const CrashReportFormat& format,
                         bool with_stack, char* out, size_t size);

// "SIGSEGV", "SEGV_MAPERR", ... ("" for an unknown code).
const char* SignalName(int signal);
const char* SignalCodeName(int signal, int code);

}  // namespace ndr::logging

#endif  // NDR_LOGGING_CRASH_REPORT_H_
