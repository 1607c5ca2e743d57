#include <strata/core/checksum.h>

#include <isa-l/crc.h>
#include <openssl/evp.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <climits>
#include <cstring>
#include <mutex>
#include <cstdio>
#include <cstdlib>

#include <strata/core/md5_mb.h>
#include <strata/core/strings.h>

namespace strata {
namespace {

// OpenSSL digests fail only when the library is broken or memory is gone; no
// caller could recover, and an empty digest would silently pass as a checksum.
[[noreturn]] void OpenSslFatal(const char* what) {
  std::fprintf(stderr, "strata: fatal: OpenSSL %s failed\n", what);
  std::abort();
}

// ---------------------------------------------------------------------------
// CRC64/NVME: reflected poly 0x9A6C9329AC4BC9B5, init and xorout all ones.
// ISA-L 2.30 has no CRC64/NVME, so this is slicing-by-16 over our own tables
// (about 2-3 GB/s per core, against ~0.5 GB/s byte-at-a-time).

constexpr uint64_t kCrc64NvmePoly = 0x9A6C9329AC4BC9B5ULL;

struct Crc64Tables {
  uint64_t t[16][256];
  Crc64Tables() {
    for (int i = 0; i < 256; ++i) {
      uint64_t c = static_cast<uint64_t>(i);
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCrc64NvmePoly : c >> 1;
      t[0][i] = c;
    }
    for (int s = 1; s < 16; ++s) {
      for (int i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

const Crc64Tables& Crc64T() {
  static const Crc64Tables tables;
  return tables;
}

inline uint64_t LoadLe64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

// Raw (unconditioned) reflected CRC-64 update.
uint64_t Crc64Raw(uint64_t crc, const unsigned char* p, size_t n) {
  const auto& T = Crc64T().t;
  while (n >= 16) {
    const uint64_t a = LoadLe64(p) ^ crc;
    const uint64_t b = LoadLe64(p + 8);
    crc = T[15][a & 0xff] ^ T[14][(a >> 8) & 0xff] ^ T[13][(a >> 16) & 0xff] ^
          T[12][(a >> 24) & 0xff] ^ T[11][(a >> 32) & 0xff] ^ T[10][(a >> 40) & 0xff] ^
          T[9][(a >> 48) & 0xff] ^ T[8][a >> 56] ^ T[7][b & 0xff] ^ T[6][(b >> 8) & 0xff] ^
          T[5][(b >> 16) & 0xff] ^ T[4][(b >> 24) & 0xff] ^ T[3][(b >> 32) & 0xff] ^
          T[2][(b >> 40) & 0xff] ^ T[1][(b >> 48) & 0xff] ^ T[0][b >> 56];
    p += 16;
    n -= 16;
  }
  while (n--) crc = (crc >> 8) ^ T[0][(crc ^ *p++) & 0xff];
  return crc;
}

// ---------------------------------------------------------------------------
// CRC combination for any reflected CRC (zlib's multmodp / x2nmodp method,
// generalised to 32 and 64 bits). crc(A||B) = crc(A) * x^(8*len(B)) mod P ^ crc(B);
// the init/xorout conditioning cancels out because both are all ones.

template <class U, U kPoly>
struct CrcCombiner {
  static constexpr int kBits = sizeof(U) * 8;
  static constexpr U kTop = static_cast<U>(1) << (kBits - 1);  // x^0 in reflected form

  // a * b mod P (reflected).
  static U MulModP(U a, U b) {
    U m = kTop, p = 0;
    for (;;) {
      if (a & m) {
        p ^= b;
        if ((a & (m - 1)) == 0) break;
      }
      m >>= 1;
      b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
    }
    return p;
  }

  struct Table {
    U x2n[kBits];  // x^(2^k) mod P
    Table() {
      U p = kTop >> 1;  // x^1
      x2n[0] = p;
      for (int k = 1; k < kBits; ++k) x2n[k] = p = MulModP(p, p);
    }
  };

  static const Table& Tab() {
    static const Table t;
    return t;
  }

  // x^(n * 2^k) mod P
  static U X2nModP(uint64_t n, unsigned k) {
    const Table& t = Tab();
    U p = kTop;
    while (n) {
      if (n & 1) p = MulModP(t.x2n[k % kBits], p);
      n >>= 1;
      ++k;
    }
    return p;
  }

  static U Combine(U a, U b, uint64_t len_b) { return MulModP(X2nModP(len_b, 3), a) ^ b; }
};

using Crc32Comb = CrcCombiner<uint32_t, 0xEDB88320u>;
using Crc32cComb = CrcCombiner<uint32_t, 0x82F63B78u>;
using Crc64Comb = CrcCombiner<uint64_t, kCrc64NvmePoly>;

// ---------------------------------------------------------------------------
// CRC64/NVME with PCLMULQDQ folding (Intel, "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ"): ~5x the slicing tables, which matters because
// S3 computes CRC64NVME over every uploaded byte. Runtime-dispatched, with a
// function-level target attribute so the rest of this file stays baseline x86-64.
//
// In the reflected representation a 64-bit word w stands for sum w_i x^(63-i),
// and a 16-byte block loaded little-endian has its first 8 bytes (low qword) as
// the high-degree half. Folding a block A = q0 x^64 + q1 forward by D bits:
// A x^D = q0 x^(D+64) + q1 x^D; a carry-less product of two reflected words
// comes out multiplied by x, so the constants are x^(D+63) and x^(D-1) mod P.
// What is left after folding is a 16-byte "message" whose raw CRC (from zero)
// the tables finish, so no Barrett reduction is needed.

#if defined(__x86_64__)
struct Crc64ClmulConstants {
  uint64_t fold512_q0, fold512_q1;  // 4 accumulators, 64 bytes apart
  uint64_t fold128_q0, fold128_q1;  // one block forward
  Crc64ClmulConstants() {
    auto xn = [](uint64_t n) { return Crc64Comb::X2nModP(n, 0); };
    fold512_q0 = xn(512 + 63);
    fold512_q1 = xn(512 - 1);
    fold128_q0 = xn(128 + 63);
    fold128_q1 = xn(128 - 1);
  }
};

const Crc64ClmulConstants& ClmulK() {
  static const Crc64ClmulConstants k;
  return k;
}

__attribute__((target("pclmul,sse2"))) inline __m128i Fold(__m128i a, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11));
}

__attribute__((target("pclmul,sse2"))) uint64_t Crc64RawClmul(uint64_t crc,
                                                                const unsigned char* p,
                                                                size_t n) {
  if (n < 128) return Crc64Raw(crc, p, n);
  const Crc64ClmulConstants& K = ClmulK();
  auto load = [](const unsigned char* q) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  };
  __m128i a0 = _mm_xor_si128(load(p), _mm_cvtsi64_si128(static_cast<long long>(crc)));
  __m128i a1 = load(p + 16), a2 = load(p + 32), a3 = load(p + 48);
  p += 64;
  n -= 64;
  const __m128i k512 = _mm_set_epi64x(static_cast<long long>(K.fold512_q1),
                                      static_cast<long long>(K.fold512_q0));
  while (n >= 64) {
    a0 = _mm_xor_si128(Fold(a0, k512), load(p));
    a1 = _mm_xor_si128(Fold(a1, k512), load(p + 16));
    a2 = _mm_xor_si128(Fold(a2, k512), load(p + 32));
    a3 = _mm_xor_si128(Fold(a3, k512), load(p + 48));
    p += 64;
    n -= 64;
  }
  const __m128i k128 = _mm_set_epi64x(static_cast<long long>(K.fold128_q1),
                                      static_cast<long long>(K.fold128_q0));
  a1 = _mm_xor_si128(Fold(a0, k128), a1);
  a2 = _mm_xor_si128(Fold(a1, k128), a2);
  a3 = _mm_xor_si128(Fold(a2, k128), a3);
  while (n >= 16) {
    a3 = _mm_xor_si128(Fold(a3, k128), load(p));
    p += 16;
    n -= 16;
  }
  alignas(16) unsigned char rest[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(rest), a3);
  return Crc64Raw(Crc64Raw(0, rest, 16), p, n);
}

bool HaveClmul() {
  static const bool have = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
  return have;
}
#endif  // __x86_64__

// ---------------------------------------------------------------------------
// OpenSSL digests. Fetching the algorithm once avoids OpenSSL 3's implicit
// fetch (a locked lookup) on every EVP_DigestInit.

struct Mds {
  EVP_MD* md5;
  EVP_MD* sha1;
  EVP_MD* sha256;
  Mds()
      : md5(EVP_MD_fetch(nullptr, "MD5", nullptr)),
        sha1(EVP_MD_fetch(nullptr, "SHA1", nullptr)),
        sha256(EVP_MD_fetch(nullptr, "SHA256", nullptr)) {}
};

const Mds& GetMds() {
  static const Mds mds;
  return mds;
}

const EVP_MD* MdFor(ChecksumAlgorithm a) {
  const Mds& m = GetMds();
  switch (a) {
    case ChecksumAlgorithm::kMd5: return m.md5 ? m.md5 : EVP_md5();
    case ChecksumAlgorithm::kSha1: return m.sha1 ? m.sha1 : EVP_sha1();
    case ChecksumAlgorithm::kSha256: return m.sha256 ? m.sha256 : EVP_sha256();
    default: return nullptr;
  }
}

// A per-thread reusable context for one-shot digests (no allocation per call).
struct CtxHolder {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~CtxHolder() { EVP_MD_CTX_free(ctx); }
};

EVP_MD_CTX* ThreadCtx() {
  thread_local CtxHolder holder;
  return holder.ctx;
}

std::string OneShot(ChecksumAlgorithm a, std::string_view data) {
  const EVP_MD* md = MdFor(a);
  EVP_MD_CTX* ctx = ThreadCtx();
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx, md, nullptr) != 1 ||
      EVP_DigestUpdate(ctx, data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx, out, &len) != 1) {
    // Only possible if OpenSSL is broken or out of memory; fall back to the
    // allocating one-shot so callers never get a silently empty digest.
    if (EVP_Digest(data.data(), data.size(), out, &len, md, nullptr) != 1) {
      OpenSslFatal("digest");
    }
  }
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string BigEndian32(uint32_t v) {
  char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
               static_cast<char>(v)};
  return std::string(b, 4);
}

std::string BigEndian64(uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (56 - 8 * i));
  return std::string(b, 8);
}

