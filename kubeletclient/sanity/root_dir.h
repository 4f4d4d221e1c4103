// What a judge's root directory holds before the judge starts.
//
// A judge takes everything under its root directory for its own work: a staging directory or a
// volume file there is what its own checks made. So it must start from a root directory that
// holds nothing of an earlier run, or the checks that meet such a leftover cannot be carried out
// (and a run that skipped them could end "0 failed"). A run that tore everything down leaves only
// empty directories (kubelet's layout: pods/, plugins/kubernetes.io/csi/...); anything else was
// left by a run whose teardown failed, or was put there by someone else.
//
// FindLeftovers walks the tree without following symbolic links and without going into mount
// points; the names it reports come from the directory, which anyone may have written, and are
// escaped for printing. Thread-compatible.
//
// A judge works in its root directory as root: a directory there, or above it, that another user
// may change could be swapped for a symbolic link while it works, and lead its mounts, unmounts
// and writes anywhere on the host. So the judge opens its root directory through
// OpenJudgesRootDir, which refuses such a directory, and holds the lock of LockRootDir on it for
// its whole run, so that two judges never work in one root directory at once.
#ifndef NDR_KUBELETCLIENT_SANITY_ROOT_DIR_H_
#define NDR_KUBELETCLIENT_SANITY_ROOT_DIR_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kubeletclient/util/beneath.h"

namespace ndr::kubelet::sanity {

struct Leftovers {
  // The first `limit` found, each "<kind> <path>": "file ...", "mount point ...", "socket ...".
  std::vector<std::string> named;
  size_t total = 0;  // how many there are in all
};

// The mount points below `dir` (not `dir` itself), from `mountinfo` (/proc/self/mountinfo's
// format).
std::vector<std::string> MountsUnder(const std::string& dir,
                                     const std::string& mountinfo = "/proc/self/mountinfo");

// Every entry below `root` that is not a directory, and every mount point below it (from
// `mountinfo`, /proc/self/mountinfo's format), the root itself excepted. A root that does not
// exist holds nothing. An error only when the tree cannot be read (say, a directory without
// permission), naming the path.
absl::StatusOr<Leftovers> FindLeftovers(const std::string& root,
                                        const std::string& mountinfo = "/proc/self/mountinfo",
                                        size_t limit = 10);

// The judge's refusal of a root directory that holds leftovers: what is there, and what to do.
std::string LeftoversRefusal(const std::string& root, const Leftovers& leftovers);

// Whether `dir`, whose lstat(2) is `st`, may be a judge's root directory (`ancestor` false) or a
// directory above it (`ancestor` true) for a judge whose effective user is `euid`: the root
// directory must be owned by `euid`; a directory above it by root or `euid`; neither may be
// written by group or others, but for a directory above that root owns and whose sticky bit is set
// (as /tmp: others cannot rename or remove what they do not own there). A symbolic link is neither.
// The error names the directory, what is wrong with it and the fix.
absl::Status CheckRootDirOwnership(const std::string& dir, const struct stat& st, uid_t euid,
                                   bool ancestor);

// Opens the judge's root directory `path` (relative: to the working directory) from / down, one
// component at a time, without following symbolic links (openat O_NOFOLLOW, fstat on each
// descriptor), each checked by CheckRootDirOwnership; components that do not exist are made
// (mode 0750). Returns the root directory, opened O_RDONLY | O_DIRECTORY. Errors name the
// directory and the fix.
absl::StatusOr<UniqueFd> OpenJudgesRootDir(const std::string& path, uid_t euid);

// Takes an exclusive flock(2) on the root directory `root_fd` (OpenJudgesRootDir's), without
// waiting. The lock belongs to the open file description: it is held while any process keeps a
// descriptor of it (the sandbox's cleaner, forked with it, keeps it until it has cleaned up).
// FailedPrecondition if another holds it, naming `root`, the holder (LockHolder) and what to do.
absl::Status LockRootDir(int root_fd, const std::string& root);

// Who holds a flock(2) on the file `fd` refers to: "pid P (command line), started at T", from
// /proc/locks and /proc/P; or, when that process no longer holds it, the first process that has
// the file open (a judge's cleaner, say); "" if none is found.
std::string LockHolder(int fd);

}  // namespace ndr::kubelet::sanity

#endif  // NDR_KUBELETCLIENT_SANITY_ROOT_DIR_H_
