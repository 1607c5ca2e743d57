// Sealed segment files (.dat): damage found while opening is kCorruption that
// names the file and the offset, never a crash or a huge allocation.
#include "vector/segment.h"

#include <string>

#include <gtest/gtest.h>

#include <strata/core/checksum.h>
#include <strata/core/coding.h>

#include "testutil/testutil.h"

namespace strata::vector::internal {
namespace {

using ::strata::testing::TempDir;
using ::strata::testing::WriteFile;

// A segment file in the documented layout: 64-byte header ("STRSEG01",
// version, field count, rows, meta offset, meta length, meta CRC32C) and a
// meta section with no vector fields and `rows` rows (uuid flag, hi, lo;
// versions; payload lengths; payloads).
std::string SegmentBytes(uint64_t rows, uint64_t header_rows) {
  std::string meta;
  for (uint64_t i = 0; i < rows; ++i) {
    meta.push_back(0);
    PutFixed64(&meta, i + 1);
    PutFixed64(&meta, 0);
  }
  for (uint64_t i = 0; i < rows; ++i) PutFixed64(&meta, 1);
  for (uint64_t i = 0; i < rows; ++i) PutFixed32(&meta, 2);
  for (uint64_t i = 0; i < rows; ++i) meta += "{}";
  std::string file("STRSEG01", 8);
  PutFixed32(&file, 1);  // version
  PutFixed32(&file, 0);  // vector fields
  PutFixed64(&file, header_rows);
  PutFixed64(&file, 64);  // meta offset
  PutFixed64(&file, meta.size());
  PutFixed32(&file, Crc32c(0, meta.data(), meta.size()));
  file.resize(64, '\0');
  return file + meta;
}

TEST(SegmentFileTest, OpensAWellFormedFile) {
  TempDir dir;
  const std::string path = dir.Join("seg.dat");
  ASSERT_TRUE(WriteFile(path, SegmentBytes(3, 3)));
  ASSERT_OK_AND_ASSIGN(auto f, SegmentFile::Open(path));
  EXPECT_EQ(3u, f->rows());
  EXPECT_EQ(3u, f->ids.size());
  EXPECT_EQ(2u, f->ids[1].hi);
  EXPECT_EQ("{}", f->payloads[2]);
}

// The row count sits in the header, outside the meta checksum: a flipped
// high bit there must not make Open allocate for billions of rows (a fuzzer
// found the allocation).
TEST(SegmentFileTest, CorruptRowCountIsCorruptionNamingFileAndOffset) {
  TempDir dir;
  const std::string path = dir.Join("seg.dat");
  for (uint64_t rows : {uint64_t{4}, uint64_t{1} << 20, uint64_t{1} << 32, ~uint64_t{0}}) {
    ASSERT_TRUE(WriteFile(path, SegmentBytes(3, rows)));
    auto f = SegmentFile::Open(path);
    ASSERT_FALSE(f.ok()) << rows;
    EXPECT_EQ(StatusCode::kCorruption, f.error().code()) << rows;
    const std::string msg = f.error().ToString();
    EXPECT_NE(std::string::npos, msg.find(path)) << msg;
    EXPECT_NE(std::string::npos, msg.find("offset 16")) << msg;  // the header's row count
  }
}

TEST(SegmentFileTest, BadMetaChecksumNamesTheMetaOffset) {
  TempDir dir;
  const std::string path = dir.Join("seg.dat");
  std::string bytes = SegmentBytes(2, 2);
  bytes[64 + 3] ^= 0x40;
  ASSERT_TRUE(WriteFile(path, bytes));
  auto f = SegmentFile::Open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(StatusCode::kCorruption, f.error().code());
  EXPECT_NE(std::string::npos, f.error().ToString().find("offset 64")) << f.error().ToString();
}

}  // namespace
}  // namespace strata::vector::internal
