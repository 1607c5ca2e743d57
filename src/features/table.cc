#include <strata/features/table.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace strata::features {

namespace {

const char* UnitSuffix(TimeUnit u) {
  switch (u) {
    case TimeUnit::kMilli: return "ms";
    case TimeUnit::kMicro: return "us";
    case TimeUnit::kNano: return "ns";
  }
  return "us";
}

int64_t UnitsPerSecond(TimeUnit u) {
  switch (u) {
    case TimeUnit::kMilli: return 1000;
    case TimeUnit::kMicro: return 1000000;
    case TimeUnit::kNano: return 1000000000;
  }
  return 1000000;
}

int UnitDigits(TimeUnit u) { return u == TimeUnit::kMilli ? 3 : u == TimeUnit::kMicro ? 6 : 9; }

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

std::string DataType::ToString() const {
  switch (id) {
    case TypeId::kBool: return "bool";
    case TypeId::kInt32: return "int32";
    case TypeId::kInt64: return "int64";
    case TypeId::kFloat: return "float";
    case TypeId::kDouble: return "double";
    case TypeId::kString: return "string";
    case TypeId::kBinary: return "binary";
    case TypeId::kDate: return "date";
    case TypeId::kTimestamp:
      return fmt::format("timestamp[{}{}]", UnitSuffix(unit), utc ? ", UTC" : "");
  }
  return "?";
}

Result<DataType> ParseDataType(std::string_view name) {
  std::string n;
  for (char c : name) n.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (n == "bool" || n == "boolean") return DataType::Bool();
  if (n == "int32" || n == "integer" || n == "int") return DataType::Int32();
  if (n == "int64" || n == "bigint" || n == "long") return DataType::Int64();
  if (n == "float" || n == "float32") return DataType::Float();
  if (n == "double" || n == "float64") return DataType::Double();
  if (n == "string" || n == "varchar" || n == "utf8") return DataType::String();
  if (n == "binary" || n == "bytes" || n == "blob") return DataType::Binary();
  if (n == "date") return DataType::Date();
  if (n == "timestamp" || n == "unixtimestamp" || n == "timestamp[us]") return DataType::Timestamp();
  if (n == "timestamp[ms]") return DataType::Timestamp(TimeUnit::kMilli);
  if (n == "timestamp[ns]") return DataType::Timestamp(TimeUnit::kNano);
  return Status::InvalidArgument(fmt::format(
      "unknown type \"{}\": use one of Int32, Int64, Float32, Float64, Bool, String, Bytes, "
      "UnixTimestamp (or int32, int64, float, double, bool, string, binary, date, timestamp)",
      name));
}

size_t Column::null_count() const {
  size_t n = 0;
  for (uint8_t v : valid_) n += (v == 0);
  return n;
}

int64_t Column::IntAt(size_t i) const {
  switch (type_.id) {
    case TypeId::kBool: return b_[i];
    case TypeId::kInt32:
    case TypeId::kDate: return i32_[i];
    case TypeId::kInt64:
    case TypeId::kTimestamp: return i64_[i];
    case TypeId::kFloat: return static_cast<int64_t>(f32_[i]);
    case TypeId::kDouble: return static_cast<int64_t>(f64_[i]);
    default: return 0;
  }
}

double Column::DoubleAt(size_t i) const {
  switch (type_.id) {
    case TypeId::kFloat: return f32_[i];
    case TypeId::kDouble: return f64_[i];
    case TypeId::kString:
    case TypeId::kBinary: return 0;
    default: return static_cast<double>(IntAt(i));
  }
}

void Column::Reserve(size_t rows, size_t char_bytes) {
  valid_.reserve(rows);
  switch (type_.id) {
    case TypeId::kBool: b_.reserve(rows); break;
    case TypeId::kInt32:
    case TypeId::kDate: i32_.reserve(rows); break;
    case TypeId::kInt64:
    case TypeId::kTimestamp: i64_.reserve(rows); break;
    case TypeId::kFloat: f32_.reserve(rows); break;
    case TypeId::kDouble: f64_.reserve(rows); break;
    case TypeId::kString:
    case TypeId::kBinary:
      offsets_.reserve(rows + 1);
      chars_.reserve(char_bytes);
      break;
  }
}

void Column::AppendNull() {
  valid_.push_back(0);
  switch (type_.id) {
    case TypeId::kBool: b_.push_back(0); break;
    case TypeId::kInt32:
    case TypeId::kDate: i32_.push_back(0); break;
    case TypeId::kInt64:
    case TypeId::kTimestamp: i64_.push_back(0); break;
    case TypeId::kFloat: f32_.push_back(0); break;
    case TypeId::kDouble: f64_.push_back(0); break;
    case TypeId::kString:
    case TypeId::kBinary: offsets_.push_back(chars_.size()); break;
  }
}

void Column::AppendFrom(const Column& src, size_t i) {
  if (src.IsNull(i)) {
    AppendNull();
    return;
  }
  switch (type_.id) {
    case TypeId::kBool: Append<uint8_t>(src.b_[i]); break;
    case TypeId::kInt32:
    case TypeId::kDate: Append<int32_t>(src.i32_[i]); break;
    case TypeId::kInt64:
    case TypeId::kTimestamp: Append<int64_t>(src.i64_[i]); break;
    case TypeId::kFloat: Append<float>(src.f32_[i]); break;
    case TypeId::kDouble: Append<double>(src.f64_[i]); break;
    case TypeId::kString:
    case TypeId::kBinary: AppendString(src.StringAt(i)); break;
  }
}

void Column::AppendColumn(const Column& src) {
  valid_.insert(valid_.end(), src.valid_.begin(), src.valid_.end());
  b_.insert(b_.end(), src.b_.begin(), src.b_.end());
  i32_.insert(i32_.end(), src.i32_.begin(), src.i32_.end());
  i64_.insert(i64_.end(), src.i64_.begin(), src.i64_.end());
  f32_.insert(f32_.end(), src.f32_.begin(), src.f32_.end());
  f64_.insert(f64_.end(), src.f64_.begin(), src.f64_.end());
  if (type_.is_string_like()) {
    const uint64_t base = chars_.size();
    chars_.append(src.chars_);
    for (size_t k = 1; k < src.offsets_.size(); ++k) offsets_.push_back(base + src.offsets_[k]);
  }
}

namespace {

template <class T>
void TakeFixed(const std::vector<T>& src, const std::vector<uint8_t>& src_valid, const std::vector<int64_t>& idx,
               std::vector<T>* dst, std::vector<uint8_t>* dst_valid) {
  const size_t n = idx.size();
  dst->resize(n);
  dst_valid->resize(n);
  T* d = dst->data();
  uint8_t* dv = dst_valid->data();
  for (size_t k = 0; k < n; ++k) {
    const int64_t i = idx[k];
    if (i < 0) {
      d[k] = T{};
      dv[k] = 0;
    } else {
      d[k] = src[static_cast<size_t>(i)];
      dv[k] = src_valid[static_cast<size_t>(i)];
    }
  }
}

}  // namespace

Column Column::Take(const std::vector<int64_t>& indices) const {
  Column out(type_);
  switch (type_.id) {
    case TypeId::kBool: TakeFixed(b_, valid_, indices, &out.b_, &out.valid_); break;
    case TypeId::kInt32:
    case TypeId::kDate: TakeFixed(i32_, valid_, indices, &out.i32_, &out.valid_); break;
    case TypeId::kInt64:
    case TypeId::kTimestamp: TakeFixed(i64_, valid_, indices, &out.i64_, &out.valid_); break;
    case TypeId::kFloat: TakeFixed(f32_, valid_, indices, &out.f32_, &out.valid_); break;
    case TypeId::kDouble: TakeFixed(f64_, valid_, indices, &out.f64_, &out.valid_); break;
    case TypeId::kString:
    case TypeId::kBinary: {
      size_t bytes = 0;
      for (int64_t ix : indices) {
        if (ix >= 0) bytes += offsets_[ix + 1] - offsets_[ix];
      }
      out.Reserve(indices.size(), bytes);
      for (int64_t ix : indices) {
        if (ix < 0) {
          out.AppendNull();
        } else {
          out.AppendFrom(*this, static_cast<size_t>(ix));
        }
      }
      break;
    }
  }
  return out;
}

bool Column::RowEquals(size_t i, const Column& other, size_t j) const {
  if (IsNull(i) || other.IsNull(j)) return IsNull(i) == other.IsNull(j);
  switch (type_.id) {
    case TypeId::kBool: return (b_[i] != 0) == (other.b_[j] != 0);
    case TypeId::kInt32:
    case TypeId::kDate: return i32_[i] == other.i32_[j];
    case TypeId::kInt64:
    case TypeId::kTimestamp: return i64_[i] == other.i64_[j];
    case TypeId::kFloat: return std::memcmp(&f32_[i], &other.f32_[j], sizeof(float)) == 0;
    case TypeId::kDouble: return std::memcmp(&f64_[i], &other.f64_[j], sizeof(double)) == 0;
    case TypeId::kString:
    case TypeId::kBinary: return StringAt(i) == other.StringAt(j);
  }
  return false;
}

std::string Column::FormatValue(size_t i) const {
  if (IsNull(i)) return "NULL";
  switch (type_.id) {
    case TypeId::kBool: return b_[i] ? "true" : "false";
    case TypeId::kInt32: return std::to_string(i32_[i]);
    case TypeId::kInt64: return std::to_string(i64_[i]);
    case TypeId::kFloat: return fmt::format("{}", f32_[i]);
    case TypeId::kDouble: return fmt::format("{}", f64_[i]);
    case TypeId::kString:
    case TypeId::kBinary: return std::string(StringAt(i));
    case TypeId::kDate: return FormatDate(i32_[i]);
    case TypeId::kTimestamp: return FormatTimestamp(i64_[i], type_.unit, type_.utc);
  }
  return "?";
}

Table::Table(Schema schema) : schema_(std::move(schema)) {
  columns_.reserve(schema_.size());
  for (const Field& f : schema_) columns_.emplace_back(f.type);
}

int Table::FieldIndex(std::string_view name) const {
  for (size_t i = 0; i < schema_.size(); ++i) {
    if (schema_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Status Table::AddColumn(Field field, Column column) {
  if (!(field.type == column.type())) {
    return Status::InvalidArgument(fmt::format("column \"{}\" is {} but its field says {}",
                                               field.name, column.type().ToString(),
                                               field.type.ToString()));
  }
  if (!columns_.empty() && column.size() != num_rows()) {
    return Status::InvalidArgument(fmt::format("column \"{}\" has {} rows, the table {}",
                                               field.name, column.size(), num_rows()));
  }
  if (FieldIndex(field.name) >= 0) {
    return Status::AlreadyExists(fmt::format("the table already has a column \"{}\"", field.name));
  }
  schema_.push_back(std::move(field));
  columns_.push_back(std::move(column));
  return Status::Ok();
}

Status Table::Validate() const {
  if (schema_.size() != columns_.size()) {
    return Status::Internal("schema and columns disagree in number");
  }
  for (size_t i = 0; i < columns_.size(); ++i) {
    const Column& c = columns_[i];
    if (!(c.type() == schema_[i].type)) {
      return Status::InvalidArgument(fmt::format("column \"{}\" is {}, its field {}",
                                                 schema_[i].name, c.type().ToString(),
                                                 schema_[i].type.ToString()));
    }
    if (c.size() != columns_[0].size()) {
      return Status::InvalidArgument(fmt::format("column \"{}\" has {} rows, column \"{}\" {}",
                                                 schema_[i].name, c.size(), schema_[0].name,
                                                 columns_[0].size()));
    }
  }
  return Status::Ok();
}

Status Table::Append(const Table& other) {
  if (other.schema_.size() != schema_.size()) {
    return Status::InvalidArgument("cannot append a table with a different number of columns");
  }
  for (size_t i = 0; i < schema_.size(); ++i) {
    if (other.schema_[i].name != schema_[i].name || !(other.schema_[i].type == schema_[i].type)) {
      return Status::InvalidArgument(fmt::format(
          "cannot append: column {} is \"{}\" {} here but \"{}\" {} there", i, schema_[i].name,
          schema_[i].type.ToString(), other.schema_[i].name, other.schema_[i].type.ToString()));
    }
  }
  for (size_t i = 0; i < schema_.size(); ++i) columns_[i].AppendColumn(other.columns_[i]);
  if (columns_.empty()) num_rows_ += other.num_rows();
  return Status::Ok();
}

Result<Table> Table::Select(const std::vector<std::string>& names) const {
  Table out;
  for (const std::string& n : names) {
    int ix = FieldIndex(n);
    if (ix < 0) return Status::NotFound(fmt::format("no column \"{}\"", n));
    STRATA_RETURN_IF_ERROR(out.AddColumn(schema_[ix], columns_[ix]));
  }
  return out;
}

bool Table::Equals(const Table& other, std::string* why) const {
  auto fail = [&](std::string m) {
    if (why) *why = std::move(m);
    return false;
  };
  if (schema_.size() != other.schema_.size()) {
    return fail(fmt::format("{} columns vs {}", schema_.size(), other.schema_.size()));
  }
  if (num_rows() != other.num_rows()) {
    return fail(fmt::format("{} rows vs {}", num_rows(), other.num_rows()));
  }
  for (size_t c = 0; c < schema_.size(); ++c) {
    if (schema_[c].name != other.schema_[c].name || !(schema_[c].type == other.schema_[c].type)) {
      return fail(fmt::format("column {}: \"{}\" {} vs \"{}\" {}", c, schema_[c].name,
                              schema_[c].type.ToString(), other.schema_[c].name,
                              other.schema_[c].type.ToString()));
    }
    for (size_t r = 0; r < num_rows(); ++r) {
      if (!columns_[c].RowEquals(r, other.columns_[c], r)) {
        return fail(fmt::format("column \"{}\" row {}: {} vs {}", schema_[c].name, r,
                                columns_[c].FormatValue(r), other.columns_[c].FormatValue(r)));
      }
    }
  }
  return true;
}

bool CanCast(const DataType& from, const DataType& to) {
  auto numeric = [](TypeId t) {
    return t == TypeId::kInt32 || t == TypeId::kInt64 || t == TypeId::kFloat || t == TypeId::kDouble;
  };
  if (from == to) return true;
  if (numeric(to.id)) return numeric(from.id) || from.id == TypeId::kBool;
  if (to.id == TypeId::kBool) return from.id == TypeId::kBool;
  if (to.is_string_like()) return from.is_string_like();
  if (to.id == TypeId::kTimestamp) return from.id == TypeId::kTimestamp || from.id == TypeId::kDate;
  if (to.id == TypeId::kDate) return from.id == TypeId::kDate;
  return false;
}

Result<Column> CastColumn(const Column& c, const DataType& to) {
  if (c.type() == to) return c;
  if (!CanCast(c.type(), to)) {
    return Status::InvalidArgument(fmt::format("cannot convert {} to {}", c.type().ToString(), to.ToString()));
  }
  Column out(to);
  const size_t n = c.size();
  out.Reserve(n, c.chars().size());
  const TypeId from = c.type().id;
  for (size_t i = 0; i < n; ++i) {
    if (c.IsNull(i)) {
      out.AppendNull();
      continue;
    }
    switch (to.id) {
      case TypeId::kInt32: {
        int64_t v;
        if (from == TypeId::kFloat || from == TypeId::kDouble) {
          const double d = c.DoubleAt(i);
          if (!(d >= INT32_MIN && d <= INT32_MAX) || d != std::trunc(d)) {
            return Status::InvalidArgument(fmt::format("value {} does not fit int32", d));
          }
          v = static_cast<int64_t>(d);
        } else {
          v = c.IntAt(i);
        }
        if (v < INT32_MIN || v > INT32_MAX) return Status::InvalidArgument(fmt::format("value {} does not fit int32", v));
        out.Append<int32_t>(static_cast<int32_t>(v));
        break;
      }
      case TypeId::kInt64: {
        if (from == TypeId::kFloat || from == TypeId::kDouble) {
          const double d = c.DoubleAt(i);
          if (!(d >= -9.2e18 && d <= 9.2e18) || d != std::trunc(d)) {
            return Status::InvalidArgument(fmt::format("value {} is not an int64", d));
          }
          out.Append<int64_t>(static_cast<int64_t>(d));
        } else {
          out.Append<int64_t>(c.IntAt(i));
        }
        break;
      }
      case TypeId::kFloat: out.Append<float>(static_cast<float>(c.DoubleAt(i))); break;
      case TypeId::kDouble: out.Append<double>(c.DoubleAt(i)); break;
      case TypeId::kBool: out.Append<uint8_t>(c.values<uint8_t>()[i]); break;
      case TypeId::kString:
      case TypeId::kBinary: out.AppendString(c.StringAt(i)); break;
      case TypeId::kTimestamp:
        if (from == TypeId::kDate) {
          out.Append<int64_t>(
              ConvertTime(static_cast<int64_t>(c.values<int32_t>()[i]) * 86400000, TimeUnit::kMilli, to.unit));
        } else {
          out.Append<int64_t>(ConvertTime(c.values<int64_t>()[i], c.type().unit, to.unit));
        }
        break;
      case TypeId::kDate: out.Append<int32_t>(c.values<int32_t>()[i]); break;
    }
  }
  return out;
}

std::string FormatDate(int32_t days) {
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  return fmt::format("{:04}-{:02}-{:02}", y, m, d);
}

std::string FormatTimestamp(int64_t value, TimeUnit unit, bool utc) {
  const int64_t per_sec = UnitsPerSecond(unit);
  const int64_t secs = FloorDiv(value, per_sec);
  const int64_t frac = value - secs * per_sec;
  const int64_t days = FloorDiv(secs, 86400);
  const int64_t sod = secs - days * 86400;
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  std::string out = fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", y, m, d, sod / 3600,
                                (sod / 60) % 60, sod % 60);
  if (frac != 0) {
    std::string f = fmt::format("{:0{}}", frac, UnitDigits(unit));
    while (!f.empty() && f.back() == '0') f.pop_back();
    out += "." + f;
  }
  if (utc) out += "+00";
  return out;
}

int64_t ConvertTime(int64_t value, TimeUnit from, TimeUnit to) {
  if (from == to) return value;
  const int64_t a = UnitsPerSecond(from), b = UnitsPerSecond(to);
  if (b > a) {
    const int64_t f = b / a;
    if (value > std::numeric_limits<int64_t>::max() / f) return std::numeric_limits<int64_t>::max();
    if (value < std::numeric_limits<int64_t>::min() / f) return std::numeric_limits<int64_t>::min();
    return value * f;
  }
  return FloorDiv(value, a / b);
}

namespace {

bool ParseDigits(std::string_view s, size_t* pos, size_t min_n, size_t max_n, int64_t* out) {
  size_t start = *pos, n = 0;
  int64_t v = 0;
  while (*pos < s.size() && n < max_n && s[*pos] >= '0' && s[*pos] <= '9') {
    v = v * 10 + (s[*pos] - '0');
    ++*pos;
    ++n;
  }
  if (n < min_n) {
    *pos = start;
    return false;
  }
  *out = v;
  return true;
}

Status BadTime(std::string_view text) {
  return Status::InvalidArgument(fmt::format(
      "\"{}\" is not a timestamp: expected YYYY-MM-DD[ HH:MM:SS[.fraction]][Z|+HH:MM]", text));
}

// Parses a date at the front; returns days.
bool ParseDatePart(std::string_view s, size_t* pos, int64_t* days) {
  bool neg = false;
  if (*pos < s.size() && s[*pos] == '-') {
    neg = true;
    ++*pos;
  }
  int64_t y, m, d;
  if (!ParseDigits(s, pos, 4, 6, &y)) return false;
  if (*pos >= s.size() || s[*pos] != '-') return false;
  ++*pos;
  if (!ParseDigits(s, pos, 1, 2, &m)) return false;
  if (*pos >= s.size() || s[*pos] != '-') return false;
  ++*pos;
  if (!ParseDigits(s, pos, 1, 2, &d)) return false;
  if (m < 1 || m > 12 || d < 1 || d > 31) return false;
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (d > kDays[m - 1]) return false;
  if (neg) y = -y;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (m == 2 && d == 29 && !leap) return false;
  *days = DaysFromCivil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  return true;
}

}  // namespace

Result<int32_t> ParseDate(std::string_view text) {
  text = std::string_view(text.data(), text.size());
  size_t pos = 0;
  int64_t days;
  if (!ParseDatePart(text, &pos, &days) || pos != text.size()) {
    return Status::InvalidArgument(fmt::format("\"{}\" is not a date: expected YYYY-MM-DD", text));
  }
  return static_cast<int32_t>(days);
}

Result<int64_t> ParseTimestamp(std::string_view text, TimeUnit unit) {
  size_t pos = 0;
  int64_t days;
  if (!ParseDatePart(text, &pos, &days)) return BadTime(text);
  int64_t hh = 0, mi = 0, ss = 0, frac = 0;
  int frac_digits = 0;
  int64_t offset_s = 0;
  if (pos < text.size() && (text[pos] == ' ' || text[pos] == 'T')) {
    ++pos;
    if (!ParseDigits(text, &pos, 1, 2, &hh)) return BadTime(text);
    if (pos >= text.size() || text[pos] != ':') return BadTime(text);
    ++pos;
    if (!ParseDigits(text, &pos, 2, 2, &mi)) return BadTime(text);
    if (pos < text.size() && text[pos] == ':') {
      ++pos;
      if (!ParseDigits(text, &pos, 2, 2, &ss)) return BadTime(text);
      if (pos < text.size() && text[pos] == '.') {
        ++pos;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
          if (frac_digits < 9) {
            frac = frac * 10 + (text[pos] - '0');
            ++frac_digits;
          }
          ++pos;
        }
        if (frac_digits == 0) return BadTime(text);
      }
    }
    if (hh > 24 || mi > 59 || ss > 60) return BadTime(text);
    if (pos < text.size()) {
      if (text[pos] == 'Z' || text[pos] == 'z') {
        ++pos;
      } else if (text[pos] == '+' || text[pos] == '-') {
        const int sign = text[pos] == '-' ? -1 : 1;
        ++pos;
        int64_t oh = 0, om = 0;
        if (!ParseDigits(text, &pos, 2, 2, &oh)) return BadTime(text);
        if (pos < text.size() && text[pos] == ':') ++pos;
        ParseDigits(text, &pos, 2, 2, &om);
        offset_s = sign * (oh * 3600 + om * 60);
      }
    }
  }
  if (pos != text.size()) return BadTime(text);
  while (frac_digits < 9) {
    frac *= 10;
    ++frac_digits;
  }
  // Seconds since the epoch fit easily for years within +-292,000,000.
  const int64_t secs = days * 86400 + hh * 3600 + mi * 60 + ss - offset_s;
  const int64_t per = UnitsPerSecond(unit);
  const int64_t sub = frac / (1000000000 / per);
  if (secs > 0 && secs > (std::numeric_limits<int64_t>::max() - sub) / per) {
    return Status::InvalidArgument(fmt::format("timestamp \"{}\" is out of range for {}", text,
                                               UnitSuffix(unit)));
  }
  if (secs < 0 && secs < std::numeric_limits<int64_t>::min() / per + 1) {
    return Status::InvalidArgument(fmt::format("timestamp \"{}\" is out of range for {}", text,
                                               UnitSuffix(unit)));
  }
  return secs * per + sub;
}

}  // namespace strata::features
