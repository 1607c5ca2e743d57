// The Parquet reader: file and memory sources, the footer and schema (flat
// schemas only), and column chunks decoded page by page (dictionary, v1 and
// v2 data pages, every standard encoding and codec) into Columns.
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include <strata/core/coding.h>
#include <strata/core/file_util.h>
#include <strata/features/parquet.h>

#include "features/parquet/compression.h"
#include "features/parquet/encoding.h"
#include "features/parquet/format.h"

namespace strata::features {

using namespace pq;  // NOLINT: the Parquet enum names read best unqualified here

namespace {

class LocalFileSource final : public RandomAccessSource {
 public:
  LocalFileSource(int fd, uint64_t size, std::string path) : fd_(fd), size_(size), path_(std::move(path)) {}
  ~LocalFileSource() override { ::close(fd_); }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return path_; }
  Status ReadAt(uint64_t offset, size_t n, std::string* out) override {
    if (offset > size_ || n > size_ - offset) {
      return Status::Corruption(fmt::format("{}: read of {} bytes at {} runs past the end ({} bytes)",
                                            path_, n, offset, size_));
    }
    out->resize(n);
    STRATA_ASSIGN_OR_RETURN(size_t got, PreadUpTo(fd_, out->data(), n, offset, path_));
    if (got < n) return Status::IOError(fmt::format("{}: file shrank while reading", path_));
    return Status::Ok();
  }

 private:
  int fd_;
  uint64_t size_;
  std::string path_;
};

class MemorySource final : public RandomAccessSource {
 public:
  MemorySource(std::string bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}
  uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  Status ReadAt(uint64_t offset, size_t n, std::string* out) override {
    if (offset > bytes_.size() || n > bytes_.size() - offset) {
      return Status::Corruption(fmt::format("{}: read of {} bytes at {} runs past the end ({} bytes)",
                                            name_, n, offset, bytes_.size()));
    }
    out->assign(bytes_, offset, n);
    return Status::Ok();
  }

 private:
  std::string bytes_;
  std::string name_;
};

// How a leaf's physical values become a Column.
enum class Conv : uint8_t {
  kBool,
  kI32,
  kU32ToI64,
  kI64,
  kF32,
  kF64,
  kBin,
  kInt96,
  kDecimalI32,
  kDecimalI64,
  kDecimalBin,
  kFloat16,
};

struct Leaf {
  std::string name;
  int32_t physical = 0;
  int32_t type_length = 0;
  int max_def = 0;
  Conv conv = Conv::kI64;
  int32_t scale = 0;
  DataType type;
};

// One page's non-NULL values, in physical form.
struct PhysValues {
  std::vector<uint8_t> b;
  std::vector<int32_t> i32;
  std::vector<int64_t> i64;
  std::vector<float> f32;
  std::vector<double> f64;
  std::vector<std::string_view> bin;  // BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY, INT96
  std::string storage;                // backing bytes for decoders that rebuild values

