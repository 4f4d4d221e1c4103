#include "registrar/cpu_limit.h"

#include <errno.h>
#include <string.h>

#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "hostutil/mount.h"

namespace ndr::registrar {
namespace {

std::optional<std::string> ReadWholeFile(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = absl::StrCat("read ", path, ": ", strerror(errno));
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Mount {
  std::string root;         // the path inside the hierarchy that is mounted
  std::string mount_point;  // where
};

// The hierarchy this process's CPU limit lives in.
struct Hierarchy {
  bool v2 = false;
  std::string cgroup;  // the process's cgroup in it, from /proc/self/cgroup
  Mount mount;
};

bool HasOption(absl::string_view options, absl::string_view name) {
  for (absl::string_view option : absl::StrSplit(options, ',')) {
    if (option == name) return true;
  }
  return false;
}

// Finds the v1 cpu hierarchy if one is mounted and the process is in it, else the v2 one.
std::optional<Hierarchy> FindHierarchy(const std::string& root, std::string* error) {
  const std::string cgroup_file = root + "/proc/self/cgroup";
  std::optional<std::string> cgroups = ReadWholeFile(cgroup_file, error);
  if (!cgroups) return std::nullopt;
  std::optional<std::string> v1_path, v2_path;
  for (absl::string_view line : absl::StrSplit(*cgroups, '\n', absl::SkipEmpty())) {
    // hierarchy-ID:controller-list:cgroup-path; the path may itself hold colons.
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3) continue;
    if (fields[0] == "0" && fields[1].empty()) {
      v2_path = std::string(fields[2]);
    } else if (HasOption(fields[1], "cpu")) {
      v1_path = std::string(fields[2]);
    }
  }
  const std::string mountinfo_file = root + "/proc/self/mountinfo";
  std::optional<std::string> mountinfo = ReadWholeFile(mountinfo_file, error);
  if (!mountinfo) return std::nullopt;
  std::optional<Mount> v1_mount, v2_mount;
  for (absl::string_view line : absl::StrSplit(*mountinfo, '\n', absl::SkipEmpty())) {
    // id parent major:minor root mount-point options [optional fields...] - fstype source super
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash + 1 >= fields.size()) continue;  // no fstype: not a line of mountinfo's format
    const absl::string_view fstype = fields[dash + 1];
    Mount mount{hostutil::UnescapeMountinfo(fields[3]), hostutil::UnescapeMountinfo(fields[4])};
    if (fstype == "cgroup" && dash + 3 < fields.size() && HasOption(fields[dash + 3], "cpu") &&
        !v1_mount) {
      v1_mount = mount;
    } else if (fstype == "cgroup2" && !v2_mount) {
      v2_mount = mount;
    }
  }
  if (v1_path && v1_mount) return Hierarchy{false, *v1_path, *v1_mount};
  if (v2_path && v2_mount) return Hierarchy{true, *v2_path, *v2_mount};
  *error = absl::StrCat("no cgroup with the cpu controller: ", cgroup_file, " and ",
                        mountinfo_file, " name neither a cgroup v1 cpu hierarchy nor cgroup v2");
  return std::nullopt;
}

// The limit one cgroup directory sets: cores, nullopt for none, or an error.
std::optional<double> LimitIn(const std::string& dir, bool v2, std::string* file,
                              std::string* error) {
  if (v2) {
    *file = dir + "/cpu.max";
    std::optional<std::string> text = ReadWholeFile(*file, error);
    if (!text) return std::nullopt;
    std::vector<absl::string_view> fields =
        absl::StrSplit(absl::StripAsciiWhitespace(*text), ' ', absl::SkipEmpty());
    double quota = 0, period = 0;
    if (fields.size() == 2 && fields[0] == "max" && absl::SimpleAtod(fields[1], &period)) {
      return std::nullopt;
    }
    if (fields.size() != 2 || !absl::SimpleAtod(fields[0], &quota) ||
        !absl::SimpleAtod(fields[1], &period) || quota <= 0 || period <= 0) {
      *error = absl::StrCat(*file, " holds \"", absl::StripAsciiWhitespace(*text),
                            "\", not \"<quota> <period>\" or \"max <period>\"");
      return std::nullopt;
    }
    return quota / period;
  }
  *file = dir + "/cpu.cfs_quota_us";
  const std::string period_file = dir + "/cpu.cfs_period_us";
  std::optional<std::string> quota_text = ReadWholeFile(*file, error);
  if (!quota_text) return std::nullopt;
  double quota = 0, period = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(*quota_text), &quota)) {
    *error = absl::StrCat(*file, " holds \"", absl::StripAsciiWhitespace(*quota_text),
                          "\", not a number");
    return std::nullopt;
  }
  if (quota < 0) return std::nullopt;  // -1: no limit
  std::optional<std::string> period_text = ReadWholeFile(period_file, error);
  if (!period_text) return std::nullopt;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(*period_text), &period) || period <= 0 ||
      quota == 0) {
    *error = absl::StrCat(*file, " and ", period_file, " hold \"",
                          absl::StripAsciiWhitespace(*quota_text), "\" and \"",
                          absl::StripAsciiWhitespace(*period_text),
                          "\", not a positive quota and period");
    return std::nullopt;
  }
  return quota / period;
}

}  // namespace

CpuLimit ReadCpuLimit(const std::string& root) {
  CpuLimit limit;
  std::optional<Hierarchy> hierarchy = FindHierarchy(root, &limit.error);
  if (!hierarchy) return limit;
  // The cgroup as a path below the mount: kubelet's containers see their own cgroup as "/" (a
  // cgroup namespace, mount root "/"), or the full path with the same root mounted.
  absl::string_view relative = hierarchy->cgroup;
  const std::string& mount_root = hierarchy->mount.root;
  if (mount_root != "/") {
    if (!absl::ConsumePrefix(&relative, mount_root) ||
        (!relative.empty() && relative.front() != '/')) {
      limit.error = absl::StrCat("this process's cgroup ", hierarchy->cgroup,
                                 " is not below the mounted part of its hierarchy (",
                                 mount_root, " at ", hierarchy->mount.mount_point, ")");
      return limit;
    }
  }
  if (absl::StrContains(relative, "/../") || absl::EndsWith(relative, "/..")) {
    limit.error = absl::StrCat("this process's cgroup ", hierarchy->cgroup, " is not a plain path");
    return limit;
  }
  const std::string top = root + hierarchy->mount.mount_point;
  std::string dir = top + std::string(absl::StripSuffix(relative, "/"));
  limit.state = CpuLimit::State::kUnlimited;
  bool leaf = true;
  while (true) {
    std::string file, error;
    std::optional<double> cores = LimitIn(dir, hierarchy->v2, &file, &error);
    if (!error.empty()) {
      // The process's own cgroup must be readable; an ancestor that is not (not every runtime
      // mounts them) only ends the walk.
      if (leaf) {
        limit = CpuLimit{};
        limit.error = error;
        return limit;
      }
      break;
    }
    if (leaf) limit.file = file;
    if (cores && (limit.state != CpuLimit::State::kLimited || *cores < limit.cores)) {
      limit.state = CpuLimit::State::kLimited;
      limit.cores = *cores;
      limit.file = file;
    }
    leaf = false;
    if (dir.size() <= top.size()) break;
    dir = dir.substr(0, dir.find_last_of('/'));
    if (dir.size() < top.size()) break;
  }
  return limit;
}

int ThreadsForCores(double cores) {
  const double whole = std::floor(cores);
  return whole < 1 ? 1 : static_cast<int>(whole);
}

}  // namespace ndr::registrar
