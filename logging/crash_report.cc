#include "logging/crash_report.h"

#include <cxxabi.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <typeinfo>
#include <vector>

#include "absl/debugging/symbolize.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "logging/logging.h"
#include "program/termination_message.h"

namespace ndr::logging {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kMaxFrames = 64;
constexpr size_t kNameSize = 256;
// A handler stuck (on a lock the crashed thread held, say) is ended after this long.
constexpr unsigned kHandlerAlarmSeconds = 10;

// Set before threads start (InstallCrashReport, logging::Init); read by the handler.
CrashReportFormat report_format;
std::atomic<int64_t> utc_offset_seconds{0};

// The handler's storage: static, so that reporting needs no allocation and no stack to speak of,
// and untouched (so not resident) until a crash.
uintptr_t frames[kMaxFrames];
char names[kMaxFrames][kNameSize];
const char* name_of[kMaxFrames];
char report[kMaxFrames * (kNameSize + 24) + 1024];
char message[program::kTerminationMessageLimit];
std::atomic<int64_t> reporting_tid{0};
std::atomic<int> reporting_signal{0};

// Appends to a fixed buffer, dropping what does not fit. Async-signal-safe.
class Out {
 public:
  Out(char* buffer, size_t size) : buffer_(buffer), size_(size) {}
  size_t size() const { return length_; }

  void Char(char c) {
    if (length_ < size_) buffer_[length_++] = c;
  }
  void Str(const char* s) {
    while (*s != '\0') Char(*s++);
  }
  void Dec(int64_t value, int width = 0, char pad = ' ') {
    char digits[24];
    int n = 0;
    const bool negative = value < 0;
    uint64_t v = negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    for (int i = n + (negative ? 1 : 0); i < width; ++i) Char(pad);
    if (negative) Char('-');
    while (n > 0) Char(digits[--n]);
  }
  void Hex(uint64_t value, int min_digits = 1) {
    Str("0x");
    char digits[16];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[value & 0xf];
      value >>= 4;
    } while (value != 0);
    for (int i = n; i < min_digits; ++i) Char('0');
    while (n > 0) Char(digits[--n]);
  }
  // As Go's strconv.Quote writes ASCII text; other bytes as \x escapes.
  void GoQuoted(const char* s) {
    Char('"');
    for (; *s != '\0'; ++s) {
      const unsigned char c = static_cast<unsigned char>(*s);
      if (c == '"' || c == '\\') {
        Char('\\');
        Char(static_cast<char>(c));
      } else if (c == '\n') {
        Str("\\n");
      } else if (c == '\t') {
        Str("\\t");
      } else if (c < 0x20 || c >= 0x7f) {
        Str("\\x");
        Char("0123456789abcdef"[c >> 4]);
        Char("0123456789abcdef"[c & 0xf]);
      } else {
        Char(static_cast<char>(c));
      }
    }
    Char('"');
  }
  // A JSON string, as zap writes one (control characters as \u00XX).
  void Json(const char* s) {
    Char('"');
    JsonBody(s);
    Char('"');
  }
  // The same without the quotes.
  void JsonBody(const char* s) {
    for (; *s != '\0'; ++s) {
      const unsigned char c = static_cast<unsigned char>(*s);
      if (c == '"' || c == '\\') {
        Char('\\');
        Char(static_cast<char>(c));
      } else if (c == '\n') {
        Str("\\n");
      } else if (c == '\t') {
        Str("\\t");
      } else if (c < 0x20) {
        Str("\\u00");
        Char("0123456789abcdef"[c >> 4]);
        Char("0123456789abcdef"[c & 0xf]);
      } else {
        Char(static_cast<char>(c));
      }
    }
  }

 private:
  char* const buffer_;
  const size_t size_;
  size_t length_ = 0;
};

// Days since 1970-01-01 to a civil date (proleptic Gregorian), without the C library's time
// functions, which are not async-signal-safe.
void CivilFromDays(int64_t days, int* month, int* day) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t doe = days - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  *month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
}

bool HasAddress(int signal) {
  return signal == SIGSEGV || signal == SIGBUS || signal == SIGFPE || signal == SIGILL;
}

// A key and its value: klog's ` key=value` or JSON's `,"key":value`.
void Key(Out& out, bool json, const char* key) {
  if (json) {
    out.Char(',');
    out.Json(key);
    out.Char(':');
  } else {
    out.Char(' ');
    out.Str(key);
    out.Char('=');
  }
}
void StringPair(Out& out, bool json, const char* key, const char* value) {
  Key(out, json, key);
  if (json) {
    out.Json(value);
  } else {
    out.GoQuoted(value);
  }
}

