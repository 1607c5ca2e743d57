// Reading and writing tables in files: local paths or object-store URLs
// (s3://bucket/key?endpoint=..., mem://name/key, opened through
// strata::objstore::OpenObjectStore), Parquet or CSV.
//
// BatchReader streams a file: Parquet one row group at a time, so memory stays
// bounded by a row group; CSV whole (CSV sources are small by nature). Not
// thread-safe; one reader per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <strata/core/result.h>
#include <strata/features/csv.h>
#include <strata/features/parquet.h>
#include <strata/features/table.h>

namespace strata::features {

enum class FileFormat { kParquet, kCsv };

// ".csv" (before any "?query") is CSV, anything else Parquet.
FileFormat FormatFromPath(const std::string& path_or_url);
bool IsUrl(const std::string& path_or_url);

// Random access to a local file or an object.
Result<std::unique_ptr<RandomAccessSource>> OpenSourceFile(const std::string& path_or_url);

class BatchReader {
 public:
  static Result<std::unique_ptr<BatchReader>> Open(const std::string& path_or_url, FileFormat format,
                                                   const std::vector<std::string>& columns = {},
                                                   const CsvReadOptions& csv = {});
  virtual ~BatchReader() = default;
  // The projected schema.
  virtual const Schema& schema() const = 0;
  // Rows in the file (-1 when unknown before reading).
  virtual int64_t num_rows() const = 0;
  // Decoded bytes of the projected columns, estimated from metadata.
  virtual int64_t estimated_bytes() const = 0;
  // The next batch into *out; false when there is none left.
  virtual Result<bool> Next(Table* out) = 0;
};

Result<Schema> ReadSourceSchema(const std::string& path_or_url, FileFormat format);
Result<Table> ReadTableFile(const std::string& path_or_url, const std::vector<std::string>& columns = {},
                            const CsvReadOptions& csv = {});
// Parquet (ZSTD, the given options) or CSV by the name's extension; local
// files appear whole or not at all, objects with one PUT.
Status WriteTableFile(const std::string& path_or_url, const Table& table, const ParquetWriteOptions& options = {});

}  // namespace strata::features
