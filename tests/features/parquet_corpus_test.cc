// The shared corpus: every flat apache/parquet-testing file read and checked
// against its manifest (rows, NULLs per column, expected values where given),
// every bad_data/ file rejected with a clear error, and DuckDB's golden files
// checked against the aggregates in golden.json.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/features/csv.h>
#include <strata/features/parquet.h>

#include "features/data_paths.h"
#include "testutil/testutil.h"

namespace strata::features {
namespace {

using nlohmann::json;

json LoadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json();
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

std::string CorpusDir() { return testing::SharedDataDir() + "/parquet-testing"; }
std::string GoldenDir() { return testing::SharedDataDir() + "/parquet-golden"; }

TEST(ParquetCorpusTest, DataIsThere) {
  ASSERT_TRUE(std::filesystem::exists(CorpusDir() + "/manifest.json"))
      << "the shared corpus is missing at " << CorpusDir() << " (set STRATA_SHARED_DATA)";
  ASSERT_TRUE(std::filesystem::exists(GoldenDir() + "/golden.json"));
}

// Files the manifest expects to read whose DuckDB reading failed or differs
// and whose outcome for us is a choice: nation.dict-malformed has a truncated
// data page (Arrow rejects it, DuckDB reads it): a clean error is what we give.
const std::set<std::string> kMayFail = {"data/nation.dict-malformed.parquet"};
// Pages whose CRC32 does not match: the manifest's readers (DuckDB, Arrow)
// skip the check, Strata verifies CRCs where present (ChecksumsVerifiedWhenPresent).
const std::set<std::string> kBadCrc = {"data/datapage_v1-corrupt-checksum.parquet",
                                       "data/rle-dict-uncompressed-corrupt-checksum.parquet"};

TEST(ParquetCorpusTest, ReadsEveryFlatFile) {
  const json manifest = LoadJson(CorpusDir() + "/manifest.json");
  ASSERT_TRUE(manifest.is_object());
  int checked = 0;
  for (const json& f : manifest["files"]) {
    if (f["expect"] != "read") continue;
    const std::string rel = f["path"];
    SCOPED_TRACE(rel);
    auto reader = ParquetReader::OpenFile(CorpusDir() + "/" + rel);
    Result<Table> table = reader.ok() ? (*reader)->ReadAll() : Result<Table>(reader.error());
    if (kBadCrc.count(rel)) {
      ASSERT_FALSE(table.ok());
      EXPECT_EQ(table.error().code(), StatusCode::kCorruption) << table.error().ToString();
      continue;
    }
    if (kMayFail.count(rel)) {
      if (!table.ok()) {
        EXPECT_FALSE(table.error().message().empty());
        continue;
      }
    }
    ASSERT_OK(table);
    const int64_t rows = f["rows_in_footer"];
    EXPECT_EQ(static_cast<int64_t>(table->num_rows()), rows);
    EXPECT_EQ((*reader)->num_row_groups(), f["row_groups"].get<int>());
    ASSERT_EQ(table->num_columns(), f["schema"].size());
    for (size_t c = 0; c < table->num_columns(); ++c) {
      EXPECT_EQ(table->field(c).name, f["schema"][c]["name"].get<std::string>());
    }
    // NULL counts per column, where DuckDB could read the file.
    if (f["duckdb"].contains("columns")) {
      EXPECT_EQ(static_cast<int64_t>(table->num_rows()), f["duckdb"]["rows"].get<int64_t>());
      for (const json& dc : f["duckdb"]["columns"]) {
        const int ix = table->FieldIndex(dc["name"].get<std::string>());
        ASSERT_GE(ix, 0) << dc["name"];
        EXPECT_EQ(table->column(ix).null_count(), dc["nulls"].get<size_t>()) << dc["name"];
      }
    }
    // Expected values, where the corpus ships them.
    if (f.contains("companions")) {
      for (const json& comp : f["companions"]) {
        CsvReadOptions opts;
        opts.infer_types = false;
        auto expect = ReadCsvFile(CorpusDir() + "/" + comp.get<std::string>(), opts);
        ASSERT_OK(expect);
        ASSERT_EQ(expect->num_rows(), table->num_rows());
        ASSERT_EQ(expect->num_columns(), table->num_columns());
        for (size_t c = 0; c < table->num_columns(); ++c) {
          for (size_t r = 0; r < table->num_rows(); ++r) {
            const Column& want = expect->column(c);
            const Column& got = table->column(c);
            if (want.IsNull(r)) {
              EXPECT_TRUE(got.IsNull(r)) << table->field(c).name << " row " << r;
            } else {
              ASSERT_FALSE(got.IsNull(r)) << table->field(c).name << " row " << r;
              ASSERT_EQ(got.FormatValue(r), want.StringAt(r)) << table->field(c).name << " row " << r;
            }
          }
        }
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 45);
}

TEST(ParquetCorpusTest, SpotValues) {
  // alltypes_plain: ids 4,5,6,7,2,3,0,1 and INT96 timestamps of 2009.
  ASSERT_OK_AND_ASSIGN(Table t, ReadParquetFile(CorpusDir() + "/data/alltypes_plain.parquet"));
  const int id = t.FieldIndex("id");
  ASSERT_GE(id, 0);
  std::vector<int32_t> ids(t.column(id).values<int32_t>().begin(), t.column(id).values<int32_t>().end());
  EXPECT_EQ(ids, (std::vector<int32_t>{4, 5, 6, 7, 2, 3, 0, 1}));
  const int ts = t.FieldIndex("timestamp_col");
  EXPECT_EQ(t.column(ts).FormatValue(0), "2009-03-01 00:00:00");
  EXPECT_EQ(t.column(ts).FormatValue(1), "2009-03-01 00:01:00");
  EXPECT_EQ(t.column(t.FieldIndex("bool_col")).FormatValue(0), "true");
  EXPECT_EQ(t.column(t.FieldIndex("double_col")).FormatValue(1), "10.1");

  // A v2 page of all NULLs whose ZSTD body is empty.
  ASSERT_OK_AND_ASSIGN(Table v2, ReadParquetFile(CorpusDir() + "/data/page_v2_empty_compressed.parquet"));
  EXPECT_EQ(v2.num_rows(), 10u);
  EXPECT_EQ(v2.column(0).null_count(), 10u);

  // Spark INT96, outside the int64-nanosecond range: read as microseconds.
  ASSERT_OK_AND_ASSIGN(Table i96, ReadParquetFile(CorpusDir() + "/data/int96_from_spark.parquet"));
  EXPECT_EQ(i96.num_rows(), 6u);
  EXPECT_EQ(i96.field(0).type, DataType::Timestamp(TimeUnit::kMicro));

  // Decimals become doubles.
  ASSERT_OK_AND_ASSIGN(Table dec, ReadParquetFile(CorpusDir() + "/data/int32_decimal.parquet"));
  EXPECT_DOUBLE_EQ(dec.column(0).values<double>()[0], 1.0);
  ASSERT_OK_AND_ASSIGN(Table fdec, ReadParquetFile(CorpusDir() + "/data/fixed_length_decimal.parquet"));
  EXPECT_DOUBLE_EQ(fdec.column(0).values<double>()[23], 24.0);
}

TEST(ParquetCorpusTest, ChecksumsVerifiedWhenPresent) {
  ParquetReadOptions verify;  // verify_checksums is on by default
  for (const char* good : {"datapage_v1-uncompressed-checksum.parquet", "datapage_v1-snappy-compressed-checksum.parquet",
                           "plain-dict-uncompressed-checksum.parquet", "rle-dict-snappy-checksum.parquet"}) {
    ASSERT_OK_AND_ASSIGN(auto r, ParquetReader::OpenFile(CorpusDir() + "/data/" + good, verify));
    EXPECT_OK(r->ReadAll()) << good;
  }
  for (const char* bad : {"datapage_v1-corrupt-checksum.parquet", "rle-dict-uncompressed-corrupt-checksum.parquet"}) {
    ASSERT_OK_AND_ASSIGN(auto r, ParquetReader::OpenFile(CorpusDir() + "/data/" + bad, verify));
    auto t = r->ReadAll();
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.error().message().find("CRC32"), std::string::npos) << t.error().ToString();
    // Without verification the data itself reads.
    ParquetReadOptions trusting;
    trusting.verify_checksums = false;
    ASSERT_OK_AND_ASSIGN(auto r2, ParquetReader::OpenFile(CorpusDir() + "/data/" + bad, trusting));
    EXPECT_OK(r2->ReadAll()) << bad;
  }
}

TEST(ParquetCorpusTest, RejectsBadFilesCleanly) {
  const json manifest = LoadJson(CorpusDir() + "/manifest.json");
  int checked = 0;
  for (const json& f : manifest["files"]) {
    if (f["expect"] != "error") continue;
    const std::string rel = f["path"];
    SCOPED_TRACE(rel);
    auto reader = ParquetReader::OpenFile(CorpusDir() + "/" + rel);
    Status st = reader.ok() ? (*reader)->ReadAll().error() : reader.error();
    // ARROW-GH-43605: bit width 0 indices may read as all-zero (a clean read is fine).
    if (rel == "bad_data/ARROW-GH-43605.parquet" && st.ok()) continue;
    ASSERT_FALSE(st.ok()) << "a corrupt file read without error";
    EXPECT_TRUE(st.code() == StatusCode::kCorruption || st.code() == StatusCode::kNotSupported) << st.ToString();
    EXPECT_NE(st.message().find(rel.substr(rel.find('/') + 1)), std::string::npos)
        << "the error should name the file: " << st.ToString();
    ++checked;
  }
  EXPECT_GE(checked, 7);
}

TEST(ParquetCorpusTest, TruncatedAndGarbledFilesNeverCrash) {
  // Every prefix cut and a sweep of byte flips over a real file: errors, no crash.
  std::ifstream in(CorpusDir() + "/data/alltypes_plain.snappy.parquet", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    auto r = ParquetReader::Open(OpenMemorySource(bytes.substr(0, cut), "cut"));
    if (r.ok()) (void)(*r)->ReadAll();
  }
  for (size_t i = 4; i < bytes.size(); i += 3) {
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      std::string b = bytes;
      b[i] = static_cast<char>(b[i] ^ x);
      auto r = ParquetReader::Open(OpenMemorySource(std::move(b), "flip"));
      if (r.ok()) (void)(*r)->ReadAll();
    }
  }
  SUCCEED();
}

// ---- golden files ----

struct Agg {
  size_t nulls = 0;
  __int128 sum = 0;
  bool any = false;
  int64_t min = 0, max = 0;
  // floats
  size_t nan = 0, pos_inf = 0, neg_inf = 0;
  double sum_finite = 0, min_finite = 0, max_finite = 0;
  bool any_finite = false;
  // bools
  size_t trues = 0;
  // strings
  std::set<std::string> distinct;
  size_t utf8_bytes = 0;
  std::string smin, smax;
};

std::string I128(__int128 v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  unsigned __int128 u = neg ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string s;
  while (u) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  return neg ? "-" + s : s;
}

Agg Aggregate(const Column& c) {
  Agg a;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.IsNull(i)) {
      ++a.nulls;
      continue;
    }
    switch (c.type().id) {
      case TypeId::kFloat:
      case TypeId::kDouble: {
        const double v = c.DoubleAt(i);
        if (std::isnan(v)) {
          ++a.nan;
        } else if (std::isinf(v)) {
          ++(v > 0 ? a.pos_inf : a.neg_inf);
        } else {
          a.sum_finite += v;
          if (!a.any_finite || v < a.min_finite) a.min_finite = v;
          if (!a.any_finite || v > a.max_finite) a.max_finite = v;
          a.any_finite = true;
        }
        break;
      }
      case TypeId::kBool: a.trues += c.values<uint8_t>()[i] != 0; break;
      case TypeId::kString:
      case TypeId::kBinary: {
        std::string s(c.StringAt(i));
        a.utf8_bytes += s.size();
        if (!a.any || s < a.smin) a.smin = s;
        if (!a.any || s > a.smax) a.smax = s;
        a.any = true;
        a.distinct.insert(std::move(s));
        break;
      }
      default: {
        const int64_t v = c.IntAt(i);
        a.sum += v;
        if (!a.any || v < a.min) a.min = v;
        if (!a.any || v > a.max) a.max = v;
        a.any = true;
      }
    }
  }
  return a;
}

