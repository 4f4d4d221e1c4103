#include "logging/logging.h"

#include <errno.h>
#include <fnmatch.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "api/go_duration.h"
#include "api/go_quote.h"
#include "gflags/gflags.h"
#include "grpc/support/log.h"
#include "logging/crash_report.h"
#include "program/termination_message.h"

// The component-base flags (k8s.io/component-base/logs/api/v1 addFlags), with its defaults and
// descriptions.
DEFINE_int32(v, 0, "number for the log level verbosity");
DEFINE_string(vmodule, "",
              "comma-separated list of pattern=N settings for file-filtered logging (only works "
              "for text log format)");
DEFINE_string(logging_format, "text", "Sets the log format. Permitted formats: \"json\", \"text\".");
DEFINE_string(log_flush_frequency, "5s", "Maximum number of seconds between log flushes");
DEFINE_bool(log_text_split_stream, false,
            "In text format, write error messages to stderr and info messages to stdout. The "
            "default is to write a single stream to stderr.");
DEFINE_string(log_text_info_buffer_size, "0",
              "In text format with split output streams, the info messages can be buffered for a "
              "while to increase performance. The default value of zero bytes disables "
              "buffering. The size can be specified as number of bytes (512), multiples of 1000 "
              "(1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi).");
DEFINE_bool(log_json_split_stream, false,
            "In JSON format, write error messages to stderr and info messages to stdout. The "
            "default is to write a single stream to stderr.");
DEFINE_string(log_json_info_buffer_size, "0",
              "In JSON format with split output streams, the info messages can be buffered for a "
              "while to increase performance. Sizes as for --log-text-info-buffer-size.");

// The flags klog registered (k8s.io/klog/v2 klog.go init and InitFlags, v2.4.0 to v2.110.1; klog
// v1.0.0 lacks one_output), with klog's defaults: the Go registrar v2.0-v2.10 took them all
// (cmd/csi-node-driver-registrar/main.go: klog.InitFlags(nil)). With --logtostderr (klog's
// default) klog writes only to stderr and the file flags have no effect; this program always
// writes to stderr, and says so of any file flag given a value.
DEFINE_string(log_dir, "", "If non-empty, write log files in this directory (no effect here)");
DEFINE_string(log_file, "", "If non-empty, use this log file (no effect here)");
DEFINE_uint64(log_file_max_size, 1800,
              "Defines the maximum size a log file can grow to (no effect here)");
DEFINE_bool(logtostderr, true, "log to standard error instead of files (always, here)");
DEFINE_bool(alsologtostderr, false, "log to standard error as well as files (no effect here)");
DEFINE_bool(add_dir_header, false,
            "If true, adds the file directory to the header of the log messages");
DEFINE_bool(skip_headers, false, "If true, avoid header prefixes in the log messages");
DEFINE_bool(one_output, false,
            "If true, only write logs to their native severity level (no effect here)");
DEFINE_bool(skip_log_headers, false,
            "If true, avoid headers when opening log files (no effect here)");
DEFINE_string(stderrthreshold, "2",
              "logs at or above this threshold go to stderr when writing to files (no effect "
              "here)");
DEFINE_string(log_backtrace_at, ":0",
              "when logging hits line file:N, emit a stack trace (no effect here)");

namespace ndr::logging {
namespace {

absl::Status FlagError(absl::string_view flag, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", problem));
}

// klog's writeStringValue: strconv.Quote, or a block of tab-indented lines when the value holds a
// line break.
void AppendKlogString(absl::string_view value, std::string* out) {
  if (value.find('\n') == absl::string_view::npos) {
    *out += GoQuote(value);
    return;
  }
  *out += "<\n";
  size_t start = 0;
  while (true) {
    const size_t end = value.find('\n', start);
    if (end == absl::string_view::npos) break;
    absl::StrAppend(out, "\t", value.substr(start, end - start + 1));
    start = end + 1;
  }
  if (start == value.size()) {
    *out += " >";
  } else {
    absl::StrAppend(out, "\t", value.substr(start), "\n >");
  }
}

// The last directory and the file, as zap's ShortCallerEncoder writes the caller.
absl::string_view ShortCaller(absl::string_view file) {
  const size_t last = file.rfind('/');
  if (last == absl::string_view::npos || last == 0) return file;
  const size_t before = file.rfind('/', last - 1);
  return before == absl::string_view::npos ? file : file.substr(before + 1);
}

absl::string_view BaseName(absl::string_view file) {
  const size_t last = file.rfind('/');
  return last == absl::string_view::npos ? file : file.substr(last + 1);
}

// Where lines go: stderr, or info to stdout and errors to stderr, with info optionally
// buffered.
class Output {
 public:
  void Configure(const Options& options) {
    std::lock_guard<std::mutex> lock(mu_);
    json_ = options.format == "json";
    text_style_ = options.text_style;
    split_ = options.split_stream;
    buffer_limit_ = options.split_stream ? options.info_buffer_size : 0;
    if (buffer_limit_ > 0 && !flusher_.joinable()) {
      const absl::Duration every = options.flush_frequency;
      flusher_ = std::thread([this, every] {
        std::unique_lock<std::mutex> lock(mu_);
        while (!stopping_) {
          wake_.wait_for(lock, absl::ToChronoNanoseconds(every));
          FlushLocked();
        }
      });
    }
  }
  ~Output() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      FlushLocked();
    }
    wake_.notify_all();
    if (flusher_.joinable()) flusher_.join();
  }

