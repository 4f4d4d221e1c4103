// Loop devices over files: what kubelet's volumepathhandler does with `losetup` (attach a file,
// find the device of a file through /sys/block/loop*/loop/backing_file, detach), done with the
// kernel's loop ioctls instead of a program. Kubelet attaches a loop device to each pod's bind
// mount of a raw block volume so that the device cannot vanish under the pod (a "file
// descriptor lock"); CSI drivers that serve block volumes from files attach one to back the
// device they publish.
//
// Needs CAP_SYS_ADMIN in the host's user namespace (see mount.h CanChangeHost). Errors name the
// path and the system call. Thread-safe; attaching races with other processes are retried.
#ifndef NDR_HOSTUTIL_LOOP_DEVICE_H_
#define NDR_HOSTUTIL_LOOP_DEVICE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace ndr::hostutil {

// Attaches a free loop device to `path` (a regular file or a block device; opened read-write,
// or read-only where it cannot be written) and returns its path, e.g. "/dev/loop3".
absl::StatusOr<std::string> AttachLoopDevice(const std::string& path);

// The loop device whose backing file is `path` or what `path` resolves to, as kubelet's
// getLoopDeviceFromSysfs finds it; nullopt when there is none (or `path` does not exist).
absl::StatusOr<std::optional<std::string>> FindLoopDevice(const std::string& path);

// Detaches the loop device `device` (e.g. "/dev/loop3"); one that no longer exists is fine.
absl::Status DetachLoopDevice(const std::string& device);

// Told of every loop device this process attaches (true) or detaches (false), once the kernel has
// done it; for a process that must leave none behind even if it is killed (kubeletclient's
// judge hands them to a cleaner that outlives it). One per process, set before any loop device is
// made; it must be async-signal-safe in spirit: quick, and never calling back in here.
using LoopDeviceObserver = void (*)(const std::string& device, bool attached);
void SetLoopDeviceObserver(LoopDeviceObserver observer);

// Makes the loop device `device` take its backing file's current size (LOOP_SET_CAPACITY, what
// `losetup -c` does), after the file has grown.
absl::Status RefreshLoopDeviceCapacity(const std::string& device);

}  // namespace ndr::hostutil

#endif  // NDR_HOSTUTIL_LOOP_DEVICE_H_