class Crc32Hasher final : public Hasher {
 public:
  void Update(const void* d, size_t n) override { crc_ = Crc32(crc_, d, n); }
  std::string Digest() override { return BigEndian32(crc_); }

 private:
  uint32_t crc_ = 0;
};

class Crc32cHasher final : public Hasher {
 public:
  void Update(const void* d, size_t n) override { crc_ = Crc32c(crc_, d, n); }
  std::string Digest() override { return BigEndian32(crc_); }

 private:
  uint32_t crc_ = 0;
};

class Crc64NvmeHasher final : public Hasher {
 public:
  void Update(const void* d, size_t n) override { crc_ = Crc64Nvme(crc_, d, n); }
  std::string Digest() override { return BigEndian64(crc_); }

 private:
  uint64_t crc_ = 0;
};

class EvpHasher final : public Hasher {
 public:
  explicit EvpHasher(const EVP_MD* md) : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_, md, nullptr) != 1) {
      OpenSslFatal("EVP_DigestInit_ex");
    }
  }
  ~EvpHasher() override { EVP_MD_CTX_free(ctx_); }
  EvpHasher(const EvpHasher&) = delete;
  EvpHasher& operator=(const EvpHasher&) = delete;

  void Update(const void* d, size_t n) override { EVP_DigestUpdate(ctx_, d, n); }
  std::string Digest() override {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx_, out, &len) != 1) OpenSslFatal("EVP_DigestFinal_ex");
    return std::string(reinterpret_cast<char*>(out), len);
  }

 private:
  EVP_MD_CTX* ctx_;
};

