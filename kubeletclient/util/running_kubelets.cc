#include "kubeletclient/util/running_kubelets.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "kubeletclient/util/files.h"

namespace ndr::kubelet {
namespace {

// A command line is at most ARG_MAX long; /proc shows at most a page of it on older kernels.
constexpr size_t kMaxCmdline = 2 * 1024 * 1024;

// The path with symbolic links resolved, as far as it exists; "." and ".." and repeated slashes of
// the rest taken out lexically. An absolute path always (relative ones are taken from "/").
std::string Canonical(const std::string& path) {
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.emplace_back(part);
  }
  // The longest existing prefix, resolved; the rest appended.
  for (size_t keep = parts.size();; --keep) {
    std::string prefix = "/" + absl::StrJoin(parts.begin(), parts.begin() + keep, "/");
    char resolved[PATH_MAX];
    if (realpath(prefix.c_str(), resolved) != nullptr) {
      std::string out = resolved;
      for (size_t i = keep; i < parts.size(); ++i) {
        absl::StrAppend(&out, out == "/" ? "" : "/", parts[i]);
      }
      return out;
    }
    if (keep == 0) return prefix;
  }
}

// `inner` is `outer` or below it.
bool Within(const std::string& inner, const std::string& outer) {
  return inner == outer || outer == "/" || absl::StartsWith(inner, outer + "/");
}

}  // namespace

std::vector<RunningKubelet> RunningKubelets(const std::string& proc) {
  std::vector<RunningKubelet> kubelets;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(proc.c_str()), closedir);
  if (dir == nullptr) return kubelets;
  while (struct dirent* entry = readdir(dir.get())) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || pid <= 0) continue;
    const std::string base = absl::StrCat(proc, "/", entry->d_name);
    std::string comm, cmdline;
    if (!ReadFileUpTo(base + "/comm", 64, &comm).ok() ||
        absl::StripTrailingAsciiWhitespace(comm) != "kubelet" ||
        !ReadFileUpTo(base + "/cmdline", kMaxCmdline, &cmdline).ok()) {
      continue;
    }
    RunningKubelet kubelet;
    kubelet.pid = pid;
    kubelet.root_dir = kKubeletDefaultRootDir;
    // Go's flag parsing (pflag): --root-dir=X or --root-dir X, the last one given wins.
    const std::vector<std::string> args = absl::StrSplit(cmdline, '\0', absl::SkipEmpty());
    for (size_t i = 1; i < args.size(); ++i) {
      absl::string_view arg = args[i];
      if (arg == "--") break;
      if (!absl::ConsumePrefix(&arg, "--root-dir") && !absl::ConsumePrefix(&arg, "-root-dir")) {
        continue;
      }
      if (absl::ConsumePrefix(&arg, "=")) {
        kubelet.root_dir = std::string(arg);
      } else if (arg.empty() && i + 1 < args.size()) {
        kubelet.root_dir = args[++i];
      }
    }
    kubelets.push_back(kubelet);
  }
  return kubelets;
}

absl::Status NotAKubeletsRootDir(const std::string& root_dir, const std::string& proc) {
  const std::string ours = Canonical(root_dir);
  for (const RunningKubelet& kubelet : RunningKubelets(proc)) {
    const std::string theirs = Canonical(kubelet.root_dir);
    if (Within(ours, theirs) || Within(theirs, ours)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--root-dir=", root_dir, ": the kubelet running as pid ", kubelet.pid,
          " uses the root directory ", kubelet.root_dir,
          ours == theirs ? "" : (Within(ours, theirs) ? ", which holds it" : ", which lies in it"),
          "; the judge would publish its made-up pods among that kubelet's volumes, and that "
          "kubelet would take them for orphans: give a directory of the judge's own, e.g. "
          "--root-dir=/tmp/kubeletclient-sanity"));
    }
  }
  return absl::OkStatus();
}

}  // namespace ndr::kubelet
