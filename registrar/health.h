// /healthz with the Go registrar's semantics: 404 when the registration socket is missing, 500
// when GetInfo over it fails or names another driver, 200 "ok" otherwise.
#ifndef NDR_REGISTRAR_HEALTH_H_
#define NDR_REGISTRAR_HEALTH_H_

#include <string>

#include "absl/time/time.h"
#include "registrar/http_server.h"

namespace ndr::registrar {

// Checks the socket at `socket_path` (empty: none yet) by calling GetInfo on it with `timeout`.
HttpResponse CheckHealth(const std::string& socket_path, const std::string& expected_name,
                         absl::Duration timeout);

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_HEALTH_H_
