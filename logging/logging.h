// Logging in Kubernetes' formats, for the registrar, kubeletclient and the sample driver.
//
// Log pipelines (Loki, Fluent Bit, Cloud Logging) parse what Kubernetes components write, so
// this writes the same: klog's text format, or component-base's JSON format, chosen with the
// component-base flags the Go registrar takes (k8s.io/component-base/logs/api/v1 AddGoFlags):
//
//   text  I1122 09:03:03.639649    4836 reg_socket.cc:74] "Removed registration socket" path="/x"
//   json  {"ts":1763802183639.649,"caller":"registrar/reg_socket.cc:74",
//          "msg":"Removed registration socket","v":0,"path":"/x"}
//
// A message is written with NDR_LOG(INFO) / NDR_VLOG(4) and streamed like an iostream;
// key/value pairs are streamed as Kv(...) values and make it a structured message:
//
//   NDR_LOG(INFO) << "Removed registration socket" << Kv("path", path);
//   NDR_LOG(ERROR) << "Kubelet refused the registration" << Err(status);
//
// --v and --vmodule choose which NDR_VLOG messages are written, as klog's do; what gRPC logs
// (gpr_log) is rewritten into the chosen format, so that every line of output is in it. The
// flags klog registered for the Go registrar v2.0-v2.10 (--logtostderr, --log_dir, --log_file,
// --skip_headers, ...) are defined here too, so that manifests written for those releases run.
// Thread-safe.
#ifndef NDR_LOGGING_LOGGING_H_
#define NDR_LOGGING_LOGGING_H_

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace ndr::logging {

enum class Severity { kInfo, kWarning, kError, kFatal };

// One --vmodule setting: files whose name matches `pattern` log up to `verbosity`.
struct ModuleVerbosity {
  std::string pattern;
  int verbosity = 0;
};

// What a text line starts with: klog's header, with the file's directory (--add_dir_header) or
// none at all (--skip_headers).
struct TextStyle {
  bool skip_headers = false;
  bool add_dir_header = false;
};

// The logging options, validated (OptionsFromFlags).
struct Options {
  std::string format = "text";  // --logging-format: "text" or "json"
  absl::Duration flush_frequency = absl::Seconds(5);  // --log-flush-frequency
  bool split_stream = false;  // --log-{text,json}-split-stream: info to stdout, errors to stderr
  int64_t info_buffer_size = 0;  // --log-{text,json}-info-buffer-size: bytes of info buffered
  int verbosity = 0;                    // --v
  std::vector<ModuleVerbosity> modules;  // --vmodule, in its order
  TextStyle text_style;                  // --skip_headers, --add_dir_header
  // What Init logs as warnings: klog flags given values whose effect this program does not
  // have (it writes no log files), each with what happens instead.
  struct Notice {
    std::string flag;    // as given: "--log_dir=/var/log"
    std::string reason;  // "every line goes to standard error; no log file is written"
  };
  std::vector<Notice> notices;
};

// Reads and checks the logging flags: --logging-format, --log-flush-frequency, the split-stream
// and buffer-size flags of the chosen format, --v (not negative), --vmodule (klog's syntax, text
// only) and klog's flags (their types, as klog parses them). An error is one line naming the
// flag and what it accepts.
absl::StatusOr<Options> OptionsFromFlags();

// --vmodule's value as klog reads it: comma-separated pattern=N; empty entries and N=0 are
// skipped, as klog skips them.
absl::StatusOr<std::vector<ModuleVerbosity>> ParseVmodule(absl::string_view text);

// The verbosity up to which `file` (a source path, as __FILE__ gives it) logs: that of the first
// module whose pattern matches, else `verbosity`. As klog matches (internal/verbosity setV): a
// pattern holding '/' against the path, any other against the file's name, both without the
// extension; '*', '?' and [...] as Go's filepath.Match.
int VerbosityFor(absl::string_view file, int verbosity,
                 const std::vector<ModuleVerbosity>& modules);

// True when an NDR_VLOG(verbosity) message in `file` is to be written, as Init's options say.
bool VerboseAt(int verbosity, const char* file);

// A size as component-base's flags take it (resource.Quantity): 512, 1K, 2Ki, 3M, 5Mi, 6Gi, ...
absl::StatusOr<int64_t> ParseQuantity(absl::string_view text);

// Sets up logging: must come after flag parsing and before anything logs. Every line from then
// on, ours and gRPC's, is in `options.format`; then it logs `options.notices`.
void Init(const Options& options);

// Writes whatever is buffered (--log-*-info-buffer-size); also done every flush frequency and
// before a fatal message.
void Flush();

// A key/value pair of a structured message. Strings are quoted (klog text: strconv.Quote, or
// a <...> block when they hold a newline; JSON: a string); numbers and booleans are not.
struct Kv {
  Kv(absl::string_view key, absl::string_view value);
  Kv(absl::string_view key, const std::string& value) : Kv(key, absl::string_view(value)) {}
  Kv(absl::string_view key, const char* value) : Kv(key, absl::string_view(value)) {}
  Kv(absl::string_view key, int64_t value);
  Kv(absl::string_view key, int value) : Kv(key, static_cast<int64_t>(value)) {}
  Kv(absl::string_view key, uint64_t value);
  Kv(absl::string_view key, bool value);
  Kv(absl::string_view key, absl::Duration value);  // as Go prints one: "1m30s"

  std::string key;
  std::string value;    // the text, or the JSON of a number or boolean
  bool quoted = true;   // a string
  bool error = false;   // the "err" of an error message
};

// The error of an error message: klog's err="...", component-base JSON's "err".
Kv Err(const absl::Status& status);
Kv Err(absl::string_view message);

// One message, written when it goes out of scope. Use the macros.
class Line {
 public:
  Line(Severity severity, const char* file, int line, int verbosity);
  ~Line();
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;

  Line& operator<<(const Kv& kv) {
    pairs_.push_back(kv);
    return *this;
  }
  template <typename T>
  Line& operator<<(const T& value) {
    message_ << value;
    return *this;
  }

 private:
  const Severity severity_;
  const char* const file_;
  const int line_;
  const int verbosity_;
  std::ostringstream message_;
  std::vector<Kv> pairs_;
};

// Writes one message; what Line and the gRPC bridge call.
void Write(Severity severity, absl::string_view file, int line, int verbosity,
           absl::string_view message, const std::vector<Kv>& pairs, absl::Time time);

// The klog text line and the component-base JSON line of a message, without the end of line:
// the formatters themselves, for tests. `pid` is what klog writes (it writes the process ID
// where glog and absl write a thread ID).
std::string TextLine(Severity severity, absl::string_view file, int line,
                     absl::string_view message, const std::vector<Kv>& pairs, absl::Time time,
                     int pid, const TextStyle& style = {});
std::string JsonLine(Severity severity, absl::string_view file, int line, int verbosity,
                     absl::string_view message, const std::vector<Kv>& pairs, absl::Time time);

}  // namespace ndr::logging

#define NDR_LOG_SEVERITY_INFO ::ndr::logging::Severity::kInfo
#define NDR_LOG_SEVERITY_WARNING ::ndr::logging::Severity::kWarning
#define NDR_LOG_SEVERITY_ERROR ::ndr::logging::Severity::kError
#define NDR_LOG_SEVERITY_FATAL ::ndr::logging::Severity::kFatal

// NDR_LOG(INFO), NDR_LOG(WARNING), NDR_LOG(ERROR), NDR_LOG(FATAL) << ...;
#define NDR_LOG(severity) \
  ::ndr::logging::Line(NDR_LOG_SEVERITY_##severity, __FILE__, __LINE__, 0)

// NDR_VLOG(4) << ...; written only at --v=4 and up (or as --vmodule says).
#define NDR_VLOG(verbosity)                                 \
  if (!::ndr::logging::VerboseAt(verbosity, __FILE__)) {    \
  } else                                                    \
    ::ndr::logging::Line(::ndr::logging::Severity::kInfo, __FILE__, __LINE__, verbosity)

#endif  // NDR_LOGGING_LOGGING_H_
