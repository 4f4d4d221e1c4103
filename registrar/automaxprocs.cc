#include "registrar/automaxprocs.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "logging/logging.h"
#include "registrar/grpc_cpu_count.h"

namespace ndr::registrar {

using ::ndr::logging::Err;
using ::ndr::logging::Kv;

ThreadSizing DecideThreadSizing(const CpuLimit& limit, int host_cpus) {
  ThreadSizing sizing;
  sizing.host_cpus = std::max(1, host_cpus);
  sizing.cpus = sizing.host_cpus;
  sizing.limit = limit;
  if (limit.state == CpuLimit::State::kLimited) {
    sizing.cpus = std::min(sizing.host_cpus, ThreadsForCores(limit.cores));
    sizing.limited = true;
  }
  return sizing;
}

ThreadSizing ApplyAutomaxprocs(const std::string& root) {
  const ThreadSizing sizing =
      DecideThreadSizing(ReadCpuLimit(root), static_cast<int>(GrpcCpuCount()));
  switch (sizing.limit.state) {
    case CpuLimit::State::kLimited:
      SetGrpcCpuCount(static_cast<unsigned>(sizing.cpus));
      NDR_LOG(INFO) << "automaxprocs: sizing thread pools by the container's CPU limit"
                    << Kv("cpus", sizing.cpus)
                    << Kv("cpuLimit", absl::StrFormat("%g", sizing.limit.cores))
                    << Kv("hostCPUs", sizing.host_cpus) << Kv("source", sizing.limit.file);
      break;
    case CpuLimit::State::kUnlimited:
      NDR_LOG(INFO) << "automaxprocs: no CPU limit in this container's cgroup; thread pools "
                       "stay sized by the host's CPUs"
                    << Kv("cpus", sizing.cpus) << Kv("source", sizing.limit.file);
      break;
    case CpuLimit::State::kUnreadable:
      NDR_LOG(WARNING) << "automaxprocs: cannot read the container's CPU limit; thread pools "
                          "stay sized by the host's CPUs"
                       << Kv("cpus", sizing.cpus) << Err(sizing.limit.error);
      break;
  }
  return sizing;
}

}  // namespace ndr::registrar
