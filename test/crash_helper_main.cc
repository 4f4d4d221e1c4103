// A program that dies as it is told, for the crash report's process test: a real fault of each
// kind, a failed NDR_LOG(FATAL), an uncaught exception. It sets up as the shipped programs do
// (program/shipped.h) and logs with the same flags.
//
//   crash-helper --crash=segv|bus|fpe|ill|abort|fatal|throw [--logging-format=json]
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "logging/logging.h"
#include "program/shipped.h"
#include "program/termination_message.h"

DEFINE_string(crash, "", "How to die: segv, bus, fpe, ill, abort, fatal or throw.");
DEFINE_string(termination_message_path, "", "Where the termination message goes.");
DEFINE_string(scratch, "/tmp", "A directory for the file that bus truncates under a mapping.");

namespace ndr::crash_helper {

// Each kind of death in a function of its own, named in the report's stack. noinline, and a
// volatile pointer, or assembly, so that the compiler keeps the frame and the faulting
// instruction, and no sanitizer stops the program before it faults.

// A write to a page mapped without access: SIGSEGV (SEGV_ACCERR) at an address logged first.
__attribute__((noinline)) void WriteToAnInaccessiblePage() {
  void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) abort();
  NDR_LOG(INFO) << "Writing to an inaccessible page"
                << logging::Kv("addr", absl::StrCat("0x", absl::Hex(reinterpret_cast<uintptr_t>(page))));
  *static_cast<volatile int*>(page) = 1;
}

// A page mapped from a file that has been truncated: reading it is SIGBUS (BUS_ADRERR).
__attribute__((noinline)) void ReadPastTheEndOfAMappedFile() {
  const std::string path = FLAGS_scratch + "/bus-XXXXXX";
  std::string name = path;
  const int fd = mkstemp(name.data());
  if (fd < 0 || ftruncate(fd, 4096) != 0) abort();
  volatile char* page = static_cast<volatile char*>(
      mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0));
  unlink(name.c_str());
  if (ftruncate(fd, 0) != 0) abort();
  std::cout << static_cast<int>(page[0]) << std::endl;
}

__attribute__((noinline)) void DivideByZero() {
#if defined(__x86_64__) || defined(__i386__)
  // x86 traps an integer division by zero.
  asm volatile("xorl %%ecx, %%ecx\n\tmovl $1, %%eax\n\tcltd\n\tidivl %%ecx" ::: "eax", "ecx",
               "edx");
#else
  raise(SIGFPE);  // other architectures' division does not trap
#endif
}

__attribute__((noinline)) void ExecuteAnIllegalInstruction() {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("ud2");
#else
  raise(SIGILL);
#endif
}

__attribute__((noinline)) void FailACheck() {
  NDR_LOG(FATAL) << "A check failed" << logging::Kv("check", "2 + 2 == 5");
}

__attribute__((noinline)) void ThrowWithoutCatching() {
  throw std::runtime_error("nobody catches this");
}

}  // namespace ndr::crash_helper

int main(int argc, char** argv) {
  ndr::program::SetUpShippedProgram(argv[0]);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  absl::StatusOr<ndr::logging::Options> options = ndr::logging::OptionsFromFlags();
  if (!options.ok()) {
    std::cerr << options.status().message() << std::endl;
    return 2;
  }
  ndr::logging::Init(*options);
  ndr::program::SetTerminationMessagePath(FLAGS_termination_message_path);
  NDR_LOG(INFO) << "About to crash" << ndr::logging::Kv("crash", FLAGS_crash);
  using namespace ndr::crash_helper;
  if (FLAGS_crash == "segv") WriteToAnInaccessiblePage();
  if (FLAGS_crash == "bus") ReadPastTheEndOfAMappedFile();
  if (FLAGS_crash == "fpe") DivideByZero();
  if (FLAGS_crash == "ill") ExecuteAnIllegalInstruction();
  if (FLAGS_crash == "abort") abort();
  if (FLAGS_crash == "fatal") FailACheck();
  if (FLAGS_crash == "throw") ThrowWithoutCatching();
  std::cerr << "crash-helper: still alive after --crash=" << FLAGS_crash << std::endl;
  return 3;
}