// MD5 through the batching service (md5_mb.h): concurrent streams share the
// 8-lane kernel; a lone one runs our scalar code, as fast as OpenSSL's.
class Md5Hasher final : public Hasher {
 public:
  void Update(const void* d, size_t n) override { s_.Update(d, n); }
  std::string Digest() override { return s_.Digest(); }

 private:
  Md5Stream s_;
};

class NoneHasher final : public Hasher {
 public:
  void Update(const void*, size_t) override {}
  std::string Digest() override { return std::string(); }
};

}  // namespace

uint32_t Crc32(uint32_t crc, const void* data, size_t n) {
  // crc32_gzip_refl takes and returns the conditioned (zlib-style) value.
  return crc32_gzip_refl(crc, static_cast<const unsigned char*>(data), n);
}

uint32_t Crc32c(uint32_t crc, const void* data, size_t n) {
  // crc32_iscsi works on the raw register: seed ~prev, invert the result. Its
  // length is an int, so feed it at most 1 GiB at a time.
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  uint32_t c = ~crc;
  while (n > 0) {
    const size_t step = n > (size_t{1} << 30) ? (size_t{1} << 30) : n;
    c = crc32_iscsi(p, static_cast<int>(step), c);
    p += step;
    n -= step;
  }
  return ~c;
}

