// Which build of this project a program is: its version, the commit it was built from and the
// date of that commit, stamped in at link time from version/describe.sh through Bazel's
// workspace status (version/workspace_status.sh, version/stamp.sh).
//
// The version is semver: "1.0.0" for a build of the commit tagged v1.0.0 with nothing changed,
// "1.0.0-dev+<12 hex digits of the commit>" (".dirty" added when files were changed) otherwise,
// where 1.0.0 is the VERSION file's. The date is SOURCE_DATE_EPOCH's, by default the commit's
// time, never the time of the build: two builds of one commit are the same bytes.
//
// Every program answers --version with VersionText(). Thread-safe (constants).
#ifndef NDR_VERSION_VERSION_H_
#define NDR_VERSION_VERSION_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ndr::version {

absl::string_view Version();    // e.g. "1.0.0"
absl::string_view Commit();     // 40 hex digits, or "unknown" (built outside a git checkout)
absl::string_view BuildDate();  // RFC 3339, UTC: "2026-11-26T02:51:53Z"

// What `program --version` prints:
//
//   <program> <version>
//   commit: <commit>
//   built: <date>
//
// then each of `more` on a line of its own.
std::string VersionText(absl::string_view program, const std::vector<std::string>& more = {});

// Whether the command line asks for the version: --version or -version (Go's flag package takes
// both), before any "--" that ends the flags.
bool VersionRequested(int argc, char** argv);

}  // namespace ndr::version

#endif  // NDR_VERSION_VERSION_H_
