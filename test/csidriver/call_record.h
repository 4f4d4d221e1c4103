// The sample driver's --record: every request it receives, appended to a file as one JSON line
// {"method": "NodePublishVolume", "request": {...}} — the shape of an entry of "calls" in
// `kubeletclient publish`'s report, secrets redacted the same way (api/csi_json.h). On a real
// node (test/e2e/real-node.sh) this is what the real kubelet sent, to be compared with what
// kubeletclient predicts it sends.
#ifndef NDR_TEST_CSIDRIVER_CALL_RECORD_H_
#define NDR_TEST_CSIDRIVER_CALL_RECORD_H_

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace ndr::sample {

class CallRecord {
 public:
  // Opens `path` for appending (created with mode 0600 if missing; what is there is kept, so a
  // restarted driver adds to its predecessor's record). `path` must be absolute and not a
  // symbolic link.
  static absl::StatusOr<std::unique_ptr<CallRecord>> Open(const std::string& path);
  ~CallRecord();
  CallRecord(const CallRecord&) = delete;
  CallRecord& operator=(const CallRecord&) = delete;

  // Appends one line, in one write(2), so that concurrent calls never interleave. A failed write
  // is logged once and the call goes on: a full disk must not fail the driver.
  void Add(const std::string& method, const google::protobuf::Message& request);

 private:
  CallRecord(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  const int fd_;
  const std::string path_;
  std::mutex mu_;
  bool write_failed_ = false;
};

}  // namespace ndr::sample

#endif  // NDR_TEST_CSIDRIVER_CALL_RECORD_H_
