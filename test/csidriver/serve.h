// Serving the sample driver on a unix socket until SIGTERM or SIGINT.
#ifndef NDR_TEST_CSIDRIVER_SERVE_H_
#define NDR_TEST_CSIDRIVER_SERVE_H_

#include <string>

#include "absl/status/status.h"
#include "test/csidriver/sample_driver.h"

namespace ndr::sample {

// Serves Identity and Node on `socket_path` (a stale socket there is replaced; any other file is
// an error) and returns after SIGTERM or SIGINT, having removed the socket. The caller must have
// blocked SIGTERM and SIGINT in every thread (BlockTerminationSignals) before starting any.
absl::Status Serve(const DriverOptions& options, const std::string& socket_path);

// Blocks SIGTERM and SIGINT in the calling thread and in every thread it starts afterwards, so
// that Serve can wait for them synchronously.
void BlockTerminationSignals();

}  // namespace ndr::sample

#endif  // NDR_TEST_CSIDRIVER_SERVE_H_
