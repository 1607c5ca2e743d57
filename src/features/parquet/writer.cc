// The Parquet writer: a streaming file writer (row groups flushed as they
// fill, the file renamed into place on Close) or an in-memory buffer; per
// column chunk an optional dictionary page, PLAIN or RLE_DICTIONARY data pages
// (v1 or v2), compression and statistics.
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include <strata/core/coding.h>
#include <strata/core/file_util.h>
#include <strata/features/parquet.h>

#include "features/parquet/compression.h"
#include "features/parquet/encoding.h"
#include "features/parquet/format.h"

namespace strata::features {

using namespace pq;  // NOLINT

namespace {

int32_t PhysicalOf(TypeId id) {
  switch (id) {
    case TypeId::kBool: return BOOLEAN;
    case TypeId::kInt32:
    case TypeId::kDate: return INT32;
    case TypeId::kInt64:
    case TypeId::kTimestamp: return INT64;
    case TypeId::kFloat: return FLOAT;
    case TypeId::kDouble: return DOUBLE;
    case TypeId::kString:
    case TypeId::kBinary: return BYTE_ARRAY;
  }
  return BYTE_ARRAY;
}

int32_t CodecOf(ParquetCodec c) {
  switch (c) {
    case ParquetCodec::kUncompressed: return UNCOMPRESSED;
    case ParquetCodec::kSnappy: return SNAPPY;
    case ParquetCodec::kGzip: return GZIP;
    case ParquetCodec::kZstd: return ZSTD;
    case ParquetCodec::kLz4Raw: return LZ4_RAW;
  }
  return UNCOMPRESSED;
}

SchemaElement LeafElement(const Field& f) {
  SchemaElement e;
  e.name = f.name;
  e.type = PhysicalOf(f.type.id);
  e.repetition = f.nullable ? OPTIONAL : REQUIRED;
  switch (f.type.id) {
    case TypeId::kString:
      e.converted_type = CT_UTF8;
      e.logical.kind = Logical::kString;
      break;
    case TypeId::kInt32:
      e.converted_type = CT_INT_32;
      e.logical.kind = Logical::kInteger;
      e.logical.bit_width = 32;
      break;
    case TypeId::kInt64:
      e.converted_type = CT_INT_64;
      e.logical.kind = Logical::kInteger;
      e.logical.bit_width = 64;
      break;
    case TypeId::kDate:
      e.converted_type = CT_DATE;
      e.logical.kind = Logical::kDate;
      break;
    case TypeId::kTimestamp:
      e.logical.kind = Logical::kTimestamp;
      e.logical.utc = f.type.utc;
      e.logical.unit = static_cast<int>(f.type.unit);
      if (f.type.unit == TimeUnit::kMilli) e.converted_type = CT_TIMESTAMP_MILLIS;
      if (f.type.unit == TimeUnit::kMicro) e.converted_type = CT_TIMESTAMP_MICROS;
      break;
    default: break;
  }
  return e;
}

// The 8-byte key a fixed-width value is deduplicated under (bitwise, so NaNs
// with equal bits share an entry and -0.0 stays apart from 0.0).
uint64_t KeyOf(const Column& c, size_t i) {
  switch (c.type().id) {
    case TypeId::kBool: return c.values<uint8_t>()[i];
    case TypeId::kInt32:
    case TypeId::kDate: return static_cast<uint32_t>(c.values<int32_t>()[i]);
    case TypeId::kInt64:
    case TypeId::kTimestamp: return static_cast<uint64_t>(c.values<int64_t>()[i]);
    case TypeId::kFloat: return std::bit_cast<uint32_t>(c.values<float>()[i]);
    case TypeId::kDouble: return std::bit_cast<uint64_t>(c.values<double>()[i]);
    default: return 0;
  }
}

// Appends row i's value, PLAIN-encoded.
void PlainValue(const Column& c, size_t i, std::string* out) {
  switch (c.type().id) {
    case TypeId::kBool: out->push_back(static_cast<char>(c.values<uint8_t>()[i] ? 1 : 0)); break;
    case TypeId::kInt32:
    case TypeId::kDate: PutFixed32(out, static_cast<uint32_t>(c.values<int32_t>()[i])); break;
    case TypeId::kInt64:
    case TypeId::kTimestamp: PutFixed64(out, static_cast<uint64_t>(c.values<int64_t>()[i])); break;
    case TypeId::kFloat: PutFixed32(out, std::bit_cast<uint32_t>(c.values<float>()[i])); break;
    case TypeId::kDouble: PutFixed64(out, std::bit_cast<uint64_t>(c.values<double>()[i])); break;
    case TypeId::kString:
    case TypeId::kBinary: {
      std::string_view s = c.StringAt(i);
      PutFixed32(out, static_cast<uint32_t>(s.size()));
      out->append(s.data(), s.size());
      break;
    }
  }
}

// PLAIN-encodes the non-NULL values among rows [b, e).
void PlainValues(const Column& c, size_t b, size_t e, std::string* out) {
  const auto& valid = c.validity();
  if (c.type().id == TypeId::kBool) {
    size_t k = 0;
    std::string bits;
    for (size_t i = b; i < e; ++i) {
      if (!valid[i]) continue;
      if ((k & 7) == 0) bits.push_back(0);
      if (c.values<uint8_t>()[i]) bits.back() = static_cast<char>(bits.back() | (1 << (k & 7)));
      ++k;
    }
    out->append(bits);
    return;
  }
  for (size_t i = b; i < e; ++i) {
    if (valid[i]) PlainValue(c, i, out);
  }
}

// Min/max tracking for statistics, in the column's own order.
struct MinMax {
  bool any = false;
  size_t min_row = 0, max_row = 0;
};

bool Less(const Column& c, size_t a, size_t b) {
  switch (c.type().id) {
    case TypeId::kBool: return c.values<uint8_t>()[a] < c.values<uint8_t>()[b];
    case TypeId::kInt32:
    case TypeId::kDate: return c.values<int32_t>()[a] < c.values<int32_t>()[b];
    case TypeId::kInt64:
    case TypeId::kTimestamp: return c.values<int64_t>()[a] < c.values<int64_t>()[b];
    case TypeId::kFloat: return c.values<float>()[a] < c.values<float>()[b];
    case TypeId::kDouble: return c.values<double>()[a] < c.values<double>()[b];
    case TypeId::kString:
    case TypeId::kBinary: return c.StringAt(a) < c.StringAt(b);  // unsigned bytewise
  }
  return false;
}

bool IsNaN(const Column& c, size_t i) {
  if (c.type().id == TypeId::kFloat) return std::isnan(c.values<float>()[i]);
  if (c.type().id == TypeId::kDouble) return std::isnan(c.values<double>()[i]);
  return false;
}

std::string StatValue(const Column& c, size_t i, bool is_min) {
  std::string out;
  // Parquet: a zero min is written as -0.0 and a zero max as +0.0.
  if (c.type().id == TypeId::kFloat && c.values<float>()[i] == 0.0f) {
    PutFixed32(&out, std::bit_cast<uint32_t>(is_min ? -0.0f : 0.0f));
    return out;
  }
  if (c.type().id == TypeId::kDouble && c.values<double>()[i] == 0.0) {
    PutFixed64(&out, std::bit_cast<uint64_t>(is_min ? -0.0 : 0.0));
    return out;
  }
  if (c.type().is_string_like()) {
    out.assign(c.StringAt(i));
    return out;
  }
  PlainValue(c, i, &out);
  return out;
}

}  // namespace

Result<ParquetCodec> ParseParquetCodec(std::string_view name) {
  std::string n;
  for (char ch : name) n.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  if (n == "zstd") return ParquetCodec::kZstd;
  if (n == "snappy") return ParquetCodec::kSnappy;
  if (n == "gzip") return ParquetCodec::kGzip;
  if (n == "none" || n == "uncompressed") return ParquetCodec::kUncompressed;
  if (n == "lz4_raw" || n == "lz4") return ParquetCodec::kLz4Raw;
  return Status::InvalidArgument(
      fmt::format("unknown Parquet codec \"{}\" (use zstd, snappy, gzip, lz4_raw or none)", name));
}

struct ParquetWriter::Impl {
  Schema schema;
  ParquetWriteOptions opt;
  int32_t codec = ZSTD;
  bool to_buffer = false;
  std::string path, tmp_path;
  int fd = -1;
  std::string out;  // pending bytes (file mode) or the whole file (buffer mode)
  uint64_t offset = 0;
  FileMetaData md;
  Table pending;
  bool closed = false;
  Status failed;
  std::string scratch, compressed;

