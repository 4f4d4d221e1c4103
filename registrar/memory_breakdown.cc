#include "registrar/memory_breakdown.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ndr::registrar {
namespace {

constexpr uint64_t kPage = 4096;

struct Range {
  uint64_t start, end;
};

// The program's allocated sections, by kind: executable, read-only, writable.
absl::Status ReadSections(const std::string& program, std::vector<Range>* text,
                          std::vector<Range>* rodata, std::vector<Range>* data) {
  std::ifstream in(program, std::ios::binary);
  Elf64_Ehdr header;
  if (!in.read(reinterpret_cast<char*>(&header), sizeof(header)) ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr)) {
    return absl::InvalidArgumentError(absl::StrCat(program, " is not a 64-bit ELF file"));
  }
  for (int i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section;
    in.seekg(static_cast<std::streamoff>(header.e_shoff + i * sizeof(Elf64_Shdr)));
    if (!in.read(reinterpret_cast<char*>(&section), sizeof(section))) break;
    if (!(section.sh_flags & SHF_ALLOC) || section.sh_size == 0 || section.sh_addr == 0) continue;
    const Range range{section.sh_addr, section.sh_addr + section.sh_size};
    if (section.sh_flags & SHF_EXECINSTR) {
      text->push_back(range);
    } else if (section.sh_flags & SHF_WRITE) {
      data->push_back(range);
    } else {
      rodata->push_back(range);
    }
  }
  return absl::OkStatus();
}

// Resident pages of `ranges` (each page counted once, even when shared by two sections).
int64_t ResidentKb(int pagemap, const std::vector<Range>& ranges) {
  std::vector<uint64_t> pages;
  for (const Range& r : ranges) {
    for (uint64_t page = r.start / kPage; page * kPage < r.end; ++page) pages.push_back(page);
  }
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
  int64_t resident = 0;
  for (uint64_t page : pages) {
    uint64_t entry = 0;
    if (pread(pagemap, &entry, sizeof(entry), static_cast<off_t>(page * sizeof(entry))) ==
            sizeof(entry) &&
        (entry >> 63) & 1) {
      ++resident;
    }
  }
  return resident * static_cast<int64_t>(kPage / 1024);
}

int64_t FieldKb(const std::string& file, const std::string& field) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    std::vector<std::string> parts =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    int64_t value = 0;
    if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &value)) return value;
  }
  return 0;
}

}  // namespace

absl::StatusOr<MemoryBreakdown> MeasureMemory(pid_t pid, const std::string& program) {
  MemoryBreakdown m;
  const std::string proc = absl::StrCat("/proc/", pid);
  m.rss_kb = FieldKb(proc + "/status", "VmRSS");
  m.anon_kb = FieldKb(proc + "/status", "RssAnon");
  m.file_kb = FieldKb(proc + "/status", "RssFile");
  m.threads = static_cast<int>(FieldKb(proc + "/status", "Threads"));
  std::vector<Range> text, rodata, data;
  if (absl::Status s = ReadSections(program, &text, &rodata, &data); !s.ok()) return s;
  const int pagemap = open((proc + "/pagemap").c_str(), O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) return absl::UnavailableError(absl::StrCat("open ", proc, "/pagemap"));
  absl::Cleanup close_pagemap = [pagemap] { close(pagemap); };
  m.text_kb = ResidentKb(pagemap, text);
  m.rodata_kb = ResidentKb(pagemap, rodata);
  m.data_kb = ResidentKb(pagemap, data);
  // Anonymous mappings beyond the program's own: the heap, and the stacks.
  std::ifstream smaps(proc + "/smaps");
  std::string line, previous_perms, perms, name;
  uint64_t start = 0, end = 0;
  bool guarded = false;
  int64_t rss = 0;
  auto account = [&] {
    if (end == 0) return;
    for (const Range& r : data) {
      if (start < r.end && r.start < end) return;  // the program's bss, counted as data
    }
    const bool anonymous = name.empty() || name == "[heap]" || name == "[stack]";
    if (name == "[stack]" || (anonymous && guarded && end - start == (8u << 20))) {
      m.stacks_kb += rss;
    } else if (anonymous && perms[0] == 'r' && perms[1] == 'w') {
      m.heap_kb += rss;
    }
  };
  while (std::getline(smaps, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() >= 5 && fields[0].find('-') != std::string::npos && fields[0].back() != ':') {
      account();
      const std::vector<std::string> range = absl::StrSplit(fields[0], '-');
      absl::SimpleHexAtoi(range[0], &start);
      absl::SimpleHexAtoi(range[1], &end);
      previous_perms = perms;
      perms = fields[1];
      // A thread stack follows its guard page (---p) directly.
      guarded = previous_perms == "---p";
      name = fields.size() >= 6 ? fields[5] : "";
      rss = 0;
    } else if (fields.size() >= 2 && fields[0] == "Rss:") {
      absl::SimpleAtoi(fields[1], &rss);
    }
  }
  account();
  m.other_kb = m.rss_kb - m.text_kb - m.rodata_kb - m.data_kb - m.heap_kb - m.stacks_kb;
  return m;
}

}  // namespace ndr::registrar
