#include "registrar/program_pages.h"

#include <limits.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace ndr::registrar {
namespace {

// 8 MiB of read-only data in this test's own program file, whose pages the test reads.
constexpr size_t kBigSize = 8 << 20;
extern const char kBig[kBigSize];
const char kBig[kBigSize] = {1};

// Resident kB of this program file's mappings (as /proc/self/smaps says).
int64_t ProgramRssKb() {
  char exe[PATH_MAX] = {};
  readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool ours = false;
  int64_t total = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() >= 5 && fields[0].find('-') != std::string::npos && fields[0].back() != ':') {
      ours = fields.size() >= 6 && fields[5] == exe;
    } else if (ours && fields.size() >= 2 && fields[0] == "Rss:") {
      int64_t kb = 0;
      if (absl::SimpleAtoi(fields[1], &kb)) total += kb;
    }
  }
  return total;
}

int64_t ReadEvery(size_t stride) {
  int64_t sum = 0;
  for (size_t i = 0; i < kBigSize; i += stride) sum += *static_cast<const volatile char*>(&kBig[i]);
  return sum;
}

// Released, the program's read-only pages come back one by one, as they are read: 128 reads 64
// kB apart map 128 pages, where fault-around (and huge pages) would map the whole 8 MiB.
TEST(ReleaseProgramPagesTest, OnlyWhatIsReadComesBack) {
  ReadEvery(4096);  // all of it resident, as start-up leaves a program
  const int64_t before = ProgramRssKb();
  absl::StatusOr<ReleasedPages> released = ReleaseProgramPages();
  if (absl::IsUnavailable(released.status())) {
    GTEST_SKIP() << "this kernel or sandbox refuses it: " << released.status();
  }
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_GE(released->mappings, 1);
  EXPECT_GE(released->bytes, static_cast<int64_t>(kBigSize));
  EXPECT_GE(released->resident_before, static_cast<int64_t>(kBigSize));
  const int64_t after_release = ProgramRssKb();
  EXPECT_LT(after_release, before - 7 * 1024) << "before " << before << " kB";
  ReadEvery(64 << 10);
  const int64_t after_reads = ProgramRssKb();
  // 128 pages are 512 kB; the code running meanwhile adds a little. Fault-around would add 8 MiB.
  EXPECT_LT(after_reads - after_release, 2048) << "after release " << after_release << " kB";
  EXPECT_GE(after_reads - after_release, 512);
  // What is read back is what the file holds.
  EXPECT_EQ(kBig[0], 1);
  EXPECT_EQ(kBig[kBigSize - 1], 0);
}

}  // namespace
}  // namespace ndr::registrar
