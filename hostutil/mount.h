// Bind mounts, as kubelet makes them for raw block volumes (mount-utils: `mount --bind` and
// `umount`) and for its root directory's propagation, with mount(2) and umount2(2), and whether
// this process may make them at all.
//
// Errors name the paths and the system call. Thread-safe.
#ifndef NDR_HOSTUTIL_MOUNT_H_
#define NDR_HOSTUTIL_MOUNT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ndr::hostutil {

// Whether this process can mount and attach loop devices on the host: it is root in the host's
// (the initial) user namespace with CAP_SYS_ADMIN, as kubelet runs. Root inside a sandbox's user
// namespace cannot attach loop devices, and its mounts would not be the host's; root without
// CAP_SYS_ADMIN (capabilities dropped) cannot mount. `reason` is set to why not.
bool CanChangeHost(std::string* reason);

// mount --bind `source` `target` (the target must exist, of the same kind: file or directory).
absl::Status BindMount(const std::string& source, const std::string& target);

// umount `target`.
absl::Status Unmount(const std::string& target);

// A path field of /proc/self/mountinfo with the kernel's octal escapes (of space, tab, newline
// and backslash) undone.
std::string UnescapeMountinfo(absl::string_view field);

// Whether `path` is a mount point: its mountinfo entry is there (a bind mount of a file is one).
bool IsMountPoint(const std::string& path);

// Whether the mount that holds `path` (the longest mount point over it in /proc/self/mountinfo)
// propagates as shared: a "shared:N" optional field (kubelet v1.26.15 hostutil_linux.go
// isShared).
absl::StatusOr<bool> IsOnSharedMount(const std::string& path);

// kubelet's MakeRShared (hostutil_linux.go DoMakeRShared, called on its root directory at start
// by kubelet.go setupDataDirs): nothing if `path` is on a shared mount already, else
// `mount --bind path path` and `mount --make-rshared path`. `made` says whether it mounted.
absl::Status MakeRShared(const std::string& path, bool* made);

}  // namespace ndr::hostutil

#endif  // NDR_HOSTUTIL_MOUNT_H_
