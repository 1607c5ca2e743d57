#include <strata/core/checksum.h>

#include <gtest/gtest.h>

#include <random>
#include <string>

#include <strata/core/strings.h>

namespace strata {
namespace {

const std::string kCheck = "123456789";

// Independent bit-at-a-time references, straight from the CRC definitions.
uint32_t RefCrc32(uint32_t poly, std::string_view s) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
  }
  return ~c;
}

uint64_t RefCrc64Nvme(std::string_view s) {
  uint64_t c = ~0ULL;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x9A6C9329AC4BC9B5ULL : c >> 1;
  }
  return ~c;
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(ChecksumTest, CrcCheckValues) {
  EXPECT_EQ(Crc32(0, kCheck.data(), kCheck.size()), 0xCBF43926u);
  EXPECT_EQ(Crc32c(0, kCheck.data(), kCheck.size()), 0xE3069283u);
  EXPECT_EQ(Crc64Nvme(0, kCheck.data(), kCheck.size()), 0xAE8B14860A799888ULL);
  EXPECT_EQ(Crc32(0, "", 0), 0u);
  EXPECT_EQ(Crc32c(0, "", 0), 0u);
  EXPECT_EQ(Crc64Nvme(0, "", 0), 0u);
}

TEST(ChecksumTest, CrcMatchesReferenceOnRandomData) {
  // Sizes around the 16/64/128-byte steps of the folding code, at unaligned
  // addresses too.
  for (size_t n : {1, 7, 15, 16, 17, 63, 64, 65, 127, 128, 129, 143, 144, 191, 192, 193, 255,
                   1000, 1023, 1024, 1025, 4096, 65537, 100003}) {
    for (size_t off : {0, 1, 3}) {
      std::string buf = RandomBytes(n + off, static_cast<uint32_t>(n));
      std::string_view d(buf.data() + off, n);
      EXPECT_EQ(Crc32(0, d.data(), n), RefCrc32(0xEDB88320u, d)) << n;
      EXPECT_EQ(Crc32c(0, d.data(), n), RefCrc32(0x82F63B78u, d)) << n;
      EXPECT_EQ(Crc64Nvme(0, d.data(), n), RefCrc64Nvme(d)) << n << "+" << off;
      // And chained from a non-zero start.
      EXPECT_EQ(Crc64Nvme(Crc64Nvme(0, "xyz", 3), d.data(), n), RefCrc64Nvme("xyz" + buf.substr(off)))
          << n;
    }
  }
}

TEST(ChecksumTest, IncrementalEqualsOneShot) {
  std::string d = RandomBytes(10000, 7);
  std::mt19937 rng(3);
  uint32_t c32 = 0, c32c = 0;
  uint64_t c64 = 0;
  size_t off = 0;
  while (off < d.size()) {
    size_t n = std::min<size_t>(rng() % 300, d.size() - off);
    c32 = Crc32(c32, d.data() + off, n);
    c32c = Crc32c(c32c, d.data() + off, n);
    c64 = Crc64Nvme(c64, d.data() + off, n);
    off += n;
  }
  EXPECT_EQ(c32, Crc32(0, d.data(), d.size()));
  EXPECT_EQ(c32c, Crc32c(0, d.data(), d.size()));
  EXPECT_EQ(c64, Crc64Nvme(0, d.data(), d.size()));
}

TEST(ChecksumTest, CombineEqualsCrcOfConcatenation) {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 50; ++iter) {
    const size_t na = rng() % 5000, nb = rng() % 5000;
    std::string a = RandomBytes(na, rng()), b = RandomBytes(nb, rng());
    std::string ab = a + b;
    EXPECT_EQ(Crc32Combine(Crc32(0, a.data(), na), Crc32(0, b.data(), nb), nb),
              Crc32(0, ab.data(), ab.size()));
    EXPECT_EQ(Crc32cCombine(Crc32c(0, a.data(), na), Crc32c(0, b.data(), nb), nb),
              Crc32c(0, ab.data(), ab.size()));
    EXPECT_EQ(Crc64NvmeCombine(Crc64Nvme(0, a.data(), na), Crc64Nvme(0, b.data(), nb), nb),
              Crc64Nvme(0, ab.data(), ab.size()));
  }
  // Combining with an empty B is the identity.
  EXPECT_EQ(Crc32Combine(0x12345678u, 0, 0), 0x12345678u);
  EXPECT_EQ(Crc64NvmeCombine(0x1234567890ULL, 0, 0), 0x1234567890ULL);
}

TEST(ChecksumTest, CombineLargeLengths) {
  // crc(zeros(n)) computed by combining halves must agree with a direct
  // computation; exercises the x^(2^k) table past the low bits.
  const size_t n = (1 << 20) + 3;
  std::string z(n, '\0');
  const uint32_t direct = Crc32c(0, z.data(), n);
  const uint32_t half = Crc32c(0, z.data(), n / 2);
  const uint32_t rest = Crc32c(0, z.data(), n - n / 2);
  EXPECT_EQ(Crc32cCombine(half, rest, n - n / 2), direct);
  const uint64_t d64 = Crc64Nvme(0, z.data(), n);
  EXPECT_EQ(Crc64NvmeCombine(Crc64Nvme(0, z.data(), 1), Crc64Nvme(0, z.data(), n - 1), n - 1),
            d64);
}

