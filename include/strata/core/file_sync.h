// fsync(2) / fdatasync(2) of a file through core's fault-injection seam, so a
// power-loss simulation (core/fault_injection.h) knows what is durable. Every
// writer whose durability is tested syncs through these.
#pragma once

#include <string_view>

#include <strata/core/status.h>

namespace strata {

// fsync(2); IOError "fsync <what>: ..." on failure.
Status SyncFile(int fd, std::string_view what);
// fdatasync(2); IOError "fdatasync <what>: ..." on failure.
Status SyncFileData(int fd, std::string_view what);

}  // namespace strata
