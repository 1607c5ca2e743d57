// CSV in and out of Tables, in the dialect DuckDB writes and reads by default.
//
// A header row; NULL is an empty unquoted field, the empty string is `""`;
// fields holding the delimiter, a quote, CR or LF are double-quoted with quotes
// doubled; timestamps print as "YYYY-MM-DD HH:MM:SS[.fraction]" ("+00" for UTC
// columns); floats in shortest round-trip form, specials as nan, inf, -inf.
// Column types come from CsvReadOptions::types where given, else are inferred
// from every value (int64, double, bool, timestamp, date, else string).
// Functions are thread-safe (no shared state).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <strata/core/result.h>
#include <strata/features/table.h>

namespace strata::features {

struct CsvReadOptions {
  char delimiter = ',';
  // Column name -> type, for columns whose type should not be inferred.
  std::map<std::string, DataType> types;
  // false: every column not in `types` is read as a string.
  bool infer_types = true;
};

struct CsvWriteOptions {
  char delimiter = ',';
};

// `name` (a path or URL) only labels errors, which give the line number.
Result<Table> ParseCsv(std::string_view text, const CsvReadOptions& options = {},
                       std::string_view name = "csv");
Result<Table> ReadCsvFile(const std::string& path, const CsvReadOptions& options = {});

std::string FormatCsv(const Table& table, const CsvWriteOptions& options = {});
// Written to a temp name, then renamed into place.
Status WriteCsvFile(const std::string& path, const Table& table, const CsvWriteOptions& options = {});

}  // namespace strata::features