// The report's line number in the log header.
constexpr int kReportLine = __LINE__;

int64_t Tid() { return static_cast<int64_t>(syscall(SYS_gettid)); }

int64_t UnixMicros() {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
}

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Ends the process with `signal`'s default action: at once for a signal another process or the
// program sent, and for a fault when the handler returns and the instruction faults again, so
// that the core shows the faulting state.
//
// A PID namespace's init (a container's first process: the registrar in its pod) is the exception
// for a sent signal: the kernel drops any signal sent to it whose action is the default, its own
// raise() included (SIGNAL_UNKILLABLE, kernel/signal.c sig_task_ignored), and only a fault's
// forced signal kills it. So it exits with 128 + the signal, the status a container runtime
// reports for that death, instead of living on after its crash report.
void DieOf(int signal, bool sent) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(signal, &dfl, nullptr);
  raise(signal);  // blocked in its own handler: delivered as the handler returns
  if (sent && getpid() == 1) _exit(128 + signal);
}

void OnAlarm(int) {
  const int signal = reporting_signal.load();
  DieOf(signal != 0 ? signal : SIGABRT, /*sent=*/true);
}

// The program counter the signal interrupted, to find the faulting frame on the unwound stack.
uintptr_t InterruptedPc(const void* context) {
  if (context == nullptr) return 0;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.pc);
#elif defined(__arm__)
  return static_cast<uintptr_t>(uc->uc_mcontext.arm_pc);
#elif defined(__powerpc64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.gp_regs[32]);
#elif defined(__s390x__)
  return static_cast<uintptr_t>(uc->uc_mcontext.psw.addr);
#else
  (void)uc;
  return 0;
#endif
}

struct Unwound {
  int count = 0;  // frames in `frames`; the unwinder stops at kMaxFrames
};

_Unwind_Reason_Code OnFrame(struct _Unwind_Context* context, void* arg) {
  auto* unwound = static_cast<Unwound*>(arg);
  int before_instruction = 0;
  uintptr_t ip = _Unwind_GetIPInfo(context, &before_instruction);
  if (ip == 0) return _URC_END_OF_STACK;
  // A return address points after the call; one byte back is inside it. A signal frame's
  // address is the interrupted instruction itself.
  if (!before_instruction) ip -= 1;
  if (unwound->count == kMaxFrames) return _URC_END_OF_STACK;
  frames[unwound->count++] = ip;
  return _URC_NO_REASON;
}

void OnFatalSignal(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const int64_t tid = Tid();
  int64_t first = 0;
  if (!reporting_tid.compare_exchange_strong(first, tid)) {
    // Another thread is writing its report and will end the process; this one waits for that (the
    // alarm bounds it). A second fault in the reporting thread itself ends the process now.
    if (first != tid) {
      struct timespec wait = {static_cast<time_t>(kHandlerAlarmSeconds), 0};
      while (nanosleep(&wait, &wait) != 0 && errno == EINTR) {
      }
    }
    DieOf(signal, /*sent=*/true);
    return;
  }
  reporting_signal.store(signal);
  ::signal(SIGALRM, OnAlarm);
  alarm(kHandlerAlarmSeconds);

  CrashFacts facts;
  facts.signal = signal;
  facts.code = info != nullptr ? info->si_code : 0;
  facts.address = info != nullptr ? reinterpret_cast<uintptr_t>(info->si_addr) : 0;
  facts.sender = info != nullptr && info->si_code <= 0 ? info->si_pid : 0;
  facts.tid = tid;
  char thread_name[17] = {};
  prctl(PR_GET_NAME, thread_name, 0, 0, 0);
  facts.thread_name = thread_name;
  facts.unix_micros = UnixMicros();
  facts.utc_offset_seconds = utc_offset_seconds.load();
  facts.pid = static_cast<int>(getpid());

  Unwound unwound;
  _Unwind_Backtrace(OnFrame, &unwound);
  // The handler's own frames and the signal trampoline come first: start at the interrupted one.
  int start = 0;
  const uintptr_t pc = InterruptedPc(context);
  for (int i = 0; pc != 0 && i < unwound.count; ++i) {
    if (frames[i] == pc || frames[i] + 1 == pc) {
      start = i;
      break;
    }
  }
  for (int i = start; i < unwound.count; ++i) {
    name_of[i] = absl::Symbolize(reinterpret_cast<void*>(frames[i]), names[i], kNameSize)
                     ? names[i]
                     : nullptr;
  }
  facts.frames = frames + start;
  facts.names = name_of + start;
  facts.frame_count = unwound.count - start;

  const size_t length = FormatCrashReport(facts, report_format, true, report, sizeof(report));
  WriteAll(STDERR_FILENO, report, length);
  const size_t message_length =
      FormatCrashReport(facts, {.skip_headers = true}, false, message, sizeof(message));
  program::WriteTerminationMessage(message, message_length);

  errno = saved_errno;
  DieOf(signal, /*sent=*/facts.code <= 0);
}