uint64_t Crc64Nvme(uint64_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (HaveClmul()) return ~Crc64RawClmul(~crc, p, n);
#endif
  return ~Crc64Raw(~crc, p, n);
}

uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  return Crc32Comb::Combine(crc_a, crc_b, len_b);
}
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  return Crc32cComb::Combine(crc_a, crc_b, len_b);
}
uint64_t Crc64NvmeCombine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b) {
  return Crc64Comb::Combine(crc_a, crc_b, len_b);
}

ChecksumAlgorithm ParseChecksumAlgorithm(std::string_view name) {
  if (IEquals(name, "CRC32")) return ChecksumAlgorithm::kCrc32;
  if (IEquals(name, "CRC32C")) return ChecksumAlgorithm::kCrc32c;
  if (IEquals(name, "CRC64NVME")) return ChecksumAlgorithm::kCrc64Nvme;
  if (IEquals(name, "SHA1")) return ChecksumAlgorithm::kSha1;
  if (IEquals(name, "SHA256")) return ChecksumAlgorithm::kSha256;
  if (IEquals(name, "MD5")) return ChecksumAlgorithm::kMd5;
  return ChecksumAlgorithm::kNone;
}

std::string_view ChecksumAlgorithmName(ChecksumAlgorithm a) {
  switch (a) {
    case ChecksumAlgorithm::kNone: return "";
    case ChecksumAlgorithm::kCrc32: return "CRC32";
    case ChecksumAlgorithm::kCrc32c: return "CRC32C";
    case ChecksumAlgorithm::kCrc64Nvme: return "CRC64NVME";
    case ChecksumAlgorithm::kSha1: return "SHA1";
    case ChecksumAlgorithm::kSha256: return "SHA256";
    case ChecksumAlgorithm::kMd5: return "MD5";
  }
  return "";
}

std::string ChecksumHeaderName(ChecksumAlgorithm a) {
  if (a == ChecksumAlgorithm::kNone) return std::string();
  return "x-amz-checksum-" + ToLower(ChecksumAlgorithmName(a));
}

bool IsCrc(ChecksumAlgorithm a) {
  return a == ChecksumAlgorithm::kCrc32 || a == ChecksumAlgorithm::kCrc32c ||
         a == ChecksumAlgorithm::kCrc64Nvme;
}

uint64_t CrcCombine(ChecksumAlgorithm a, uint64_t crc_a, uint64_t crc_b, uint64_t len_b) {
  switch (a) {
    case ChecksumAlgorithm::kCrc32:
      return Crc32Combine(static_cast<uint32_t>(crc_a), static_cast<uint32_t>(crc_b), len_b);
    case ChecksumAlgorithm::kCrc32c:
      return Crc32cCombine(static_cast<uint32_t>(crc_a), static_cast<uint32_t>(crc_b), len_b);
    case ChecksumAlgorithm::kCrc64Nvme:
      return Crc64NvmeCombine(crc_a, crc_b, len_b);
    default:
      return 0;
  }
}

