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
  // Kernel memory charged to the cgroup: thread stacks, page tables, slab (sockets, inodes),
  // per-CPU data. v2: memory.stat's `kernel`; v1: memory.kmem.usage_in_bytes.
  int64_t kernel = 0;
  // cAdvisor's working set: usage minus inactive file pages, never below 0.
  int64_t working_set() const { return usage > inactive_file ? usage - inactive_file : 0; }
  // Usage that is none of anon, file and kernel: pages charged ahead. The kernel charges a
  // cgroup in batches of 64 pages per CPU and keeps what a batch has not used yet on that CPU
  // (mm/memcontrol.c, the per-CPU `memcg_stock`) until another cgroup charges there or the batch
  // is used up, so usage reads up to 256 kB per CPU above what the processes hold. On a node
  // full of containers these are handed back within moments; in a benchmark they linger.
  int64_t charged_ahead() const {
    const int64_t held = anon + file + kernel;
    return usage > held ? usage - held : 0;
  }
};

// `stat` is the text of memory.stat; v2 names its fields anon, file, active_file, inactive_file
// and kernel; v1 (hierarchical totals) total_rss, total_cache, total_active_file and
// total_inactive_file, and keeps kernel memory in a file of its own, `kmem_usage` (the text of
// memory.kmem.usage_in_bytes; ignored for v2).
CgroupMemory ParseMemoryStat(bool v2, const std::string& stat, int64_t usage,
                             int64_t kmem_usage = 0);

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
