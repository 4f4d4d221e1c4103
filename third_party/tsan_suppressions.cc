// ThreadSanitizer suppressions for Debian's uninstrumented libraries (see TOOLCHAIN.md).
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
         "called_from_lib:libglog.so\n"
         "race:grpc::internal::CallOp\n"
         "race:grpc::internal::InterceptorBatchMethodsImpl\n"
         "race:grpc::internal::CallbackWithStatusTag\n";
}
