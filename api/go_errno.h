// How Go prints a system error (syscall.Errno.Error()): the C library's text with its first letter
// in lower case, e.g. "no such file or directory", "device or resource busy". Kubelet's errors
// carry it after "OP PATH: " (os.PathError) or "connect: " (net.OpError). Thread-safe.
#ifndef NDR_API_GO_ERRNO_H_
#define NDR_API_GO_ERRNO_H_

#include <string>

namespace ndr {

std::string GoErrnoText(int err);

}  // namespace ndr

#endif  // NDR_API_GO_ERRNO_H_
