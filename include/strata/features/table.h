// Table: the columnar, in-memory batch every part of the feature store trades in.
//
// A Table is a Schema plus one Column per field, all of the same length. A
// Column holds dense typed values (a NULL slot keeps a zero value) and one
// validity byte per row (1 = present). Strings are offsets + one character
// buffer, as Arrow lays them out. Columns and Tables are plain values: they own
// their memory, copy deeply, and are thread-compatible (no internal locking).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/core/strings.h>
#include <strata/core/status.h>

namespace strata::features {

enum class TypeId : uint8_t {
  kBool,
  kInt32,
  kInt64,
  kFloat,
  kDouble,
  kString,     // UTF-8
  kBinary,     // arbitrary bytes
  kTimestamp,  // int64 count of `unit` since 1970-01-01 00:00:00 UTC
  kDate,       // int32 days since 1970-01-01
};

enum class TimeUnit : uint8_t { kMilli, kMicro, kNano };

struct DataType {
  TypeId id = TypeId::kInt64;
  TimeUnit unit = TimeUnit::kMicro;  // kTimestamp only
  bool utc = false;                  // kTimestamp only: Parquet's isAdjustedToUTC

  static DataType Bool() { return {TypeId::kBool}; }
  static DataType Int32() { return {TypeId::kInt32}; }
  static DataType Int64() { return {TypeId::kInt64}; }
  static DataType Float() { return {TypeId::kFloat}; }
  static DataType Double() { return {TypeId::kDouble}; }
  static DataType String() { return {TypeId::kString}; }
  static DataType Binary() { return {TypeId::kBinary}; }
  static DataType Date() { return {TypeId::kDate}; }
  static DataType Timestamp(TimeUnit unit = TimeUnit::kMicro, bool utc = false) {
    return {TypeId::kTimestamp, unit, utc};
  }

  bool operator==(const DataType& o) const {
    return id == o.id && (id != TypeId::kTimestamp || (unit == o.unit && utc == o.utc));
  }
  bool is_string_like() const { return id == TypeId::kString || id == TypeId::kBinary; }
  // "int64", "string", "timestamp[us]", "timestamp[ns, UTC]", ...
  std::string ToString() const;
};

// Parses our own names ("int32", "int64", "float", "double", "bool", "string",
// "binary", "date", "timestamp[ms|us|ns]") and Feast's ("Int32", "Int64",
// "Float32", "Float64", "Bool", "String", "Bytes", "UnixTimestamp").
Result<DataType> ParseDataType(std::string_view name);

struct Field {
  std::string name;
  DataType type;
  bool nullable = true;
};

using Schema = std::vector<Field>;

class Column {
 public:
  Column() = default;
  explicit Column(DataType type) : type_(type) {
    if (type.is_string_like()) offsets_.push_back(0);
  }

  const DataType& type() const { return type_; }
  size_t size() const { return valid_.size(); }
  size_t null_count() const;
  bool IsValid(size_t i) const { return valid_[i] != 0; }
  bool IsNull(size_t i) const { return valid_[i] == 0; }

