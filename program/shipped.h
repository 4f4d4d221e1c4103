// What each program this project ships (the registrar, the sample driver, kubeletclient) does
// first in main(), before any thread starts or any lock is taken. Test programs do not call it.
#ifndef NDR_PROGRAM_SHIPPED_H_
#define NDR_PROGRAM_SHIPPED_H_

namespace ndr::program {

// Turns abseil's lock-order (deadlock) detection off, as a release build of abseil has it, except
// in sanitizer builds (ChecksLockOrder()).
//
// Debian builds abseil without NDEBUG, so absl::Mutex, which gRPC locks for everything, checks
// every acquisition against a graph of the lock orders seen so far. The first lock (in grpc_init)
// builds that graph in an arena of its own, a 1 MiB anonymous mapping that is touched almost whole
// and stays resident, and each later lock pays for the cycle check: with Debian 13's abseil
// (20240722) it doubled an idle registrar's working set.
//
// Then installs the crash report (logging/crash_report.h): `argv0` is main's argv[0].
void SetUpShippedProgram(const char* argv0);

// Whether this build of the programs keeps the detection on: true in sanitizer builds, which are
// never shipped and which the process tests of the sanitizer stages run, so that a lock-order
// inversion in a real program, ours or gRPC's, aborts it there (as it aborts any test program).
bool ChecksLockOrder();

}  // namespace ndr::program

#endif  // NDR_PROGRAM_SHIPPED_H_