// std::terminate's handler: says what was thrown, then aborts (and the SIGABRT handler writes the
// stack, which still holds the throw: nothing was unwound, there being no handler to unwind to).
[[noreturn]] void OnTerminate() {
  std::string type = "none";
  std::string what;
  if (std::exception_ptr exception = std::current_exception()) {
    if (const std::type_info* info = abi::__cxa_current_exception_type()) {
      int status = 0;
      char* demangled = abi::__cxa_demangle(info->name(), nullptr, nullptr, &status);
      type = status == 0 && demangled != nullptr ? demangled : info->name();
      free(demangled);
    }
    try {
      std::rethrow_exception(exception);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
  }
  constexpr char kMessage[] = "std::terminate called: an exception was not caught";
  const std::vector<Kv> pairs = {Kv("type", type), Kv("what", what)};
  const absl::Time now = absl::Now();
  Write(Severity::kError, __FILE__, __LINE__, 0, kMessage, pairs, now);
  Flush();
  // The termination message is the same entry without its header, as a failed check's is.
  program::WriteTerminationMessage(TextLine(Severity::kError, __FILE__, __LINE__, kMessage, pairs,
                                            now, 0, {.skip_headers = true}));
  abort();
}

void UpdateUtcOffset() {
  const absl::Time now = absl::Now();
  utc_offset_seconds.store(absl::LocalTimeZone().At(now).offset);
}

}  // namespace

const char* SignalName(int signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "";
  }
}

const char* SignalCodeName(int signal, int code) {
  // siginfo's si_code: the senders' codes (any signal), then each fault's own.
  static constexpr struct {
    int signal;  // 0: any
    int code;
    const char* name;
  } kCodes[] = {
      {0, SI_USER, "SI_USER"},          {0, SI_TKILL, "SI_TKILL"},
      {0, SI_QUEUE, "SI_QUEUE"},        {0, SI_KERNEL, "SI_KERNEL"},
      {SIGSEGV, SEGV_MAPERR, "SEGV_MAPERR"}, {SIGSEGV, SEGV_ACCERR, "SEGV_ACCERR"},
      {SIGBUS, BUS_ADRALN, "BUS_ADRALN"},    {SIGBUS, BUS_ADRERR, "BUS_ADRERR"},
      {SIGBUS, BUS_OBJERR, "BUS_OBJERR"},    {SIGFPE, FPE_INTDIV, "FPE_INTDIV"},
      {SIGFPE, FPE_INTOVF, "FPE_INTOVF"},    {SIGFPE, FPE_FLTDIV, "FPE_FLTDIV"},
      {SIGFPE, FPE_FLTOVF, "FPE_FLTOVF"},    {SIGFPE, FPE_FLTUND, "FPE_FLTUND"},
      {SIGFPE, FPE_FLTRES, "FPE_FLTRES"},    {SIGFPE, FPE_FLTINV, "FPE_FLTINV"},
      {SIGILL, ILL_ILLOPC, "ILL_ILLOPC"},    {SIGILL, ILL_ILLOPN, "ILL_ILLOPN"},
      {SIGILL, ILL_ILLADR, "ILL_ILLADR"},    {SIGILL, ILL_ILLTRP, "ILL_ILLTRP"},
      {SIGILL, ILL_PRVOPC, "ILL_PRVOPC"},
  };
  for (const auto& entry : kCodes) {
    if ((entry.signal == 0 || entry.signal == signal) && entry.code == code) return entry.name;
  }
  return "";
}

