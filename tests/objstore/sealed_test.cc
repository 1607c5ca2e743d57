// The engine's sealed (encrypted at rest) write and read path: PutOptions::data_key
// and OpenObject's DataKeyFn. Ranges that cross cipher blocks, every piece kind
// (embedded, body record, data file), multipart and copies, and the failures:
// no key or a wrong key is kPermissionDenied, a damaged data file kCorruption,
// never wrong bytes; and the bytes on disk are not the plaintext.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/checksum.h>
#include <strata/core/strings.h>
#include <strata/objstore/local_engine.h>

#include "objstore/local_engine_internal.h"
#include "testutil/testutil.h"

namespace strata::objstore {
namespace {

std::string Data(uint64_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    s[i] = static_cast<char>(x >> 56);
  }
  return s;
}

class Source : public ByteSource {
 public:
  explicit Source(std::string d) : d_(std::move(d)) {}
  Result<size_t> Read(char* buf, size_t n) override {
    size_t m = std::min<size_t>({n, 5000, d_.size() - pos_});
    std::memcpy(buf, d_.data() + pos_, m);
    pos_ += m;
    return m;
  }

 private:
  std::string d_;
  size_t pos_ = 0;
};

class Sink : public ChunkSink {
 public:
  Status WriteMemory(const char* d, size_t n) override {
    out.append(d, n);
    return Status::Ok();
  }
  Status WriteFile(int fd, uint64_t off, uint64_t n) override {
    std::string b(n, '\0');
    if (::pread(fd, b.data(), n, static_cast<off_t>(off)) != static_cast<ssize_t>(n))
      return Status::IOError("pread");
    out += b;
    return Status::Ok();
  }
  std::string out;
};

DataKeyFn KeyFn(std::string key) {
  return [key](const ObjectMeta&) -> Result<std::string> { return key; };
}

class SealedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.data_dir = dir_.Join("store");
    options_.sync = false;
    options_.block_size = 4096;  // many cipher blocks in a small object
    ASSERT_OK_AND_ASSIGN(engine_, LocalEngine::Open(options_));
    ASSERT_OK(engine_->CreateBucket("b", "alice"));
  }
  Result<ObjectMeta> PutSealed(const std::string& k, const std::string& data,
                               const std::string& key) {
    Source s(data);
    PutOptions o;
    o.data_key = key;
    o.checksum_algorithm = ChecksumAlgorithm::kCrc32c;
    return engine_->PutObject("b", k, s, std::move(o));
  }
  Result<std::string> Read(const std::string& k, const std::string& key, uint64_t off, uint64_t len,
                           bool stream = true) {
    STRATA_ASSIGN_OR_RETURN(auto r, engine_->OpenObject("b", k, KeyFn(key)));
    if (!stream) return r->ReadRange(off, len);
    Sink sink;
    STRATA_RETURN_IF_ERROR(r->Stream(off, len, sink));
    return sink.out;
  }
  std::string DiskBytes() {
    std::string all;
    for (const auto& e : std::filesystem::recursive_directory_iterator(options_.data_dir)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      all.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return all;
  }

  testing::TempDir dir_;
  EngineOptions options_;
  std::unique_ptr<LocalEngine> engine_;
  const std::string key_ = std::string(32, 'K');
  const std::string wrong_ = std::string(32, 'W');
};

TEST_F(SealedTest, EveryPieceKindRoundTripsWithPlaintextDigests) {
  // Embedded (<= 512), body record (<= 64 KiB), data file.
  for (uint64_t n : {1ull, 300ull, 20000ull, 4096ull * 7 + 11}) {
    const std::string data = Data(n, static_cast<uint32_t>(n));
    const std::string k = "obj" + std::to_string(n);
    ASSERT_OK_AND_ASSIGN(ObjectMeta m, PutSealed(k, data, key_));
    EXPECT_EQ(m.size, n);
    EXPECT_EQ(m.etag, HexEncode(Md5(data)));  // digests are of the plaintext
    ASSERT_OK_AND_ASSIGN(std::string all, Read(k, key_, 0, n));
    EXPECT_EQ(all, data) << n;
    ASSERT_OK_AND_ASSIGN(std::string all2, Read(k, key_, 0, n, false));
    EXPECT_EQ(all2, data) << n;
  }
}

