#include "registrar/program_pages.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

// Linux 6.7's uapi, which Debian bookworm's headers predate.
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

namespace ndr::registrar {
namespace {

struct Mapping {
  uintptr_t start = 0, end = 0;
  std::string perms, path;
  // Anonymous: pages the process has written (copied on write), which the file does not hold.
  int64_t rss_kb = 0, anonymous_kb = 0;
};

// /proc/self/smaps: every mapping with its resident and anonymous sizes.
std::vector<Mapping> ReadMappings() {
  std::vector<Mapping> mappings;
  std::ifstream in("/proc/self/smaps");
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() >= 5 && fields[0].find('-') != std::string::npos && fields[0].back() != ':') {
      Mapping m;
      const std::vector<std::string> range = absl::StrSplit(fields[0], '-');
      if (range.size() != 2 || !absl::SimpleHexAtoi(range[0], &m.start) ||
          !absl::SimpleHexAtoi(range[1], &m.end)) {
        continue;
      }
      m.perms = fields[1];
      if (fields.size() >= 6) m.path = fields[5];
      mappings.push_back(m);
      continue;
    }
    if (mappings.empty() || fields.size() < 2) continue;
    int64_t kb = 0;
    if (!absl::SimpleAtoi(fields[1], &kb)) continue;
    if (fields[0] == "Rss:") mappings.back().rss_kb = kb;
    if (fields[0] == "Anonymous:") mappings.back().anonymous_kb = kb;
  }
  return mappings;
}

absl::Status Errno(absl::string_view what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", strerror(errno)));
}

}  // namespace

absl::StatusOr<ReleasedPages> ReleaseProgramPages() {
  char exe[PATH_MAX] = {};
  if (readlink("/proc/self/exe", exe, sizeof(exe) - 1) <= 0)
    return Errno("readlink /proc/self/exe");
  std::vector<Mapping> release;
  for (const Mapping& m : ReadMappings()) {
    // The program file's private, read-only mappings with no page of their own: every page is
    // the file's, so unmapping one loses nothing.
    if (m.path == exe && m.perms.size() == 4 && m.perms[1] == '-' && m.perms[3] == 'p' &&
        m.anonymous_kb == 0) {
      release.push_back(m);
    }
  }
  if (release.empty()) {
    return absl::NotFoundError(absl::StrCat("no read-only mapping of ", exe, " to release"));
  }
  // Faults in user mode only: what an unprivileged process may ask for
  // (vm.unprivileged_userfaultfd=0).
  const int uffd =
      static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
  if (uffd < 0) return Errno("userfaultfd (refused by the kernel or a seccomp profile)");
  uffdio_api api = {};
  api.api = UFFD_API;
  api.features = UFFD_FEATURE_WP_ASYNC;
  if (ioctl(uffd, UFFDIO_API, &api) != 0) {
    const absl::Status status = Errno("userfaultfd UFFD_FEATURE_WP_ASYNC (Linux 6.7 or later)");
    close(uffd);
    return status;
  }
  ReleasedPages released;
  for (const Mapping& m : release) {
    uffdio_register registration = {};
    registration.range.start = m.start;
    registration.range.len = m.end - m.start;
    registration.mode = UFFDIO_REGISTER_MODE_WP;
    if (ioctl(uffd, UFFDIO_REGISTER, &registration) != 0) {
      const absl::Status status = Errno(absl::StrCat("userfaultfd register ", exe));
      close(uffd);  // unregisters whatever was registered: everything as it was
      return status;
    }
  }
  for (const Mapping& m : release) {
    // No huge page mappings either: a fault in a range the page cache holds as one 2 MiB folio
    // would map all of it at once (do_set_pmd), whatever fault-around says.
    if (madvise(reinterpret_cast<void*>(m.start), m.end - m.start, MADV_NOHUGEPAGE) != 0 ||
        madvise(reinterpret_cast<void*>(m.start), m.end - m.start, MADV_DONTNEED) != 0) {
      return Errno(absl::StrCat("madvise of ", exe));  // uffd kept: harmless
    }
    ++released.mappings;
    released.bytes += static_cast<int64_t>(m.end - m.start);
    released.resident_before += m.rss_kb * 1024;
  }
  // `uffd` stays open for the process's life: closing it would unregister the mappings.
  return released;
}

}  // namespace ndr::registrar
