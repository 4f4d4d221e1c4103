// Whole files, read and written the way kubeletclient needs them: written atomically, because
// other processes read what it writes (the node status file, vol_data.json); read with a bound,
// because what it reads (object files, vol_data.json) may be hostile. Thread-safe.
#ifndef NDR_KUBELETCLIENT_UTIL_FILES_H_
#define NDR_KUBELETCLIENT_UTIL_FILES_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"

namespace ndr::kubelet {

// Writes `contents` to `path` through a temporary file in the same directory and rename(2), so a
// reader sees the old or the new file, never a partial one.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents);

// mkdir -p: creates `path` and its missing parents with `mode` (less the umask), as Go's
// os.MkdirAll; directories that exist are fine.
absl::Status MakeDirs(const std::string& path, mode_t mode);

// os.RemoveAll: `path` and everything below it, symbolic links removed, never followed; a
// missing path is fine. Errors name the first path that could not be removed.
absl::Status RemoveAll(const std::string& path);

// Reads the whole file at `path` into `contents`: NotFound if it does not exist, InvalidArgument
// if it is not a regular file or holds more than `max_bytes`, naming the path either way.
absl::Status ReadFileUpTo(const std::string& path, size_t max_bytes, std::string* contents);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_UTIL_FILES_H_