  bool json() {
    std::lock_guard<std::mutex> lock(mu_);
    return json_;
  }
  TextStyle text_style() {
    std::lock_guard<std::mutex> lock(mu_);
    return text_style_;
  }

  // `line` ends in '\n'. Info lines go to stdout when split.
  void Emit(bool info, const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!split_ || !info) {
      WriteAll(STDERR_FILENO, line);
      return;
    }
    if (buffer_limit_ <= 0) {
      WriteAll(STDOUT_FILENO, line);
      return;
    }
    if (buffer_.size() + line.size() > static_cast<size_t>(buffer_limit_)) FlushLocked();
    buffer_ += line;
    if (buffer_.size() >= static_cast<size_t>(buffer_limit_)) FlushLocked();
  }

  void Flush() {
    std::lock_guard<std::mutex> lock(mu_);
    FlushLocked();
  }

 private:
  static void WriteAll(int fd, absl::string_view data) {
    while (!data.empty()) {
      const ssize_t n = write(fd, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // nowhere left to report it
      data.remove_prefix(n);
    }
  }
  void FlushLocked() {
    if (buffer_.empty()) return;
    WriteAll(STDOUT_FILENO, buffer_);
    buffer_.clear();
  }

  std::mutex mu_;
  std::condition_variable wake_;
  bool json_ = false;
  TextStyle text_style_;
  bool split_ = false;
  int64_t buffer_limit_ = 0;
  std::string buffer_;
  bool stopping_ = false;
  std::thread flusher_;
};

Output& TheOutput() {
  static auto* output = new Output();  // never destroyed: threads may log until the very end
  return *output;
}

// --v and --vmodule, as Init set them. Read on every NDR_VLOG; set once, before other threads.
class Verbosity {
 public:
  void Configure(int verbosity, std::vector<ModuleVerbosity> modules) {
    verbosity_.store(verbosity, std::memory_order_relaxed);
    modules_ = std::move(modules);
    has_modules_.store(!modules_.empty(), std::memory_order_release);
  }
  bool On(int verbosity, const char* file) const {
    if (!has_modules_.load(std::memory_order_acquire)) {
      return verbosity <= verbosity_.load(std::memory_order_relaxed);
    }
    return verbosity <= VerbosityFor(file, verbosity_.load(std::memory_order_relaxed), modules_);
  }

 private:
  std::atomic<int> verbosity_{0};
  std::atomic<bool> has_modules_{false};
  std::vector<ModuleVerbosity> modules_;
};

Verbosity& TheVerbosity() {
  static auto* verbosity = new Verbosity();  // never destroyed, as TheOutput
  return *verbosity;
}

// Flushes buffered info at exit.
struct FlushAtExit {
  ~FlushAtExit() { TheOutput().Flush(); }
} flush_at_exit;

// What gRPC logs comes out in the chosen format.
void GprBridge(gpr_log_func_args* args) {
  const Severity severity = args->severity == GPR_LOG_SEVERITY_ERROR ? Severity::kError
                                                                      : Severity::kInfo;
  Write(severity, args->file != nullptr ? args->file : "grpc", args->line, 0,
        args->message != nullptr ? args->message : "", {}, absl::Now());
}

}  // namespace

