// Private to objstore: a RocksDB Env whose writable files report to core's
// power-loss tracking (core/fault_injection.h), so a crash image of an
// engine's directory drops what RocksDB had not synced. The engine opens its
// metadata store with it only while a test tracks un-synced writes.
#pragma once

namespace rocksdb {
class Env;
}

namespace strata::objstore::internal {

// Process-wide, never destroyed (RocksDB keeps Env pointers in its options).
rocksdb::Env* CrashTrackingEnv();

}  // namespace strata::objstore::internal
