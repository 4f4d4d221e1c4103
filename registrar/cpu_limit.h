// The CPU limit of the cgroup this process runs in: what a container runtime writes there from a
// pod's resources.limits.cpu. --automaxprocs sizes the registrar's thread pools by it, as the Go
// registrar's --automaxprocs (v2.14+, go.uber.org/automaxprocs' maxprocs.Set) sizes GOMAXPROCS.
//
// Where it is read, as automaxprocs reads it: the process's cgroup comes from /proc/self/cgroup,
// the hierarchy's mount point and root from /proc/self/mountinfo; then
//  - cgroup v1 (a "cgroup" mount whose options name the cpu controller): cpu.cfs_quota_us and
//    cpu.cfs_period_us, quota -1 meaning no limit;
//  - cgroup v2 (the "cgroup2" mount, used when no v1 cpu hierarchy is mounted): cpu.max,
//    "<quota> <period>" or "max <period>".
// Unlike automaxprocs, the cgroup's ancestors up to the mount's root are read too and the lowest
// limit wins: a limit set on a pod's cgroup binds its containers as much as their own.
//
// Pure reading; no state. Thread-safe.
#ifndef NDR_REGISTRAR_CPU_LIMIT_H_
#define NDR_REGISTRAR_CPU_LIMIT_H_

#include <string>

namespace ndr::registrar {

struct CpuLimit {
  enum class State {
    kLimited,     // cores holds the limit; file the file that set it
    kUnlimited,   // no limit anywhere from the process's cgroup up; file the cgroup's own file
    kUnreadable,  // error says what could not be read, and why
  };
  State state = State::kUnreadable;
  double cores = 0;   // quota / period
  std::string file;   // as read, with the root prefix
  std::string error;  // kUnreadable only
};

// Reads the limit of this process's cgroup. `root` is prepended to every path read (/proc/self/...
// and the cgroup files); "" reads the real ones, a directory reads a fake tree laid out the same.
CpuLimit ReadCpuLimit(const std::string& root = "");

// The thread budget for `cores`: rounded down, at least 1 (automaxprocs' default rounding).
int ThreadsForCores(double cores);

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_CPU_LIMIT_H_
