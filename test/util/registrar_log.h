// Facts our registrar states in its log, for tests that start it as a process.
#ifndef NDR_TEST_UTIL_REGISTRAR_LOG_H_
#define NDR_TEST_UTIL_REGISTRAR_LOG_H_

#include <string>

#include "absl/strings/numbers.h"

namespace ndr::testing {

// The HTTP port the registrar says it serves /healthz on (`"Serving /healthz and /metrics"
// address="HOST:PORT"` in its text log), or 0 if it has not said so yet. Tests pass
// --http-endpoint=127.0.0.1:0 and read the port back, so that no other process can take a port
// chosen in advance. The JSON format (--logging-format=json) says it on one line as
// `"msg":"Serving /healthz and /metrics",...,"address":"HOST:PORT"`.
inline int ServedHttpPort(const std::string& registrar_log) {
  std::string address;
  const std::string text_key = "\"Serving /healthz and /metrics\" address=\"";
  const size_t text_at = registrar_log.find(text_key);
  const size_t json_at = registrar_log.find("\"msg\":\"Serving /healthz and /metrics\"");
  if (text_at != std::string::npos) {
    const size_t start = text_at + text_key.size();
    const size_t end = registrar_log.find('"', start);
    if (end == std::string::npos) return 0;
    address = registrar_log.substr(start, end - start);
  } else if (json_at != std::string::npos) {
    const std::string line =
        registrar_log.substr(json_at, registrar_log.find('\n', json_at) - json_at);
    const std::string json_key = "\"address\":\"";
    const size_t key_at = line.find(json_key);
    if (key_at == std::string::npos) return 0;
    const size_t start = key_at + json_key.size();
    const size_t end = line.find('"', start);
    if (end == std::string::npos) return 0;
    address = line.substr(start, end - start);
  } else {
    return 0;
  }
  int port = 0;
  return absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port) ? port : 0;
}

}  // namespace ndr::testing

#endif  // NDR_TEST_UTIL_REGISTRAR_LOG_H_
