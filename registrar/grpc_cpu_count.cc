#include "registrar/grpc_cpu_count.h"

#include <sched.h>
#include <unistd.h>

#include <atomic>

#include "grpc/support/cpu.h"

namespace ndr::registrar {
namespace {

std::atomic<unsigned> g_count{0};  // 0: not set

unsigned HostCpus() {
  static const unsigned host = [] {
    const long n = sysconf(_SC_NPROCESSORS_CONF);
    return n < 1 ? 1u : static_cast<unsigned>(n);
  }();
  return host;
}

}  // namespace

void SetGrpcCpuCount(unsigned count) { g_count.store(count < 1 ? 1 : count); }

unsigned GrpcCpuCount() {
  const unsigned count = g_count.load();
  return count != 0 ? count : HostCpus();
}

}  // namespace ndr::registrar

// gRPC's gpr_cpu_num_cores and gpr_cpu_current_cpu (grpc/support/cpu.h), in its place.
extern "C" unsigned gpr_cpu_num_cores(void) { return ndr::registrar::GrpcCpuCount(); }

// gRPC uses it to pick a per-CPU shard (of stats, of timer lists); any value below the count is
// correct, and the CPU actually running is the best.
extern "C" unsigned gpr_cpu_current_cpu(void) {
  const unsigned count = ndr::registrar::GrpcCpuCount();
  if (count == 1) return 0;
  const int cpu = sched_getcpu();
  return cpu < 0 ? 0 : static_cast<unsigned>(cpu) % count;
}
