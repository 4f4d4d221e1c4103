// The gRPC calls in flight, so that shutdown can cancel them instead of waiting for their
// deadlines (NodeGetInfo may wait two minutes). Thread-safe.
#ifndef NDR_KUBELETCLIENT_UTIL_CALL_SET_H_
#define NDR_KUBELETCLIENT_UTIL_CALL_SET_H_

#include <mutex>
#include <set>

#include "grpcpp/grpcpp.h"

namespace ndr::kubelet {

class CallSet {
 public:
  // Registers `context` for the lifetime of the Scope; a context added after CancelAll() is
  // cancelled at once.
  class Scope {
   public:
    Scope(CallSet* calls, grpc::ClientContext* context) : calls_(calls), context_(context) {
      if (calls_ != nullptr) calls_->Add(context_);
    }
    ~Scope() {
      if (calls_ != nullptr) calls_->Remove(context_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CallSet* const calls_;
    grpc::ClientContext* const context_;
  };

  void CancelAll() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    for (grpc::ClientContext* context : contexts_) context->TryCancel();
  }

 private:
  void Add(grpc::ClientContext* context) {
    std::lock_guard<std::mutex> lock(mu_);
    contexts_.insert(context);
    if (cancelled_) context->TryCancel();
  }
  void Remove(grpc::ClientContext* context) {
    std::lock_guard<std::mutex> lock(mu_);
    contexts_.erase(context);
  }

  std::mutex mu_;
  std::set<grpc::ClientContext*> contexts_;  // guarded by mu_
  bool cancelled_ = false;                   // guarded by mu_
};

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_UTIL_CALL_SET_H_
