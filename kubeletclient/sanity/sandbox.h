// The judge's sandbox, for a run that makes host changes (root on the host, as kubelet runs):
// whatever the judge mounts, and whatever it leaves because it was killed, stays in and goes with
// its own root directory.
//
//  - Its root directory becomes a mount point of its own, shared with the host's mount namespace
//    (a bind mount of itself, with shared propagation, as kubelet makes its root directory shared
//    at start: kubelet.go setupDataDirs), so that the driver and the judge see each other's mounts
//    there, as a driver and kubelet do.
//  - The judge then moves into a mount namespace of its own in which every other mount is a slave
//    of the host's: a mount it made anywhere else would never reach the host, and goes with the
//    namespace when the judge ends, however it ends.
//  - A cleaner process, forked before that in the host's namespace, waits for the judge to end
//    (the end of a pipe: also after SIGKILL), then unmounts what is still mounted where kubelet's
//    layout mounts volumes under the root directory (pods/, plugins/) that was not before the run
//    (the driver's mounts of made-up pods a killed judge could not unpublish, the judge's own),
//    and the root's bind mount, and detaches the loop devices the judge attached and those over
//    files there. A judge that finished has left none of them; the cleaner
//    says what it had to clean. It ignores SIGINT and SIGTERM, which are the judge's to handle.
//    It unmounts through file descriptors (UnmountLeft): a directory renamed and replaced by a
//    symbolic link after mountinfo was read cannot lead it to a mount outside the root directory.
//    It keeps the root directory's lock (root_dir.h LockRootDir), inherited with the fork, until
//    it has cleaned up, so that no other judge starts there before.
//
// A run that makes no host changes needs none of it: it mounts nothing and makes no loop device.
#ifndef NDR_KUBELETCLIENT_SANITY_SANDBOX_H_
#define NDR_KUBELETCLIENT_SANITY_SANDBOX_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ndr::kubelet::sanity {

class Sandbox {
 public:
  // Call before any thread starts (unshare(CLONE_NEWNS) moves only the calling thread). Errors
  // name the step that failed; nothing is left mounted then.
  static absl::StatusOr<std::unique_ptr<Sandbox>> Enter(const std::string& root_dir);
  // Lets the cleaner run and waits for it.
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  pid_t cleaner() const { return cleaner_; }

 private:
  Sandbox() = default;
  pid_t cleaner_ = -1;
  int pipe_ = -1;  // write end: the cleaner runs once it is closed
};

// The cleaner's unmounting (exposed for its tests): the mounts of this process's namespace at
// `root` itself or in kubelet's layout under it (pods/, plugins/) and not among `mounts_before`,
// children before their parents. Each mount point is opened beneath `root_fd` (the root
// directory, opened once) with openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, its mount ID
// (statx) compared with the one /proc/self/mountinfo lists there, and unmounted through
// /proc/self/fd/N (detached if busy). A mount point that cannot be opened so, or opens on another
// mount, is left mounted. `between`, if given, runs after mountinfo is read and before the first
// mount point is opened (a test changes the tree there). Returns a line per mount: what was done,
// or why not and what to do.
std::vector<std::string> UnmountLeft(int root_fd, const std::string& root,
                                     const std::set<std::string>& mounts_before,
                                     const std::function<void()>& between = nullptr);

}  // namespace ndr::kubelet::sanity

#endif  // NDR_KUBELETCLIENT_SANITY_SANDBOX_H_