  size_t size(int32_t physical) const {
    switch (physical) {
      case BOOLEAN: return b.size();
      case INT32: return i32.size();
      case INT64: return i64.size();
      case FLOAT: return f32.size();
      case DOUBLE: return f64.size();
      default: return bin.size();
    }
  }
};

double Pow10(int32_t scale) { return std::pow(10.0, static_cast<double>(scale)); }

// Big-endian two's-complement integer of any length, as a double.
double BigEndianToDouble(std::string_view b) {
  if (b.empty()) return 0;
  const bool neg = static_cast<uint8_t>(b[0]) & 0x80;
  double v = 0;
  for (unsigned char c : b) v = v * 256.0 + static_cast<double>(neg ? static_cast<uint8_t>(~c) : c);
  return neg ? -(v + 1) : v;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

std::string LogicalText(const SchemaElement& e) {
  const LogicalType& l = e.logical;
  static const char* kUnits[] = {"MILLIS", "MICROS", "NANOS"};
  switch (l.kind) {
    case Logical::kNone: break;
    case Logical::kString: return "STRING";
    case Logical::kEnum: return "ENUM";
    case Logical::kJson: return "JSON";
    case Logical::kDecimal: return fmt::format("DECIMAL({},{})", l.precision, l.scale);
    case Logical::kDate: return "DATE";
    case Logical::kTime: return fmt::format("TIME({},utc={})", kUnits[l.unit % 3], l.utc);
    case Logical::kTimestamp: return fmt::format("TIMESTAMP({},utc={})", kUnits[l.unit % 3], l.utc);
    case Logical::kInteger: return fmt::format("INT({},{})", l.bit_width, l.is_signed ? "signed" : "unsigned");
    case Logical::kFloat16: return "FLOAT16";
    case Logical::kUuid: return "UUID";
    default: return "OTHER";
  }
  if (e.converted_type) {
    switch (*e.converted_type) {
      case CT_UTF8: return "UTF8";
      case CT_DECIMAL: return fmt::format("DECIMAL({},{})", e.precision, e.scale);
      case CT_DATE: return "DATE";
      case CT_TIMESTAMP_MILLIS: return "TIMESTAMP_MILLIS";
      case CT_TIMESTAMP_MICROS: return "TIMESTAMP_MICROS";
      default: return fmt::format("CONVERTED({})", *e.converted_type);
    }
  }
  return "";
}

Status MapLeaf(const SchemaElement& e, Leaf* leaf) {
  leaf->name = e.name;
  leaf->physical = *e.type;
  leaf->type_length = e.type_length;
  leaf->max_def = (e.repetition && *e.repetition == OPTIONAL) ? 1 : 0;
  const LogicalType& l = e.logical;
  const int ct = e.converted_type.value_or(-1);
  const bool decimal = l.kind == Logical::kDecimal || (l.kind == Logical::kNone && ct == CT_DECIMAL);
  leaf->scale = l.kind == Logical::kDecimal ? l.scale : e.scale;
  switch (leaf->physical) {
    case BOOLEAN: leaf->conv = Conv::kBool; leaf->type = DataType::Bool(); break;
    case INT32:
      if (decimal) {
        leaf->conv = Conv::kDecimalI32;
        leaf->type = DataType::Double();
      } else if (l.kind == Logical::kDate || ct == CT_DATE) {
        leaf->conv = Conv::kI32;
        leaf->type = DataType::Date();
      } else if ((l.kind == Logical::kInteger && !l.is_signed && l.bit_width == 32) || ct == CT_UINT_32) {
        leaf->conv = Conv::kU32ToI64;
        leaf->type = DataType::Int64();
      } else {
        leaf->conv = Conv::kI32;
        leaf->type = DataType::Int32();
      }
      break;
    case INT64:
      leaf->conv = decimal ? Conv::kDecimalI64 : Conv::kI64;
      if (decimal) {
        leaf->type = DataType::Double();
      } else if (l.kind == Logical::kTimestamp) {
        leaf->type = DataType::Timestamp(static_cast<TimeUnit>(l.unit), l.utc);
      } else if (l.kind == Logical::kNone && ct == CT_TIMESTAMP_MILLIS) {
        leaf->type = DataType::Timestamp(TimeUnit::kMilli);
      } else if (l.kind == Logical::kNone && ct == CT_TIMESTAMP_MICROS) {
        leaf->type = DataType::Timestamp(TimeUnit::kMicro);
      } else {
        leaf->type = DataType::Int64();
      }
      break;
    case INT96: leaf->conv = Conv::kInt96; leaf->type = DataType::Timestamp(TimeUnit::kMicro); break;
    case FLOAT: leaf->conv = Conv::kF32; leaf->type = DataType::Float(); break;
    case DOUBLE: leaf->conv = Conv::kF64; leaf->type = DataType::Double(); break;
    case BYTE_ARRAY:
    case FIXED_LEN_BYTE_ARRAY:
      if (leaf->physical == FIXED_LEN_BYTE_ARRAY && (e.type_length <= 0 || e.type_length > (1 << 20))) {
        return Status::Corruption(fmt::format("column \"{}\": FIXED_LEN_BYTE_ARRAY length {} is invalid",
                                              e.name, e.type_length));
      }
      if (decimal) {
        leaf->conv = Conv::kDecimalBin;
        leaf->type = DataType::Double();
      } else if (l.kind == Logical::kFloat16 && leaf->physical == FIXED_LEN_BYTE_ARRAY && e.type_length == 2) {
        leaf->conv = Conv::kFloat16;
        leaf->type = DataType::Float();
      } else if (l.kind == Logical::kString || l.kind == Logical::kEnum || l.kind == Logical::kJson ||
                 (l.kind == Logical::kNone && (ct == CT_UTF8 || ct == CT_ENUM || ct == CT_JSON))) {
        leaf->conv = Conv::kBin;
        leaf->type = DataType::String();
      } else {
        leaf->conv = Conv::kBin;
        leaf->type = DataType::Binary();
      }
      break;
    default:
      return Status::Corruption(fmt::format("column \"{}\" has unknown physical type {}", e.name, leaf->physical));
  }
  return Status::Ok();
}

size_t FixedWidth(const Leaf& leaf) {
  switch (leaf.physical) {
    case INT32:
    case FLOAT: return 4;
    case INT64:
    case DOUBLE: return 8;
    case INT96: return 12;
    case FIXED_LEN_BYTE_ARRAY: return static_cast<size_t>(leaf.type_length);
    default: return 0;
  }
}

// PLAIN-decodes n values.
Status DecodePlain(const Leaf& leaf, const uint8_t* p, size_t size, size_t n, PhysValues* out) {
  auto need = [&](uint64_t bytes) -> Status {
    if (bytes > size) {
      return Status::Corruption(fmt::format("column \"{}\": PLAIN values need {} bytes, the page has {}",
                                            leaf.name, bytes, size));
    }
    return Status::Ok();
  };
  switch (leaf.physical) {
    case BOOLEAN: {
      STRATA_RETURN_IF_ERROR(need((n + 7) / 8));
      out->b.resize(n);
      for (size_t i = 0; i < n; ++i) out->b[i] = (p[i >> 3] >> (i & 7)) & 1;
      return Status::Ok();
    }
    case INT32:
      STRATA_RETURN_IF_ERROR(need(uint64_t{4} * n));
      out->i32.resize(n);
      if (n) std::memcpy(out->i32.data(), p, 4 * n);
      return Status::Ok();
    case FLOAT:
      STRATA_RETURN_IF_ERROR(need(uint64_t{4} * n));
      out->f32.resize(n);
      if (n) std::memcpy(out->f32.data(), p, 4 * n);
      return Status::Ok();
    case INT64:
      STRATA_RETURN_IF_ERROR(need(uint64_t{8} * n));
      out->i64.resize(n);
      if (n) std::memcpy(out->i64.data(), p, 8 * n);
      return Status::Ok();
    case DOUBLE:
      STRATA_RETURN_IF_ERROR(need(uint64_t{8} * n));
      out->f64.resize(n);
      if (n) std::memcpy(out->f64.data(), p, 8 * n);
      return Status::Ok();
    case INT96:
    case FIXED_LEN_BYTE_ARRAY: {
      const size_t w = FixedWidth(leaf);
      STRATA_RETURN_IF_ERROR(need(uint64_t{w} * n));
      out->bin.resize(n);
      for (size_t i = 0; i < n; ++i) out->bin[i] = std::string_view(reinterpret_cast<const char*>(p) + i * w, w);
      return Status::Ok();
    }
    case BYTE_ARRAY: {
      out->bin.resize(n);
      size_t pos = 0;
      for (size_t i = 0; i < n; ++i) {
        if (size - pos < 4) {
          return Status::Corruption(fmt::format("column \"{}\": value {} of {} runs past the end of its page",
                                                leaf.name, i, n));
        }
        const uint32_t len = DecodeFixed32(reinterpret_cast<const char*>(p) + pos);
        pos += 4;
        if (len > size - pos) {
          return Status::Corruption(fmt::format(
              "column \"{}\": value {} claims {} bytes, only {} are left in the page", leaf.name, i, len, size - pos));
        }
        out->bin[i] = std::string_view(reinterpret_cast<const char*>(p) + pos, len);
        pos += len;
      }
      return Status::Ok();
    }
  }
  return Status::Corruption("unknown physical type");
}

// Copies dictionary entries `idx` into `out`.
Status Gather(const Leaf& leaf, const PhysValues& dict, const std::vector<uint32_t>& idx, PhysValues* out) {
  const size_t dn = dict.size(leaf.physical);
  for (uint32_t i : idx) {
    if (i >= dn) {
      return Status::Corruption(fmt::format("column \"{}\": dictionary index {} is out of range ({} entries)",
                                            leaf.name, i, dn));
    }
  }
  const size_t n = idx.size();
  switch (leaf.physical) {
    case BOOLEAN: out->b.resize(n); for (size_t k = 0; k < n; ++k) out->b[k] = dict.b[idx[k]]; break;
    case INT32: out->i32.resize(n); for (size_t k = 0; k < n; ++k) out->i32[k] = dict.i32[idx[k]]; break;
    case INT64: out->i64.resize(n); for (size_t k = 0; k < n; ++k) out->i64[k] = dict.i64[idx[k]]; break;
    case FLOAT: out->f32.resize(n); for (size_t k = 0; k < n; ++k) out->f32[k] = dict.f32[idx[k]]; break;
    case DOUBLE: out->f64.resize(n); for (size_t k = 0; k < n; ++k) out->f64[k] = dict.f64[idx[k]]; break;
    default: out->bin.resize(n); for (size_t k = 0; k < n; ++k) out->bin[k] = dict.bin[idx[k]]; break;
  }
  return Status::Ok();
}

// Appends n rows (levels[i] == max_def: the next value; otherwise NULL).
Status AppendRows(const Leaf& leaf, const PhysValues& v, const uint8_t* levels, size_t n, Column* col) {
  size_t k = 0;
  auto each = [&](auto&& append_value) {
    for (size_t i = 0; i < n; ++i) {
      if (levels == nullptr || levels[i]) {
        append_value(k++);
      } else {
        col->AppendNull();
      }
    }
  };
  const bool all_valid = levels == nullptr;
  // Fixed-width values with NULLs: fill pre-sized vectors rather than pushing row by row.
  auto scatter = [&](auto& dst, const auto& src) {
    auto& valid = col->validity();
    const size_t base = dst.size();
    dst.resize(base + n);
    valid.resize(base + n);
    for (size_t i = 0; i < n; ++i) {
      if (levels[i]) {
        dst[base + i] = src[k++];
        valid[base + i] = 1;
      } else {
        dst[base + i] = {};
        valid[base + i] = 0;
      }
    }
  };
  if (!all_valid) {
    switch (leaf.conv) {
      case Conv::kI32: scatter(col->values<int32_t>(), v.i32); return Status::Ok();
      case Conv::kI64: scatter(col->values<int64_t>(), v.i64); return Status::Ok();
      case Conv::kF32: scatter(col->values<float>(), v.f32); return Status::Ok();
      case Conv::kF64: scatter(col->values<double>(), v.f64); return Status::Ok();
      default: break;
    }
  }
  switch (leaf.conv) {
    case Conv::kBool: each([&](size_t j) { col->Append<uint8_t>(v.b[j]); }); break;
    case Conv::kI32:
      if (all_valid) {
        auto& dst = col->values<int32_t>();
        dst.insert(dst.end(), v.i32.begin(), v.i32.begin() + n);
        col->validity().resize(col->validity().size() + n, 1);
      } else {
        each([&](size_t j) { col->Append<int32_t>(v.i32[j]); });
      }
      break;
    case Conv::kU32ToI64: each([&](size_t j) { col->Append<int64_t>(static_cast<uint32_t>(v.i32[j])); }); break;
    case Conv::kI64:
      if (all_valid) {
        auto& dst = col->values<int64_t>();
        dst.insert(dst.end(), v.i64.begin(), v.i64.begin() + n);
        col->validity().resize(col->validity().size() + n, 1);
      } else {
        each([&](size_t j) { col->Append<int64_t>(v.i64[j]); });
      }
      break;
    case Conv::kF32:
      if (all_valid) {
        auto& dst = col->values<float>();
        dst.insert(dst.end(), v.f32.begin(), v.f32.begin() + n);
        col->validity().resize(col->validity().size() + n, 1);
      } else {
        each([&](size_t j) { col->Append<float>(v.f32[j]); });
      }
      break;
    case Conv::kF64:
      if (all_valid) {
        auto& dst = col->values<double>();
        dst.insert(dst.end(), v.f64.begin(), v.f64.begin() + n);
        col->validity().resize(col->validity().size() + n, 1);
      } else {
        each([&](size_t j) { col->Append<double>(v.f64[j]); });
      }
      break;
    case Conv::kBin: each([&](size_t j) { col->AppendString(v.bin[j]); }); break;
    case Conv::kInt96:
      each([&](size_t j) {
        const char* p = v.bin[j].data();
        const int64_t nanos = static_cast<int64_t>(DecodeFixed64(p));
        const int32_t julian = static_cast<int32_t>(DecodeFixed32(p + 8));
        const int64_t days = static_cast<int64_t>(julian) - 2440588;  // Julian day of 1970-01-01
        // Garbage can overflow int64 microseconds: saturate rather than wrap.
        const __int128 us = static_cast<__int128>(days) * 86400000000LL + nanos / 1000;
        col->Append<int64_t>(us > INT64_MAX ? INT64_MAX : us < INT64_MIN ? INT64_MIN : static_cast<int64_t>(us));
      });
      break;
    case Conv::kDecimalI32: {
      const double s = Pow10(leaf.scale);
      each([&](size_t j) { col->Append<double>(v.i32[j] / s); });
      break;
    }
    case Conv::kDecimalI64: {
      const double s = Pow10(leaf.scale);
      each([&](size_t j) { col->Append<double>(static_cast<double>(v.i64[j]) / s); });
      break;
    }
    case Conv::kDecimalBin: {
      const double s = Pow10(leaf.scale);
      each([&](size_t j) { col->Append<double>(BigEndianToDouble(v.bin[j]) / s); });
      break;
    }
    case Conv::kFloat16:
      each([&](size_t j) {
        col->Append<float>(HalfToFloat(DecodeFixed16(v.bin[j].data())));
      });
      break;
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<RandomAccessSource>> OpenLocalFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0) {
    const int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "seek " + path);
  }
  return std::unique_ptr<RandomAccessSource>(new LocalFileSource(fd, static_cast<uint64_t>(size), path));
}

std::unique_ptr<RandomAccessSource> OpenMemorySource(std::string bytes, std::string name) {
  return std::make_unique<MemorySource>(std::move(bytes), std::move(name));
}

struct ParquetReader::Impl {
  std::unique_ptr<RandomAccessSource> src;
  ParquetReadOptions options;
  FileMetaData md;
  uint64_t footer_start = 0;
  std::vector<Leaf> leaves;
  Schema schema;
  std::vector<ParquetColumnInfo> column_info;
  std::vector<ParquetRowGroupInfo> groups;