  ~Impl() {
    if (fd >= 0) {
      ::close(fd);
      ::unlink(tmp_path.c_str());
    }
  }

  Status Emit(std::string_view bytes) {
    out.append(bytes.data(), bytes.size());
    offset += bytes.size();
    if (!to_buffer && out.size() >= (8u << 20)) return FlushOut();
    return Status::Ok();
  }

  Status FlushOut() {
    STRATA_RETURN_IF_ERROR(WriteAll(fd, out.data(), out.size(), tmp_path));
    out.clear();
    return Status::Ok();
  }

  // Writes one page: header + body. `uncompressed` is the page's size before compression.
  Status EmitPage(PageHeader h, std::string_view body) {
    if (opt.page_checksums) {
      h.crc = static_cast<int32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
    }
    std::string hdr;
    SerializePageHeader(h, &hdr);
    STRATA_RETURN_IF_ERROR(Emit(hdr));
    return Emit(body);
  }

  Status WriteChunk(const Field& f, const Column& c, size_t b, size_t e, ColumnChunk* cc);
  Status WriteDictionaryPage(const Field& f, const Column& c, const std::vector<size_t>& dict_rows, ColumnMetaData* m,
                             int64_t* uncompressed_total);
  // One data page (v1 or v2, as the options say) of pn rows.
  Status WriteDataPage(const Field& f, std::string_view level_bytes, std::string_view values, size_t pn,
                       size_t page_nulls, int32_t enc, int64_t* uncompressed_total);
  Status WriteRowGroup(const Table& t, size_t b, size_t e);
};

namespace {

// Dictionary-encodes the non-NULL values among rows [b, e) when the options
// want a dictionary and it stays small and repetitive enough: true with one
// index per non-NULL value and the row holding each entry.
bool BuildDictionary(const ParquetWriteOptions& opt, const Field& f, const Column& c, size_t b, size_t e, size_t nulls,
                     std::vector<uint32_t>* indices, std::vector<size_t>* dict_rows) {
  const size_t n = e - b;
  const auto& valid = c.validity();
  const bool want_dict = opt.dictionary == ParquetWriteOptions::Dictionary::kAlways ||
                         (opt.dictionary == ParquetWriteOptions::Dictionary::kAuto && f.type.is_string_like());
  if (!want_dict || n - nulls == 0) return false;
  bool use_dict = true;
  indices->reserve(n - nulls);
  size_t dict_bytes = 0;
  if (f.type.is_string_like()) {
    std::unordered_map<std::string_view, uint32_t> map;
    for (size_t i = b; i < e && use_dict; ++i) {
      if (!valid[i]) continue;
      auto [it, fresh] = map.try_emplace(c.StringAt(i), static_cast<uint32_t>(dict_rows->size()));
      if (fresh) {
        dict_rows->push_back(i);
        dict_bytes += 4 + c.StringAt(i).size();
        if (dict_rows->size() > opt.max_dictionary_entries || dict_bytes > opt.max_dictionary_bytes) use_dict = false;
      }
      indices->push_back(it->second);
    }
  } else {
    std::unordered_map<uint64_t, uint32_t> map;
    for (size_t i = b; i < e && use_dict; ++i) {
      if (!valid[i]) continue;
      auto [it, fresh] = map.try_emplace(KeyOf(c, i), static_cast<uint32_t>(dict_rows->size()));
      if (fresh) {
        dict_rows->push_back(i);
        dict_bytes += 8;
        if (dict_rows->size() > opt.max_dictionary_entries || dict_bytes > opt.max_dictionary_bytes) use_dict = false;
      }
      indices->push_back(it->second);
    }
  }
  // A dictionary that barely repeats only costs: keep it when entries <= half the values.
  if (use_dict && dict_rows->size() * 2 > n - nulls && n - nulls > 16) use_dict = false;
  return use_dict;
}

// Min and max of the non-NULL, non-NaN values among rows [b, e), and the
// NULL count.
Statistics ChunkStatistics(const Column& c, size_t b, size_t e, size_t nulls) {
  const auto& valid = c.validity();
  Statistics s;
  s.null_count = static_cast<int64_t>(nulls);
  MinMax mm;
  for (size_t i = b; i < e; ++i) {
    if (!valid[i] || IsNaN(c, i)) continue;
    if (!mm.any) {
      mm.any = true;
      mm.min_row = mm.max_row = i;
      continue;
    }
    if (Less(c, i, mm.min_row)) mm.min_row = i;
    if (Less(c, mm.max_row, i)) mm.max_row = i;
  }
  if (mm.any) {
    s.min_value = StatValue(c, mm.min_row, true);
    s.max_value = StatValue(c, mm.max_row, false);
  }
  return s;
}

}  // namespace

Status ParquetWriter::Impl::WriteDictionaryPage(const Field& f, const Column& c, const std::vector<size_t>& dict_rows,
                                                ColumnMetaData* m, int64_t* uncompressed_total) {
  scratch.clear();
  for (size_t r : dict_rows) PlainValue(c, r, &scratch);
  if (f.type.id == TypeId::kBool) {  // booleans PLAIN-encode as bits
    scratch.clear();
    std::string bits((dict_rows.size() + 7) / 8, '\0');
    for (size_t k = 0; k < dict_rows.size(); ++k) {
      if (c.values<uint8_t>()[dict_rows[k]]) bits[k >> 3] = static_cast<char>(bits[k >> 3] | (1 << (k & 7)));
    }
    scratch = bits;
  }
  STRATA_RETURN_IF_ERROR(Compress(codec, scratch, opt.compression_level, &compressed));
  PageHeader h;
  h.type = DICTIONARY_PAGE;
  h.uncompressed_page_size = static_cast<int32_t>(scratch.size());
  h.compressed_page_size = static_cast<int32_t>(compressed.size());
  h.dict = DictionaryPageHeader{static_cast<int32_t>(dict_rows.size()), PLAIN};
  m->dictionary_page_offset = static_cast<int64_t>(offset);
  const uint64_t before = offset;
  STRATA_RETURN_IF_ERROR(EmitPage(h, compressed));
  *uncompressed_total += static_cast<int64_t>(scratch.size() + (offset - before - compressed.size()));
  return Status::Ok();
}

Status ParquetWriter::Impl::WriteDataPage(const Field& f, std::string_view level_bytes, std::string_view values,
                                          size_t pn, size_t page_nulls, int32_t enc, int64_t* uncompressed_total) {
  PageHeader h;
  if (opt.data_page_version == 2) {
    h.type = DATA_PAGE_V2;
    std::string body(level_bytes);
    const bool compress = codec != UNCOMPRESSED;
    if (compress) {
      STRATA_RETURN_IF_ERROR(Compress(codec, values, opt.compression_level, &compressed));
      body.append(compressed);
    } else {
      body.append(values);
    }
    h.uncompressed_page_size = static_cast<int32_t>(level_bytes.size() + values.size());
    h.compressed_page_size = static_cast<int32_t>(body.size());
    DataPageHeaderV2 d;
    d.num_values = static_cast<int32_t>(pn);
    d.num_nulls = static_cast<int32_t>(page_nulls);
    d.num_rows = static_cast<int32_t>(pn);
    d.encoding = enc;
    d.definition_levels_byte_length = static_cast<int32_t>(level_bytes.size());
    d.repetition_levels_byte_length = 0;
    d.is_compressed = compress;
    h.data_v2 = d;
    const uint64_t before = offset;
    STRATA_RETURN_IF_ERROR(EmitPage(h, body));
    *uncompressed_total += static_cast<int64_t>(h.uncompressed_page_size + (offset - before - body.size()));
    return Status::Ok();
  }
  h.type = DATA_PAGE;
  scratch.clear();
  if (f.nullable) {
    PutFixed32(&scratch, static_cast<uint32_t>(level_bytes.size()));
    scratch.append(level_bytes);
  }
  scratch.append(values);
  STRATA_RETURN_IF_ERROR(Compress(codec, scratch, opt.compression_level, &compressed));
  h.uncompressed_page_size = static_cast<int32_t>(scratch.size());
  h.compressed_page_size = static_cast<int32_t>(compressed.size());
  DataPageHeader d;
  d.num_values = static_cast<int32_t>(pn);
  d.encoding = enc;
  d.definition_level_encoding = RLE;
  d.repetition_level_encoding = RLE;
  h.data = d;
  const uint64_t before = offset;
  STRATA_RETURN_IF_ERROR(EmitPage(h, compressed));
  *uncompressed_total += static_cast<int64_t>(scratch.size() + (offset - before - compressed.size()));
  return Status::Ok();
}

Status ParquetWriter::Impl::WriteChunk(const Field& f, const Column& c, size_t b, size_t e, ColumnChunk* cc) {
  const size_t n = e - b;
  const auto& valid = c.validity();
  size_t nulls = 0;
  for (size_t i = b; i < e; ++i) nulls += valid[i] == 0;
  if (!f.nullable && nulls > 0) {
    return Status::InvalidArgument(fmt::format("column \"{}\" is not nullable but holds {} NULLs", f.name, nulls));
  }
  ColumnMetaData m;
  m.type = PhysicalOf(f.type.id);
  m.path = {f.name};
  m.codec = codec;
  m.num_values = static_cast<int64_t>(n);
  const uint64_t chunk_start = offset;
  int64_t uncompressed_total = 0;

  // Dictionary, when wanted and small enough.
  std::vector<uint32_t> indices;  // one per non-NULL value
  std::vector<size_t> dict_rows;  // the row holding each dictionary entry
  const bool use_dict = BuildDictionary(opt, f, c, b, e, nulls, &indices, &dict_rows);
  if (use_dict) STRATA_RETURN_IF_ERROR(WriteDictionaryPage(f, c, dict_rows, &m, &uncompressed_total));
  m.data_page_offset = static_cast<int64_t>(offset);

  // Page boundaries by estimated PLAIN size.
  size_t width = 8;
  switch (f.type.id) {
    case TypeId::kBool: width = 1; break;
    case TypeId::kInt32:
    case TypeId::kDate:
    case TypeId::kFloat: width = 4; break;
    default: break;
  }
  const int bw = use_dict ? std::max(1, BitWidth(dict_rows.empty() ? 0 : dict_rows.size() - 1)) : 0;
  size_t idx_pos = 0;  // next entry of `indices`
  std::vector<uint32_t> levels;
  std::string level_bytes, values;
  size_t p = b;
  while (p < e || (n == 0 && p == b)) {
    size_t q = p;
    size_t bytes = 0;
    while (q < e && bytes < opt.page_bytes) {
      bytes += use_dict ? 1 : (f.type.is_string_like() ? 4 + c.StringAt(q).size() : width);
      ++q;
    }
    const size_t pn = q - p;
    size_t page_nulls = 0;
    level_bytes.clear();
    if (f.nullable) {
      levels.resize(pn);
      for (size_t i = 0; i < pn; ++i) {
        levels[i] = valid[p + i];
        page_nulls += valid[p + i] == 0;
      }
      RleEncode(levels.data(), pn, 1, &level_bytes);
    }
    values.clear();
    if (use_dict) {
      const size_t k = pn - page_nulls;
      values.push_back(static_cast<char>(bw));
      RleEncode(indices.data() + idx_pos, k, bw, &values);
      idx_pos += k;
    } else {
      PlainValues(c, p, q, &values);
    }
    const int32_t enc = use_dict ? RLE_DICTIONARY : PLAIN;
    STRATA_RETURN_IF_ERROR(WriteDataPage(f, level_bytes, values, pn, page_nulls, enc, &uncompressed_total));
    p = q;
    if (n == 0) break;
  }

  if (use_dict) {
    m.encodings = {PLAIN, RLE, RLE_DICTIONARY};
  } else {
    m.encodings = {PLAIN, RLE};
  }
  m.total_compressed_size = static_cast<int64_t>(offset - chunk_start);
  m.total_uncompressed_size = uncompressed_total;
  if (opt.statistics) m.statistics = ChunkStatistics(c, b, e, nulls);
  cc->file_offset = static_cast<int64_t>(chunk_start);
  cc->meta = std::move(m);
  return Status::Ok();
}

Status ParquetWriter::Impl::WriteRowGroup(const Table& t, size_t b, size_t e) {
  RowGroup rg;
  rg.num_rows = static_cast<int64_t>(e - b);
  for (size_t c = 0; c < schema.size(); ++c) {
    ColumnChunk cc;
    STRATA_RETURN_IF_ERROR(WriteChunk(schema[c], t.column(c), b, e, &cc));
    rg.total_byte_size += cc.meta->total_uncompressed_size;
    rg.columns.push_back(std::move(cc));
  }
  md.num_rows += rg.num_rows;
  md.row_groups.push_back(std::move(rg));
  return Status::Ok();
}

ParquetWriter::ParquetWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ParquetWriter::~ParquetWriter() = default;

namespace {

Status CheckSchema(const Schema& schema) {
  if (schema.empty()) return Status::InvalidArgument("a Parquet file needs at least one column");
  for (size_t i = 0; i < schema.size(); ++i) {
    if (schema[i].name.empty()) return Status::InvalidArgument(fmt::format("column {} has an empty name", i));
    for (size_t j = 0; j < i; ++j) {
      if (schema[j].name == schema[i].name) {
        return Status::InvalidArgument(fmt::format("column name \"{}\" appears twice", schema[i].name));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<ParquetWriter>> ParquetWriter::Open(const std::string& path, Schema schema,
                                                           ParquetWriteOptions options) {
  STRATA_RETURN_IF_ERROR(CheckSchema(schema));
  if (options.data_page_version != 1 && options.data_page_version != 2) {
    return Status::InvalidArgument(fmt::format("data page version {} (use 1 or 2)", options.data_page_version));
  }
  auto impl = std::make_unique<Impl>();
  impl->schema = std::move(schema);
  impl->opt = std::move(options);
  impl->path = path;
  impl->tmp_path = fmt::format("{}.tmp-{}", path, ::getpid());
  impl->fd = ::open(impl->tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (impl->fd < 0) return Status::FromErrno(errno, "create " + impl->tmp_path);
  impl->codec = CodecOf(impl->opt.codec);
  impl->pending = Table(impl->schema);
  STRATA_RETURN_IF_ERROR(impl->Emit("PAR1"));
  return std::unique_ptr<ParquetWriter>(new ParquetWriter(std::move(impl)));
}

std::unique_ptr<ParquetWriter> ParquetWriter::OpenBuffer(Schema schema, ParquetWriteOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->failed = CheckSchema(schema);
  impl->schema = std::move(schema);
  impl->opt = std::move(options);
  impl->to_buffer = true;
  impl->codec = CodecOf(impl->opt.codec);
  impl->pending = Table(impl->schema);
  (void)impl->Emit("PAR1");
  return std::unique_ptr<ParquetWriter>(new ParquetWriter(std::move(impl)));
}

Status ParquetWriter::Write(const Table& batch) {
  Impl& w = *impl_;
  STRATA_RETURN_IF_ERROR(w.failed);
  if (w.closed) return Status::PreconditionFailed("the Parquet writer is closed");
  for (size_t i = 0; i < w.schema.size() && i < batch.num_columns(); ++i) {
    if (batch.field(i).name != w.schema[i].name || !(batch.field(i).type == w.schema[i].type)) {
      return Status::InvalidArgument(fmt::format("batch column {} is \"{}\" {}, the file's is \"{}\" {}", i,
                                                 batch.field(i).name, batch.field(i).type.ToString(),
                                                 w.schema[i].name, w.schema[i].type.ToString()));
    }
  }
  if (batch.num_columns() != w.schema.size()) {
    return Status::InvalidArgument(
        fmt::format("batch has {} columns, the file {}", batch.num_columns(), w.schema.size()));
  }
  STRATA_RETURN_IF_ERROR(batch.Validate());
  const size_t rg = static_cast<size_t>(std::max<int64_t>(1, w.opt.row_group_rows));
  // Write straight from the batch when nothing is pending and whole row groups fit.
  size_t from = 0;
  if (w.pending.num_rows() == 0) {
    while (batch.num_rows() - from >= rg) {
      Status st = w.WriteRowGroup(batch, from, from + rg);
      if (!st.ok()) return w.failed = st;
      from += rg;
    }
  }
  if (from == batch.num_rows()) return Status::Ok();
  Table rest = batch;
  if (from > 0) {
    Table tail(w.schema);
    for (size_t c = 0; c < w.schema.size(); ++c) {
      for (size_t r = from; r < batch.num_rows(); ++r) tail.column(c).AppendFrom(batch.column(c), r);
    }
    rest = std::move(tail);
  }
  STRATA_RETURN_IF_ERROR(w.pending.Append(rest));
  if (w.pending.num_rows() >= rg) {
    size_t done = 0;
    while (w.pending.num_rows() - done >= rg) {
      Status st = w.WriteRowGroup(w.pending, done, done + rg);
      if (!st.ok()) return w.failed = st;
      done += rg;
    }
    Table tail(w.schema);
    for (size_t c = 0; c < w.schema.size(); ++c) {
      for (size_t r = done; r < w.pending.num_rows(); ++r) tail.column(c).AppendFrom(w.pending.column(c), r);
    }
    w.pending = std::move(tail);
  }
  return Status::Ok();
}

Status ParquetWriter::Close() {
  Impl& w = *impl_;
  STRATA_RETURN_IF_ERROR(w.failed);
  if (w.closed) return Status::Ok();
  if (w.pending.num_rows() > 0) {
    Status st = w.WriteRowGroup(w.pending, 0, w.pending.num_rows());
    if (!st.ok()) return w.failed = st;
    w.pending = Table(w.schema);
  }
  w.md.version = 1;
  w.md.created_by = w.opt.created_by;
  SchemaElement root;
  root.name = "schema";
  root.num_children = static_cast<int32_t>(w.schema.size());
  w.md.schema.push_back(root);
  for (const Field& f : w.schema) w.md.schema.push_back(LeafElement(f));
  for (const auto& [k, v] : w.opt.key_value_metadata) w.md.key_value_metadata.push_back({k, v});
  std::string footer;
  SerializeFileMetaData(w.md, &footer);
  Status st = w.Emit(footer);
  std::string tail;
  PutFixed32(&tail, static_cast<uint32_t>(footer.size()));
  tail += "PAR1";
  if (st.ok()) st = w.Emit(tail);
  if (!w.to_buffer) {
    if (st.ok()) st = w.FlushOut();
    if (st.ok()) {
      st = CommitTempFile(w.fd, w.tmp_path, w.path, AtomicWriteOptions{.sync_dir = false});
    } else {
      AbandonTempFile(w.fd, w.tmp_path);
    }
    w.fd = -1;
  }
  if (!st.ok()) return w.failed = st;
  w.closed = true;
  return Status::Ok();
}

std::string ParquetWriter::TakeBuffer() { return std::move(impl_->out); }

Status WriteParquetFile(const std::string& path, const Table& table, const ParquetWriteOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto w, ParquetWriter::Open(path, table.schema(), options));
  STRATA_RETURN_IF_ERROR(w->Write(table));
  return w->Close();
}

}  // namespace strata::features