std::optional<std::string> CombinePartCrcs(ChecksumAlgorithm a,
                                           const std::vector<std::pair<std::string, uint64_t>>& parts) {
  if (!IsCrc(a)) return std::nullopt;
  const size_t width = a == ChecksumAlgorithm::kCrc64Nvme ? 8 : 4;
  uint64_t crc = 0;
  bool first = true;
  for (const auto& [b64, size] : parts) {
    auto raw = Base64Decode(b64);
    if (!raw || raw->empty() || raw->size() > width) return std::nullopt;
    uint64_t v = 0;
    for (unsigned char ch : *raw) v = (v << 8) | ch;
    crc = first ? v : CrcCombine(a, crc, v, size);
    first = false;
  }
  std::string out(width, '\0');
  for (size_t i = width; i-- > 0;) {
    out[i] = static_cast<char>(crc & 0xff);
    crc >>= 8;
  }
  return Base64Encode(out);
}

std::unique_ptr<Hasher> Hasher::Create(ChecksumAlgorithm a) {
  switch (a) {
    case ChecksumAlgorithm::kCrc32: return std::make_unique<Crc32Hasher>();
    case ChecksumAlgorithm::kCrc32c: return std::make_unique<Crc32cHasher>();
    case ChecksumAlgorithm::kCrc64Nvme: return std::make_unique<Crc64NvmeHasher>();
    case ChecksumAlgorithm::kSha1:
    case ChecksumAlgorithm::kSha256: return std::make_unique<EvpHasher>(MdFor(a));
    case ChecksumAlgorithm::kMd5: return std::make_unique<Md5Hasher>();
    case ChecksumAlgorithm::kNone: return std::make_unique<NoneHasher>();
  }
  return std::make_unique<NoneHasher>();
}

std::string Md5(std::string_view data) {
  // Md5Stream: no EVP context set-up for short strings, and large bodies join
  // the batch like any other stream.
  Md5Stream s;
  s.Update(data.data(), data.size());
  return s.Digest();
}
std::string Sha1(std::string_view data) { return OneShot(ChecksumAlgorithm::kSha1, data); }
std::string Sha256(std::string_view data) { return OneShot(ChecksumAlgorithm::kSha256, data); }

std::string HmacSha256(std::string_view key, std::string_view data) {
  // RFC 2104 over the fetched SHA-256: cheaper than OpenSSL 3's HMAC(), which
  // fetches the MAC implementation on each call. SigV4 does five of these per
  // request (one when the signing key is cached), so it matters.
  constexpr size_t kBlock = 64;
  unsigned char k[kBlock] = {};
  if (key.size() > kBlock) {
    std::string hk = Sha256(key);
    std::memcpy(k, hk.data(), hk.size());
  } else {
    std::memcpy(k, key.data(), key.size());
  }
  unsigned char pad[kBlock];
  for (size_t i = 0; i < kBlock; ++i) pad[i] = k[i] ^ 0x36;

  const EVP_MD* md = MdFor(ChecksumAlgorithm::kSha256);
  EVP_MD_CTX* ctx = ThreadCtx();
  unsigned char inner[EVP_MAX_MD_SIZE];
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int ilen = 0, olen = 0;
  bool ok = ctx && EVP_DigestInit_ex(ctx, md, nullptr) == 1 &&
            EVP_DigestUpdate(ctx, pad, kBlock) == 1 &&
            EVP_DigestUpdate(ctx, data.data(), data.size()) == 1 &&
            EVP_DigestFinal_ex(ctx, inner, &ilen) == 1;
  for (size_t i = 0; i < kBlock; ++i) pad[i] = k[i] ^ 0x5c;
  ok = ok && EVP_DigestInit_ex(ctx, md, nullptr) == 1 &&
       EVP_DigestUpdate(ctx, pad, kBlock) == 1 && EVP_DigestUpdate(ctx, inner, ilen) == 1 &&
       EVP_DigestFinal_ex(ctx, out, &olen) == 1;
  if (!ok) OpenSslFatal("HMAC-SHA256");
  return std::string(reinterpret_cast<char*>(out), olen);
}

}  // namespace strata
