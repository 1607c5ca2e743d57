// Private to objstore: a RocksDB Env whose writable files go through core's
// file-fault seam (core/fault_injection.h): they report to the power-loss
// tracking, so a crash image of an engine's directory drops what RocksDB had
// not synced, and their Sync/Fsync can be made to fail (injected EIO). The
// engine always opens its metadata store with it, so tests see the
// production path; disarmed, each append or sync pays a relaxed load (and
// each new file a second descriptor, for its inode).
#pragma once

namespace rocksdb {
class Env;
}

namespace strata::objstore::internal {

// Process-wide, never destroyed (RocksDB keeps Env pointers in its options).
rocksdb::Env* CrashTrackingEnv();

}  // namespace strata::objstore::internal
