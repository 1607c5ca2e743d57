// Files our writer produced, read back by DuckDB (the @duckdb/node-api oracle):
// same column types, same values, same row groups, NULL counts in the statistics.
#include <cmath>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/features/csv.h>
#include <strata/features/parquet.h>

#include "features/duckdb_oracle.h"
#include "testutil/testutil.h"

namespace strata::features {
namespace {

using nlohmann::json;

std::string Kind(const DataType& t) {
  switch (t.id) {
    case TypeId::kBool: return "bool";
    case TypeId::kInt32: return "int32";
    case TypeId::kInt64: return "int64";
    case TypeId::kFloat: return "float";
    case TypeId::kDouble: return "double";
    case TypeId::kString: return "string";
    case TypeId::kBinary: return "binary";
    case TypeId::kDate: return "date";
    case TypeId::kTimestamp:
      return t.unit == TimeUnit::kMilli ? "timestamp_ms" : t.unit == TimeUnit::kMicro ? "timestamp_us" : "timestamp_ns";
  }
  return "?";
}

std::string DuckType(const DataType& t, bool csv) {
  switch (t.id) {
    case TypeId::kBool: return "BOOLEAN";
    case TypeId::kInt32: return "INTEGER";
    case TypeId::kInt64: return "BIGINT";
    case TypeId::kFloat: return "FLOAT";
    case TypeId::kDouble: return "DOUBLE";
    case TypeId::kString: return "VARCHAR";
    case TypeId::kBinary: return "BLOB";
    case TypeId::kDate: return "DATE";
    case TypeId::kTimestamp:
      if (t.utc) return "TIMESTAMP WITH TIME ZONE";
      if (t.unit == TimeUnit::kNano) return "TIMESTAMP_NS";
      if (t.unit == TimeUnit::kMilli && csv) return "TIMESTAMP_MS";
      return "TIMESTAMP";  // DuckDB widens Parquet TIMESTAMP(MILLIS) to microseconds
  }
  return "?";
}

std::string Cell(const Column& c, size_t r) {
  switch (c.type().id) {
    case TypeId::kFloat:
    case TypeId::kDouble: {
      const double v = c.DoubleAt(r);
      if (std::isnan(v)) return "nan";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      return fmt::format("{}", v);
    }
    case TypeId::kBinary: {
      std::string hex;
      for (unsigned char ch : c.StringAt(r)) hex += fmt::format("{:02x}", ch);
      return hex;
    }
    case TypeId::kBool: return c.values<uint8_t>()[r] ? "true" : "false";
    case TypeId::kString: return std::string(c.StringAt(r));
    default: return std::to_string(c.IntAt(r));
  }
}

json FileSpec(const std::string& path, const Table& t, bool csv, int row_groups) {
  json f;
  f["path"] = path;
  f["format"] = csv ? "csv" : "parquet";
  f["row_groups"] = row_groups;
  json cols = json::array(), nulls = json::array();
  for (size_t c = 0; c < t.num_columns(); ++c) {
    cols.push_back({{"name", t.field(c).name}, {"kind", Kind(t.field(c).type)},
                    {"duckdb_type", DuckType(t.field(c).type, csv)}});
    nulls.push_back(t.column(c).null_count());
  }
  f["columns"] = cols;
  f["null_counts"] = nulls;
  json rows = json::array();
  for (size_t r = 0; r < t.num_rows(); ++r) {
    json row = json::array();
    for (size_t c = 0; c < t.num_columns(); ++c) {
      if (t.column(c).IsNull(r)) {
        row.push_back(nullptr);
      } else {
        row.push_back(Cell(t.column(c), r));
      }
    }
    rows.push_back(std::move(row));
  }
  f["rows"] = std::move(rows);
  return f;
}

Table Sample(size_t rows, uint32_t seed, bool with_binary) {
  std::mt19937_64 rng(seed);
  Schema s = {{"id", DataType::Int64(), false},  {"flag", DataType::Bool()},
              {"i32", DataType::Int32()},         {"i64", DataType::Int64()},
              {"f32", DataType::Float()},         {"f64", DataType::Double()},
              {"name", DataType::String()},       {"city", DataType::String()},
              {"ts_ms", DataType::Timestamp(TimeUnit::kMilli)},
              {"ts_us", DataType::Timestamp(TimeUnit::kMicro)},
              {"ts_utc", DataType::Timestamp(TimeUnit::kMicro, true)},
              {"ts_ns", DataType::Timestamp(TimeUnit::kNano)},
              {"d", DataType::Date()}};
  if (with_binary) s.push_back({"blob", DataType::Binary()});
  Table t(s);
  static const char* kCities[] = {"Paris", "東京", "", "São Paulo", "a,b", "quote\"d", "multi\nline"};
  for (size_t r = 0; r < rows; ++r) {
    t.column(0).Append<int64_t>(static_cast<int64_t>(r));
    for (size_t c = 1; c < s.size(); ++c) {
      Column& col = t.column(c);
      if ((rng() % 10) == 0) {
        col.AppendNull();
        continue;
      }
      switch (c) {
        case 1: col.Append<uint8_t>(rng() & 1); break;
        case 2: col.Append<int32_t>(static_cast<int32_t>(rng())); break;
        case 3: col.Append<int64_t>(static_cast<int64_t>(rng())); break;
        case 4: {
          static const float kSpecial[] = {std::nanf(""), INFINITY, -INFINITY, -0.0f, 1e-30f};
          col.Append<float>(r < 5 ? kSpecial[r] : static_cast<float>(static_cast<int32_t>(rng())) / 1024.0f);
          break;
        }
        case 5: {
          static const double kSpecial[] = {std::nan(""), INFINITY, -INFINITY, -0.0, 5e-324};
          col.Append<double>(r < 5 ? kSpecial[r] : static_cast<double>(static_cast<int64_t>(rng())) / 1e9);
          break;
        }
        case 6: col.AppendString("n" + std::to_string(rng() % 1000000)); break;
        case 7: col.AppendString(kCities[rng() % 7]); break;
        case 8: col.Append<int64_t>(static_cast<int64_t>(rng() % 4000000000000ULL) - 1000000000000LL); break;
        case 9:
        case 10: col.Append<int64_t>(static_cast<int64_t>(rng() % 4000000000000000ULL) - 1000000000000000LL); break;
        case 11: col.Append<int64_t>(static_cast<int64_t>(rng() % 4000000000000000000ULL) - 1000000000000000000LL); break;
        case 12: col.Append<int32_t>(static_cast<int32_t>(rng() % 100000) - 50000); break;
        case 13: {
          std::string b(rng() % 6, '\0');
          for (char& ch : b) ch = static_cast<char>(rng());
          col.AppendString(b);
          break;
        }
      }
    }
  }
  return t;
}

TEST(DuckDbRoundTripTest, DuckDbReadsWhatWeWrite) {
  const std::string setup = testing::EnsureDuckDb();
  ASSERT_EQ(setup, "");
  ::strata::testing::TempDir dir("strata-duck");
  json spec;
  spec["files"] = json::array();
  const Table t = Sample(3000, 11, true);
  int n = 0;
  for (ParquetCodec codec : {ParquetCodec::kUncompressed, ParquetCodec::kSnappy, ParquetCodec::kZstd,
                             ParquetCodec::kGzip, ParquetCodec::kLz4Raw}) {
    for (int version : {1, 2}) {
      for (auto dict : {ParquetWriteOptions::Dictionary::kAuto, ParquetWriteOptions::Dictionary::kAlways,
                        ParquetWriteOptions::Dictionary::kNever}) {
        ParquetWriteOptions opt;
        opt.codec = codec;
        opt.data_page_version = version;
        opt.dictionary = dict;
        opt.row_group_rows = 1200;
        opt.page_bytes = 4096;
        const std::string path = dir.Join(fmt::format("f{}.parquet", n++));
        ASSERT_OK(WriteParquetFile(path, t, opt));
        spec["files"].push_back(FileSpec(path, t, false, 3));
      }
    }
  }
  // CSV: the same rows (no binary column; CSV has no bytes type).
  const Table c = Sample(2000, 12, false);
  ASSERT_OK(WriteCsvFile(dir.Join("c.csv"), c));
  spec["files"].push_back(FileSpec(dir.Join("c.csv"), c, true, 0));
  // An empty file and a required-only one.
  Table empty(Schema{{"x", DataType::Int64()}});
  ASSERT_OK(WriteParquetFile(dir.Join("empty.parquet"), empty));
  spec["files"].push_back(FileSpec(dir.Join("empty.parquet"), empty, false, 0));

  const std::string spec_path = dir.Join("spec.json");
  std::ofstream(spec_path) << spec.dump();
  std::string out;
  const int rc = testing::RunDuckDbScript("check_files.mjs", "'" + spec_path + "'", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(" checked, 0 failures"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata::features
