// without_userfaultfd PROGRAM [ARGS...]: runs PROGRAM with userfaultfd(2) refused (EPERM) by a
// seccomp filter, as the container runtimes' default profile (Kubernetes' RuntimeDefault) refuses
// it, so that the registrar's memory there is measured rather than assumed
// (test/benchmarks/registrar_benchmark_main.cc). Every other system call is allowed.
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <iostream>

namespace {

#if defined(__x86_64__)
constexpr unsigned int kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned int kAuditArch = AUDIT_ARCH_AARCH64;
#else
#error "without_userfaultfd: no audit architecture for this machine"
#endif

bool RefuseUserfaultfd() {
  sock_filter filter[] = {
      // Another architecture's calls (a 32-bit program) are not this filter's business.
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_userfaultfd, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: without_userfaultfd PROGRAM [ARGS...]" << std::endl;
    return 2;
  }
  if (!RefuseUserfaultfd()) {
    std::cerr << "without_userfaultfd: installing the seccomp filter failed: " << strerror(errno)
              << std::endl;
    return 1;
  }
  execv(argv[1], argv + 1);
  std::cerr << "without_userfaultfd: exec " << argv[1] << ": " << strerror(errno) << std::endl;
  return 127;
}
