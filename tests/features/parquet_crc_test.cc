// Parquet page CRCs: Strata writes a CRC32 of every page body (the optional
// PageHeader.crc of the format) and checks it when a file has one, so a
// flipped byte in a page is reported as corruption naming the file, the
// column and the byte offset instead of being returned as data.
#include <cstring>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include <strata/features/parquet.h>

#include "testutil/testutil.h"

namespace strata::features {
namespace {

constexpr int64_t kBase = 0x0123456789ab0000;

Table Ints(int rows) {
  Table t(Schema{{"v", DataType::Int64(), /*nullable=*/false}});
  for (int i = 0; i < rows; ++i) t.column(0).Append<int64_t>(kBase + i);
  return t;
}

// Uncompressed, no dictionary: a flipped byte in a value would otherwise
// decode as a different value.
ParquetWriteOptions Plain() {
  ParquetWriteOptions o;
  o.codec = ParquetCodec::kUncompressed;
  o.dictionary = ParquetWriteOptions::Dictionary::kNever;
  o.statistics = false;
  return o;
}

TEST(ParquetCrcTest, EveryFlippedValueByteIsReportedWithFileAndOffset) {
  testing::TempDir dir;
  const Table t = Ints(64);
  const std::string path = dir.Join("v.parquet");
  ASSERT_OK(WriteParquetFile(path, t, Plain()));
  const std::string good = testing::ReadFileOrEmpty(path);
  std::string first(8, '\0');
  std::memcpy(first.data(), &kBase, 8);
  const size_t values = good.find(first);
  ASSERT_NE(std::string::npos, values);
  for (size_t off = values; off < values + 64 * 8; off += 13) {
    std::string bad = good;
    bad[off] ^= 0x10;
    ASSERT_TRUE(testing::WriteFile(path, bad));
    auto back = ReadParquetFile(path);
    ASSERT_FALSE(back.ok()) << "flipped byte " << off << " was returned as data";
    EXPECT_EQ(StatusCode::kCorruption, back.error().code()) << back.error().ToString();
    const std::string msg = back.error().ToString();
    EXPECT_NE(std::string::npos, msg.find(path)) << msg;
    EXPECT_NE(std::string::npos, msg.find("CRC32")) << msg;
    EXPECT_NE(std::string::npos, msg.find("column \"v\"")) << msg;
    EXPECT_NE(std::string::npos, msg.find("at byte")) << msg;
  }
  ASSERT_TRUE(testing::WriteFile(path, good));
  ASSERT_OK_AND_ASSIGN(Table back, ReadParquetFile(path));
  std::string why;
  EXPECT_TRUE(t.Equals(back, &why)) << why;
}

TEST(ParquetCrcTest, EveryCodecAndPageVersionWritesCrcsThatVerify) {
  testing::TempDir dir;
  // Random values: the pages do not compress, so byte 1000 is inside the
  // first page's body for every codec.
  std::mt19937_64 rng(5);
  Table t(Schema{{"v", DataType::Int64(), /*nullable=*/false}});
  for (int i = 0; i < 5000; ++i) t.column(0).Append<int64_t>(static_cast<int64_t>(rng()));
  for (ParquetCodec codec : {ParquetCodec::kUncompressed, ParquetCodec::kSnappy,
                             ParquetCodec::kGzip, ParquetCodec::kZstd, ParquetCodec::kLz4Raw}) {
    for (int version : {1, 2}) {
      ParquetWriteOptions o;
      o.codec = codec;
      o.data_page_version = version;
      o.page_bytes = 4096;  // several pages
      const std::string path = dir.Join("c" + std::to_string(static_cast<int>(codec)) + "-" +
                                        std::to_string(version) + ".parquet");
      ASSERT_OK(WriteParquetFile(path, t, o));
      ASSERT_OK_AND_ASSIGN(Table back, ReadParquetFile(path));
      std::string why;
      EXPECT_TRUE(t.Equals(back, &why)) << why;
      std::string bad = testing::ReadFileOrEmpty(path);
      bad[1000] ^= 0x01;
      ASSERT_TRUE(testing::WriteFile(path, bad));
      EXPECT_FALSE(ReadParquetFile(path).ok()) << path;
    }
  }
}

}  // namespace
}  // namespace strata::features
