// CSV in and out: an RFC 4180 reader that infers column types (or takes them
// from the options) and a writer that quotes only what needs it.
#include <strata/features/csv.h>

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <strata/core/file_util.h>

namespace strata::features {

namespace {

struct CsvField {
  std::string_view text;  // unescaped when not quoted; see `owned` otherwise
  bool quoted = false;
  int owned = -1;  // index into the owner's storage when quotes were doubled
};

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParseI64(std::string_view s, int64_t* v) {
  s = TrimSpaces(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

bool ParseF64(std::string_view s, double* v) {
  s = TrimSpaces(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  if (ec == std::errc::result_out_of_range) return false;
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseBool(std::string_view s, uint8_t* v) {
  s = TrimSpaces(s);
  if (s == "true" || s == "TRUE" || s == "True") {
    *v = 1;
    return true;
  }
  if (s == "false" || s == "FALSE" || s == "False") {
    *v = 0;
    return true;
  }
  return false;
}

bool LooksLikeTimestamp(std::string_view s) {
  return s.size() >= 16 && s[4] == '-' && (s[10] == ' ' || s[10] == 'T');
}

bool HasOffset(std::string_view s) {
  if (s.size() < 17) return false;
  std::string_view t = s.substr(11);
  return t.find('Z') != std::string_view::npos || t.find('+') != std::string_view::npos ||
         t.find('-') != std::string_view::npos;
}

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

std::string FormatFloat(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

// The fields of a CSV text, row by row, before any typing. Quoted fields whose
// quotes were doubled are unescaped into `storage`.
struct CsvRecords {
  std::vector<std::string> storage;  // fields with doubled quotes, unescaped
  std::vector<std::vector<CsvField>> rows;
  std::vector<size_t> line_of;  // source line of each row (1-based)
};

// Reads the quoted field that starts at text[*pos] (the opening quote),
// leaving *pos after the closing quote and counting newlines inside it.
Status ReadQuotedField(std::string_view text, char delim, std::string_view name, size_t row_line, size_t* pos_io,
                       size_t* line_io, CsvField* f, std::vector<std::string>* storage) {
  size_t pos = *pos_io, line = *line_io;
  f->quoted = true;
  ++pos;
  const size_t start = pos;
  bool doubled = false;
  while (true) {
    if (pos >= text.size()) {
      return Status::InvalidArgument(fmt::format("{}:{}: a quoted field is never closed (missing \")", name, row_line));
    }
    if (text[pos] == '"') {
      if (pos + 1 < text.size() && text[pos + 1] == '"') {
        doubled = true;
        pos += 2;
        continue;
      }
      break;
    }
    if (text[pos] == '\n') ++line;
    ++pos;
  }
  std::string_view raw = text.substr(start, pos - start);
  ++pos;  // closing quote
  if (doubled) {
    std::string u;
    for (size_t i = 0; i < raw.size(); ++i) {
      u.push_back(raw[i]);
      if (raw[i] == '"') ++i;
    }
    storage->push_back(std::move(u));
    f->owned = static_cast<int>(storage->size() - 1);
  } else {
    f->text = raw;
  }
  *pos_io = pos;
  *line_io = line;
  if (pos < text.size() && text[pos] != delim && text[pos] != '\n' && text[pos] != '\r') {
    return Status::InvalidArgument(fmt::format("{}:{}: unexpected character after a closing quote", name, line));
  }
  return Status::Ok();
}

// Splits the text into rows of fields (RFC 4180 quoting, CRLF or LF, a UTF-8
// BOM skipped, blank lines dropped).
Status SplitCsvRecords(std::string_view text, char delim, std::string_view name, CsvRecords* out) {
  size_t pos = 0, line = 1;
  if (text.size() >= 3 && static_cast<uint8_t>(text[0]) == 0xEF && static_cast<uint8_t>(text[1]) == 0xBB &&
      static_cast<uint8_t>(text[2]) == 0xBF) {
    pos = 3;  // UTF-8 BOM
  }
  while (pos < text.size()) {
    std::vector<CsvField> row;
    const size_t row_line = line;
    while (true) {
      CsvField f;
      if (pos < text.size() && text[pos] == '"') {
        STRATA_RETURN_IF_ERROR(ReadQuotedField(text, delim, name, row_line, &pos, &line, &f, &out->storage));
      } else {
        const size_t start = pos;
        while (pos < text.size() && text[pos] != delim && text[pos] != '\n' && text[pos] != '\r') ++pos;
        f.text = text.substr(start, pos - start);
      }
      row.push_back(f);
      if (pos < text.size() && text[pos] == delim) {
        ++pos;
        continue;
      }
      break;
    }
    if (pos < text.size() && text[pos] == '\r') ++pos;
    if (pos < text.size() && text[pos] == '\n') {
      ++pos;
      ++line;
    }
    if (row.size() == 1 && !row[0].quoted && row[0].text.empty()) continue;  // blank line
    out->rows.push_back(std::move(row));
    out->line_of.push_back(row_line);
  }
  // Storage is final now: point owned fields at it.
  for (auto& r : out->rows) {
    for (auto& f : r) {
      if (f.owned >= 0) f.text = out->storage[f.owned];
    }
  }
  return Status::Ok();
}

// The narrowest type every non-empty value of column c (rows after the
// header) parses as; quoted values make a column a string.
DataType InferColumnType(const std::vector<std::vector<CsvField>>& rows, size_t c) {
  bool all_int = true, all_f64 = true, all_bool = true, all_ts = true, all_date = true, any = false, all_utc = true;
  for (size_t r = 1; r < rows.size(); ++r) {
    const CsvField& f = rows[r][c];
    if (!f.quoted && f.text.empty()) continue;
    any = true;
    int64_t iv;
    double dv;
    uint8_t bv;
    if (all_int && !ParseI64(f.text, &iv)) all_int = false;
    if (all_f64 && !ParseF64(f.text, &dv)) all_f64 = false;
    if (all_bool && !ParseBool(f.text, &bv)) all_bool = false;
    if (all_ts) {
      if (!LooksLikeTimestamp(f.text) || !ParseTimestamp(f.text, TimeUnit::kMicro).ok()) all_ts = false;
      else if (!HasOffset(f.text)) all_utc = false;
    }
    if (all_date && !ParseDate(f.text).ok()) all_date = false;
    if (f.quoted) all_int = all_f64 = all_bool = all_ts = all_date = false;
    if (!all_int && !all_f64 && !all_bool && !all_ts && !all_date) break;
  }
  if (!any) return DataType::String();
  if (all_int) return DataType::Int64();
  if (all_f64) return DataType::Double();
  if (all_bool) return DataType::Bool();
  if (all_ts) return DataType::Timestamp(TimeUnit::kMicro, all_utc);
  if (all_date) return DataType::Date();
  return DataType::String();
}

// Converts column c of every row after the header to `type` into *col.
Status ParseCsvColumn(const CsvRecords& records, size_t c, const std::string& col_name, const DataType& type,
                      std::string_view name, Column* col) {
  const std::vector<std::vector<CsvField>>& rows = records.rows;
  for (size_t r = 1; r < rows.size(); ++r) {
    const CsvField& f = rows[r][c];
    const bool is_null = !f.quoted && f.text.empty();
    if (is_null) {
      col->AppendNull();
      continue;
    }
    auto bad = [&](std::string_view what) {
      return Status::InvalidArgument(fmt::format("{}:{}: column \"{}\": \"{}\" is not {}", name, records.line_of[r],
                                                 col_name, f.text, what));
    };
    switch (type.id) {
      case TypeId::kBool: {
        uint8_t v;
        if (!ParseBool(f.text, &v)) return bad("a boolean (true/false)");
        col->Append<uint8_t>(v);
        break;
      }
      case TypeId::kInt32: {
        int64_t v;
        if (!ParseI64(f.text, &v) || v < INT32_MIN || v > INT32_MAX) return bad("a 32-bit integer");
        col->Append<int32_t>(static_cast<int32_t>(v));
        break;
      }
      case TypeId::kInt64: {
        int64_t v;
        if (!ParseI64(f.text, &v)) return bad("a 64-bit integer");
        col->Append<int64_t>(v);
        break;
      }
      case TypeId::kFloat: {
        double v;
        if (!ParseF64(f.text, &v)) return bad("a number");
        col->Append<float>(static_cast<float>(v));
        break;
      }
      case TypeId::kDouble: {
        double v;
        if (!ParseF64(f.text, &v)) return bad("a number");
        col->Append<double>(v);
        break;
      }
      case TypeId::kString:
      case TypeId::kBinary: col->AppendString(f.text); break;
      case TypeId::kDate: {
        auto d = ParseDate(TrimSpaces(f.text));
        if (!d.ok()) return bad("a date (YYYY-MM-DD)");
        col->Append<int32_t>(*d);
        break;
      }
      case TypeId::kTimestamp: {
        auto t = ParseTimestamp(TrimSpaces(f.text), type.unit);
        if (!t.ok()) return bad("a timestamp (YYYY-MM-DD HH:MM:SS[.fraction])");
        col->Append<int64_t>(*t);
        break;
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Table> ParseCsv(std::string_view text, const CsvReadOptions& options, std::string_view name) {
  CsvRecords records;
  STRATA_RETURN_IF_ERROR(SplitCsvRecords(text, options.delimiter, name, &records));
  const std::vector<std::vector<CsvField>>& rows = records.rows;
  if (rows.empty()) return Status::InvalidArgument(fmt::format("{}: empty CSV (no header row)", name));
  const std::vector<CsvField>& header = rows[0];
  const size_t ncols = header.size();
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != ncols) {
      return Status::InvalidArgument(fmt::format("{}:{}: {} fields, the header has {}", name, records.line_of[r],
                                                 rows[r].size(), ncols));
    }
  }
  Table table;
  for (size_t c = 0; c < ncols; ++c) {
    const std::string col_name(header[c].text);
    if (col_name.empty()) return Status::InvalidArgument(fmt::format("{}:1: column {} has no name", name, c + 1));
    DataType type;
    auto given = options.types.find(col_name);
    if (given != options.types.end()) {
      type = given->second;
    } else if (!options.infer_types) {
      type = DataType::String();
    } else {
      type = InferColumnType(rows, c);
    }
    Column col(type);
    col.Reserve(rows.size() - 1);
    STRATA_RETURN_IF_ERROR(ParseCsvColumn(records, c, col_name, type, name, &col));
    Status st = table.AddColumn(Field{col_name, type, true}, std::move(col));
    if (!st.ok()) return Status::InvalidArgument(fmt::format("{}: {}", name, st.message()));
  }
  if (ncols > 0 && table.num_rows() == 0) table.set_num_rows(0);
  return table;
}

Result<Table> ReadCsvFile(const std::string& path, const CsvReadOptions& options) {
  Result<std::string> text = ReadFileToString(path);
  if (!text.has_value()) return Status::NotFound(fmt::format("cannot open CSV file {}", path));
  return ParseCsv(*text, options, path);
}

std::string FormatCsv(const Table& table, const CsvWriteOptions& options) {
  const char delim = options.delimiter;
  std::string out;
  auto put_string = [&](std::string_view s) {
    const bool quote = s.empty() || s.find_first_of(std::string{delim, '"', '\n', '\r'}) != std::string_view::npos ||
                       s.front() == ' ' || s.back() == ' ';
    if (!quote) {
      out.append(s);
      return;
    }
    out.push_back('"');
    for (char ch : s) {
      if (ch == '"') out.push_back('"');
      out.push_back(ch);
    }
    out.push_back('"');
  };
  for (size_t c = 0; c < table.num_columns(); ++c) {
    if (c) out.push_back(delim);
    put_string(table.field(c).name);
  }
  out.push_back('\n');
  for (size_t r = 0; r < table.num_rows(); ++r) {
    for (size_t c = 0; c < table.num_columns(); ++c) {
      if (c) out.push_back(delim);
      const Column& col = table.column(c);
      if (col.IsNull(r)) continue;
      switch (col.type().id) {
        case TypeId::kFloat: out += FormatFloat(col.values<float>()[r]); break;
        case TypeId::kDouble: out += FormatDouble(col.values<double>()[r]); break;
        case TypeId::kString:
        case TypeId::kBinary: put_string(col.StringAt(r)); break;
        default: out += col.FormatValue(r); break;
      }
    }
    out.push_back('\n');
  }
  return out;
}

Status WriteCsvFile(const std::string& path, const Table& table, const CsvWriteOptions& options) {
  // Replaced whole (a reader never sees half a file), not synced: CSV output
  // is an export, not a store.
  AtomicWriteOptions write;
  write.sync = false;
  write.tmp_suffix = fmt::format(".tmp-{}", ::getpid());
  return WriteFileAtomic(path, FormatCsv(table, options), write);
}

}  // namespace strata::features
