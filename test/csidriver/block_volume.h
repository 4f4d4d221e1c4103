// What the sample driver keeps in its data directory for raw block volumes: one disk image per
// volume (`<data dir>/<ImageFileName(volume id)>`), and the index of the block targets it
// published (`<data dir>/published-block`), which gives NodePublishVolume and
// NodeUnpublishVolume their idempotency across restarts, as the marker file inside a target
// directory does for mount volumes (a block target is a device file: nothing can be put in it).
//
// These are plain functions over files; the caller (NodeService) serializes them. Errors name
// the path and the system call.
#ifndef NDR_TEST_CSIDRIVER_BLOCK_VOLUME_H_
#define NDR_TEST_CSIDRIVER_BLOCK_VOLUME_H_

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ndr::sample {

inline constexpr char kBlockIndexFile[] = "published-block";
inline constexpr off_t kImageSize = 1 << 20;  // 1 MiB, sparse
// The longest volume ID of a block volume: the CSI spec's size limit for strings. The ID names
// the volume's disk image.
inline constexpr size_t kMaxBlockVolumeIdBytes = 128;

// The file name of `volume_id`'s disk image, always "<name>.img", and never containing '/':
//   - the ID itself when it is made of [A-Za-z0-9._-] and does not start with 'x';
//   - else "x" + the ID in unpadded base64url (RFC 4648 section 5), at most 176 bytes in all.
// So two IDs never share an image: only the encoded form starts with 'x' (a plain ID that does
// is encoded), and both forms are one-to-one. An ID longer than kMaxBlockVolumeIdBytes is
// INVALID_ARGUMENT.
absl::StatusOr<std::string> ImageFileName(const std::string& volume_id);

// Creates the directory `dir` (mode 0700) unless it already is one.
absl::Status EnsureDataDir(const std::string& dir);

// Makes sure the disk image at `path` exists: a regular file of at least kImageSize bytes,
// created sparse with mode 0600. An existing image keeps its contents; a shorter one (a create
// interrupted before it was sized) is extended. A symlink or anything else at `path` is
// FAILED_PRECONDITION.
absl::Status EnsureImage(const std::string& path);

// Block target path -> fingerprint of what was published there (see sample_driver.cc
// Fingerprint(): volume ID, readonly, capability, volume_context; never secrets).
using BlockIndex = std::map<std::string, std::string>;

// Reads the index at `path`: one line per target, CEscape(target) TAB CEscape(fingerprint). A
// missing file is an empty index; a malformed line is DATA_LOSS naming the file and line.
absl::StatusOr<BlockIndex> ReadBlockIndex(const std::string& path);

// Replaces the index at `path` with `index` atomically: written and synced to `path`.tmp, then
// renamed over it. The caller serializes writers.
absl::Status WriteBlockIndex(const std::string& path, const BlockIndex& index);

}  // namespace ndr::sample

#endif  // NDR_TEST_CSIDRIVER_BLOCK_VOLUME_H_
