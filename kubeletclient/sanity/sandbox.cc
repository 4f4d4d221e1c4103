#include "kubeletclient/sanity/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "hostutil/loop_device.h"
#include "hostutil/mount.h"
#include "kubeletclient/util/beneath.h"
#include "kubeletclient/util/files.h"

namespace ndr::kubelet::sanity {
namespace {

bool Under(const std::string& path, const std::string& dir) {
  return path == dir || absl::StartsWith(path, dir + "/");
}

// Where under the root directory kubelet's layout puts what is mounted for volumes: the pods'
// directories and the plugins' (staging, block devices). Only there, and the root's own bind
// mount, does the cleaner touch anything: a root directory shared with other programs (/tmp,
// say) keeps what they mount elsewhere in it.
bool KubeletsLayout(const std::string& path, const std::string& root) {
  return Under(path, root + "/pods") || Under(path, root + "/plugins");
}

// The mount points of this process's namespace, in mountinfo's order (parents before children).
std::vector<std::string> MountPoints() {
  std::vector<std::string> points;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    if (fields.size() > 4) points.push_back(hostutil::UnescapeMountinfo(fields[4]));
  }
  return points;
}

// The mounts of this process's namespace, in mountinfo's order: each mount's ID and mount point.
std::vector<std::pair<uint64_t, std::string>> Mounts() {
  std::vector<std::pair<uint64_t, std::string>> mounts;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    if (fields.size() > 4) {
      mounts.emplace_back(strtoull(std::string(fields[0]).c_str(), nullptr, 10),
                          hostutil::UnescapeMountinfo(fields[4]));
    }
  }
  return mounts;
}

// Loop devices whose backing file is where kubelet's layout under `root` has block devices, as
// /sys/block/loop*/loop/backing_file says. (Read with readdir rather than glob(3): the images'
// VEX states that glob is not linked into these programs, and every build checks it.)
std::set<std::string> LoopsInLayout(const std::string& root) {
  std::set<std::string> loops;
  DIR* block = opendir("/sys/block");
  if (block == nullptr) return loops;
  while (struct dirent* entry = readdir(block)) {
    const std::string name = entry->d_name;
    if (!absl::StartsWith(name, "loop")) continue;
    std::ifstream in("/sys/block/" + name + "/loop/backing_file");
    std::string backing;
    if (std::getline(in, backing) && KubeletsLayout(backing, root)) loops.insert("/dev/" + name);
  }
  closedir(block);
  return loops;
}

// The write end of the cleaner's pipe, for the loop device observer.
std::atomic<int> cleaner_pipe{-1};

// hostutil's loop device observer: "+/dev/loopN\n" when the judge attaches one, "-..." when it
// detaches it. One write(2) each, shorter than PIPE_BUF: whole even if the judge is killed.
void TellCleaner(const std::string& device, bool attached) {
  const std::string line = absl::StrCat(attached ? "+" : "-", device, "\n");
  const int fd = cleaner_pipe.load();
  if (fd >= 0) (void)!write(fd, line.data(), line.size());
}

// The cleaner's whole life, in the host's mount namespace: note the loop devices the judge says it
// attaches and detaches until it is gone, then undo what it left: those loop devices (a judge's
// loop device sits on a bind mount in its own namespace, whose path the kernel cannot name once
// the namespace is gone), the loop devices over files in kubelet's layout under `root` that were
// not there before (`loops_before`), and the mounts there and the root's own bind mount that were
// not (`mounts_before`; deepest first, detached if busy).
// `root_fd` is the root directory, opened after its bind mount; the lock of the root directory
// (root_dir.h LockRootDir) is held through the descriptor the cleaner inherited with the fork,
// until it exits.
[[noreturn]] void Clean(int pipe, int root_fd, const std::string& root,
                        const std::set<std::string>& mounts_before,
                        const std::set<std::string>& loops_before) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  prctl(PR_SET_NAME, "sanity-cleaner");
  // read returns 0 (end of file) once the judge has closed its end or ended, however.
  std::set<std::string> judges_loops;
  std::string pending;
  char buffer[512];
  for (;;) {
    const ssize_t n = read(pipe, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, n);
    for (size_t end; (end = pending.find('\n')) != std::string::npos; pending.erase(0, end + 1)) {
      const std::string device = pending.substr(1, end - 1);
      if (pending[0] == '+') judges_loops.insert(device);
      if (pending[0] == '-') judges_loops.erase(device);
    }
  }
  for (const std::string& loop : judges_loops) {
    absl::Status s = hostutil::DetachLoopDevice(loop);
    fprintf(stderr, "kubeletclient sanity: the judge left its loop device %s: %s\n", loop.c_str(),
            s.ok() ? "detached" : std::string(s.message()).c_str());
  }
  for (const std::string& loop : LoopsInLayout(root)) {
    if (loops_before.count(loop)) continue;
    absl::Status s = hostutil::DetachLoopDevice(loop);
    fprintf(stderr, "kubeletclient sanity: the judge left loop device %s over a file under %s: "
            "%s\n", loop.c_str(), root.c_str(),
            s.ok() ? "detached" : std::string(s.message()).c_str());
  }
  for (const std::string& line : UnmountLeft(root_fd, root, mounts_before)) {
    fprintf(stderr, "kubeletclient sanity: %s\n", line.c_str());
  }
  _exit(0);
}

}  // namespace

