// The termination message: the few lines Kubernetes shows as a container's last state
// (`kubectl describe pod`, `.status.containerStatuses[].lastState.terminated.message`).
//
// kubelet mounts a file at the container's terminationMessagePath (by default
// /dev/termination-log), writable even under a read-only root filesystem, and reads up to 4096
// bytes of it when the container ends. A program says why it ended by writing that file.
//
// Only a file that is already there is written: outside a container the path is the host's /dev,
// where nothing may be created. Nothing here fails or delays an exit: a missing, read-only or
// odd file (a symlink, a FIFO, a directory) is left alone and the exit goes on.
#ifndef NDR_PROGRAM_TERMINATION_MESSAGE_H_
#define NDR_PROGRAM_TERMINATION_MESSAGE_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace ndr::program {

// Kubernetes' default terminationMessagePath.
inline constexpr char kDefaultTerminationMessagePath[] = "/dev/termination-log";

// What kubelet keeps of the file: its last 4096 bytes (pkg/kubelet/container/runtime.go,
// MaxContainerTerminationMessageLength, read by kuberuntime_container.go getTerminationMessage with
// tail.ReadAtMost; v1.26.15 and v1.37.2). A longer message would lose its beginning there, so it is
// cut here, keeping the beginning.
inline constexpr size_t kTerminationMessageLimit = 4096;

// Sets the file the message goes to: "" writes none. Longer paths than PATH_MAX are refused
// (none is then written). Call before any thread starts; the default is
// kDefaultTerminationMessagePath.
void SetTerminationMessagePath(absl::string_view path);

// Writes `message` (its first kTerminationMessageLimit bytes) as the termination message, unless
// one was written already by this process: the first reason is the one that explains the end (a
// failed CHECK's message, not the SIGABRT that follows it). Returns whether it was written.
// Async-signal-safe: a crash report calls it from its signal handler.
bool WriteTerminationMessage(const char* message, size_t size);
inline bool WriteTerminationMessage(absl::string_view message) {
  return WriteTerminationMessage(message.data(), message.size());
}

}  // namespace ndr::program

#endif  // NDR_PROGRAM_TERMINATION_MESSAGE_H_