absl::StatusOr<int64_t> ParseQuantity(absl::string_view text) {
  // resource.Quantity's forms that make sense for a byte count: digits, optionally a decimal
  // fraction, then a binary (Ki Mi Gi Ti Pi Ei) or decimal (k K M G T P E) suffix.
  const absl::string_view original = text;
  size_t digits = 0;
  while (digits < text.size() && (absl::ascii_isdigit(text[digits]) || text[digits] == '.')) {
    ++digits;
  }
  const absl::string_view number = text.substr(0, digits);
  const absl::string_view suffix = text.substr(digits);
  static const std::pair<const char*, double> kSuffixes[] = {
      {"", 1},          {"k", 1e3},        {"K", 1e3},        {"M", 1e6},
      {"G", 1e9},       {"T", 1e12},       {"P", 1e15},       {"E", 1e18},
      {"Ki", 1024.0},   {"Mi", 1048576.0}, {"Gi", 1073741824.0},
      {"Ti", 1099511627776.0}, {"Pi", 1125899906842624.0}, {"Ei", 1152921504606846976.0}};
  double value = 0;
  if (number.empty() || !absl::SimpleAtod(number, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", original, "\" is not a size: bytes (512), multiples of 1000 (1K), multiples of "
        "1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi)"));
  }
  for (const auto& [name, factor] : kSuffixes) {
    if (suffix == name) {
      const double bytes = value * factor;
      // component-base caps the buffer at 2Gi.
      if (bytes > 2147483648.0) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", original, "\" is more than the 2Gi a buffer may have"));
      }
      return static_cast<int64_t>(bytes);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("\"", original, "\": unable to parse quantity's suffix \"", suffix, "\""));
}

absl::StatusOr<std::vector<ModuleVerbosity>> ParseVmodule(absl::string_view text) {
  // klog internal/verbosity VModule.Set (v2.110.1): the same error for every malformed entry.
  std::vector<ModuleVerbosity> modules;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    if (entry.empty()) continue;
    const std::vector<absl::string_view> parts = absl::StrSplit(entry, '=');
    int verbosity = 0;
    if (parts.size() != 2 || parts[0].empty() || !absl::SimpleAtoi(parts[1], &verbosity)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "syntax error: expect comma-separated list of filename=N (at \"", entry, "\")"));
    }
    if (verbosity == 0) continue;  // klog drops these: --v decides for such files
    modules.push_back({std::string(parts[0]), verbosity});
  }
  return modules;
}

int VerbosityFor(absl::string_view file, int verbosity,
                 const std::vector<ModuleVerbosity>& modules) {
  // klog matches runtime.Caller's path less ".go"; ours is __FILE__ less its extension.
  std::string full(file);
  const size_t slash = full.rfind('/');
  const size_t dot = full.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) full.resize(dot);
  const std::string name = slash == std::string::npos ? full : full.substr(slash + 1);
  for (const ModuleVerbosity& module : modules) {
    const bool path = module.pattern.find('/') != std::string::npos;
    // FNM_PATHNAME: '*' and '?' do not match '/', as in filepath.Match.
    if (fnmatch(module.pattern.c_str(), path ? full.c_str() : name.c_str(), FNM_PATHNAME) == 0) {
      return module.verbosity;
    }
  }
  return verbosity;
}

bool VerboseAt(int verbosity, const char* file) { return TheVerbosity().On(verbosity, file); }

