// Facts our registrar states in its log, for tests that start it as a process.
#ifndef NDR_TEST_UTIL_REGISTRAR_LOG_H_
#define NDR_TEST_UTIL_REGISTRAR_LOG_H_

#include <string>

#include "absl/strings/numbers.h"

namespace ndr::testing {

// The HTTP port the registrar says it serves /healthz on (`"Serving /healthz and /metrics"
// address="HOST:PORT"` in its text log), or 0 if it has not said so yet. Tests pass
// --http-endpoint=127.0.0.1:0 and read the port back, so that no other process can take a port
// chosen in advance.
inline int ServedHttpPort(const std::string& registrar_log) {
  const std::string key = "\"Serving /healthz and /metrics\" address=\"";
  const size_t at = registrar_log.find(key);
  if (at == std::string::npos) return 0;
  const size_t end = registrar_log.find('"', at + key.size());
  if (end == std::string::npos) return 0;
  const std::string address = registrar_log.substr(at + key.size(), end - at - key.size());
  int port = 0;
  return absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port) ? port : 0;
}

}  // namespace ndr::testing

#endif  // NDR_TEST_UTIL_REGISTRAR_LOG_H_