  Status Err(Status st) const { return st.WithContext(src->name()); }

  Status Load();
  Status ReadChunk(int rg, int col, Column* out);
};

Status ParquetReader::Impl::Load() {
  const uint64_t size = src->size();
  if (size < 12) {
    return Status::Corruption(fmt::format("not a Parquet file: {} bytes is too small", size));
  }
  std::string head, tail;
  STRATA_RETURN_IF_ERROR(src->ReadAt(0, 4, &head));
  STRATA_RETURN_IF_ERROR(src->ReadAt(size - 8, 8, &tail));
  if (tail.compare(4, 4, "PARE") == 0) {
    return Status::NotSupported("the file is an encrypted Parquet file (PARE), which is not supported");
  }
  if (head != "PAR1" || tail.compare(4, 4, "PAR1") != 0) {
    return Status::Corruption("not a Parquet file: the PAR1 magic bytes are missing");
  }
  const uint32_t footer_len = DecodeFixed32(tail.data());
  if (footer_len == 0 || footer_len > size - 12) {
    return Status::Corruption(fmt::format("footer length {} does not fit in a {}-byte file", footer_len, size));
  }
  footer_start = size - 8 - footer_len;
  std::string footer;
  STRATA_RETURN_IF_ERROR(src->ReadAt(footer_start, footer_len, &footer));
  STRATA_RETURN_IF_ERROR(ParseFileMetaData(reinterpret_cast<const uint8_t*>(footer.data()), footer.size(), &md));

  if (md.schema.empty()) return Status::Corruption("the schema is empty (no root element)");
  if (md.num_rows < 0) return Status::Corruption(fmt::format("negative row count {}", md.num_rows));
  const SchemaElement& root = md.schema[0];
  if (root.num_children < 0 || static_cast<size_t>(root.num_children) > md.schema.size() - 1) {
    return Status::Corruption(fmt::format("the root claims {} children but the schema lists {} elements",
                                          root.num_children, md.schema.size() - 1));
  }
  for (size_t i = 1; i < md.schema.size(); ++i) {
    const SchemaElement& e = md.schema[i];
    if (e.num_children > 0 || !e.type.has_value() || (e.repetition && *e.repetition == REPEATED) ||
        e.logical.kind == Logical::kList || e.logical.kind == Logical::kMap) {
      return Status::NotSupported(fmt::format(
          "column \"{}\" is nested (a group, LIST, MAP or repeated field); only flat schemas are supported",
          e.name));
    }
  }
  if (static_cast<size_t>(root.num_children) != md.schema.size() - 1) {
    return Status::Corruption(fmt::format("the root claims {} children but the schema lists {} columns",
                                          root.num_children, md.schema.size() - 1));
  }
  for (size_t i = 1; i < md.schema.size(); ++i) {
    Leaf leaf;
    STRATA_RETURN_IF_ERROR(MapLeaf(md.schema[i], &leaf));
    schema.push_back(Field{leaf.name, leaf.type, leaf.max_def > 0});
    column_info.push_back(ParquetColumnInfo{TypeName(leaf.physical), LogicalText(md.schema[i])});
    leaves.push_back(std::move(leaf));
  }
  int64_t total = 0;
  for (size_t g = 0; g < md.row_groups.size(); ++g) {
    const RowGroup& rg = md.row_groups[g];
    if (rg.num_rows < 0 || rg.num_rows > options.max_row_group_rows) {
      return Status::Corruption(fmt::format("row group {} declares {} rows", g, rg.num_rows));
    }
    if (rg.columns.size() != leaves.size()) {
      return Status::Corruption(fmt::format("row group {} has {} column chunks for {} columns", g,
                                            rg.columns.size(), leaves.size()));
    }
    total += rg.num_rows;
    ParquetRowGroupInfo info;
    info.num_rows = rg.num_rows;
    for (size_t c = 0; c < rg.columns.size(); ++c) {
      const ColumnChunk& cc = rg.columns[c];
      if (!cc.meta) return Status::Corruption(fmt::format("row group {} column {} has no metadata", g, c));
      if (!cc.file_path.empty()) {
        return Status::NotSupported(fmt::format("column chunks in other files (\"{}\") are not supported", cc.file_path));
      }
      const ColumnMetaData& m = *cc.meta;
      ParquetChunkInfo ci;
      ci.codec = CodecName(m.codec);
      for (int32_t e : m.encodings) ci.encodings.push_back(EncodingName(e));
      ci.num_values = m.num_values;
      ci.compressed_bytes = m.total_compressed_size;
      ci.uncompressed_bytes = m.total_uncompressed_size;
      ci.has_dictionary_page = m.dictionary_page_offset.has_value() && *m.dictionary_page_offset > 0;
      if (m.statistics) {
        ci.null_count = m.statistics->null_count;
        ci.min = m.statistics->min_value ? m.statistics->min_value : m.statistics->min;
        ci.max = m.statistics->max_value ? m.statistics->max_value : m.statistics->max;
      }
      info.columns.push_back(std::move(ci));
    }
    groups.push_back(std::move(info));
  }
  if (total != md.num_rows) {
    return Status::Corruption(fmt::format("the footer says {} rows but its row groups hold {}", md.num_rows, total));
  }
  return Status::Ok();
}

namespace {

// Where a chunk's errors are reported: the column and its row group.
struct ChunkWhere {
  const Leaf& leaf;
  int rg;
  Status Corrupt(std::string msg) const {
    return Status::Corruption(fmt::format("column \"{}\" (row group {}): {}", leaf.name, rg, msg));
  }
};

// A data page's parts once its header is read and its body decompressed.
struct DataPage {
  int32_t num_values = 0;
  int32_t encoding = PLAIN;
  const uint8_t* vp = nullptr;  // values
  size_t vsize = 0;
  const uint8_t* lp = nullptr;  // definition levels (RLE hybrid, no length prefix)
  size_t lsize = 0;
  int32_t level_encoding = RLE;
  bool bit_packed_levels = false;  // a v1 page with BIT_PACKED definition levels
};

// Decodes the chunk's dictionary page into *dict (its bytes in *dict_page).
Status ReadDictionaryPage(const ChunkWhere& at, const PageHeader& h, std::string_view body, int32_t codec,
                          bool have_dict, std::string* dict_page, PhysValues* dict) {
  if (!h.dict) return at.Corrupt("dictionary page without its header");
  if (have_dict) return at.Corrupt("a second dictionary page");
  if (h.dict->num_values < 0) return at.Corrupt(fmt::format("dictionary claims {} values", h.dict->num_values));
  if (h.dict->encoding != PLAIN && h.dict->encoding != PLAIN_DICTIONARY) {
    return at.Corrupt(fmt::format("dictionary encoding {} is not PLAIN", EncodingName(h.dict->encoding)));
  }
  STRATA_RETURN_IF_ERROR(Decompress(codec, body, static_cast<size_t>(h.uncompressed_page_size), dict_page)
                             .WithContext(fmt::format("column \"{}\" dictionary", at.leaf.name)));
  return DecodePlain(at.leaf, reinterpret_cast<const uint8_t*>(dict_page->data()), dict_page->size(),
                     static_cast<size_t>(h.dict->num_values), dict);
}

// A v1 data page: decompressed whole into *page, the definition levels first.
Status OpenDataPageV1(const ChunkWhere& at, const PageHeader& h, std::string_view body, int32_t codec,
                      std::string* page, DataPage* dp) {
  const Leaf& leaf = at.leaf;
  if (!h.data) return at.Corrupt("data page without its header");
  dp->num_values = h.data->num_values;
  dp->encoding = h.data->encoding;
  dp->level_encoding = h.data->definition_level_encoding;
  STRATA_RETURN_IF_ERROR(Decompress(codec, body, static_cast<size_t>(h.uncompressed_page_size), page)
                             .WithContext(fmt::format("column \"{}\"", leaf.name)));
  dp->vp = reinterpret_cast<const uint8_t*>(page->data());
  dp->vsize = page->size();
  if (leaf.max_def == 0) return Status::Ok();
  if (dp->level_encoding == RLE) {
    if (dp->vsize < 4) return at.Corrupt("definition levels are truncated");
    const uint32_t n = DecodeFixed32(reinterpret_cast<const char*>(dp->vp));
    if (n > dp->vsize - 4) {
      return at.Corrupt(fmt::format("definition levels claim {} bytes, {} are left", n, dp->vsize - 4));
    }
    dp->lp = dp->vp + 4;
    dp->lsize = n;
    dp->vp += 4 + n;
    dp->vsize -= 4 + n;
  } else if (dp->level_encoding == BIT_PACKED) {
    const size_t n = (static_cast<size_t>(std::max(dp->num_values, 0)) + 7) / 8;
    if (n > dp->vsize) return at.Corrupt("BIT_PACKED definition levels are truncated");
    dp->lp = dp->vp;
    dp->lsize = n;
    dp->vp += n;
    dp->vsize -= n;
    dp->bit_packed_levels = true;
  } else {
    return at.Corrupt(
        fmt::format("definition level encoding {} is not supported", EncodingName(dp->level_encoding)));
  }
  return Status::Ok();
}

// A v2 data page: the levels stay uncompressed in the body, the values are
// decompressed (or copied) into *page.
Status OpenDataPageV2(const ChunkWhere& at, const PageHeader& h, std::string_view body, int32_t codec,
                      std::string* page, DataPage* dp) {
  if (!h.data_v2) return at.Corrupt("v2 data page without its header");
  const DataPageHeaderV2& d = *h.data_v2;
  dp->num_values = d.num_values;
  dp->encoding = d.encoding;
  if (d.num_rows != d.num_values) {
    return at.Corrupt(fmt::format("v2 page has {} rows but {} values (a nested column?)", d.num_rows, d.num_values));
  }
  if (d.repetition_levels_byte_length < 0 || d.definition_levels_byte_length < 0 ||
      static_cast<uint64_t>(d.repetition_levels_byte_length) + d.definition_levels_byte_length > body.size()) {
    return at.Corrupt("v2 page level lengths exceed the page");
  }
  const size_t lev = static_cast<size_t>(d.repetition_levels_byte_length + d.definition_levels_byte_length);
  if (static_cast<size_t>(h.uncompressed_page_size) < lev) return at.Corrupt("v2 page is smaller than its levels");
  dp->lp = reinterpret_cast<const uint8_t*>(body.data()) + d.repetition_levels_byte_length;
  dp->lsize = static_cast<size_t>(d.definition_levels_byte_length);
  std::string_view rest = body.substr(lev);
  const size_t want = static_cast<size_t>(h.uncompressed_page_size) - lev;
  if (d.is_compressed) {
    STRATA_RETURN_IF_ERROR(
        Decompress(codec, rest, want, page).WithContext(fmt::format("column \"{}\"", at.leaf.name)));
  } else {
    if (rest.size() != want) return at.Corrupt("uncompressed v2 page size disagrees with its header");
    page->assign(rest.data(), rest.size());
  }
  dp->vp = reinterpret_cast<const uint8_t*>(page->data());
  dp->vsize = page->size();
  return Status::Ok();
}

// Definition levels -> validity: *nonnull values follow, *valid is null when
// every row has one (levels and tmp are the caller's buffers, reused).
Status DecodeLevels(const ChunkWhere& at, const DataPage& dp, size_t n, std::vector<uint8_t>* levels,
                    std::vector<uint32_t>* tmp, size_t* nonnull, const uint8_t** valid) {
  *nonnull = n;
  *valid = nullptr;
  if (at.leaf.max_def == 0) return Status::Ok();
  levels->resize(n);
  const uint8_t* lp = dp.lp;
  if (dp.bit_packed_levels) {
    for (size_t i = 0; i < n; ++i) (*levels)[i] = (lp[i >> 3] >> (7 - (i & 7))) & 1;  // MSB first
  } else {
    tmp->resize(n);
    STRATA_RETURN_IF_ERROR(RleDecoder(lp, dp.lsize, 1).Get(tmp->data(), n).WithContext(
        fmt::format("column \"{}\" definition levels", at.leaf.name)));
    for (size_t i = 0; i < n; ++i) {
      if ((*tmp)[i] > 1) return at.Corrupt(fmt::format("definition level {} exceeds the maximum 1", (*tmp)[i]));
      (*levels)[i] = static_cast<uint8_t>((*tmp)[i]);
    }
  }
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) count += (*levels)[i];
  *nonnull = count;
  *valid = count == n ? nullptr : levels->data();
  return Status::Ok();
}

// Decodes a page's nonnull values, in whichever encoding it uses, into *vals.
Status DecodeValues(const ChunkWhere& at, const DataPage& dp, size_t nonnull, const PhysValues* dict,
                    std::vector<uint32_t>* tmp, PhysValues* vals) {
  const Leaf& leaf = at.leaf;
  const uint8_t* vp = dp.vp;
  const size_t vsize = dp.vsize;
  vals->b.clear();
  vals->i32.clear();
  vals->i64.clear();
  vals->f32.clear();
  vals->f64.clear();
  vals->bin.clear();
  switch (dp.encoding) {
    case PLAIN: STRATA_RETURN_IF_ERROR(DecodePlain(leaf, vp, vsize, nonnull, vals)); break;
    case PLAIN_DICTIONARY:
    case RLE_DICTIONARY: {
      if (dict == nullptr) return at.Corrupt("dictionary-encoded page without a dictionary page");
      if (nonnull > 0) {
        if (vsize < 1) return at.Corrupt("dictionary indices are missing their bit width");
        const int bw = vp[0];
        if (bw > 32) return at.Corrupt(fmt::format("dictionary index bit width {} > 32", bw));
        tmp->resize(nonnull);
        STRATA_RETURN_IF_ERROR(RleDecoder(vp + 1, vsize - 1, bw).Get(tmp->data(), nonnull).WithContext(
            fmt::format("column \"{}\" dictionary indices", leaf.name)));
        STRATA_RETURN_IF_ERROR(Gather(leaf, *dict, *tmp, vals));
      }
      break;
    }
    case RLE: {
      if (leaf.physical != BOOLEAN) return at.Corrupt("RLE values on a non-BOOLEAN column");
      if (vsize < 4) return at.Corrupt("RLE booleans are truncated");
      const uint32_t len = DecodeFixed32(reinterpret_cast<const char*>(vp));
      if (len > vsize - 4) return at.Corrupt("RLE booleans claim more bytes than the page holds");
      tmp->resize(nonnull);
      STRATA_RETURN_IF_ERROR(RleDecoder(vp + 4, len, 1).Get(tmp->data(), nonnull));
      vals->b.assign(tmp->begin(), tmp->end());
      break;
    }
    case DELTA_BINARY_PACKED: {
      if (leaf.physical != INT32 && leaf.physical != INT64) {
        return at.Corrupt("DELTA_BINARY_PACKED on a non-integer column");
      }
      size_t used;
      STRATA_RETURN_IF_ERROR(DecodeDeltaBinaryPacked(vp, vsize, nonnull, &vals->i64, &used)
                                 .WithContext(fmt::format("column \"{}\"", leaf.name)));
      if (leaf.physical == INT32) {
        vals->i32.resize(nonnull);
        for (size_t i = 0; i < nonnull; ++i) vals->i32[i] = static_cast<int32_t>(vals->i64[i]);
      }
      break;
    }
    case DELTA_LENGTH_BYTE_ARRAY:
      if (leaf.physical != BYTE_ARRAY) return at.Corrupt("DELTA_LENGTH_BYTE_ARRAY on a non-BYTE_ARRAY column");
      STRATA_RETURN_IF_ERROR(DecodeDeltaLengthByteArray(vp, vsize, nonnull, &vals->bin)
                                 .WithContext(fmt::format("column \"{}\"", leaf.name)));
      break;
    case DELTA_BYTE_ARRAY:
      if (leaf.physical != BYTE_ARRAY && leaf.physical != FIXED_LEN_BYTE_ARRAY) {
        return at.Corrupt("DELTA_BYTE_ARRAY on a non-byte-array column");
      }
      STRATA_RETURN_IF_ERROR(DecodeDeltaByteArray(vp, vsize, nonnull, &vals->storage, &vals->bin)
                                 .WithContext(fmt::format("column \"{}\"", leaf.name)));
      break;
    case BYTE_STREAM_SPLIT: {
      const size_t w = FixedWidth(leaf);
      if (w == 0 || leaf.physical == INT96) return at.Corrupt("BYTE_STREAM_SPLIT on a variable-width column");
      STRATA_RETURN_IF_ERROR(DecodeByteStreamSplit(vp, vsize, nonnull, w, &vals->storage)
                                 .WithContext(fmt::format("column \"{}\"", leaf.name)));
      STRATA_RETURN_IF_ERROR(DecodePlain(leaf, reinterpret_cast<const uint8_t*>(vals->storage.data()),
                                         vals->storage.size(), nonnull, vals));
      break;
    }
    default: return at.Corrupt(fmt::format("value encoding {} is not supported", EncodingName(dp.encoding)));
  }
  if (vals->size(leaf.physical) < nonnull) {
    return at.Corrupt(fmt::format("a page decoded {} values, its levels need {}", vals->size(leaf.physical), nonnull));
  }
  return Status::Ok();
}

}  // namespace

