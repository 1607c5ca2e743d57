// Our writer read back by our reader: every type, NULL pattern, codec, page
// version and dictionary mode; several row groups; statistics; CSV too; bad
// writes leave nothing behind.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include <strata/features/csv.h>
#include <strata/features/parquet.h>

#include "testutil/testutil.h"

namespace strata::features {
namespace {

// A table with every type; `null_every` 0 = no NULLs.
Table MakeTable(size_t rows, uint32_t seed, int null_every) {
  std::mt19937_64 rng(seed);
  Schema schema = {
      {"id", DataType::Int64(), false},
      {"b", DataType::Bool()},
      {"i32", DataType::Int32()},
      {"i64", DataType::Int64()},
      {"f32", DataType::Float()},
      {"f64", DataType::Double()},
      {"s", DataType::String()},
      {"cat", DataType::String()},
      {"bin", DataType::Binary()},
      {"ts_ms", DataType::Timestamp(TimeUnit::kMilli)},
      {"ts_us", DataType::Timestamp(TimeUnit::kMicro, true)},
      {"ts_ns", DataType::Timestamp(TimeUnit::kNano)},
      {"d", DataType::Date()},
  };
  Table t(schema);
  static const char* kCats[] = {"red", "green", "blue", "", "東京", "a,b\"c\nd"};
  for (size_t r = 0; r < rows; ++r) {
    auto null = [&](size_t col) { return null_every > 0 && (r * 7 + col * 3) % null_every == 0; };
    t.column(0).Append<int64_t>(static_cast<int64_t>(r));
    for (size_t c = 1; c < schema.size(); ++c) {
      Column& col = t.column(c);
      if (null(c)) {
        col.AppendNull();
        continue;
      }
      switch (c) {
        case 1: col.Append<uint8_t>(rng() & 1); break;
        case 2: col.Append<int32_t>(static_cast<int32_t>(rng())); break;
        case 3: col.Append<int64_t>(static_cast<int64_t>(rng())); break;
        case 4: col.Append<float>(r == 3 ? std::numeric_limits<float>::quiet_NaN()
                                         : static_cast<float>(static_cast<int64_t>(rng() % 200001) - 100000) / 7.0f);
          break;
        case 5: col.Append<double>(r == 4 ? -0.0 : static_cast<double>(static_cast<int64_t>(rng())) / 3.0); break;
        case 6: col.AppendString("value-" + std::to_string(rng() % 100000) + std::string(r % 5, 'x')); break;
        case 7: col.AppendString(kCats[rng() % 6]); break;
        case 8: {
          std::string bytes(rng() % 9, '\0');
          for (char& ch : bytes) ch = static_cast<char>(rng());
          col.AppendString(bytes);
          break;
        }
        case 9: col.Append<int64_t>(1700000000000LL + static_cast<int64_t>(rng() % 100000000)); break;
        case 10: col.Append<int64_t>(1700000000000000LL + static_cast<int64_t>(rng() % 100000000000)); break;
        case 11: col.Append<int64_t>(1700000000000000000LL + static_cast<int64_t>(rng() % 100000000000000)); break;
        case 12: col.Append<int32_t>(static_cast<int32_t>(rng() % 40000) - 20000); break;
      }
    }
  }
  return t;
}

class ParquetRoundTripTest : public ::testing::TestWithParam<std::tuple<ParquetCodec, int, ParquetWriteOptions::Dictionary>> {};

TEST_P(ParquetRoundTripTest, ReadsBackIdentically) {
  const auto [codec, version, dict] = GetParam();
  testing::TempDir dir("strata-pq");
  for (int null_every : {0, 5, 1}) {
    Table t = MakeTable(2500, 42 + null_every, null_every);
    ParquetWriteOptions opt;
    opt.codec = codec;
    opt.data_page_version = version;
    opt.dictionary = dict;
    opt.row_group_rows = 1000;  // 3 row groups
    opt.page_bytes = 2000;      // several pages per chunk
    const std::string path = dir.Join("t.parquet");
    ASSERT_OK(WriteParquetFile(path, t, opt));
    ASSERT_OK_AND_ASSIGN(auto reader, ParquetReader::OpenFile(path));
    EXPECT_EQ(reader->num_row_groups(), 3);
    EXPECT_EQ(reader->num_rows(), 2500);
    ASSERT_OK_AND_ASSIGN(Table back, reader->ReadAll());
    std::string why;
    EXPECT_TRUE(t.Equals(back, &why)) << "null_every=" << null_every << ": " << why;
    EXPECT_FALSE(reader->schema()[0].nullable);
    EXPECT_TRUE(reader->schema()[1].nullable);
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, ParquetRoundTripTest,
    ::testing::Combine(::testing::Values(ParquetCodec::kUncompressed, ParquetCodec::kSnappy, ParquetCodec::kGzip,
                                         ParquetCodec::kZstd, ParquetCodec::kLz4Raw),
                       ::testing::Values(1, 2),
                       ::testing::Values(ParquetWriteOptions::Dictionary::kAuto, ParquetWriteOptions::Dictionary::kAlways,
                                         ParquetWriteOptions::Dictionary::kNever)));

TEST(ParquetWriterTest, StatisticsAndDictionary) {
  testing::TempDir dir;
  Table t(Schema{{"x", DataType::Int64()}, {"s", DataType::String()}, {"f", DataType::Double()}});
  for (int i = 0; i < 100; ++i) {
    if (i % 10 == 0) {
      t.column(0).AppendNull();
    } else {
      t.column(0).Append<int64_t>(i - 50);
    }
    t.column(1).AppendString(i % 2 ? "odd" : "even");
    t.column(2).Append<double>(i == 7 ? std::nan("") : i * 0.5);
  }
  ASSERT_OK(WriteParquetFile(dir.Join("s.parquet"), t));
  ASSERT_OK_AND_ASSIGN(auto r, ParquetReader::OpenFile(dir.Join("s.parquet")));
  const ParquetChunkInfo& x = r->row_group(0).columns[0];
  ASSERT_TRUE(x.null_count.has_value());
  EXPECT_EQ(*x.null_count, 10);
  int64_t mn, mx;
  ASSERT_TRUE(x.min && x.max);
  std::memcpy(&mn, x.min->data(), 8);
  std::memcpy(&mx, x.max->data(), 8);
  EXPECT_EQ(mn, -49);
  EXPECT_EQ(mx, 49);
  EXPECT_EQ(x.codec, "ZSTD");
  const ParquetChunkInfo& s = r->row_group(0).columns[1];
  EXPECT_TRUE(s.has_dictionary_page);
  EXPECT_EQ(*s.min, "even");
  EXPECT_EQ(*s.max, "odd");
  double fmax;
  std::memcpy(&fmax, r->row_group(0).columns[2].max->data(), 8);
  EXPECT_EQ(fmax, 49.5);  // NaN left out of statistics
  EXPECT_EQ(r->column_info()[1].logical, "STRING");
}

TEST(ParquetWriterTest, BatchesAcrossRowGroups) {
  testing::TempDir dir;
  Table all = MakeTable(1000, 7, 3);
  ParquetWriteOptions opt;
  opt.row_group_rows = 300;
  ASSERT_OK_AND_ASSIGN(auto w, ParquetWriter::Open(dir.Join("b.parquet"), all.schema(), opt));
  // Feed it in uneven batches.
  size_t pos = 0;
  for (size_t n : {1u, 299u, 301u, 50u, 349u}) {
    Table batch(all.schema());
    for (size_t c = 0; c < all.num_columns(); ++c) {
      for (size_t r = pos; r < pos + n; ++r) batch.column(c).AppendFrom(all.column(c), r);
    }
    ASSERT_OK(w->Write(batch));
    pos += n;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.Join("b.parquet"))) << "visible before Close";
  ASSERT_OK(w->Close());
  ASSERT_OK_AND_ASSIGN(auto r, ParquetReader::OpenFile(dir.Join("b.parquet")));
  EXPECT_EQ(r->num_row_groups(), 4);
  ASSERT_OK_AND_ASSIGN(Table back, r->ReadAll());
  std::string why;
  EXPECT_TRUE(all.Equals(back, &why)) << why;
}

TEST(ParquetWriterTest, BadWritesLeaveNothing) {
  testing::TempDir dir;
  Table t(Schema{{"x", DataType::Int64(), /*nullable=*/false}});
  t.column(0).AppendNull();
  EXPECT_STATUS_CODE(WriteParquetFile(dir.Join("n.parquet"), t), StatusCode::kInvalidArgument);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  {
    ASSERT_OK_AND_ASSIGN(auto w, ParquetWriter::Open(dir.Join("abandoned.parquet"), t.schema()));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  Table wrong(Schema{{"y", DataType::String()}});
  ASSERT_OK_AND_ASSIGN(auto w, ParquetWriter::Open(dir.Join("w.parquet"), t.schema()));
  EXPECT_STATUS_CODE(w->Write(wrong), StatusCode::kInvalidArgument);
}

TEST(ParquetWriterTest, EmptyTableAndBuffer) {
  Table t(Schema{{"x", DataType::Int64()}, {"s", DataType::String()}});
  auto w = ParquetWriter::OpenBuffer(t.schema());
  ASSERT_OK(w->Write(t));
  ASSERT_OK(w->Close());
  ASSERT_OK_AND_ASSIGN(auto r, ParquetReader::Open(OpenMemorySource(w->TakeBuffer(), "mem")));
  EXPECT_EQ(r->num_rows(), 0);
  ASSERT_OK_AND_ASSIGN(Table back, r->ReadAll());
  EXPECT_EQ(back.num_rows(), 0u);
  EXPECT_EQ(back.num_columns(), 2u);
}

TEST(CsvTest, RoundTripAndInference) {
  Table t = MakeTable(300, 9, 4);
  // Binary is not CSV material; drop it.
  std::vector<std::string> names;
  for (const Field& f : t.schema()) {
    if (f.name != "bin") names.push_back(f.name);
  }
  ASSERT_OK_AND_ASSIGN(Table sel, t.Select(names));
  const std::string text = FormatCsv(sel);
  CsvReadOptions opts;
  for (const Field& f : sel.schema()) opts.types[f.name] = f.type;
  ASSERT_OK_AND_ASSIGN(Table back, ParseCsv(text, opts));
  std::string why;
  // Nullability is not a CSV notion; compare values.
  ASSERT_EQ(back.num_rows(), sel.num_rows());
  for (size_t c = 0; c < sel.num_columns(); ++c) {
    for (size_t r = 0; r < sel.num_rows(); ++r) {
      ASSERT_TRUE(sel.column(c).RowEquals(r, back.column(c), r))
          << sel.field(c).name << " row " << r << ": " << sel.column(c).FormatValue(r) << " vs "
          << back.column(c).FormatValue(r);
    }
  }
  ASSERT_OK_AND_ASSIGN(Table inferred, ParseCsv("k,v,t,flag,d,s\n1,1.5,2024-01-02 03:04:05,true,2024-01-02,x\n"
                                                 "2,,2024-01-02 03:04:05.25,false,2024-01-03,\"\"\n"));
  EXPECT_EQ(inferred.field(0).type, DataType::Int64());
  EXPECT_EQ(inferred.field(1).type, DataType::Double());
  EXPECT_EQ(inferred.field(2).type, DataType::Timestamp());
  EXPECT_EQ(inferred.field(3).type, DataType::Bool());
  EXPECT_EQ(inferred.field(4).type, DataType::Date());
  EXPECT_EQ(inferred.field(5).type, DataType::String());
  EXPECT_TRUE(inferred.column(1).IsNull(1));
  EXPECT_FALSE(inferred.column(5).IsNull(1));
  EXPECT_EQ(inferred.column(5).StringAt(1), "");
  EXPECT_EQ(inferred.column(2).FormatValue(1), "2024-01-02 03:04:05.25");
}

TEST(CsvTest, ErrorsNameTheLine) {
  auto r = ParseCsv("a,b\n1,2\n3\n", {}, "f.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("f.csv:3"), std::string::npos) << r.error().ToString();
  CsvReadOptions opts;
  opts.types["a"] = DataType::Int64();
  auto r2 = ParseCsv("a\n1\nx\n", opts, "g.csv");
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message().find("g.csv:3"), std::string::npos) << r2.error().ToString();
  EXPECT_FALSE(ParseCsv("a\n\"open\n", {}, "h.csv").ok());
}

// A bad timestamp names the file, the 1-based line and the column, also when
// a quoted field earlier in the file spans lines.
TEST(CsvTest, BadTimestampNamesFileLineAndColumn) {
  ::strata::testing::TempDir dir("strata-csv");
  const std::string path = dir.Join("events.csv");
  std::ofstream(path)
      << "id,ts\n1,2024-01-01 00:00:00\n2,2024-13-45 99:00:00\n3,2024-01-02 00:00:00\n";
  CsvReadOptions opts;
  opts.types["ts"] = DataType::Timestamp();
  auto r = ReadCsvFile(path, opts);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.error().message();
  EXPECT_NE(m.find(path + ":3:"), std::string::npos) << m;
  EXPECT_NE(m.find("column \"ts\""), std::string::npos) << m;
  EXPECT_NE(m.find("2024-13-45 99:00:00"), std::string::npos) << m;
  // Line 2 holds a quoted field with a newline, so the bad row starts on line 4.
  auto q =
      ParseCsv("note,ts\n\"two\nlines\",2024-01-01 00:00:00\nx,yesterday\n", opts, "notes.csv");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().message().find("notes.csv:4: column \"ts\""), std::string::npos)
      << q.error().message();
  // A CRLF file counts lines the same way.
  auto c = ParseCsv("id,ts\r\n1,2024-01-01 00:00:00\r\n2,not a time\r\n", opts, "crlf.csv");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("crlf.csv:3: column \"ts\""), std::string::npos)
      << c.error().message();
}

TEST(TimeTest, FormatAndParse) {
  EXPECT_EQ(FormatTimestamp(-1, TimeUnit::kMicro, false), "1969-12-31 23:59:59.999999");
  EXPECT_EQ(FormatTimestamp(0, TimeUnit::kMicro, true), "1970-01-01 00:00:00+00");
  ASSERT_OK_AND_ASSIGN(int64_t v, ParseTimestamp("0001-01-01 00:00:00", TimeUnit::kMicro));
  EXPECT_EQ(v, -62135596800000000LL);
  ASSERT_OK_AND_ASSIGN(int64_t z, ParseTimestamp("2024-01-01T01:00:00+01:00", TimeUnit::kMicro));
  ASSERT_OK_AND_ASSIGN(int64_t z2, ParseTimestamp("2024-01-01 00:00:00Z", TimeUnit::kMicro));
  EXPECT_EQ(z, z2);
  EXPECT_FALSE(ParseTimestamp("2024-02-30", TimeUnit::kMicro).ok());
  EXPECT_FALSE(ParseTimestamp("yesterday", TimeUnit::kMicro).ok());
  EXPECT_EQ(ConvertTime(1, TimeUnit::kMicro, TimeUnit::kNano), 1000);
  EXPECT_EQ(ConvertTime(-1, TimeUnit::kNano, TimeUnit::kMicro), -1);
}

}  // namespace
}  // namespace strata::features
