// What an ELF executable's headers say: its machine, word size, byte order, flags and whether it
// is static. For tests that check a binary is built for the architecture an image or a qemu run
// promises. Reads 32- and 64-bit files of either byte order.
#ifndef NDR_TEST_UTIL_ELF_H_
#define NDR_TEST_UTIL_ELF_H_

#include <cstdint>
#include <string>

namespace ndr::testing {

struct ElfFacts {
  int machine = -1;         // e_machine (EM_X86_64, EM_AARCH64, EM_ARM, ...); -1 if not ELF
  int bits = 0;             // 32 or 64
  bool big_endian = false;  // ELFDATA2MSB
  uint32_t flags = 0;       // e_flags (EF_ARM_ABI_FLOAT_HARD, the ppc64 ELF ABI version, ...)
  bool dynamic = false;     // has a program interpreter (PT_INTERP)
};

ElfFacts ReadElf(const std::string& path);

}  // namespace ndr::testing

#endif  // NDR_TEST_UTIL_ELF_H_
