#include "test/util/elf.h"

#include <elf.h>

#include <cstring>
#include <fstream>

namespace ndr::testing {

ElfFacts ReadElf(const std::string& path) {
  ElfFacts facts;
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr header;
  if (!in.read(reinterpret_cast<char*>(&header), sizeof(header)) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
    return facts;
  }
  facts.machine = header.e_machine;
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr program;
    in.seekg(header.e_phoff + static_cast<std::streamoff>(i) * header.e_phentsize);
    if (in.read(reinterpret_cast<char*>(&program), sizeof(program)) &&
        program.p_type == PT_INTERP) {
      facts.dynamic = true;
    }
  }
  return facts;
}

}  // namespace ndr::testing
