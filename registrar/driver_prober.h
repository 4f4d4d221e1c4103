// Learns the CSI driver's name with Identity.GetPluginInfo, on a thread of its own.
//
// The prober waits for the driver for as long as it takes: each attempt has --timeout, and
// UNAVAILABLE and DEADLINE_EXCEEDED (no socket yet, nobody listening, a driver still starting)
// are retried with backoff from 50 ms to 1 s, logging progress every 10 s. Nothing bounds the
// whole wait: --connection-timeout has no effect, as in the Go registrar. Any other error is final
// and carries the driver's own message. Nudge() retries at once (the registrar calls it when the driver's socket appears);
// Stop() ends a wait in progress.
//
// Thread-safe. Results are handed to the owner through TakeResult(), after `ready` was called
// on the prober's thread.
#ifndef NDR_REGISTRAR_DRIVER_PROBER_H_
#define NDR_REGISTRAR_DRIVER_PROBER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"

namespace ndr::registrar {

class DriverProber {
 public:
  DriverProber(std::string socket_path, absl::Duration timeout, std::function<void()> ready);
  ~DriverProber();  // Stops and joins the thread.

  // Starts a query unless one is running, in which case the running one retries at once.
  void Query();
  // A query in progress retries now instead of at the end of its backoff.
  void Nudge();
  // The result of the last finished query, once.
  std::optional<absl::StatusOr<std::string>> TakeResult();
  // Ends any wait; later queries return Cancelled.
  void Stop();

 private:
  void Loop();
  // Attempts until one succeeds or fails for good; the last attempt's channel is left in `channel`.
  absl::StatusOr<std::string> RunQuery(std::shared_ptr<grpc::Channel>* channel);
  // One GetPluginInfo on a fresh channel, which is handed back in `channel` rather than destroyed:
  // tearing a gRPC channel down takes milliseconds, which the caller spends after reporting.
  grpc::Status Attempt(std::string* name, std::shared_ptr<grpc::Channel>* channel);

  const std::string socket_path_;
  const absl::Duration timeout_;
  const std::function<void()> ready_;

  // std::mutex rather than absl::Mutex: Debian's abseil is not built with ThreadSanitizer, which
  // therefore cannot see absl::Mutex's ordering; it does see pthread's.
  std::mutex mu_;
  std::condition_variable changed_;  // stop_, nudged_ or pending_ changed
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool nudged_ ABSL_GUARDED_BY(mu_) = false;
  bool pending_ ABSL_GUARDED_BY(mu_) = false;  // a query was requested
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* in_flight_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::optional<absl::StatusOr<std::string>> result_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_DRIVER_PROBER_H_
