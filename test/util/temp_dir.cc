#include "test/util/temp_dir.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace ndr::testing {

TempDir::TempDir(absl::string_view prefix) {
  std::string templ = absl::StrCat("/tmp/ndr-", prefix, "-XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    perror(templ.c_str());
    abort();
  }
  path_ = templ;
}

TempDir::~TempDir() { RemoveRecursively(path_); }

std::string TempDir::Join(absl::string_view name) const { return absl::StrCat(path_, "/", name); }

void RemoveRecursively(const std::string& path) {
  nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) { return remove(p); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

bool WriteFile(const std::string& path, absl::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), contents.size());
  return static_cast<bool>(out);
}

bool ReadFile(const std::string& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *contents = buffer.str();
  return true;
}

std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace ndr::testing
