#include "test/benchmarks/memory_cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace ndr::benchmarks {
namespace {

bool ReadText(const std::string& path, std::string* text) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *text = buffer.str();
  return true;
}

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

CgroupMemory ParseMemoryStat(bool v2, const std::string& stat, int64_t usage,
                             int64_t kmem_usage) {
  CgroupMemory memory;
  memory.usage = usage;
  if (!v2) memory.kernel = kmem_usage;
  for (absl::string_view line : absl::StrSplit(stat, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> kv = absl::StrSplit(line, ' ');
    int64_t value;
    if (kv.size() != 2 || !absl::SimpleAtoi(kv[1], &value)) continue;
    const absl::string_view key = kv[0];
    if (key == (v2 ? "anon" : "total_rss")) memory.anon = value;
    if (key == (v2 ? "file" : "total_cache")) memory.file = value;
    if (key == (v2 ? "active_file" : "total_active_file")) memory.active_file = value;
    if (key == (v2 ? "inactive_file" : "total_inactive_file")) memory.inactive_file = value;
    if (v2 && key == "kernel") memory.kernel = value;
  }
  return memory;
}

absl::StatusOr<std::unique_ptr<MemoryCgroup>> MemoryCgroup::Create(const std::string& name) {
  std::string controllers;
  if (ReadText("/sys/fs/cgroup/cgroup.controllers", &controllers) &&
      absl::StrContains(controllers, "memory")) {
    // v2: children of the root get the memory controller once the root's subtree has it.
    std::string subtree;
    ReadText("/sys/fs/cgroup/cgroup.subtree_control", &subtree);
    if (!absl::StrContains(subtree, "memory") &&
        !WriteText("/sys/fs/cgroup/cgroup.subtree_control", "+memory")) {
      return absl::FailedPreconditionError(
          "cgroup v2: the memory controller cannot be enabled for the root's children");
    }
    const std::string dir = "/sys/fs/cgroup/" + name;
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(absl::StrCat("cgroup v2: cannot make ", dir,
                                                        " (root is needed)"));
    }
    return std::unique_ptr<MemoryCgroup>(new MemoryCgroup(dir, true));
  }
  struct stat st;
  if (stat("/sys/fs/cgroup/memory/memory.stat", &st) == 0) {
    const std::string dir = "/sys/fs/cgroup/memory/" + name;
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(absl::StrCat("cgroup v1: cannot make ", dir,
                                                        " (root is needed)"));
    }
    return std::unique_ptr<MemoryCgroup>(new MemoryCgroup(dir, false));
  }
  return absl::FailedPreconditionError("no memory cgroup controller (v2 or v1) on this machine");
}

MemoryCgroup::~MemoryCgroup() {
  // The processes are gone, but their exit may still be under way for a moment.
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (rmdir(dir_.c_str()) != 0 && errno == EBUSY && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
}

std::vector<std::string> MemoryCgroup::Wrap(const std::vector<std::string>& argv) const {
  std::vector<std::string> wrapped = {"/bin/sh", "-c", "echo $$ > \"$0\" && exec \"$@\"",
                                      dir_ + "/cgroup.procs"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

absl::StatusOr<CgroupMemory> MemoryCgroup::Read() const {
  std::string usage_text, stat;
  if (!ReadText(dir_ + (v2_ ? "/memory.current" : "/memory.usage_in_bytes"), &usage_text) ||
      !ReadText(dir_ + "/memory.stat", &stat)) {
    return absl::UnavailableError(absl::StrCat("cannot read ", dir_));
  }
  int64_t usage;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(usage_text), &usage)) {
    return absl::UnavailableError(absl::StrCat("unreadable usage in ", dir_));
  }
  int64_t kmem = 0;
  std::string kmem_text;
  if (!v2_ && (!ReadText(dir_ + "/memory.kmem.usage_in_bytes", &kmem_text) ||
               !absl::SimpleAtoi(absl::StripAsciiWhitespace(kmem_text), &kmem))) {
    return absl::UnavailableError(absl::StrCat("unreadable memory.kmem.usage_in_bytes in ", dir_));
  }
  return ParseMemoryStat(v2_, stat, usage, kmem);
}

absl::StatusOr<std::string> FreshCopy(const std::string& binary, const std::string& dir) {
  const std::string copy = dir + "/" + binary.substr(binary.find_last_of('/') + 1);
  std::string bytes;
  if (!ReadText(binary, &bytes)) return absl::NotFoundError(absl::StrCat("cannot read ", binary));
  const int fd = open(copy.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot write ", copy));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool written = done == bytes.size() && fsync(fd) == 0;
  // Dropped from the page cache once on disk: the next reader faults it in.
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  if (!written) return absl::InternalError(absl::StrCat("cannot write ", copy));
  return copy;
}

}  // namespace ndr::benchmarks
