#include "test/util/elf.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace ndr::testing {
namespace {

// An unsigned field of `size` bytes at `offset` of `bytes`, in the file's byte order; 0 if the
// file is too short.
uint64_t Field(const std::string& bytes, size_t offset, size_t size, bool big_endian) {
  if (offset + size > bytes.size()) return 0;
  uint64_t value = 0;
  for (size_t i = 0; i < size; ++i) {
    const uint64_t byte = static_cast<unsigned char>(bytes[offset + i]);
    value |= big_endian ? byte << (8 * (size - 1 - i)) : byte << (8 * i);
  }
  return value;
}

}  // namespace

ElfFacts ReadElf(const std::string& path) {
  ElfFacts facts;
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) return facts;
  const bool wide = bytes[EI_CLASS] == ELFCLASS64;
  if (!wide && bytes[EI_CLASS] != ELFCLASS32) return facts;
  const bool big = bytes[EI_DATA] == ELFDATA2MSB;
  // Offsets of the header fields in Elf32_Ehdr / Elf64_Ehdr.
  const size_t word = wide ? 8 : 4;
  const size_t phoff_at = 24 + word, flags_at = 24 + 3 * word;
  const size_t phentsize_at = flags_at + 6, phnum_at = flags_at + 8;
  facts.machine = static_cast<int>(Field(bytes, 18, 2, big));
  facts.bits = wide ? 64 : 32;
  facts.big_endian = big;
  facts.flags = static_cast<uint32_t>(Field(bytes, flags_at, 4, big));
  const uint64_t phoff = Field(bytes, phoff_at, word, big);
  const uint64_t phentsize = Field(bytes, phentsize_at, 2, big);
  const uint64_t phnum = Field(bytes, phnum_at, 2, big);
  for (uint64_t i = 0; i < phnum && phoff + (i + 1) * phentsize <= bytes.size(); ++i) {
    if (Field(bytes, phoff + i * phentsize, 4, big) == PT_INTERP) facts.dynamic = true;
  }
  return facts;
}

}  // namespace ndr::testing
