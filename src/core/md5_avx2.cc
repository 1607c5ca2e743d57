// The 8-lane MD5 kernel: eight independent streams, one per 32-bit lane of an
// AVX2 register. This file alone is compiled with -mavx2; md5_mb.cc calls it only
// when the CPU has AVX2.
//
// Each step is the scalar step done 8 times at once. AVX2 has no rotate, so a
// rotation is two shifts and an OR; the step's dependency chain is then about 6
// cycles for 8 blocks' worth of work, against about 4-5 for one block in the
// scalar code. The message words arrive row-wise (lane j's block is 16
// consecutive words), so each block's 8 x 16 words are transposed into 16
// registers of "word w of every lane" first.
#include <immintrin.h>

#include <cstring>
#include <utility>

#include <strata/core/md5_mb.h>

#include "core/md5_tables.h"

namespace strata::md5 {
namespace {

template <int S>
inline __attribute__((always_inline)) __m256i Rotl(__m256i x) {
  return _mm256_or_si256(_mm256_slli_epi32(x, S), _mm256_srli_epi32(x, 32 - S));
}

template <int I>
inline __attribute__((always_inline)) void Step(__m256i v[4], const __m256i* m) {
  constexpr int ia = (64 - I) % 4;
  constexpr int ib = (ia + 1) % 4, ic = (ia + 2) % 4, id = (ia + 3) % 4;
  const __m256i b = v[ib], c = v[ic], d = v[id];
  __m256i f;
  if constexpr (I < 16) {
    f = _mm256_xor_si256(d, _mm256_and_si256(b, _mm256_xor_si256(c, d)));
  } else if constexpr (I < 32) {
    // (b & d) | (c & ~d), the OR as an ADD: only b & d waits for b.
    const __m256i mk =
        _mm256_add_epi32(m[MsgIndex(I)], _mm256_set1_epi32(static_cast<int>(kK[I])));
    const __m256i pre = _mm256_add_epi32(_mm256_add_epi32(v[ia], mk), _mm256_andnot_si256(d, c));
    v[ia] = _mm256_add_epi32(b, Rotl<kS[I]>(_mm256_add_epi32(pre, _mm256_and_si256(b, d))));
    return;
  } else if constexpr (I < 48) {
    f = _mm256_xor_si256(_mm256_xor_si256(b, c), d);
  } else {
    f = _mm256_xor_si256(c, _mm256_or_si256(b, _mm256_xor_si256(d, _mm256_set1_epi32(-1))));
  }
  // m + K does not depend on the chain; add it to a first.
  const __m256i mk =
      _mm256_add_epi32(m[MsgIndex(I)], _mm256_set1_epi32(static_cast<int>(kK[I])));
  const __m256i a = _mm256_add_epi32(_mm256_add_epi32(v[ia], mk), f);
  v[ia] = _mm256_add_epi32(b, Rotl<kS[I]>(a));
}

// r[j] holds 8 words of lane j; afterwards r[w] holds word w of lanes 0..7.
inline __attribute__((always_inline)) void Transpose8(__m256i r[8]) {
  const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]);
  const __m256i t1 = _mm256_unpackhi_epi32(r[0], r[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]);
  const __m256i t3 = _mm256_unpackhi_epi32(r[2], r[3]);
  const __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]);
  const __m256i t5 = _mm256_unpackhi_epi32(r[4], r[5]);
  const __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]);
  const __m256i t7 = _mm256_unpackhi_epi32(r[6], r[7]);
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2);
  const __m256i u1 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3);
  const __m256i u3 = _mm256_unpackhi_epi64(t1, t3);
  const __m256i u4 = _mm256_unpacklo_epi64(t4, t6);
  const __m256i u5 = _mm256_unpackhi_epi64(t4, t6);
  const __m256i u6 = _mm256_unpacklo_epi64(t5, t7);
  const __m256i u7 = _mm256_unpackhi_epi64(t5, t7);
  r[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
  r[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
  r[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
  r[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
  r[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
  r[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
  r[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
  r[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

template <size_t... I>
inline __attribute__((always_inline)) void Rounds(__m256i v[4], const __m256i* m,
                                                  std::index_sequence<I...>) {
  (Step<static_cast<int>(I)>(v, m), ...);
}

}  // namespace

void Avx2Blocks8(uint32_t st[4][8], const unsigned char* const data[8], size_t n) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "MD5 words are little-endian");
  __m256i v[4];
  for (int w = 0; w < 4; ++w) v[w] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(st[w]));
  const unsigned char* p[8];
  for (int j = 0; j < 8; ++j) p[j] = data[j];
  for (size_t blk = 0; blk < n; ++blk) {
    __m256i m[16];
    for (int j = 0; j < 8; ++j) {
      m[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[j]));
      m[8 + j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[j] + 32));
      p[j] += 64;
    }
    Transpose8(m);
    Transpose8(m + 8);
    const __m256i a = v[0], b = v[1], c = v[2], d = v[3];
    Rounds(v, m, std::make_index_sequence<64>{});
    v[0] = _mm256_add_epi32(v[0], a);
    v[1] = _mm256_add_epi32(v[1], b);
    v[2] = _mm256_add_epi32(v[2], c);
    v[3] = _mm256_add_epi32(v[3], d);
  }
  for (int w = 0; w < 4; ++w) _mm256_storeu_si256(reinterpret_cast<__m256i*>(st[w]), v[w]);
}

}  // namespace strata::md5
