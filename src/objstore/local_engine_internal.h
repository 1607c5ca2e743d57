// Test and diagnostics hooks into LocalEngine that are not part of the public contract.
#pragma once

#include <cstdint>
#include <string>

#include <strata/objstore/local_engine.h>

namespace strata::objstore::internal {

// RocksDB iterator positionings (Seek + Next) made by ListObjects since Open.
// Lets tests check that a listing page costs O(page), not O(bucket).
uint64_t ListIteratorSteps(LocalEngine& engine);

// Path of the data file holding the first file-backed piece of an object ("" if
// the object is inline or missing). For corruption tests.
std::string FirstDataFilePath(LocalEngine& engine, std::string_view bucket,
                              std::string_view key);

// Puts a garbage (intent) record for a data file id given as 32 hex chars, as a
// crash between "file written" and "commit" leaves behind. For orphan tests.
Status AddGarbageRecordForTest(LocalEngine& engine, std::string_view file_id_hex);

// Number of body records (small bodies kept in RocksDB's "inline" column family).
// For leak checks.
uint64_t CountBodyRecordsForTest(LocalEngine& engine);

// Path a data file with this id (32 hex chars) would have.
std::string DataFilePathForTest(LocalEngine& engine, std::string_view file_id_hex);

}  // namespace strata::objstore::internal