namespace {

// klog's flags, checked as klog parses them; those set to a value whose effect this program does
// not have become notices.
absl::Status CheckKlogFlags(Options* options) {
  // klog severityValue.Set: a severity name in any case, or a number.
  const std::string threshold = absl::AsciiStrToUpper(FLAGS_stderrthreshold);
  int number = 0;
  if (threshold != "INFO" && threshold != "WARNING" && threshold != "ERROR" &&
      threshold != "FATAL" && !absl::SimpleAtoi(threshold, &number)) {
    return FlagError("stderrthreshold",
                     absl::StrCat("\"", FLAGS_stderrthreshold,
                                  "\" is not a severity (INFO, WARNING, ERROR, FATAL or a "
                                  "number)"));
  }
  // klog traceLocation.Set: empty, or file:N with a '.' in the file and N above 0.
  if (!FLAGS_log_backtrace_at.empty() && FLAGS_log_backtrace_at != ":0") {
    const std::vector<absl::string_view> parts = absl::StrSplit(FLAGS_log_backtrace_at, ':');
    int line = 0;
    if (parts.size() != 2 || !absl::StrContains(parts[0], ".") ||
        !absl::SimpleAtoi(parts[1], &line) || line <= 0) {
      return FlagError("log_backtrace_at",
                       absl::StrCat("\"", FLAGS_log_backtrace_at,
                                    "\": syntax error: expect file.go:234"));
    }
  }
  if (options->format == "json") {
    for (const auto& [flag, set] : {std::pair{"skip_headers", FLAGS_skip_headers},
                                    std::pair{"add_dir_header", FLAGS_add_dir_header}}) {
      if (set) return FlagError(flag, "only supported for text log format");
    }
  }
  options->text_style.skip_headers = FLAGS_skip_headers;
  options->text_style.add_dir_header = FLAGS_add_dir_header;

  static constexpr char kNoFiles[] =
      "every line goes to standard error; this program writes no log files";
  for (const char* flag : {"logtostderr", "alsologtostderr", "log_dir", "log_file",
                           "log_file_max_size", "one_output", "skip_log_headers",
                           "stderrthreshold", "log_backtrace_at"}) {
    gflags::CommandLineFlagInfo info;
    if (!gflags::GetCommandLineFlagInfo(flag, &info) || info.is_default) continue;
    // --logtostderr (true) asks for what is done anyway.
    if (std::string_view(flag) == "logtostderr" && FLAGS_logtostderr) continue;
    options->notices.push_back(
        {absl::StrCat("--", flag, "=", info.current_value),
         std::string_view(flag) == "log_backtrace_at" ? "this program writes no stack traces"
                                                      : kNoFiles});
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Options> OptionsFromFlags() {
  Options options;
  if (FLAGS_logging_format != "text" && FLAGS_logging_format != "json") {
    return FlagError("logging-format",
                     absl::StrCat("Invalid value: \"", FLAGS_logging_format,
                                  "\": Unsupported log format (permitted: \"json\", \"text\")"));
  }
  options.format = FLAGS_logging_format;
  absl::StatusOr<absl::Duration> flush =
      ParseGoDuration(FLAGS_log_flush_frequency, "log-flush-frequency");
  if (!flush.ok()) return flush.status();
  if (*flush <= absl::ZeroDuration()) {
    return FlagError("log-flush-frequency", "must be greater than 0 (for example 5s)");
  }
  options.flush_frequency = *flush;
  if (FLAGS_v < 0) return FlagError("v", absl::StrCat(FLAGS_v, " is negative"));
  options.verbosity = FLAGS_v;
  if (options.format == "json" && !FLAGS_vmodule.empty()) {
    return FlagError("vmodule", "only supported for text log format");
  }
  absl::StatusOr<std::vector<ModuleVerbosity>> modules = ParseVmodule(FLAGS_vmodule);
  if (!modules.ok()) return FlagError("vmodule", modules.status().message());
  options.modules = *std::move(modules);
  const bool json = options.format == "json";
  for (const auto& [flag, value, mine] :
       {std::tuple{"log-text-info-buffer-size", &FLAGS_log_text_info_buffer_size, !json},
        std::tuple{"log-json-info-buffer-size", &FLAGS_log_json_info_buffer_size, json}}) {
    absl::StatusOr<int64_t> size = ParseQuantity(*value);
    if (!size.ok()) return FlagError(flag, size.status().message());
    if (mine) options.info_buffer_size = *size;
  }
  options.split_stream = json ? FLAGS_log_json_split_stream : FLAGS_log_text_split_stream;
  if (absl::Status klog = CheckKlogFlags(&options); !klog.ok()) return klog;
  return options;
}

void Init(const Options& options) {
  TheOutput().Configure(options);
  TheVerbosity().Configure(options.verbosity, options.modules);
  SetCrashReportFormat({.json = options.format == "json",
                        .skip_headers = options.text_style.skip_headers,
                        .add_dir_header = options.text_style.add_dir_header});
  gpr_set_log_function(&GprBridge);
  for (const Options::Notice& notice : options.notices) {
    NDR_LOG(WARNING) << "A klog flag has no effect here" << Kv("flag", notice.flag)
                     << Kv("reason", notice.reason);
  }
}

void Flush() { TheOutput().Flush(); }

Kv::Kv(absl::string_view key, absl::string_view value) : key(key), value(value) {}
Kv::Kv(absl::string_view key, int64_t value) : key(key), value(absl::StrCat(value)), quoted(false) {}
Kv::Kv(absl::string_view key, uint64_t value)
    : key(key), value(absl::StrCat(value)), quoted(false) {}
Kv::Kv(absl::string_view key, bool value)
    : key(key), value(value ? "true" : "false"), quoted(false) {}
Kv::Kv(absl::string_view key, absl::Duration value) : key(key), value(FormatGoDuration(value)) {}

Kv Err(absl::string_view message) {
  Kv kv("err", message);
  kv.error = true;
  return kv;
}

Kv Err(const absl::Status& status) { return Err(status.message()); }

Line::Line(Severity severity, const char* file, int line, int verbosity)
    : severity_(severity), file_(file), line_(line), verbosity_(verbosity) {}

Line::~Line() {
  const absl::Time now = absl::Now();
  Write(severity_, file_, line_, verbosity_, message_.str(), pairs_, now);
  if (severity_ == Severity::kFatal) {
    Flush();
    // The reason, where Kubernetes shows it; the SIGABRT's crash report then adds the stack.
    program::WriteTerminationMessage(
        TextLine(severity_, file_, line_, message_.str(), pairs_, now, 0, {.skip_headers = true}));
    abort();
  }
}

std::string TextLine(Severity severity, absl::string_view file, int line,
                     absl::string_view message, const std::vector<Kv>& pairs, absl::Time time,
                     int pid, const TextStyle& style) {
  // klog's header (internal/buffer FormatHeader): Lmmdd hh:mm:ss.uuuuuu ppppppp file:line],
  // the file with its directory under --add_dir_header, none at all under --skip_headers
  // (klog.go formatHeader and header, v2.110.1).
  std::string out;
  if (!style.skip_headers) {
    const absl::TimeZone local = absl::LocalTimeZone();
    static constexpr char kLetters[] = "IWEF";
    out = absl::StrCat(std::string(1, kLetters[static_cast<int>(severity)]),
                       absl::FormatTime("%m%d %H:%M:%S.%E6f", time, local), " ",
                       absl::StrFormat("%7d", pid % 10000000), " ",
                       style.add_dir_header ? ShortCaller(file) : BaseName(file), ":", line, "] ");
  }
  if (pairs.empty()) {
    // Unstructured (klog.Info): the text as it is.
    out.append(message.data(), message.size());
    return out;
  }
  // Structured (klog.InfoS, ErrorS): the quoted message, err first, then the pairs.
  out += GoQuote(message);
  for (bool errors : {true, false}) {
    for (const Kv& kv : pairs) {
      if (kv.error != errors) continue;
      absl::StrAppend(&out, " ", kv.key, "=");
      if (kv.quoted) {
        AppendKlogString(kv.value, &out);
      } else {
        out += kv.value;
      }
    }
  }
  return out;
}

std::string JsonLine(Severity severity, absl::string_view file, int line, int verbosity,
                     absl::string_view message, const std::vector<Kv>& pairs, absl::Time time) {
  // component-base/logs/json: "ts" (epoch milliseconds, as a float), "caller", "msg", "v" for
  // all but errors, the pairs, "err" last.
  char ts[64];
  const double millis = absl::ToDoubleMilliseconds(time - absl::UnixEpoch());
  const auto end = std::to_chars(ts, ts + sizeof(ts), millis, std::chars_format::fixed).ptr;
  std::string out = absl::StrCat("{\"ts\":", absl::string_view(ts, end - ts), ",\"caller\":");
  AppendGoJsonString(absl::StrCat(ShortCaller(file), ":", line), GoJsonStyle::kZap, &out);
  out += ",\"msg\":";
  // klog strips one trailing line break of an unstructured message.
  absl::string_view msg = message;
  if (pairs.empty() && absl::EndsWith(msg, "\n")) msg.remove_suffix(1);
  AppendGoJsonString(msg, GoJsonStyle::kZap, &out);
  const bool error = severity == Severity::kError;
  if (!error) absl::StrAppend(&out, ",\"v\":", verbosity);
  for (bool errors : {false, true}) {
    for (const Kv& kv : pairs) {
      if (kv.error != errors) continue;
      out.push_back(',');
      AppendGoJsonString(kv.key, GoJsonStyle::kZap, &out);
      out.push_back(':');
      if (kv.quoted) {
        AppendGoJsonString(kv.value, GoJsonStyle::kZap, &out);
      } else {
        out += kv.value;
      }
    }
  }
  out += "}";
  return out;
}

void Write(Severity severity, absl::string_view file, int line, int verbosity,
           absl::string_view message, const std::vector<Kv>& pairs, absl::Time time) {
  Output& output = TheOutput();
  std::string text = output.json()
                         ? JsonLine(severity, file, line, verbosity, message, pairs, time)
                         : TextLine(severity, file, line, message, pairs, time, getpid(),
                                    output.text_style());
  if (text.empty() || text.back() != '\n') text.push_back('\n');
  // Split streams: klog's text router sends 'I' lines to stdout; component-base's JSON logger
  // sends everything below Error there.
  output.Emit(severity == Severity::kInfo || (output.json() && severity == Severity::kWarning),
              text);
}

}  // namespace ndr::logging