TEST(ChecksumTest, HasherDigestsAreBigEndianRaw) {
  auto h = Hasher::Create(ChecksumAlgorithm::kCrc32);
  h->Update("1234", 4);
  h->Update("56789", 5);
  EXPECT_EQ(HexEncode(h->Digest()), "cbf43926");

  h = Hasher::Create(ChecksumAlgorithm::kCrc32c);
  h->Update(kCheck.data(), kCheck.size());
  EXPECT_EQ(HexEncode(h->Digest()), "e3069283");

  h = Hasher::Create(ChecksumAlgorithm::kCrc64Nvme);
  h->Update(kCheck.data(), kCheck.size());
  EXPECT_EQ(HexEncode(h->Digest()), "ae8b14860a799888");

  h = Hasher::Create(ChecksumAlgorithm::kSha256);
  h->Update("a", 1);
  h->Update("bc", 2);
  EXPECT_EQ(HexEncode(h->Digest()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

  h = Hasher::Create(ChecksumAlgorithm::kSha1);
  h->Update("abc", 3);
  EXPECT_EQ(HexEncode(h->Digest()), "a9993e364706816aba3e25717850c26c9cd0d89d");

  h = Hasher::Create(ChecksumAlgorithm::kMd5);
  h->Update("abc", 3);
  EXPECT_EQ(HexEncode(h->Digest()), "900150983cd24fb0d6963f7d28e17f72");

  h = Hasher::Create(ChecksumAlgorithm::kNone);
  h->Update("abc", 3);
  EXPECT_EQ(h->Digest(), "");
}

TEST(ChecksumTest, S3Base64Crc) {
  // S3 sends x-amz-checksum-crc32 as base64 of the 4 big-endian bytes:
  // crc32("") = 0 -> "AAAAAA==".
  auto h = Hasher::Create(ChecksumAlgorithm::kCrc32);
  EXPECT_EQ(Base64Encode(h->Digest()), "AAAAAA==");
  h = Hasher::Create(ChecksumAlgorithm::kCrc32);
  h->Update(kCheck.data(), kCheck.size());
  EXPECT_EQ(Base64Encode(h->Digest()), "y/Q5Jg==");
}

TEST(ChecksumTest, OneShotDigestVectors) {
  // FIPS 180 / RFC 1321 vectors.
  EXPECT_EQ(HexEncode(Md5("")), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(HexEncode(Md5("abc")), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(HexEncode(Sha1("")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(HexEncode(Sha1("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(HexEncode(Sha256("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HexEncode(Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HexEncode(Sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(ChecksumTest, HmacSha256Rfc4231) {
  EXPECT_EQ(HexEncode(HmacSha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(HexEncode(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(HexEncode(HmacSha256(std::string(20, '\xaa'), std::string(50, '\xdd'))),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  // Key longer than the block size is hashed first.
  EXPECT_EQ(HexEncode(HmacSha256(std::string(131, '\xaa'),
                                 "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(ChecksumTest, AlgorithmNames) {
  EXPECT_EQ(ParseChecksumAlgorithm("crc32"), ChecksumAlgorithm::kCrc32);
  EXPECT_EQ(ParseChecksumAlgorithm("CRC32C"), ChecksumAlgorithm::kCrc32c);
  EXPECT_EQ(ParseChecksumAlgorithm("Crc64Nvme"), ChecksumAlgorithm::kCrc64Nvme);
  EXPECT_EQ(ParseChecksumAlgorithm("SHA1"), ChecksumAlgorithm::kSha1);
  EXPECT_EQ(ParseChecksumAlgorithm("sha256"), ChecksumAlgorithm::kSha256);
  EXPECT_EQ(ParseChecksumAlgorithm("MD5"), ChecksumAlgorithm::kMd5);
  EXPECT_EQ(ParseChecksumAlgorithm("CRC33"), ChecksumAlgorithm::kNone);
  EXPECT_EQ(ParseChecksumAlgorithm(""), ChecksumAlgorithm::kNone);
  EXPECT_EQ(ChecksumAlgorithmName(ChecksumAlgorithm::kCrc64Nvme), "CRC64NVME");
  EXPECT_EQ(ChecksumAlgorithmName(ChecksumAlgorithm::kNone), "");
  EXPECT_EQ(ChecksumHeaderName(ChecksumAlgorithm::kCrc32c), "x-amz-checksum-crc32c");
  EXPECT_EQ(ChecksumHeaderName(ChecksumAlgorithm::kSha256), "x-amz-checksum-sha256");
  EXPECT_EQ(ChecksumHeaderName(ChecksumAlgorithm::kNone), "");
  for (auto a : {ChecksumAlgorithm::kCrc32, ChecksumAlgorithm::kCrc32c,
                 ChecksumAlgorithm::kCrc64Nvme, ChecksumAlgorithm::kSha1,
                 ChecksumAlgorithm::kSha256, ChecksumAlgorithm::kMd5}) {
    EXPECT_EQ(ParseChecksumAlgorithm(ChecksumAlgorithmName(a)), a);
  }
}

}  // namespace
}  // namespace strata
