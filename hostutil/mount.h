// Bind mounts, as kubelet makes them for raw block volumes (mount-utils: `mount --bind` and
// `umount`), with mount(2) and umount2(2), and whether this process may make them at all.
//
// Errors name the paths and the system call. Thread-safe.
#ifndef NDR_HOSTUTIL_MOUNT_H_
#define NDR_HOSTUTIL_MOUNT_H_

#include <string>

#include "absl/status/status.h"
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

}  // namespace ndr::hostutil

#endif  // NDR_HOSTUTIL_MOUNT_H_