std::string Unquote(const std::string& s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

void CheckGoldenColumn(const Column& col, const json& want) {
  const std::string name = want["name"];
  SCOPED_TRACE(name);
  const Agg a = Aggregate(col);
  EXPECT_EQ(a.nulls, want["nulls"].get<size_t>());
  const std::string type = want["type"];
  auto has = [&](const char* k) { return want.contains(k); };
  auto str = [&](const char* k) -> std::string {
    const json& v = want[k];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null()) return "NULL";
    return v.dump();
  };
  if (col.type().id == TypeId::kFloat || col.type().id == TypeId::kDouble) {
    EXPECT_EQ(a.nan, static_cast<size_t>(std::stoll(str("nan"))));
    EXPECT_EQ(a.pos_inf, static_cast<size_t>(std::stoll(str("pos_inf"))));
    EXPECT_EQ(a.neg_inf, static_cast<size_t>(std::stoll(str("neg_inf"))));
    const double sf = std::stod(str("sum_finite"));
    EXPECT_NEAR(a.sum_finite, sf, std::abs(sf) * 1e-9 + 1e-9);
    EXPECT_DOUBLE_EQ(a.min_finite, std::stod(str("min_finite")));
    EXPECT_DOUBLE_EQ(a.max_finite, std::stod(str("max_finite")));
  } else if (col.type().id == TypeId::kBool) {
    EXPECT_EQ(a.trues, static_cast<size_t>(std::stoll(str("true"))));
  } else if (col.type().is_string_like()) {
    EXPECT_EQ(a.distinct.size(), static_cast<size_t>(std::stoll(str("distinct_non_null"))));
    EXPECT_EQ(a.utf8_bytes, static_cast<size_t>(std::stoll(str("utf8_bytes"))));
    if (str("min") != "NULL") {
      EXPECT_EQ(a.smin, Unquote(str("min")));
      EXPECT_EQ(a.smax, Unquote(str("max")));
    }
  } else if (col.type().id == TypeId::kTimestamp) {
    // Compare in the golden unit.
    const bool ns = has("sum_epoch_ns");
    const TimeUnit unit = ns ? TimeUnit::kNano : TimeUnit::kMicro;
    __int128 sum = 0;
    int64_t mn = std::numeric_limits<int64_t>::max(), mx = std::numeric_limits<int64_t>::min();
    for (size_t i = 0; i < col.size(); ++i) {
      if (col.IsNull(i)) continue;
      const int64_t v = ConvertTime(col.values<int64_t>()[i], col.type().unit, unit);
      sum += v;
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    EXPECT_EQ(I128(sum), str(ns ? "sum_epoch_ns" : "sum_epoch_us"));
    EXPECT_EQ(std::to_string(mn), str(ns ? "min_epoch_ns" : "min_epoch_us"));
    EXPECT_EQ(std::to_string(mx), str(ns ? "max_epoch_ns" : "max_epoch_us"));
    // And the text form DuckDB printed.
    int64_t min_row = -1;
    for (size_t i = 0; i < col.size(); ++i) {
      if (!col.IsNull(i) && ConvertTime(col.values<int64_t>()[i], col.type().unit, unit) == mn) {
        min_row = static_cast<int64_t>(i);
        break;
      }
    }
    EXPECT_EQ(col.FormatValue(static_cast<size_t>(min_row)), str("min"));
  } else if (col.type().id == TypeId::kDate) {
    EXPECT_EQ(I128(a.sum), str("sum_days_since_epoch"));
    EXPECT_EQ(FormatDate(static_cast<int32_t>(a.min)), str("min"));
    EXPECT_EQ(FormatDate(static_cast<int32_t>(a.max)), str("max"));
  } else {
    EXPECT_EQ(I128(a.sum), str("sum"));
    EXPECT_EQ(std::to_string(a.min), str("min"));
    EXPECT_EQ(std::to_string(a.max), str("max"));
  }
}

DataType FromDuckType(const std::string& t) {
  if (t == "BIGINT") return DataType::Int64();
  if (t == "INTEGER") return DataType::Int32();
  if (t == "FLOAT") return DataType::Float();
  if (t == "DOUBLE") return DataType::Double();
  if (t == "BOOLEAN") return DataType::Bool();
  if (t == "DATE") return DataType::Date();
  if (t == "TIMESTAMP") return DataType::Timestamp(TimeUnit::kMicro);
  if (t == "TIMESTAMP_MS") return DataType::Timestamp(TimeUnit::kMilli);
  if (t == "TIMESTAMP_NS") return DataType::Timestamp(TimeUnit::kNano);
  if (t == "TIMESTAMP WITH TIME ZONE") return DataType::Timestamp(TimeUnit::kMicro, true);
  return DataType::String();
}

TEST(ParquetGoldenTest, AggregatesMatchDuckDB) {
  const json golden = LoadJson(GoldenDir() + "/golden.json");
  ASSERT_TRUE(golden.is_object());
  int checked = 0;
  for (const json& f : golden["files"]) {
    const std::string file = f["file"];
    SCOPED_TRACE(file);
    Table t;
    if (file.ends_with(".parquet")) {
      ASSERT_OK_AND_ASSIGN(auto reader, ParquetReader::OpenFile(GoldenDir() + "/" + file));
      ASSERT_EQ(static_cast<size_t>(reader->num_row_groups()), f["row_groups"].size());
      for (int g = 0; g < reader->num_row_groups(); ++g) {
        EXPECT_EQ(reader->row_group(g).num_rows, f["row_groups"][g].get<int64_t>());
      }
      ASSERT_OK_AND_ASSIGN(t, reader->ReadAll());
    } else {
      CsvReadOptions opts;
      for (const json& c : f["columns"]) opts.types[c["name"]] = FromDuckType(c["type"]);
      ASSERT_OK_AND_ASSIGN(t, ReadCsvFile(GoldenDir() + "/" + file, opts));
    }
    EXPECT_EQ(static_cast<int64_t>(t.num_rows()), f["rows"].get<int64_t>());
    for (const json& c : f["columns"]) {
      const int ix = t.FieldIndex(c["name"].get<std::string>());
      ASSERT_GE(ix, 0) << c["name"];
      // DuckDB widens TIMESTAMP(MILLIS) to its microsecond TIMESTAMP; we keep the unit.
      if (file.ends_with(".parquet")) EXPECT_EQ(t.field(ix).type.id, FromDuckType(c["type"]).id) << c["name"];
      CheckGoldenColumn(t.column(ix), c);
    }
    ++checked;
  }
  EXPECT_GE(checked, 12);
}

TEST(ParquetGoldenTest, ParquetAndCsvHoldTheSameRows) {
  ASSERT_OK_AND_ASSIGN(Table pq, ReadParquetFile(GoldenDir() + "/types_zstd.parquet"));
  CsvReadOptions opts;
  for (size_t c = 0; c < pq.num_columns(); ++c) opts.types[pq.field(c).name] = pq.field(c).type;
  ASSERT_OK_AND_ASSIGN(Table csv, ReadCsvFile(GoldenDir() + "/types.csv", opts));
  std::string why;
  EXPECT_TRUE(pq.Equals(csv, &why)) << why;
  for (const char* other : {"types_snappy.parquet", "types_gzip.parquet", "types_uncompressed.parquet",
                            "types_v2_zstd.parquet"}) {
    ASSERT_OK_AND_ASSIGN(Table t, ReadParquetFile(GoldenDir() + "/" + other));
    EXPECT_TRUE(pq.Equals(t, &why)) << other << ": " << why;
  }
  ASSERT_OK_AND_ASSIGN(Table d1, ReadParquetFile(GoldenDir() + "/dict_strings_nulls.parquet"));
  ASSERT_OK_AND_ASSIGN(Table d2, ReadParquetFile(GoldenDir() + "/dict_strings_nulls_v2.parquet"));
  EXPECT_TRUE(d1.Equals(d2, &why)) << why;
}

}  // namespace
}  // namespace strata::features
