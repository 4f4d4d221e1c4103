#include "kubeletclient/sanity/root_dir.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "hostutil/mount.h"

namespace ndr::kubelet::sanity {
namespace {

const char* Kind(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISLNK(mode)) return "symbolic link";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISFIFO(mode)) return "fifo";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISCHR(mode)) return "character device";
  return "entry";
}

}  // namespace

std::vector<std::string> MountsUnder(const std::string& dir, const std::string& mountinfo) {
  std::vector<std::string> mounts;
  std::ifstream in(mountinfo);
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string> fields = absl::StrSplit(line, ' ');
    if (fields.size() < 5) continue;
    std::string path = hostutil::UnescapeMountinfo(fields[4]);
    if (absl::StartsWith(path, dir + "/")) mounts.push_back(std::move(path));
  }
  return mounts;
}

absl::StatusOr<Leftovers> FindLeftovers(const std::string& root, const std::string& mountinfo,
                                        size_t limit) {
  Leftovers found;
  char canonical[PATH_MAX];
  if (realpath(root.c_str(), canonical) == nullptr) {
    if (errno == ENOENT) return found;
    return absl::FailedPreconditionError(
        absl::StrCat("reading ", root, ": ", strerror(errno)));
  }
  const std::string top = canonical;
  const std::vector<std::string> below = MountsUnder(top, mountinfo);
  const std::set<std::string> mounts(below.begin(), below.end());
  auto note = [&](const std::string& kind, const std::string& path) {
    if (found.named.size() < limit) {
      found.named.push_back(absl::StrCat(kind, " ", absl::CHexEscape(path)));
    }
    ++found.total;
  };
  std::vector<std::string> pending = {top};
  while (!pending.empty()) {
    const std::string dir = std::move(pending.back());
    pending.pop_back();
    DIR* stream = opendir(dir.c_str());
    if (stream == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("reading ", absl::CHexEscape(dir), ": ", strerror(errno)));
    }
    while (const dirent* entry = readdir(stream)) {
      if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
      const std::string path = absl::StrCat(dir, "/", entry->d_name);
      struct stat st;
      if (lstat(path.c_str(), &st) != 0) continue;  // gone since it was listed
      if (mounts.count(path) != 0) {
        note("mount point", path);  // what is mounted there is not looked at
      } else if (S_ISDIR(st.st_mode)) {
        pending.push_back(path);
      } else {
        note(Kind(st.st_mode), path);
      }
    }
    closedir(stream);
  }
  return found;
}

std::string LeftoversRefusal(const std::string& root, const Leftovers& leftovers) {
  std::string list = absl::StrJoin(leftovers.named, "\n  ");
  if (leftovers.total > leftovers.named.size()) {
    absl::StrAppend(&list, "\n  and ", leftovers.total - leftovers.named.size(), " more");
  }
  return absl::StrCat(
      "--root-dir=", root, " holds what an earlier run left, which this run's checks would take "
      "for their own (a run that tears everything down leaves only empty directories); nothing "
      "was sent. It holds:\n  ",
      list,
      "\nGive a new --root-dir, or empty this one: unmount what is mounted there first (umount -R "
      "on each mount point), then remove the rest.");
}

}  // namespace ndr::kubelet::sanity
