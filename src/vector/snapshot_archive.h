// Private to the vector component: a collection snapshot directory as one
// file, for download and upload. The format is POSIX ustar (readable by
// `tar -tf`): regular files and directories only, paths relative to the
// snapshot directory, at most 100 bytes each.
#pragma once

#include <cstdint>
#include <string>

#include <strata/core/status.h>

namespace strata::vector::internal {

// Writes every file under `dir` into the archive `out` (through a temporary
// file, fsynced and renamed).
Status WriteSnapshotArchive(const std::string& dir, const std::string& out);

// Extracts the archive bytes [offset, offset + length) of `path` into `dest`
// (created; must not exist). Absolute paths, "..", links and other special
// entries are refused with kInvalidArgument; a truncated or damaged archive is
// kCorruption. On error `dest` is removed.
Status ExtractSnapshotArchive(const std::string& path, uint64_t offset, uint64_t length,
                              const std::string& dest);

}  // namespace strata::vector::internal
