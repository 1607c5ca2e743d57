#include <strata/features/io.h>

#include <algorithm>

#include <fmt/format.h>

#include <strata/objstore/object_store.h>

namespace strata::features {

namespace {

// "s3://bucket/a/b.parquet?x=y" -> store "s3://bucket?x=y", key "a/b.parquet".
Status SplitUrl(const std::string& url, std::string* store_url, std::string* key) {
  const size_t scheme_end = url.find("://");
  const size_t q = url.find('?');
  const std::string query = q == std::string::npos ? "" : url.substr(q);
  const std::string body = url.substr(scheme_end + 3, (q == std::string::npos ? url.size() : q) - scheme_end - 3);
  const size_t slash = body.find('/');
  if (slash == std::string::npos || slash + 1 == body.size()) {
    return Status::InvalidArgument(fmt::format("\"{}\" names no object: use {}BUCKET/KEY", url,
                                               url.substr(0, scheme_end + 3)));
  }
  *store_url = url.substr(0, scheme_end + 3) + body.substr(0, slash) + query;
  *key = body.substr(slash + 1);
  return Status::Ok();
}

class ObjectSource final : public RandomAccessSource {
 public:
  ObjectSource(std::unique_ptr<objstore::ObjectStore> store, std::string key, uint64_t size, std::string name)
      : store_(std::move(store)), key_(std::move(key)), size_(size), name_(std::move(name)) {}
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }
  Status ReadAt(uint64_t offset, size_t n, std::string* out) override {
    if (offset > size_ || n > size_ - offset) {
      return Status::Corruption(fmt::format("{}: read of {} bytes at {} runs past the end", name_, n, offset));
    }
    objstore::ReadOptions ro;
    ro.offset = offset;
    ro.length = n;
    STRATA_ASSIGN_OR_RETURN(*out, store_->GetBytes(key_, ro));
    if (out->size() != n) return Status::IOError(fmt::format("{}: short read ({} of {} bytes)", name_, out->size(), n));
    return Status::Ok();
  }

 private:
  std::unique_ptr<objstore::ObjectStore> store_;
  std::string key_;
  uint64_t size_;
  std::string name_;
};

class ParquetBatchReader final : public BatchReader {
 public:
  Status Init(std::unique_ptr<RandomAccessSource> src, const std::vector<std::string>& columns) {
    STRATA_ASSIGN_OR_RETURN(reader_, ParquetReader::Open(std::move(src)));
    if (!columns.empty()) {
      STRATA_ASSIGN_OR_RETURN(cols_, reader_->ColumnIndices(columns));
    } else {
      for (size_t i = 0; i < reader_->schema().size(); ++i) cols_.push_back(static_cast<int>(i));
    }
    for (int c : cols_) schema_.push_back(reader_->schema()[c]);
    for (int g = 0; g < reader_->num_row_groups(); ++g) {
      for (int c : cols_) bytes_ += reader_->row_group(g).columns[c].uncompressed_bytes;
      bytes_ += reader_->row_group(g).num_rows * static_cast<int64_t>(cols_.size());  // validity
    }
    return Status::Ok();
  }
  const Schema& schema() const override { return schema_; }
  int64_t num_rows() const override { return reader_->num_rows(); }
  int64_t estimated_bytes() const override { return bytes_; }
  Result<bool> Next(Table* out) override {
    if (next_ >= reader_->num_row_groups()) return false;
    STRATA_ASSIGN_OR_RETURN(*out, reader_->ReadRowGroup(next_++, cols_));
    return true;
  }

