// What a judge's root directory holds before the judge starts.
//
// A judge takes everything under its root directory for its own work: a staging directory or a
// volume file there is what its own checks made. So it must start from a root directory that
// holds nothing of an earlier run, or the checks that meet such a leftover cannot be carried out
// (and a run that skipped them could end "0 failed"). A run that tore everything down leaves only
// empty directories (kubelet's layout: pods/, plugins/kubernetes.io/csi/...); anything else was
// left by a run whose teardown failed, or was put there by someone else.
//
// FindLeftovers walks the tree without following symbolic links and without going into mount
// points; the names it reports come from the directory, which anyone may have written, and are
// escaped for printing. Thread-compatible.
#ifndef NDR_KUBELETCLIENT_SANITY_ROOT_DIR_H_
#define NDR_KUBELETCLIENT_SANITY_ROOT_DIR_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ndr::kubelet::sanity {

struct Leftovers {
  // The first `limit` found, each "<kind> <path>": "file ...", "mount point ...", "socket ...".
  std::vector<std::string> named;
  size_t total = 0;  // how many there are in all
};

// The mount points below `dir` (not `dir` itself), from `mountinfo` (/proc/self/mountinfo's
// format).
std::vector<std::string> MountsUnder(const std::string& dir,
                                     const std::string& mountinfo = "/proc/self/mountinfo");

// Every entry below `root` that is not a directory, and every mount point below it (from
// `mountinfo`, /proc/self/mountinfo's format), the root itself excepted. A root that does not
// exist holds nothing. An error only when the tree cannot be read (say, a directory without
// permission), naming the path.
absl::StatusOr<Leftovers> FindLeftovers(const std::string& root,
                                        const std::string& mountinfo = "/proc/self/mountinfo",
                                        size_t limit = 10);

// The judge's refusal of a root directory that holds leftovers: what is there, and what to do.
std::string LeftoversRefusal(const std::string& root, const Leftovers& leftovers);

}  // namespace ndr::kubelet::sanity

#endif  // NDR_KUBELETCLIENT_SANITY_ROOT_DIR_H_