size_t FormatCrashReport(const CrashFacts& facts, const CrashReportFormat& format,
                         bool with_stack, char* buffer, size_t size) {
  Out out(buffer, size > 0 ? size - 1 : 0);  // room kept for the '\n'
  const bool json = format.json;
  const char* file = format.add_dir_header ? "logging/crash_report.cc" : "crash_report.cc";
  if (json) {
    // component-base's JSON: "ts" in milliseconds, "caller", "msg"; no "v" (an error).
    out.Str("{\"ts\":");
    out.Dec(facts.unix_micros / 1000);
    out.Char('.');
    out.Dec(facts.unix_micros % 1000, 3, '0');
    out.Str(",\"caller\":\"logging/crash_report.cc:");
    out.Dec(kReportLine);
    out.Str("\",\"msg\":\"Fatal signal\"");
  } else {
    if (!format.skip_headers) {
      // klog's header: Fmmdd hh:mm:ss.uuuuuu ppppppp file:line], in local time.
      const int64_t local = facts.unix_micros / 1000000 + facts.utc_offset_seconds;
      const int64_t days = (local >= 0 ? local : local - 86399) / 86400;
      const int64_t second_of_day = local - days * 86400;
      int month = 0, day = 0;
      CivilFromDays(days, &month, &day);
      out.Char('F');
      out.Dec(month, 2, '0');
      out.Dec(day, 2, '0');
      out.Char(' ');
      out.Dec(second_of_day / 3600, 2, '0');
      out.Char(':');
      out.Dec(second_of_day / 60 % 60, 2, '0');
      out.Char(':');
      out.Dec(second_of_day % 60, 2, '0');
      out.Char('.');
      out.Dec(facts.unix_micros % 1000000, 6, '0');
      out.Char(' ');
      out.Dec(facts.pid % 10000000, 7);
      out.Char(' ');
      out.Str(file);
      out.Char(':');
      out.Dec(kReportLine);
      out.Str("] ");
    }
    out.Str("\"Fatal signal\"");
  }
  const char* name = SignalName(facts.signal);
  if (name[0] != '\0') {
    StringPair(out, json, "signal", name);
  } else {
    Key(out, json, "signal");
    out.Dec(facts.signal);
  }
  const char* code = SignalCodeName(facts.signal, facts.code);
  if (code[0] != '\0') {
    StringPair(out, json, "code", code);
  } else {
    Key(out, json, "code");
    out.Dec(facts.code);
  }
  if (facts.code <= 0) {
    Key(out, json, "sender");
    out.Dec(facts.sender);
  } else if (HasAddress(facts.signal)) {
    Key(out, json, "addr");
    out.Char('"');
    out.Hex(facts.address);
    out.Char('"');
  }
  Key(out, json, "tid");
  out.Dec(facts.tid);
  StringPair(out, json, "thread", facts.thread_name);
  if (facts.frame_count > 0) {
    StringPair(out, json, "function",
               facts.names[0] != nullptr ? facts.names[0] : "(unknown)");
  }
  if (with_stack) {
    // One frame a line: "@ 0x00005581c2a3b4c1 function". klog writes a string holding line
    // breaks as a <...> block, each line after a tab; JSON as one string.
    char line[kNameSize + 32];
    Key(out, json, "stack");
    if (json) {
      out.Char('"');
    } else {
      out.Str("<\n");
    }
    for (int i = 0; i < facts.frame_count; ++i) {
      Out frame(line, sizeof(line) - 1);
      frame.Str("@ ");
      frame.Hex(facts.frames[i], 16);
      frame.Char(' ');
      frame.Str(facts.names[i] != nullptr ? facts.names[i] : "(unknown)");
      line[frame.size()] = '\0';
      if (json) {
        out.JsonBody(line);
        out.Str("\\n");
      } else {
        out.Char('\t');
        out.Str(line);
        out.Char('\n');
      }
    }
    out.Str(json ? "\"" : " >");
  }
  if (json) out.Char('}');
  const size_t length = out.size();
  buffer[length] = '\n';
  return length + 1;
}

void SetCrashReportFormat(const CrashReportFormat& format) {
  report_format = format;
  UpdateUtcOffset();
}

void InstallCrashReport(const char* argv0) {
  absl::InitializeSymbolizer(argv0);
  UpdateUtcOffset();
  // An alternate stack, so that a stack overflow on this thread (main) can still be reported.
  // Mapped, not touched: no page of it is resident until a signal uses it.
  constexpr size_t kAltStackSize = 128 * 1024;
  void* stack = mmap(nullptr, kAltStackSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  bool on_stack = false;
  if (stack != MAP_FAILED) {
    stack_t alt;
    memset(&alt, 0, sizeof(alt));
    alt.ss_sp = stack;
    alt.ss_size = kAltStackSize;
    on_stack = sigaltstack(&alt, nullptr) == 0;
  }
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_SIGINFO | (on_stack ? SA_ONSTACK : 0);
  action.sa_sigaction = OnFatalSignal;
  for (int signal : kFatalSignals) sigaction(signal, &action, nullptr);
  std::set_terminate(OnTerminate);
}

}  // namespace ndr::logging