 private:
  std::unique_ptr<ParquetReader> reader_;
  std::vector<int> cols_;
  Schema schema_;
  int64_t bytes_ = 0;
  int next_ = 0;
};

class CsvBatchReader final : public BatchReader {
 public:
  Status Init(std::unique_ptr<RandomAccessSource> src, const std::vector<std::string>& columns,
              const CsvReadOptions& opts) {
    std::string text;
    STRATA_RETURN_IF_ERROR(src->ReadAt(0, src->size(), &text));
    STRATA_ASSIGN_OR_RETURN(Table t, ParseCsv(text, opts, src->name()));
    if (!columns.empty()) {
      for (const std::string& c : columns) {
        if (t.FieldIndex(c) < 0) {
          std::string have;
          for (const Field& f : t.schema()) have += (have.empty() ? "" : ", ") + f.name;
          return Status::NotFound(fmt::format("{}: no column \"{}\" (columns: {})", src->name(), c, have));
        }
      }
      STRATA_ASSIGN_OR_RETURN(t, t.Select(columns));
    }
    table_ = std::move(t);
    bytes_ = static_cast<int64_t>(text.size());
    return Status::Ok();
  }
  const Schema& schema() const override { return table_.schema(); }
  int64_t num_rows() const override { return static_cast<int64_t>(table_.num_rows()); }
  int64_t estimated_bytes() const override { return bytes_; }
  Result<bool> Next(Table* out) override {
    if (done_) return false;
    done_ = true;
    *out = std::move(table_);
    table_ = Table(out->schema());
    return true;
  }

 private:
  Table table_;
  int64_t bytes_ = 0;
  bool done_ = false;
};

}  // namespace

bool IsUrl(const std::string& p) { return p.find("://") != std::string::npos; }

FileFormat FormatFromPath(const std::string& p) {
  std::string s = p.substr(0, p.find('?'));
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  return s.ends_with(".csv") ? FileFormat::kCsv : FileFormat::kParquet;
}

Result<std::unique_ptr<RandomAccessSource>> OpenSourceFile(const std::string& p) {
  if (!IsUrl(p)) return OpenLocalFile(p);
  std::string store_url, key;
  STRATA_RETURN_IF_ERROR(SplitUrl(p, &store_url, &key));
  STRATA_ASSIGN_OR_RETURN(auto store, objstore::OpenObjectStore(store_url));
  auto info = store->Head(key);
  if (!info.ok()) return info.error().WithContext(p);
  return std::unique_ptr<RandomAccessSource>(new ObjectSource(std::move(store), key, info->size, p));
}

Result<std::unique_ptr<BatchReader>> BatchReader::Open(const std::string& p, FileFormat format,
                                                       const std::vector<std::string>& columns,
                                                       const CsvReadOptions& csv) {
  STRATA_ASSIGN_OR_RETURN(auto src, OpenSourceFile(p));
  if (format == FileFormat::kCsv) {
    auto r = std::make_unique<CsvBatchReader>();
    STRATA_RETURN_IF_ERROR(r->Init(std::move(src), columns, csv));
    return std::unique_ptr<BatchReader>(std::move(r));
  }
  auto r = std::make_unique<ParquetBatchReader>();
  STRATA_RETURN_IF_ERROR(r->Init(std::move(src), columns));
  return std::unique_ptr<BatchReader>(std::move(r));
}

Result<Schema> ReadSourceSchema(const std::string& p, FileFormat format) {
  STRATA_ASSIGN_OR_RETURN(auto r, BatchReader::Open(p, format));
  return r->schema();
}

Result<Table> ReadTableFile(const std::string& p, const std::vector<std::string>& columns, const CsvReadOptions& csv) {
  STRATA_ASSIGN_OR_RETURN(auto r, BatchReader::Open(p, FormatFromPath(p), columns, csv));
  Table out(r->schema());
  Table batch;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(bool more, r->Next(&batch));
    if (!more) break;
    STRATA_RETURN_IF_ERROR(out.Append(batch));
  }
  return out;
}

Status WriteTableFile(const std::string& p, const Table& table, const ParquetWriteOptions& options) {
  const bool csv = FormatFromPath(p) == FileFormat::kCsv;
  if (!IsUrl(p)) {
    return csv ? WriteCsvFile(p, table) : WriteParquetFile(p, table, options);
  }
  std::string bytes;
  if (csv) {
    bytes = FormatCsv(table);
  } else {
    auto w = ParquetWriter::OpenBuffer(table.schema(), options);
    STRATA_RETURN_IF_ERROR(w->Write(table));
    STRATA_RETURN_IF_ERROR(w->Close());
    bytes = w->TakeBuffer();
  }
  std::string store_url, key;
  STRATA_RETURN_IF_ERROR(SplitUrl(p, &store_url, &key));
  STRATA_ASSIGN_OR_RETURN(auto store, objstore::OpenObjectStore(store_url));
  auto put = store->PutBytes(key, bytes);
  if (!put.ok()) return put.error().WithContext(p);
  return Status::Ok();
}

}  // namespace strata::features
