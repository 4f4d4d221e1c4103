#include "test/csidriver/call_record.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "api/csi_json.h"
#include "logging/logging.h"

namespace ndr::sample {

absl::StatusOr<std::unique_ptr<CallRecord>> CallRecord::Open(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("--record=", path, ": give an absolute path of a file to append to"));
  }
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--record=", path, ": cannot open it for appending: ", strerror(errno),
        errno == ELOOP ? " (a symbolic link: give the file itself)" : ""));
  }
  return std::unique_ptr<CallRecord>(new CallRecord(fd, path));
}

CallRecord::~CallRecord() { close(fd_); }

void CallRecord::Add(const std::string& method, const google::protobuf::Message& request) {
  // Both parts are JSON already: the method name is a plain identifier.
  const std::string line =
      absl::StrCat("{\"method\":\"", method, "\",\"request\":", RedactedCsiJson(request), "}\n");
  std::lock_guard<std::mutex> lock(mu_);
  ssize_t written = write(fd_, line.data(), line.size());
  if (written == static_cast<ssize_t>(line.size())) return;
  if (!write_failed_) {
    NDR_LOG(WARNING) << "--record: writing to " << path_ << " failed ("
                     << (written < 0 ? strerror(errno) : "short write")
                     << "); calls from now on may be missing from it";
    write_failed_ = true;
  }
}

}  // namespace ndr::sample
