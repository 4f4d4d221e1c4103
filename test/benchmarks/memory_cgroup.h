// What a cluster sees of a process's memory: its container's memory cgroup. kubelet evicts on, and
// `kubectl top` and metrics-server show, the working set, cAdvisor's figure: the cgroup's usage
// (cgroup v2 memory.current, v1 memory.usage_in_bytes) minus its inactive file pages. Usage counts
// the anonymous pages, the page cache the cgroup faulted in (a program's own binary included) and
// the kernel memory charged to it (thread stacks, page tables, sockets).
//
// MemoryCgroup makes a memory cgroup of its own for one benchmarked program (needs root and a
// memory controller, v2 or v1), and FreshCopy a copy of the program whose page cache is dropped,
// so that its file pages are charged to that cgroup as they are faulted in, as a container's are.
#ifndef NDR_TEST_BENCHMARKS_MEMORY_CGROUP_H_
#define NDR_TEST_BENCHMARKS_MEMORY_CGROUP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ndr::benchmarks {

struct CgroupMemory {
  int64_t usage = 0;  // bytes
  int64_t anon = 0, file = 0, active_file = 0, inactive_file = 0;
  // cAdvisor's working set: usage minus inactive file pages, never below 0.
  int64_t working_set() const { return usage > inactive_file ? usage - inactive_file : 0; }
};

// `stat` is the text of memory.stat; v2 names its fields anon, file, active_file and
// inactive_file; v1 (hierarchical totals) total_rss, total_cache, total_active_file and
// total_inactive_file.
CgroupMemory ParseMemoryStat(bool v2, const std::string& stat, int64_t usage);

class MemoryCgroup {
 public:
  // A new cgroup named `name` under the memory hierarchy (v2: /sys/fs/cgroup with the memory
  // controller enabled for its children; v1: /sys/fs/cgroup/memory), or why there is none.
  static absl::StatusOr<std::unique_ptr<MemoryCgroup>> Create(const std::string& name);
  // Removes the cgroup (once its processes are gone).
  ~MemoryCgroup();

  bool v2() const { return v2_; }
  // argv that runs `argv` in this cgroup (a shell that moves itself in, then execs it).
  std::vector<std::string> Wrap(const std::vector<std::string>& argv) const;
  absl::StatusOr<CgroupMemory> Read() const;

 private:
  MemoryCgroup(std::string dir, bool v2) : dir_(std::move(dir)), v2_(v2) {}
  const std::string dir_;
  const bool v2_;
};

// A copy of `binary` in `dir` with its page cache dropped (written, synced, then
// POSIX_FADV_DONTNEED): whoever runs it first faults its pages in from disk.
absl::StatusOr<std::string> FreshCopy(const std::string& binary, const std::string& dir);

}  // namespace ndr::benchmarks

#endif  // NDR_TEST_BENCHMARKS_MEMORY_CGROUP_H_