TEST_F(SealedTest, RangesDecryptAcrossBlocks) {
  const std::string data = Data(4096 * 10 + 123, 7);
  ASSERT_OK(PutSealed("r", data, key_).status());
  const std::vector<std::pair<uint64_t, uint64_t>> ranges = {{0, 1},
                                                             {4095, 2},
                                                             {4096, 4096},
                                                             {4000, 9000},
                                                             {data.size() - 1, 1},
                                                             {100, data.size() - 100},
                                                             {4096 * 10, 123}};
  for (auto [off, len] : ranges) {
    for (bool stream : {true, false}) {
      ASSERT_OK_AND_ASSIGN(std::string got, Read("r", key_, off, len, stream));
      EXPECT_EQ(got, data.substr(off, len)) << off << "+" << len << " stream=" << stream;
    }
  }
}

TEST_F(SealedTest, NoKeyOrWrongKeyIsRefusedNotWrongBytes) {
  for (uint64_t n : {100ull, 20000ull, 50000ull * 3}) {
    const std::string k = "x" + std::to_string(n);
    ASSERT_OK(PutSealed(k, Data(n, 3), key_).status());
    auto plain_open = engine_->OpenObject("b", k);
    ASSERT_FALSE(plain_open.ok());
    EXPECT_EQ(plain_open.error().code(), StatusCode::kPermissionDenied);
    auto wrong = Read(k, wrong_, 0, n);
    ASSERT_FALSE(wrong.ok()) << n;
    EXPECT_EQ(wrong.error().code(), StatusCode::kPermissionDenied) << wrong.error().ToString();
  }
  // The key function's own refusal is returned as is.
  ASSERT_OK(PutSealed("y", "data", key_).status());
  auto refused = engine_->OpenObject("b", "y", [](const ObjectMeta&) -> Result<std::string> {
    return Status::InvalidArgument("no key given");
  });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message(), "no key given");
}

TEST_F(SealedTest, DamagedSealedFileIsCorruption) {
  const std::string data = Data(4096 * 20, 9);  // above the 64 KiB inline threshold
  ASSERT_OK(PutSealed("c", data, key_).status());
  std::string path = internal::FirstDataFilePath(*engine_, "b", "c");
  ASSERT_FALSE(path.empty());
  // The sealed file is longer than the plaintext by one tag per block.
  EXPECT_EQ(std::filesystem::file_size(path), data.size() + 20 * 16 + 20 * 4 + 32);
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, 4112 * 2 + 10), 1);
  b ^= 0x20;
  ASSERT_EQ(::pwrite(fd, &b, 1, 4112 * 2 + 10), 1);
  ::close(fd);
  engine_.reset();  // drop cached verified blocks
  ASSERT_OK_AND_ASSIGN(engine_, LocalEngine::Open(options_));
  auto r = Read("c", key_, 0, data.size());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kCorruption) << r.error().ToString();
  // Blocks before the damage still read.
  ASSERT_OK_AND_ASSIGN(std::string head, Read("c", key_, 0, 4096 * 2));
  EXPECT_EQ(head, data.substr(0, 4096 * 2));
}

TEST_F(SealedTest, DiskHoldsNoPlaintext) {
  const std::string big = Data(4096 * 20, 11), small = Data(3000, 12), tiny = Data(200, 13);
  ASSERT_OK(PutSealed("big", big, key_).status());
  ASSERT_OK(PutSealed("small", small, key_).status());
  ASSERT_OK(PutSealed("tiny", tiny, key_).status());
  const std::string ctl = Data(3000, 14);
  Source s(ctl);
  ASSERT_OK(engine_->PutObject("b", "control", s, {}).status());
  const std::string disk = DiskBytes();
  EXPECT_EQ(disk.find(big.substr(5000, 64)), std::string::npos);
  EXPECT_EQ(disk.find(small.substr(1000, 64)), std::string::npos);
  EXPECT_EQ(disk.find(tiny.substr(100, 64)), std::string::npos);
  EXPECT_NE(disk.find(ctl.substr(1000, 64)), std::string::npos);  // the check can fail
}

