#include "registrar/driver_prober.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/endpoint.h"
#include "logging/logging.h"

namespace ndr::registrar {

using ::ndr::logging::Err;
using ::ndr::logging::Kv;
namespace {

constexpr absl::Duration kFirstBackoff = absl::Milliseconds(50);
constexpr absl::Duration kMaxBackoff = absl::Seconds(1);
constexpr absl::Duration kProgressInterval = absl::Seconds(10);

bool Retryable(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED;
}

}  // namespace

DriverProber::DriverProber(std::string socket_path, absl::Duration timeout,
                           std::function<void()> ready)
    : socket_path_(std::move(socket_path)),
      timeout_(timeout),
      ready_(std::move(ready)),
      thread_([this] { Loop(); }) {}

DriverProber::~DriverProber() {
  Stop();
  thread_.join();
}

void DriverProber::Query() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) {
    nudged_ = true;
  } else {
    pending_ = true;
  }
  changed_.notify_all();
}

void DriverProber::Nudge() {
  std::lock_guard<std::mutex> lock(mu_);
  nudged_ = true;
  changed_.notify_all();
}

void DriverProber::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  if (in_flight_ != nullptr) in_flight_->TryCancel();
  changed_.notify_all();
}

std::optional<absl::StatusOr<std::string>> DriverProber::TakeResult() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<absl::StatusOr<std::string>> result = std::move(result_);
  result_.reset();
  return result;
}

void DriverProber::Loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] { return stop_ || pending_; });
      if (stop_) return;
      pending_ = false;
      running_ = true;
      nudged_ = false;
    }
    std::shared_ptr<grpc::Channel> last_channel;
    absl::StatusOr<std::string> result = RunQuery(&last_channel);
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_ = false;
      result_ = std::move(result);
    }
    ready_();
    // Only now, with the answer on its way to the main thread, is the channel torn down: a
    // third of the time from exec to the registration socket otherwise (docs/figures.md, "Where
    // start-up time goes").
    last_channel.reset();
  }
}

grpc::Status DriverProber::Attempt(std::string* name, std::shared_ptr<grpc::Channel>* channel_out) {
  // A fresh channel per attempt, with its own subchannel: a driver that just came up is dialled
  // at once instead of after gRPC's reconnect backoff.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel(GrpcUnixTarget(socket_path_),
                                           grpc::InsecureChannelCredentials(), args);
  *channel_out = channel;
  auto stub = csi::v1::Identity::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return grpc::Status(grpc::StatusCode::CANCELLED, "registrar is stopping");
    in_flight_ = &context;
  }
  csi::v1::GetPluginInfoResponse response;
  NDR_VLOG(4) << "GetPluginInfo on " << socket_path_;
  grpc::Status status = stub->GetPluginInfo(&context, csi::v1::GetPluginInfoRequest(), &response);
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ = nullptr;
  }
  NDR_VLOG(4) << "GetPluginInfo on " << socket_path_ << ": code " << status.error_code() << " "
          << (status.ok() ? response.ShortDebugString() : status.error_message());
  if (status.ok()) *name = response.name();
  return status;
}

absl::StatusOr<std::string> DriverProber::RunQuery(std::shared_ptr<grpc::Channel>* channel) {
  const absl::Time start = absl::Now();
  absl::Time next_progress = start + kProgressInterval;
  absl::Duration backoff = kFirstBackoff;
  while (true) {
    std::string name;
    grpc::Status status = Attempt(&name, channel);
    if (status.ok()) return name;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return absl::CancelledError("registrar is stopping");
    }
    if (!Retryable(status.error_code())) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          absl::StrCat("GetPluginInfo on CSI driver socket ", socket_path_,
                                       " failed: ", status.error_message()));
    }
    const absl::Time now = absl::Now();
    if (now >= next_progress) {
      NDR_LOG(INFO) << "Still waiting for the CSI driver" << Kv("csiAddress", socket_path_)
                    << Kv("waited", absl::Trunc(now - start, absl::Seconds(1)))
                    << Err(status.error_message());
      next_progress = now + kProgressInterval;
    }
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, absl::ToChronoNanoseconds(backoff),
                      [this] { return stop_ || nudged_; });
    nudged_ = false;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace ndr::registrar
