// The conformance harness's own CSI driver: Identity and NodeGetInfo, in this process, on a unix
// socket the harness controls, so that it can be slow to start, answer a name that no real
// driver would, and restart under another name.
#ifndef NDR_TEST_CONFORMANCE_SUITE_FAKE_DRIVER_H_
#define NDR_TEST_CONFORMANCE_SUITE_FAKE_DRIVER_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "api/csi/csi.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace ndr::conformance {

class FakeDriver {
 public:
  // Node ID answered by NodeGetInfo.
  static constexpr char kNodeId[] = "conformance-node";

  explicit FakeDriver(std::string socket_path);
  ~FakeDriver();  // Stop()
  FakeDriver(const FakeDriver&) = delete;
  FakeDriver& operator=(const FakeDriver&) = delete;

  // Serves on the socket (replacing whatever file is there) as driver `name`. GetPluginInfo
  // answers only once `ready_after` has passed since this call: until then each call waits,
  // up to its own deadline, as a driver still starting would keep its caller waiting.
  absl::Status Start(const std::string& name, absl::Duration ready_after = absl::ZeroDuration());
  // Stops serving and removes the socket, as a driver's container exiting does.
  void Stop();

  const std::string& socket_path() const { return socket_path_; }

 private:
  class Identity;
  class Node;

  const std::string socket_path_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::string name_;
  absl::Time ready_at_;
  bool stopping_ = false;
  std::unique_ptr<Identity> identity_;
  std::unique_ptr<Node> node_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace ndr::conformance

#endif  // NDR_TEST_CONFORMANCE_SUITE_FAKE_DRIVER_H_