TEST_F(SealedTest, MultipartCopyAndAppend) {
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "mp", {}));
  const std::string p1 = Data(5 << 20, 21), p2 = Data(777, 22);
  std::vector<CompletePart> parts;
  int n = 1;
  for (const std::string* p : {&p1, &p2}) {
    Source s(*p);
    PutOptions o;
    o.data_key = key_;
    ASSERT_OK_AND_ASSIGN(PartInfo pi, engine_->UploadPart("b", "mp", id, n, s, std::move(o)));
    parts.push_back({n++, pi.etag, ""});
  }
  ASSERT_OK(engine_->CompleteMultipartUpload("b", "mp", id, parts, {}).status());
  ASSERT_OK_AND_ASSIGN(std::string mid, Read("mp", key_, (5 << 20) - 10, 20));
  EXPECT_EQ(mid, (p1 + p2).substr((5 << 20) - 10, 20));

  // sealed -> plain and plain -> sealed under another key.
  PutOptions to_plain;
  to_plain.source_key = KeyFn(key_);
  ASSERT_OK(
      engine_->CopyObject("b", "mp", "b", "plain", std::nullopt, std::move(to_plain)).status());
  Sink sink;
  ASSERT_OK_AND_ASSIGN(auto r, engine_->OpenObject("b", "plain"));
  ASSERT_OK(r->Stream(0, UINT64_MAX, sink));
  EXPECT_EQ(sink.out, p1 + p2);
  PutOptions to_sealed;
  to_sealed.data_key = wrong_;
  ASSERT_OK(engine_->CopyObject("b", "plain", "b", "resealed", std::nullopt, std::move(to_sealed))
                .status());
  ASSERT_OK_AND_ASSIGN(std::string back, Read("resealed", wrong_, 0, UINT64_MAX));
  EXPECT_EQ(back, p1 + p2);
  EXPECT_FALSE(Read("resealed", key_, 0, 10).ok());

  // Appends neither seal nor extend a sealed object.
  Source a("more");
  auto app = engine_->AppendObject("b", "resealed", (5 << 20) + 777, a, {});
  ASSERT_FALSE(app.ok());
  EXPECT_EQ(app.error().code(), StatusCode::kNotSupported);
}

// Tiny embedded parts are merged into one piece at Complete when plain; sealed
// ones keep their own nonces and stay separate pieces.
TEST_F(SealedTest, TinySealedPartsAreNotMerged) {
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "tiny", {}));
  std::vector<CompletePart> parts;
  std::string all;
  for (int n = 1; n <= 3; ++n) {
    const std::string p = Data(100, 30 + n);
    all += p;
    Source s(p);
    PutOptions o;
    o.data_key = key_;
    ASSERT_OK_AND_ASSIGN(PartInfo pi, engine_->UploadPart("b", "tiny", id, n, s, std::move(o)));
    parts.push_back({n, pi.etag, ""});
  }
  CompleteOptions co;
  co.min_part_size = 0;
  ASSERT_OK(engine_->CompleteMultipartUpload("b", "tiny", id, parts, co).status());
  ASSERT_OK_AND_ASSIGN(std::string got, Read("tiny", key_, 0, UINT64_MAX));
  EXPECT_EQ(got, all);
  ASSERT_OK_AND_ASSIGN(std::string mid, Read("tiny", key_, 95, 110, false));
  EXPECT_EQ(mid, all.substr(95, 110));
}

}  // namespace
}  // namespace strata::objstore
