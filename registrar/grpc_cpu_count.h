// The CPU count gRPC core sizes its thread pools by, settable before grpc_init().
//
// gRPC 1.51 asks gpr_cpu_num_cores() (src/core/lib/gpr/cpu_linux.cc: the host's configured CPUs,
// sysconf(_SC_NPROCESSORS_CONF), whatever the container's limit) and starts, for instance,
// Clamp(n, 2, 32) EventEngine worker threads at once (src/core/lib/event_engine/thread_pool.h);
// its executors may grow to 2n threads each. On a 64-CPU node that is 32 idle threads in a
// registrar limited to one core (measured: docs/registrar.md, "--automaxprocs"). gRPC has no
// setting for it, so this library defines the two functions of gRPC's cpu_linux.cc itself, for
// the program that links it: in a static link gRPC's own object is then never pulled in (nothing
// is left undefined that it would resolve); in a dynamic one (the sanitizer builds) the program's
// definitions interpose on libgpr's, which calls them through its PLT. Until SetGrpcCpuCount is
// called they answer what gRPC's would.
//
// Thread-safe; the count must be set before grpc_init() to size the pools gRPC starts there.
#ifndef NDR_REGISTRAR_GRPC_CPU_COUNT_H_
#define NDR_REGISTRAR_GRPC_CPU_COUNT_H_

namespace ndr::registrar {

// From now on gRPC is told there are `count` CPUs (at least 1).
void SetGrpcCpuCount(unsigned count);

// What gRPC is told now: the count set, or the host's configured CPUs.
unsigned GrpcCpuCount();

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_GRPC_CPU_COUNT_H_