  // Typed access. T is uint8_t for kBool, int32_t for kInt32/kDate, int64_t for
  // kInt64/kTimestamp, float, double. Calling it with another T is a bug.
  template <class T>
  std::vector<T>& values();
  template <class T>
  const std::vector<T>& values() const {
    return const_cast<Column*>(this)->values<T>();
  }
  std::string_view StringAt(size_t i) const {
    return std::string_view(chars_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  // The value of a kInt32/kInt64/kTimestamp/kDate/kBool row widened to int64.
  int64_t IntAt(size_t i) const;
  // The value of any numeric row as a double (bool: 0/1).
  double DoubleAt(size_t i) const;

  std::vector<uint8_t>& validity() { return valid_; }
  const std::vector<uint8_t>& validity() const { return valid_; }
  std::vector<uint64_t>& offsets() { return offsets_; }
  const std::vector<uint64_t>& offsets() const { return offsets_; }
  std::string& chars() { return chars_; }
  const std::string& chars() const { return chars_; }

  void Reserve(size_t rows, size_t char_bytes = 0);
  void AppendNull();
  template <class T>
  void Append(T v) {
    values<T>().push_back(v);
    valid_.push_back(1);
  }
  void AppendString(std::string_view s) {
    chars_.append(s.data(), s.size());
    offsets_.push_back(chars_.size());
    valid_.push_back(1);
  }
  // Appends row `i` of `src` (same type), NULL or not.
  void AppendFrom(const Column& src, size_t i);
  // Appends every row of `src` (same type).
  void AppendColumn(const Column& src);
  // Rows `indices` (in that order) of this column; an index < 0 gives NULL.
  Column Take(const std::vector<int64_t>& indices) const;
  // Whether row i of both columns holds the same value (NULLs equal each other;
  // floats compare bitwise so NaN equals NaN).
  bool RowEquals(size_t i, const Column& other, size_t j) const;
  // A printable rendering of row i ("NULL" for NULL), for errors and CSV.
  std::string FormatValue(size_t i) const;

 private:
  DataType type_;
  std::vector<uint8_t> valid_;  // one byte per row
  std::vector<uint8_t> b_;      // kBool
  std::vector<int32_t> i32_;    // kInt32, kDate
  std::vector<int64_t> i64_;    // kInt64, kTimestamp
  std::vector<float> f32_;      // kFloat
  std::vector<double> f64_;     // kDouble
  std::vector<uint64_t> offsets_;  // kString, kBinary: size() + 1 entries
  std::string chars_;
};

template <>
inline std::vector<uint8_t>& Column::values<uint8_t>() { return b_; }
template <>
inline std::vector<int32_t>& Column::values<int32_t>() { return i32_; }
template <>
inline std::vector<int64_t>& Column::values<int64_t>() { return i64_; }
template <>
inline std::vector<float>& Column::values<float>() { return f32_; }
template <>
inline std::vector<double>& Column::values<double>() { return f64_; }

class Table {
 public:
  Table() = default;
  explicit Table(Schema schema);

  const Schema& schema() const { return schema_; }
  size_t num_columns() const { return columns_.size(); }
  size_t num_rows() const { return columns_.empty() ? num_rows_ : columns_[0].size(); }
  Column& column(size_t i) { return columns_[i]; }
  const Column& column(size_t i) const { return columns_[i]; }
  const Field& field(size_t i) const { return schema_[i]; }
  // -1 when there is no such column.
  int FieldIndex(std::string_view name) const;
  // Adds a column; it must have num_rows() rows (any length for the first).
  Status AddColumn(Field field, Column column);
  // Checks that every column has the field's type and the same length.
  Status Validate() const;
  // Appends the rows of `other` (same schema).
  Status Append(const Table& other);
  // The named columns in that order.
  Result<Table> Select(const std::vector<std::string>& names) const;
  // Whether both tables hold the same schema and values; `why` gets the first difference.
  bool Equals(const Table& other, std::string* why = nullptr) const;
  // Sets the row count of a table without columns.
  void set_num_rows(size_t n) { num_rows_ = n; }

 private:
  Schema schema_;
  std::vector<Column> columns_;
  size_t num_rows_ = 0;
};

// Whether CastColumn can turn `from` into `to`: numbers into numbers (bools into
// integers), strings into binaries and back, dates and timestamps into timestamps.
bool CanCast(const DataType& from, const DataType& to);
// The column converted to `to`; InvalidArgument names the first value that does
// not fit (an integer out of range, a non-UTF-8 binary...).
Result<Column> CastColumn(const Column& column, const DataType& to);

// Timestamps and dates as text: "YYYY-MM-DD HH:MM:SS[.fraction]" with trailing
// zeros dropped from the fraction (DuckDB's form), "+00" appended for UTC.
std::string FormatTimestamp(int64_t value, TimeUnit unit, bool utc);
std::string FormatDate(int32_t days);
// Parses "YYYY-MM-DD", "YYYY-MM-DD[ T]HH:MM[:SS[.fraction]]" with an optional
// "Z", "+HH[:MM]" or "-HH[:MM]" offset (converted to UTC) into `unit` since the epoch.
Result<int64_t> ParseTimestamp(std::string_view text, TimeUnit unit);
Result<int32_t> ParseDate(std::string_view text);
// Converts between units, saturating at the int64 range.
int64_t ConvertTime(int64_t value, TimeUnit from, TimeUnit to);
// Calendar arithmetic: DaysFromCivil / CivilFromDays in core/strings.h.

}  // namespace strata::features
