#include "kubeletclient/sanity/root_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <set>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
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

// The start of the fix for a directory the judge cannot work in.
std::string Fix(const std::string& dir, uid_t euid, bool ancestor) {
  if (ancestor) {
    return absl::StrCat("chown root ", dir, " and chmod go-w ", dir,
                        ", or give a --root-dir elsewhere");
  }
  return absl::StrCat("chown ", euid, " ", dir, " and chmod go-w ", dir,
                      ", or give a --root-dir that does not exist yet (the judge makes it)");
}

// Whether the process `pid` has the file `dev`:`ino` open, as /proc/PID/fd says.
bool HasOpen(const std::string& pid, dev_t dev, ino_t ino) {
  const std::string fds = absl::StrCat("/proc/", pid, "/fd");
  DIR* stream = opendir(fds.c_str());
  if (stream == nullptr) return false;
  bool found = false;
  while (const dirent* entry = readdir(stream)) {
    if (entry->d_name[0] == '.') continue;
    struct stat st;
    if (stat(absl::StrCat(fds, "/", entry->d_name).c_str(), &st) == 0 && st.st_dev == dev &&
        st.st_ino == ino) {
      found = true;
      break;
    }
  }
  closedir(stream);
  return found;
}

// "pid P (command line, escaped), started at T", from /proc/P.
std::string DescribeProcess(const std::string& pid) {
  std::string cmdline;
  std::ifstream cmd(absl::StrCat("/proc/", pid, "/cmdline"), std::ios::binary);
  cmdline.assign(std::istreambuf_iterator<char>(cmd), std::istreambuf_iterator<char>());
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  if (cmdline.size() > 1024) cmdline = cmdline.substr(0, 1024) + "...";
  std::string text = absl::StrCat("pid ", pid, " (", absl::CHexEscape(cmdline), ")");
  // /proc/PID/stat's 22nd field: the start, in clock ticks after boot (/proc/stat's btime).
  std::ifstream stat_in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  std::getline(stat_in, stat);
  std::ifstream boot_in("/proc/stat");
  long long btime = -1;
  for (std::string line; std::getline(boot_in, line);) {
    if (absl::StartsWith(line, "btime ")) btime = atoll(line.c_str() + strlen("btime "));
  }
  const size_t paren = stat.rfind(')');
  if (paren != std::string::npos && btime > 0) {
    const std::vector<std::string> fields =
        absl::StrSplit(stat.substr(paren + 1), ' ', absl::SkipEmpty());
    // fields[0] is the 3rd field (state): the 22nd is fields[19].
    if (fields.size() > 19) {
      const double seconds = atof(fields[19].c_str()) / sysconf(_SC_CLK_TCK);
      const absl::Time started = absl::FromUnixSeconds(btime) + absl::Seconds(seconds);
      absl::StrAppend(&text, ", started at ",
                      absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", started, absl::UTCTimeZone()));
    }
  }
  std::ifstream comm_in(absl::StrCat("/proc/", pid, "/comm"));
  std::string comm;
  std::getline(comm_in, comm);
  if (comm == "sanity-cleaner") {
    absl::StrAppend(&text, ", the cleaner of a judge that has ended, still undoing what it left");
  }
  return text;
}

}  // namespace