Status ParquetReader::Impl::ReadChunk(int rg_index, int col_index, Column* out) {
  const Leaf& leaf = leaves[col_index];
  const RowGroup& rg = md.row_groups[rg_index];
  const ColumnMetaData& m = *rg.columns[col_index].meta;
  const int64_t rows = rg.num_rows;
  const ChunkWhere at{leaf, rg_index};
  if (m.type != leaf.physical) {
    return at.Corrupt(
        fmt::format("chunk type {} disagrees with the schema's {}", TypeName(m.type), TypeName(leaf.physical)));
  }
  if (rows == 0) return Status::Ok();
  int64_t start = m.data_page_offset;
  if (m.dictionary_page_offset && *m.dictionary_page_offset > 0 && *m.dictionary_page_offset < start) {
    start = *m.dictionary_page_offset;
  }
  if (start < 4 || static_cast<uint64_t>(start) >= footer_start) {
    return at.Corrupt(fmt::format("pages start at byte {}, outside the data area (4..{})", start, footer_start));
  }
  if (m.total_compressed_size <= 0) return at.Corrupt(fmt::format("chunk size {} is invalid", m.total_compressed_size));
  const uint64_t len = std::min<uint64_t>(static_cast<uint64_t>(m.total_compressed_size), footer_start - start);
  std::string chunk;
  STRATA_RETURN_IF_ERROR(src->ReadAt(static_cast<uint64_t>(start), len, &chunk));
  const auto* base = reinterpret_cast<const uint8_t*>(chunk.data());

  out->Reserve(static_cast<size_t>(std::min<int64_t>(rows, 1 << 20)));
  PhysValues dict;
  std::string dict_page;  // owns the dictionary's bytes (dict.bin points into it)
  bool have_dict = false;
  std::string page;       // decompressed page
  std::vector<uint8_t> levels;
  std::vector<uint32_t> tmp;
  PhysValues vals;
  int64_t done = 0;
  size_t pos = 0;
  while (done < rows) {
    if (pos >= chunk.size()) {
      return at.Corrupt(fmt::format("pages hold {} values, the row group has {} rows", done, rows));
    }
    PageHeader h;
    size_t hlen = 0;
    Status st = ParsePageHeader(base + pos, chunk.size() - pos, &h, &hlen);
    if (!st.ok()) return at.Corrupt(fmt::format("bad page header at byte {}: {}", start + pos, st.message()));
    pos += hlen;
    if (h.compressed_page_size < 0 || static_cast<size_t>(h.compressed_page_size) > chunk.size() - pos) {
      return at.Corrupt(fmt::format("page of {} bytes at byte {} runs past the column chunk", h.compressed_page_size,
                                    start + pos));
    }
    if (h.uncompressed_page_size < 0) return at.Corrupt("negative uncompressed page size");
    std::string_view body(chunk.data() + pos, static_cast<size_t>(h.compressed_page_size));
    pos += static_cast<size_t>(h.compressed_page_size);
    if (options.verify_checksums && h.crc) {
      const uint32_t crc = static_cast<uint32_t>(
          crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
      if (crc != static_cast<uint32_t>(*h.crc)) {
        return at.Corrupt(fmt::format("page CRC32 mismatch at byte {} (stored {:08x}, computed {:08x})",
                                      start + pos - body.size(), static_cast<uint32_t>(*h.crc), crc));
      }
    }

    if (h.type == DICTIONARY_PAGE) {
      STRATA_RETURN_IF_ERROR(ReadDictionaryPage(at, h, body, m.codec, have_dict, &dict_page, &dict));
      have_dict = true;
      continue;
    }
    if (h.type != DATA_PAGE && h.type != DATA_PAGE_V2) continue;  // index pages and unknown kinds

    DataPage dp;
    if (h.type == DATA_PAGE) {
      STRATA_RETURN_IF_ERROR(OpenDataPageV1(at, h, body, m.codec, &page, &dp));
    } else {
      STRATA_RETURN_IF_ERROR(OpenDataPageV2(at, h, body, m.codec, &page, &dp));
    }
    if (dp.num_values < 0 || dp.num_values > rows - done) {
      return at.Corrupt(fmt::format("a page holds {} values but only {} rows remain in the row group", dp.num_values,
                                    rows - done));
    }
    const size_t n = static_cast<size_t>(dp.num_values);
    if (n == 0) continue;
    size_t nonnull;
    const uint8_t* valid;
    STRATA_RETURN_IF_ERROR(DecodeLevels(at, dp, n, &levels, &tmp, &nonnull, &valid));
    STRATA_RETURN_IF_ERROR(DecodeValues(at, dp, nonnull, have_dict ? &dict : nullptr, &tmp, &vals));
    STRATA_RETURN_IF_ERROR(AppendRows(leaf, vals, valid, n, out));
    done += dp.num_values;
  }
  if (leaf.max_def == 0 && out->null_count() > 0) return at.Corrupt("a REQUIRED column holds NULLs");
  return Status::Ok();
}

ParquetReader::ParquetReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ParquetReader::~ParquetReader() = default;

Result<std::unique_ptr<ParquetReader>> ParquetReader::Open(std::unique_ptr<RandomAccessSource> source,
                                                           ParquetReadOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->src = std::move(source);
  impl->options = options;
  Status st = impl->Load();
  if (!st.ok()) return impl->Err(st);
  return std::unique_ptr<ParquetReader>(new ParquetReader(std::move(impl)));
}

Result<std::unique_ptr<ParquetReader>> ParquetReader::OpenFile(const std::string& path, ParquetReadOptions options) {
  STRATA_ASSIGN_OR_RETURN(auto src, OpenLocalFile(path));
  return Open(std::move(src), options);
}

const Schema& ParquetReader::schema() const { return impl_->schema; }
const std::vector<ParquetColumnInfo>& ParquetReader::column_info() const { return impl_->column_info; }
int64_t ParquetReader::num_rows() const { return impl_->md.num_rows; }
int ParquetReader::num_row_groups() const { return static_cast<int>(impl_->md.row_groups.size()); }
const ParquetRowGroupInfo& ParquetReader::row_group(int i) const { return impl_->groups[i]; }
const std::string& ParquetReader::created_by() const { return impl_->md.created_by; }

Result<std::vector<int>> ParquetReader::ColumnIndices(const std::vector<std::string>& names) const {
  std::vector<int> out;
  for (const std::string& n : names) {
    int found = -1;
    for (size_t i = 0; i < impl_->schema.size(); ++i) {
      if (impl_->schema[i].name == n) {
        found = static_cast<int>(i);
        break;
      }
    }
    if (found < 0) {
      std::string have;
      for (const Field& f : impl_->schema) have += (have.empty() ? "" : ", ") + f.name;
      return Status::NotFound(fmt::format("{}: no column \"{}\" (columns: {})", impl_->src->name(), n, have));
    }
    out.push_back(found);
  }
  return out;
}

Result<Table> ParquetReader::ReadRowGroup(int i, const std::vector<int>& columns) {
  if (i < 0 || i >= num_row_groups()) {
    return Status::InvalidArgument(fmt::format("row group {} does not exist ({} row groups)", i, num_row_groups()));
  }
  std::vector<int> cols = columns;
  if (cols.empty()) {
    for (size_t c = 0; c < impl_->leaves.size(); ++c) cols.push_back(static_cast<int>(c));
  }
  Table t;
  for (int c : cols) {
    if (c < 0 || static_cast<size_t>(c) >= impl_->leaves.size()) {
      return Status::InvalidArgument(fmt::format("column index {} is out of range", c));
    }
    Column col(impl_->leaves[c].type);
    Status st = impl_->ReadChunk(i, c, &col);
    if (!st.ok()) return impl_->Err(st);
    STRATA_RETURN_IF_ERROR(t.AddColumn(impl_->schema[c], std::move(col)));
  }
  if (cols.empty()) t.set_num_rows(static_cast<size_t>(impl_->md.row_groups[i].num_rows));
  return t;
}

Result<Table> ParquetReader::ReadAll(const std::vector<int>& columns) {
  std::vector<int> cols = columns;
  if (cols.empty()) {
    for (size_t c = 0; c < impl_->leaves.size(); ++c) cols.push_back(static_cast<int>(c));
  }
  Schema s;
  for (int c : cols) {
    if (c < 0 || static_cast<size_t>(c) >= impl_->leaves.size()) {
      return Status::InvalidArgument(fmt::format("column index {} is out of range", c));
    }
    s.push_back(impl_->schema[c]);
  }
  Table out(s);
  for (int g = 0; g < num_row_groups(); ++g) {
    STRATA_ASSIGN_OR_RETURN(Table t, ReadRowGroup(g, cols));
    STRATA_RETURN_IF_ERROR(out.Append(t));
  }
  return out;
}

Result<Table> ReadParquetFile(const std::string& path, const std::vector<std::string>& columns) {
  STRATA_ASSIGN_OR_RETURN(auto reader, ParquetReader::OpenFile(path));
  std::vector<int> idx;
  if (!columns.empty()) {
    STRATA_ASSIGN_OR_RETURN(idx, reader->ColumnIndices(columns));
  }
  return reader->ReadAll(idx);
}

}  // namespace strata::features
