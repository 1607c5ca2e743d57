// The RocksDB Env every RocksDB database in Strata opens with (the object
// engine's metadata, the feature store's online store): RocksDB's writable
// files go through core's file-fault seam (core/fault_injection.h), so tests
// can fail their appends (ENOSPC, EIO, short writes) and syncs (EIO), and a
// power-loss image drops what RocksDB had not synced. Disarmed, an append or
// a sync pays a relaxed atomic load, and each new file one more descriptor.
// Process-wide and never destroyed (RocksDB keeps Env pointers in its
// options); thread-safe.
#pragma once

namespace rocksdb {
class Env;
}

namespace strata::objstore {

rocksdb::Env* FileSeamRocksDbEnv();

}  // namespace strata::objstore
