#include "kubeletclient/volumeutil/selinux.h"

#include <sys/vfs.h>

#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "api/go_quote.h"

namespace ndr::kubelet {
namespace {

constexpr long kSeLinuxMagic = 0xf97cff8c;  // linux/magic.h SELINUX_MAGIC
constexpr unsigned kCategoryRange = 1024;   // go-selinux CategoryRange

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// go-selinux's lxc_contexts reader: the value of `file = "..."`, or "" when there is none.
std::string ContainerFileContext() {
  std::string type = "targeted";
  for (absl::string_view line : absl::StrSplit(ReadAll("/etc/selinux/config"), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "SELINUXTYPE=")) type = std::string(line);
  }
  const std::string contexts = ReadAll("/etc/selinux/" + type + "/contexts/lxc_contexts");
  for (absl::string_view line : absl::StrSplit(contexts, '\n')) {
    std::vector<absl::string_view> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || absl::StripAsciiWhitespace(kv[0]) != "file") continue;
    absl::string_view value = absl::StripAsciiWhitespace(kv[1]);
    absl::ConsumePrefix(&value, "\"");
    absl::ConsumeSuffix(&value, "\"");
    if (std::count(value.begin(), value.end(), ':') >= 3) return std::string(value);
  }
  return "";
}

// go-selinux uniqMcs: two different categories, the smaller first.
std::string RandomMcsLevel() {
  std::random_device random;
  unsigned c1, c2;
  do {
    c1 = random() % kCategoryRange;
    c2 = random() % kCategoryRange;
  } while (c1 == c2);
  if (c1 > c2) std::swap(c1, c2);
  return absl::StrCat("s0:c", c1, ",c", c2);
}

}  // namespace

absl::StatusOr<SeLinuxHost> ResolveHostSeLinux(const std::string& mode) {
  SeLinuxHost host;
  if (mode == "true" || mode == "false") {
    host.enabled = mode == "true";
    host.source = "--host-selinux=" + mode;
    return host;
  }
  if (mode != "auto") {
    return absl::InvalidArgumentError(absl::StrCat("--host-selinux: ", GoQuote(mode),
                                                   " is not true, false or auto"));
  }
  struct statfs fs;
  const bool selinuxfs = statfs("/sys/fs/selinux", &fs) == 0 && fs.f_type == kSeLinuxMagic;
  const std::string label = ReadAll("/proc/self/attr/current");
  host.enabled = selinuxfs && !label.empty() && label.rfind("kernel", 0) != 0;
  host.source = host.enabled ? "--host-selinux=auto: selinuxfs is mounted"
                             : "--host-selinux=auto: this host has no SELinux";
  if (host.enabled) {
    if (std::string file = ContainerFileContext(); !file.empty()) host.file_context = file;
  }
  return host;
}

std::string SeLinuxOptionsToFileLabel(const std::optional<SeLinuxOptions>& options,
                                      const SeLinuxHost& host) {
  // contextOptions: no part set means no label at all.
  if (!options.has_value() || (options->user.empty() && options->role.empty() &&
                               options->type.empty() && options->level.empty())) {
    return "";
  }
  // label.InitLabels: the file (mount) label takes only "user" and "level" from the options;
  // its level is otherwise a fresh MCS pair.
  std::vector<std::string> parts = absl::StrSplit(host.file_context, absl::MaxSplits(':', 3));
  parts.resize(4);
  if (!options->user.empty()) parts[0] = options->user;
  parts[3] = options->level.empty() ? RandomMcsLevel() : options->level;
  return absl::StrCat(parts[0], ":", parts[1], ":", parts[2], ":", parts[3]);
}

bool VolumeSupportsSeLinuxMount(const FeatureGates& gates, bool persistent_volume,
                                const std::vector<std::string>& access_modes) {
  if (!gates.selinux_mount_read_write_once_pod || !persistent_volume) return false;
  if (gates.selinux_mount) return true;
  return gates.read_write_once_pod && access_modes.size() == 1 &&
         access_modes[0] == "ReadWriteOncePod";
}

std::vector<std::string> AddSeLinuxMountOption(std::vector<std::string> options,
                                               const std::string& label) {
  // Double quotes let the label hold the ',' of an MCS level.
  options.push_back("context=" + GoQuote(label));
  return options;
}

}  // namespace ndr::kubelet
