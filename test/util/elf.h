// What an ELF executable's headers say: its machine and whether it is static. For tests that check
// a binary is built for the architecture an image or a qemu run promises.
#ifndef NDR_TEST_UTIL_ELF_H_
#define NDR_TEST_UTIL_ELF_H_

#include <string>

namespace ndr::testing {

struct ElfFacts {
  int machine = -1;      // e_machine (EM_X86_64, EM_AARCH64); -1 if not a 64-bit ELF file
  bool dynamic = false;  // has a program interpreter (PT_INTERP)
};

ElfFacts ReadElf(const std::string& path);

}  // namespace ndr::testing

#endif  // NDR_TEST_UTIL_ELF_H_
