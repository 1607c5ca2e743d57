// Parquet files without Arrow: a reader for flat schemas and a writer.
//
// Reader: PLAIN, PLAIN_DICTIONARY/RLE_DICTIONARY, RLE and BIT_PACKED levels,
// DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY,
// BYTE_STREAM_SPLIT; v1 and v2 data pages; UNCOMPRESSED, SNAPPY, GZIP, ZSTD,
// LZ4_RAW and legacy LZ4. Types map to Table types as DuckDB maps them:
// strings (UTF8/STRING/ENUM/JSON) to kString, other byte arrays to kBinary,
// TIMESTAMP(unit) to kTimestamp(unit), INT96 to kTimestamp(us), DATE to kDate,
// DECIMAL to kDouble, FLOAT16 to kFloat, UINT_32 to kInt64. Nested columns are
// refused with NotSupported; malformed files give Corruption naming the column
// and what was wrong, never a crash. A reader reads one row group at a time, so
// memory is bounded by the largest row group read.
//
// Writer: PLAIN or dictionary (RLE_DICTIONARY) values, RLE definition levels,
// v1 or v2 data pages, min/max/null-count statistics, several row groups. It
// writes to "<path>.tmp-<pid>" and renames on Close: a failed write leaves no
// file behind.
//
// Neither class is thread-safe; use one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <strata/core/result.h>
#include <strata/features/table.h>

namespace strata::features {

// Random access to the bytes of a file.
class RandomAccessSource {
 public:
  virtual ~RandomAccessSource() = default;
  virtual uint64_t size() const = 0;
  // Exactly n bytes at offset (IOError/Corruption when fewer exist).
  virtual Status ReadAt(uint64_t offset, size_t n, std::string* out) = 0;
  // For error messages: the path or URL.
  virtual const std::string& name() const = 0;
};

Result<std::unique_ptr<RandomAccessSource>> OpenLocalFile(const std::string& path);
std::unique_ptr<RandomAccessSource> OpenMemorySource(std::string bytes, std::string name);

struct ParquetReadOptions {
  // Check page CRC32s where the writer stored them (Arrow and DuckDB do not by
  // default; a mismatch is kCorruption naming the file, column and byte).
  bool verify_checksums = true;
  // A row group declaring more rows is refused before anything is allocated.
  int64_t max_row_group_rows = int64_t{1} << 31;
};

// What the footer says about one column chunk.
struct ParquetChunkInfo {
  std::string codec;                   // "ZSTD"
  std::vector<std::string> encodings;  // {"PLAIN", "RLE"}
  int64_t num_values = 0;
  int64_t compressed_bytes = 0, uncompressed_bytes = 0;
  std::optional<int64_t> null_count;
  // Statistics as stored (PLAIN-encoded bytes); min_value/max_value, or the legacy fields.
  std::optional<std::string> min, max;
  bool has_dictionary_page = false;
};

struct ParquetRowGroupInfo {
  int64_t num_rows = 0;
  std::vector<ParquetChunkInfo> columns;
};

struct ParquetColumnInfo {
  std::string physical;  // "INT64"
  std::string logical;   // "TIMESTAMP(MICROS,utc=false)", "STRING", "" ...
};

class ParquetReader {
 public:
  static Result<std::unique_ptr<ParquetReader>> Open(std::unique_ptr<RandomAccessSource> source,
                                                     ParquetReadOptions options = {});
  static Result<std::unique_ptr<ParquetReader>> OpenFile(const std::string& path,
                                                         ParquetReadOptions options = {});
  ~ParquetReader();

  const Schema& schema() const;
  const std::vector<ParquetColumnInfo>& column_info() const;
  int64_t num_rows() const;
  int num_row_groups() const;
  const ParquetRowGroupInfo& row_group(int i) const;
  const std::string& created_by() const;

  // Indices of the named columns (NotFound names the missing one).
  Result<std::vector<int>> ColumnIndices(const std::vector<std::string>& names) const;
  // One row group; `columns` are schema indices, empty = all.
  Result<Table> ReadRowGroup(int i, const std::vector<int>& columns = {});
  // Every row group concatenated.
  Result<Table> ReadAll(const std::vector<int>& columns = {});

 private:
  struct Impl;
  explicit ParquetReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Reads a whole local file (all columns, or the named ones).
Result<Table> ReadParquetFile(const std::string& path, const std::vector<std::string>& columns = {});

enum class ParquetCodec { kUncompressed, kSnappy, kGzip, kZstd, kLz4Raw };
// "zstd", "snappy", "gzip", "none"/"uncompressed", "lz4_raw".
Result<ParquetCodec> ParseParquetCodec(std::string_view name);

struct ParquetWriteOptions {
  ParquetCodec codec = ParquetCodec::kZstd;
  int compression_level = 0;  // 0: the codec's default (ZSTD 3, GZIP 6)
  // kAuto dictionary-encodes strings and binaries; kAlways every type. A
  // column chunk falls back to PLAIN when its dictionary would exceed
  // max_dictionary_bytes or max_dictionary_entries.
  enum class Dictionary { kAuto, kAlways, kNever };
  Dictionary dictionary = Dictionary::kAuto;
  size_t max_dictionary_bytes = 1 << 20;
  size_t max_dictionary_entries = 1 << 16;
  int data_page_version = 1;               // 1 or 2
  int64_t row_group_rows = 1 << 20;        // rows per row group
  size_t page_bytes = 1 << 20;             // target uncompressed bytes per data page
  bool statistics = true;                  // min/max/null_count per chunk
  bool page_checksums = true;              // CRC32 in each page header
  std::string created_by = "strata version 0.1.0";
  std::vector<std::pair<std::string, std::string>> key_value_metadata;
};

class ParquetWriter {
 public:
  // Local path; the file appears only when Close succeeds.
  static Result<std::unique_ptr<ParquetWriter>> Open(const std::string& path, Schema schema,
                                                     ParquetWriteOptions options = {});
  // In memory; Close() then take the bytes with TakeBuffer().
  static std::unique_ptr<ParquetWriter> OpenBuffer(Schema schema, ParquetWriteOptions options = {});
  ~ParquetWriter();

  // Buffers rows (same schema as Open's) and writes full row groups as they fill.
  Status Write(const Table& batch);
  // Flushes the last row group, writes the footer, and publishes the file.
  Status Close();
  std::string TakeBuffer();

 private:
  struct Impl;
  explicit ParquetWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

Status WriteParquetFile(const std::string& path, const Table& table,
                        const ParquetWriteOptions& options = {});

}  // namespace strata::features
