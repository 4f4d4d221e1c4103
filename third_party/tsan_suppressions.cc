// ThreadSanitizer suppressions for Debian's uninstrumented libraries (their code is not built with
// -fsanitize=thread, so TSan cannot see the ordering their locks and queues provide).
//
// TSan calls this hook at start-up in every program linked with it, so tests and the binaries
// they start as subprocesses are covered alike without a suppressions file path. Only reports
// that pass through these libraries are dropped; the project's own code stays checked. In
// builds without TSan nothing calls it.
//
// The race: entries name grpc++ header templates that are compiled, instrumented, into our own
// objects but hand data over through gRPC core's uninstrumented completion queue, so TSan cannot
// see the ordering. None of them lies between gRPC and our service handlers, so races in our
// handlers are still reported.
//
// The thread: gRPC 1.51 does not always join its own threads before a program exits (its
// shutdown runs on a detached thread of its own when the last gRPC object goes on one of gRPC's
// threads), and TSan reports such a thread as leaked (seen once in //test:conformance, from a
// channel the conformance suite made and dropped just before exiting). Only threads that gRPC's
// own thread class started are left out; threads the project starts stay checked.
//
// libevent (the registrar's HTTP server) is ignored the same way, for the descriptors it opens
// and closes: TSan tracks a descriptor number's life through the calls it sees, and with gRPC's
// calls unseen, a number that gRPC closed and libevent then accepted looks like our acceptor's
// descriptor closed by libevent's thread. libevent also applies some epoll changes after it has
// closed their descriptor (the kernel refuses them; libevent ignores that). The registrar's code
// that libevent calls (the HTTP handlers) stays checked: only calls made by libevent itself are
// ignored, and it hands nothing to other threads through its own locks (libevent_pthreads').

extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libgrpc.so\n"
         "called_from_lib:libgrpc_unsecure.so\n"
         "called_from_lib:libgpr.so\n"
         "called_from_lib:libgrpc++.so\n"
         "called_from_lib:libgrpc++_unsecure.so\n"
         "called_from_lib:libprotobuf.so\n"
         "called_from_lib:libabsl_graphcycles_internal.so\n"
         "called_from_lib:libabsl_synchronization.so\n"
         "called_from_lib:libabsl_status.so\n"
         "called_from_lib:libabsl_random_internal_pool_urbg.so\n"
         "called_from_lib:libabsl_cord.so\n"
         "called_from_lib:libabsl_cord_internal.so\n"
         "called_from_lib:libabsl_time_zone.so\n"
         "called_from_lib:libevent_core-2.1.so\n"
         "called_from_lib:libevent_extra-2.1.so\n"
         "race:grpc::internal::CallOp\n"
         "race:grpc::internal::InterceptorBatchMethodsImpl\n"
         "race:grpc::internal::CallbackWithStatusTag\n"
         "thread:grpc_core::Thread::Thread\n";
}
