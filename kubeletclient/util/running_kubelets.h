// The kubelets running on this machine and the root directories they use, so that a command that
// must not work inside a live kubelet's directory (the judge, `kubeletclient sanity`) can refuse
// one.
//
// A kubelet is a process whose /proc/PID/comm is "kubelet". Its root directory is its --root-dir
// flag (cmd/kubelet/app/options/options.go, KubeletFlags.RootDirectory, v1.26.15 to v1.37.2: a
// command-line flag only, not a KubeletConfiguration field), "/var/lib/kubelet" when not given.
// /proc is read as untrusted text: nothing read from it is used but for comparison. Thread-safe.
#ifndef NDR_KUBELETCLIENT_UTIL_RUNNING_KUBELETS_H_
#define NDR_KUBELETCLIENT_UTIL_RUNNING_KUBELETS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace ndr::kubelet {

inline constexpr char kKubeletDefaultRootDir[] = "/var/lib/kubelet";

struct RunningKubelet {
  int pid = 0;
  std::string root_dir;  // as given on its command line (or the default)
};

// Every kubelet process in `proc` (a procfs mount: "/proc", or a directory laid out like one in
// tests). Processes that end while it reads are left out.
std::vector<RunningKubelet> RunningKubelets(const std::string& proc = "/proc");

// OK unless `root_dir` is, contains or lies inside the root directory of a kubelet in `proc`;
// then FailedPrecondition naming that kubelet's pid and directory and saying what to do.
// Paths are compared after resolving symbolic links where they exist.
absl::Status NotAKubeletsRootDir(const std::string& root_dir, const std::string& proc = "/proc");

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_UTIL_RUNNING_KUBELETS_H_
