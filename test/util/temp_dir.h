// A fresh directory under /tmp, removed with its contents when the object goes away.
//
// Bazel's TEST_TMPDIR can be longer than a unix socket path may be (107 bytes), so tests that
// bind sockets use this instead.
#ifndef NDR_TEST_UTIL_TEMP_DIR_H_
#define NDR_TEST_UTIL_TEMP_DIR_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ndr::testing {

class TempDir {
 public:
  // Creates /tmp/ndr-<prefix>-XXXXXX (mode 0700); aborts the test binary if that fails.
  explicit TempDir(absl::string_view prefix = "t");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string Join(absl::string_view name) const;

 private:
  std::string path_;
};

// Removes `path` and everything below it; missing paths are fine.
void RemoveRecursively(const std::string& path);

// Writes `contents` to `path`, replacing it; returns false on error.
bool WriteFile(const std::string& path, absl::string_view contents);

// Reads the whole file at `path`, or returns false.
bool ReadFile(const std::string& path, std::string* contents);

// The names in directory `dir` (without "." and ".."), sorted; empty if it cannot be read.
std::vector<std::string> DirEntries(const std::string& dir);

}  // namespace ndr::testing

#endif  // NDR_TEST_UTIL_TEMP_DIR_H_