absl::Status CheckRootDirOwnership(const std::string& dir, const struct stat& st, uid_t euid,
                                   bool ancestor) {
  const std::string what = ancestor ? absl::StrCat("the directory ", dir, " above it")
                                    : absl::StrCat("the directory ", dir);
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " is a symbolic link, which could be changed to lead elsewhere while the judge "
        "works there: give the path it leads to"));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " is not a directory: give a directory"));
  }
  const bool owner_ok = st.st_uid == euid || (ancestor && st.st_uid == 0);
  if (!owner_ok) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " is owned by uid ", st.st_uid, ", not by ", ancestor ? "root or " : "",
        "the judge's user (uid ", euid, "), and its owner could swap what is in it for a link "
        "to elsewhere while the judge works there: ", Fix(dir, euid, ancestor)));
  }
  const bool sticky_roots = ancestor && st.st_uid == 0 && (st.st_mode & S_ISVTX) != 0;
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky_roots) {
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return absl::FailedPreconditionError(absl::StrCat(
        what, " may be written by ", (st.st_mode & S_IWOTH) != 0 ? "others" : "its group",
        " (mode ", mode, "), who could swap what is in it for a link to elsewhere while the "
        "judge works there: ",
        Fix(dir, euid, ancestor)));
  }
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> OpenJudgesRootDir(const std::string& path, uid_t euid) {
  auto refused = [&](absl::string_view why) {
    return absl::FailedPreconditionError(absl::StrCat("--root-dir=", path, ": ", why));
  };
  std::string absolute = path;
  if (absolute.empty()) return refused("empty: give a directory");
  if (absolute[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == nullptr) {
      return refused(absl::StrCat("the working directory: ", strerror(errno),
                                  ": give an absolute path"));
    }
    absolute = absl::StrCat(cwd, "/", path);
  }
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(absolute, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") return refused("\"..\" in the path: give the path without it");
    parts.emplace_back(part);
  }
  UniqueFd dir(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return refused(absl::StrCat("open /: ", strerror(errno)));
  std::string at = "/";
  for (size_t i = 0; i <= parts.size(); ++i) {
    const bool last = i == parts.size();
    if (i > 0) {
      const char* name = parts[i - 1].c_str();
      at = absl::StrCat(at == "/" ? "" : at, "/", parts[i - 1]);
      const int flags = (i == parts.size() ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW |
                        O_CLOEXEC;
      int next = openat(dir.get(), name, flags);
      if (next < 0 && errno == ENOENT) {
        if (mkdirat(dir.get(), name, 0750) != 0 && errno != EEXIST) {
          return refused(absl::StrCat("create ", at, ": ", strerror(errno)));
        }
        next = openat(dir.get(), name, flags);
      }
      if (next < 0) {
        const int err = errno;
        struct stat st;
        if (fstatat(dir.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode))) {
          return refused(CheckRootDirOwnership(at, st, euid, !last).message());
        }
        return refused(absl::StrCat("open ", at, ": ", strerror(err)));
      }
      dir = UniqueFd(next);
    } else if (last) {
      // --root-dir=/: opened for reading, as the root directory.
      dir = UniqueFd(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!dir.valid()) return refused(absl::StrCat("open /: ", strerror(errno)));
    }
    struct stat st;
    if (fstat(dir.get(), &st) != 0) {
      return refused(absl::StrCat("stat ", at, ": ", strerror(errno)));
    }
    if (absl::Status s = CheckRootDirOwnership(at, st, euid, !last); !s.ok()) {
      return refused(s.message());
    }
  }
  return dir;
}

absl::Status LockRootDir(int root_fd, const std::string& root) {
  while (flock(root_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      return absl::InternalError(absl::StrCat("--root-dir=", root, ": flock: ", strerror(errno)));
    }
    std::string holder = LockHolder(root_fd);
    if (holder.empty()) holder = "a process this user cannot see";
    return absl::FailedPreconditionError(absl::StrCat(
        "--root-dir=", root, " is in use by another judge: ", holder,
        ", holds its lock; nothing was sent. Wait for that judge to finish, or give another "
        "--root-dir."));
  }
  return absl::OkStatus();
}

std::string LockHolder(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return "";
  // /proc/locks: "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF", the device as major:minor in
  // hex; a waiter's line has "->" after the number.
  const std::string device =
      absl::StrCat(absl::Hex(major(st.st_dev), absl::kZeroPad2), ":",
                   absl::Hex(minor(st.st_dev), absl::kZeroPad2), ":", st.st_ino);
  std::ifstream locks("/proc/locks");
  for (std::string line; std::getline(locks, line);) {
    const std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() < 6 || fields[1] == "->" || fields[1] != "FLOCK") continue;
    if (fields[5] != device) continue;
    const std::string& pid = fields[4];
    if (atoi(pid.c_str()) > 0 && HasOpen(pid, st.st_dev, st.st_ino)) return DescribeProcess(pid);
  }
  // The process that took the lock has ended (or is not visible): who else has it open.
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return "";
  std::string found;
  const std::string self = std::to_string(getpid());
  while (const dirent* entry = readdir(proc)) {
    const std::string pid = entry->d_name;
    if (pid.empty() || !isdigit(static_cast<unsigned char>(pid[0])) || pid == self) continue;
    if (HasOpen(pid, st.st_dev, st.st_ino)) {
      found = DescribeProcess(pid);
      break;
    }
  }
  closedir(proc);
  return found;
}

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
