// Private to the collection layer: one segment of a collection.
//
// A segment is a set of rows (point id, version, payload, one optional vector
// per vector field) with a delete bitmap, one Index per vector field whose ids
// are row offsets, and payload indexes over its rows. The growing segment
// appends rows to FLAT indexes; a sealed segment is immutable except for its
// delete bitmap and is backed by a .dat file (mmapped: raw vectors, ids,
// versions, payloads) plus one saved index per field.
//
// .dat layout (little endian): a 64-byte header ("STRSEG01", version, field
// count, rows, meta offset/length/crc32c); per field a presence bitmap and a
// rows x dim float32 matrix (64-byte aligned, zeros where a row has no
// vector); then the meta section: field table (name, dim, offsets, crc32c of
// the field's bytes), ids, versions, payload lengths and payload bytes, and
// (when the schema has sparse fields) the sparse section: "SPV1", the field
// count, per field its name and SparseColumn::Encode of the rows. Files
// without the section (written before sparse fields existed) have none.
//
// Not thread-safe by itself: the collection's reader/writer lock guards the
// mutable parts (rows of the growing segment, delete bitmaps, index swaps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <strata/core/result.h>
#include <strata/core/status.h>
#include <strata/vector/filter.h>
#include <strata/vector/index.h>
#include <strata/vector/schema.h>

#include "vector/payload_index.h"
#include "vector/sparse_index.h"

namespace strata::vector::internal {

// A read-only mapping of a segment's .dat file.
class SegmentFile {
 public:
  static Result<std::shared_ptr<SegmentFile>> Open(const std::string& path);
  ~SegmentFile();
  SegmentFile(const SegmentFile&) = delete;
  SegmentFile& operator=(const SegmentFile&) = delete;

  struct Field {
    std::string name;
    uint32_t dim = 0;
    const uint64_t* present = nullptr;  // bitmap over rows
    const float* vectors = nullptr;     // rows x dim
    uint64_t bytes_offset = 0, bytes_len = 0;
    uint32_t crc = 0;
  };
  const std::string& path() const { return path_; }
  uint64_t rows() const { return rows_; }
  const std::vector<Field>& fields() const { return fields_; }
  size_t size() const { return size_; }
  // Checks a field's crc (reads all its bytes).
  Status VerifyField(size_t f) const;

  // The rest of the file, decoded by Open.
  std::vector<PointId> ids;
  std::vector<uint64_t> versions;
  std::vector<std::string> payloads;
  std::vector<std::pair<std::string, SparseColumn>> sparse;  // by field name

 private:
  SegmentFile() = default;
  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  uint64_t rows_ = 0;
  std::vector<Field> fields_;
};

struct SegmentField {
  std::unique_ptr<Index> index;  // ids = rows; nullptr until a row has this vector
  bool built = false;            // the configured index type (not the FLAT stand-in)
};

class Segment {
 public:
  uint64_t id = 0;
  bool persisted = false;      // backed by `file`
  uint64_t wal_first_seq = 0;  // not persisted: the first WAL file holding its rows
  std::vector<PointId> ids;
  std::vector<uint64_t> versions;
  std::vector<std::string> payloads;  // JSON object text, "" for none
  RowSet deleted;                     // universe == rows()
  size_t live = 0;
  std::vector<SegmentField> fields;  // one per schema vector field
  std::vector<SparseColumn> sparse;  // one per schema sparse field
  std::map<std::string, std::unique_ptr<PayloadFieldIndex>, std::less<>> payload_indexes;
  std::shared_ptr<SegmentFile> file;
  // Index build in the background failed (kept FLAT); not retried until reopen.
  bool index_failed = false;

  size_t rows() const { return ids.size(); }
  bool IsLive(uint32_t r) const { return r < ids.size() && !deleted.Test(r); }
  bool AllBuilt() const;
  // Copies row `row`'s vector of field f into out (dim floats); false if none.
  bool GetVector(size_t f, uint32_t row, float* out) const;
  size_t MemoryBytes() const;
  // Marks a row deleted; returns false if it already was.
  bool Delete(uint32_t r);
};

// Writes `seg` (rows, vectors from `vec`) to `path` through a temporary file,
// fsynced and renamed. vec(field, row, out) fills dim floats or returns false.
Status WriteSegmentFile(const std::string& path, const Segment& seg, const CollectionSchema& schema,
                        const std::function<bool(size_t, uint32_t, float*)>& vec);

}  // namespace strata::vector::internal
