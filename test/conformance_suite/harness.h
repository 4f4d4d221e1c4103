// The conformance suite's harness mode: it owns everything around a registrar binary. It runs its
// own CSI driver (FakeDriver) on a socket it controls, starts the registrar with the standard
// flags of every manifest (--csi-address, --kubelet-registration-path,
// --plugin-registration-path, --http-endpoint) plus any extra ones, plays kubelet itself, and
// judges what the registrar does when things go wrong: a slow driver, a hostile or invalid driver
// name, kubelet refusing the plugin, its socket deleted, the driver restarting (under the same
// name or another), SIGTERM and SIGINT. Every check starts a registrar of its own in a directory
// of its own under /tmp, has a time limit, and removes everything it made.
#ifndef NDR_TEST_CONFORMANCE_SUITE_HARNESS_H_
#define NDR_TEST_CONFORMANCE_SUITE_HARNESS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "test/conformance_suite/conformance.h"

namespace ndr::conformance {

struct HarnessConfig {
  std::string registrar_binary;  // required
  // Given to every registrar started, after the standard flags. If the registrar refuses them,
  // flags.extra is a SKIP and the checks run without them.
  std::vector<std::string> extra_flags;
  // How long to wait for each thing a check expects (beyond a slow driver's own delay), and the
  // deadline of each call. Only a registrar that does not do the thing waits it out.
  absl::Duration timeout = absl::Seconds(5);
  // The delays of the slow-driver checks (driver.slow_<N>s).
  std::vector<absl::Duration> slow_driver_delays = {absl::Seconds(5), absl::Seconds(40)};
};

// Runs every check; `on_result`, if set, sees each result as soon as it is known.
std::vector<CheckResult> RunHarness(const HarnessConfig& config,
                                    const std::function<void(const CheckResult&)>& on_result = {});

}  // namespace ndr::conformance

#endif  // NDR_TEST_CONFORMANCE_SUITE_HARNESS_H_
