#include "test/conformance_suite/fake_driver.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "api/endpoint.h"

namespace ndr::conformance {

class FakeDriver::Identity final : public csi::v1::Identity::Service {
 public:
  explicit Identity(FakeDriver* driver) : driver_(driver) {}

  grpc::Status GetPluginInfo(grpc::ServerContext* context, const csi::v1::GetPluginInfoRequest*,
                             csi::v1::GetPluginInfoResponse* response) override {
    std::unique_lock<std::mutex> lock(driver_->mu_);
    // Until ready, hold the call to the caller's own deadline (or until Stop()).
    const absl::Time deadline = absl::FromChrono(context->deadline());
    while (absl::Now() < driver_->ready_at_ && !driver_->stopping_) {
      const absl::Time until = std::min(driver_->ready_at_, deadline);
      if (absl::Now() >= until) break;
      driver_->changed_.wait_until(lock, absl::ToChronoTime(until));  // ready_at_ is finite
    }
    if (absl::Now() < driver_->ready_at_) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the driver is still starting");
    }
    response->set_name(driver_->name_);
    response->set_vendor_version("conformance");
    return grpc::Status::OK;
  }

  grpc::Status GetPluginCapabilities(grpc::ServerContext*,
                                     const csi::v1::GetPluginCapabilitiesRequest*,
                                     csi::v1::GetPluginCapabilitiesResponse*) override {
    return grpc::Status::OK;
  }

  grpc::Status Probe(grpc::ServerContext*, const csi::v1::ProbeRequest*,
                     csi::v1::ProbeResponse* response) override {
    std::lock_guard<std::mutex> lock(driver_->mu_);
    response->mutable_ready()->set_value(absl::Now() >= driver_->ready_at_);
    return grpc::Status::OK;
  }

 private:
  FakeDriver* const driver_;
};

class FakeDriver::Node final : public csi::v1::Node::Service {
 public:
  grpc::Status NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                           csi::v1::NodeGetInfoResponse* response) override {
    response->set_node_id(kNodeId);
    return grpc::Status::OK;
  }

  grpc::Status NodeGetCapabilities(grpc::ServerContext*, const csi::v1::NodeGetCapabilitiesRequest*,
                                   csi::v1::NodeGetCapabilitiesResponse*) override {
    return grpc::Status::OK;
  }
};

FakeDriver::FakeDriver(std::string socket_path) : socket_path_(std::move(socket_path)) {}

FakeDriver::~FakeDriver() { Stop(); }

absl::Status FakeDriver::Start(const std::string& name, absl::Duration ready_after) {
  Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    name_ = name;
    ready_at_ = absl::Now() + ready_after;
    stopping_ = false;
  }
  if (absl::Status s = CheckSocketPathLength(socket_path_, "the driver's socket"); !s.ok()) {
    return s;
  }
  if (unlink(socket_path_.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat("unlink ", socket_path_, ": ", strerror(errno)));
  }
  identity_ = std::make_unique<Identity>(this);
  node_ = std::make_unique<Node>();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(GrpcUnixTarget(socket_path_), grpc::InsecureServerCredentials());
  builder.RegisterService(identity_.get());
  builder.RegisterService(node_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::InternalError(absl::StrCat("cannot serve the CSI driver on ", socket_path_));
  }
  return absl::OkStatus();
}

void FakeDriver::Stop() {
  if (server_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  server_.reset();
  unlink(socket_path_.c_str());
}

}  // namespace ndr::conformance