std::vector<std::string> UnmountLeft(int root_fd, const std::string& root,
                                     const std::set<std::string>& mounts_before,
                                     const std::function<void()>& between) {
  std::vector<std::string> said;
  std::vector<std::pair<uint64_t, std::string>> mounts = Mounts();
  std::reverse(mounts.begin(), mounts.end());  // children before their parents
  if (between) between();
  for (const auto& [id, point] : mounts) {
    if ((point != root && !KubeletsLayout(point, root)) || mounts_before.count(point)) continue;
    const bool bind_of_root = point == root;
    const std::string relative = bind_of_root ? "." : point.substr(root.size() + 1);
    // The mount point by descriptor: no symbolic link, nothing outside the root directory.
    absl::StatusOr<UniqueFd> fd = OpenBeneath(root_fd, relative, O_PATH);
    if (!fd.ok()) {
      said.push_back(absl::StrCat("left ", point, " mounted: ", fd.status().message(),
                                  " beneath ", root, "; see what is mounted there, and unmount it "
                                  "yourself if it is the judge's"));
      continue;
    }
    absl::StatusOr<uint64_t> opened = MountIdOf(fd->get());
    if (!opened.ok() || *opened != id) {
      said.push_back(absl::StrCat(
          "left ", point, " mounted: ",
          opened.ok() ? absl::StrCat("it opens on mount ", *opened, ", not on mount ", id,
                                     " that /proc/self/mountinfo lists there (the path changed "
                                     "since it was read)")
                      : std::string(opened.status().message()),
          "; see what is mounted there, and unmount it yourself if it is the judge's"));
      continue;
    }
    // Through the descriptor: /proc/self/fd/N leads to the mount opened and checked, without a
    // path being resolved again. The descriptor itself keeps the mount busy: detached then.
    const std::string by_fd = FdPath(fd->get());
    if (umount2(by_fd.c_str(), 0) != 0 && umount2(by_fd.c_str(), MNT_DETACH) != 0) {
      said.push_back(absl::StrCat("could not unmount ", point, ": ", strerror(errno)));
    } else if (!bind_of_root) {
      said.push_back(absl::StrCat("the judge left ", point, " mounted: unmounted"));
    }
  }
  return said;
}

absl::StatusOr<std::unique_ptr<Sandbox>> Sandbox::Enter(const std::string& root_dir) {
  if (absl::Status s = MakeDirs(root_dir, 0750); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("sandbox: ", s.message()));
  }
  char resolved[PATH_MAX];
  if (realpath(root_dir.c_str(), resolved) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("sandbox: realpath --root-dir ", root_dir, ": ", strerror(errno)));
  }
  const std::string root = resolved;
  std::set<std::string> mounts_before;
  for (const std::string& point : MountPoints()) {
    if (Under(point, root)) mounts_before.insert(point);
  }
  const std::set<std::string> loops_before = LoopsInLayout(root);
  // The root a mount point of its own, shared with the host (mount --bind R R;
  // mount --make-rshared R), unless it is one already.
  if (!mounts_before.count(root)) {
    if (absl::Status s = hostutil::BindMount(root, root); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("sandbox: ", s.message()));
    }
  }
  if (mount(nullptr, root.c_str(), nullptr, MS_SHARED | MS_REC, nullptr) != 0) {
    const int err = errno;
    if (!mounts_before.count(root)) umount2(root.c_str(), 0);
    return absl::InternalError(
        absl::StrCat("sandbox: mount --make-rshared ", root, ": ", strerror(err)));
  }
  // The root directory as the cleaner will see it: opened after the bind mount (a descriptor
  // opened before it would lead beneath the directory under the bind mount, where nothing the
  // judge mounts is seen).
  absl::StatusOr<UniqueFd> root_fd = OpenNoSymlinks(root, O_PATH | O_DIRECTORY);
  if (!root_fd.ok()) {
    if (!mounts_before.count(root)) umount2(root.c_str(), 0);
    return absl::Status(root_fd.status().code(),
                        absl::StrCat("sandbox: ", root_fd.status().message()));
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    const int err = errno;
    if (!mounts_before.count(root)) umount2(root.c_str(), 0);
    return absl::InternalError(absl::StrCat("sandbox: pipe: ", strerror(err)));
  }
  const pid_t cleaner = fork();
  if (cleaner < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    if (!mounts_before.count(root)) umount2(root.c_str(), 0);
    return absl::InternalError(absl::StrCat("sandbox: fork: ", strerror(err)));
  }
  if (cleaner == 0) {
    close(fds[1]);
    Clean(fds[0], root_fd->get(), root, mounts_before, loops_before);
  }
  close(fds[0]);
  cleaner_pipe.store(fds[1]);
  hostutil::SetLoopDeviceObserver(TellCleaner);
  std::unique_ptr<Sandbox> sandbox(new Sandbox());
  sandbox->cleaner_ = cleaner;
  sandbox->pipe_ = fds[1];
  // From here on a failure leaves the cleaner to undo the root's bind mount.
  if (unshare(CLONE_NEWNS) != 0) {
    return absl::InternalError(
        absl::StrCat("sandbox: unshare(CLONE_NEWNS): ", strerror(errno)));
  }
  // Every mount but the root's and those below it: a slave of the host's, so that nothing mounted
  // there from here reaches the host. A mount hidden under another at the same path cannot be
  // named, and needs nothing: nothing can be mounted on it from here.
  for (const std::string& point : MountPoints()) {
    if (!Under(point, root)) (void)mount(nullptr, point.c_str(), nullptr, MS_SLAVE, nullptr);
  }
  return sandbox;
}

Sandbox::~Sandbox() {
  hostutil::SetLoopDeviceObserver(nullptr);
  cleaner_pipe.store(-1);
  if (pipe_ >= 0) close(pipe_);
  if (cleaner_ > 0) {
    int status;
    while (waitpid(cleaner_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace ndr::kubelet::sanity
