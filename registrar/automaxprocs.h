// --automaxprocs: size the process's thread pools by the container's CPU limit.
//
// The Go registrar (v2.14 and later, csi-lib-utils standardflags.AddAutomaxprocs) sets GOMAXPROCS
// from the CPU quota and logs one "maxprocs: ..." line. Here the pools are gRPC core's, which it
// sizes by the CPUs it is told of (grpc_cpu_count.h), and the registration server's pollers; the
// registrar's own threads (the main loop, the HTTP server, the driver prober) are one each,
// whatever the CPUs. Call before grpc_init().
#ifndef NDR_REGISTRAR_AUTOMAXPROCS_H_
#define NDR_REGISTRAR_AUTOMAXPROCS_H_

#include <string>

#include "registrar/cpu_limit.h"

namespace ndr::registrar {

// What --automaxprocs decided: the CPU count the pools are sized by, and what it came from.
struct ThreadSizing {
  int cpus = 0;          // what gRPC is told and the pollers are capped at
  int host_cpus = 0;     // the host's configured CPUs, what they would have been sized by
  bool limited = false;  // cpus comes from the container's CPU limit
  CpuLimit limit;        // as read
};

// Pure: what the pools should be sized by for `limit` on a host of `host_cpus` CPUs. A limit
// never raises the count above the host's.
ThreadSizing DecideThreadSizing(const CpuLimit& limit, int host_cpus);

// Reads the limit under `root` (cpu_limit.h), logs what was found and what is set, as one line,
// and tells gRPC. No limit, or none readable: says so and changes nothing.
ThreadSizing ApplyAutomaxprocs(const std::string& root = "");

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_AUTOMAXPROCS_H_
