// AVX-512 (F + BW) kernels. This file alone is compiled with -mavx512f
// -mavx512bw -mfma; distance.cc only selects it when the CPU has both F and BW.
// Tails use masked loads, so no scalar remainder loops.
// GCC 12's AVX-512 headers build reductions from _mm512_undefined_*() and
// trip -Wuninitialized inside the headers themselves (GCC PR 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "vector/simd/distance_kernels.h"

namespace strata::vector::internal {
namespace {

inline __mmask16 TailMask(size_t r) { return static_cast<__mmask16>((1u << r) - 1u); }

float L2Avx512(const float* a, const float* b, size_t d) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  __m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 64 <= d; i += 64) {
    __m512 t0 = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    __m512 t1 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16));
    __m512 t2 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32));
    __m512 t3 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48));
    s0 = _mm512_fmadd_ps(t0, t0, s0);
    s1 = _mm512_fmadd_ps(t1, t1, s1);
    s2 = _mm512_fmadd_ps(t2, t2, s2);
    s3 = _mm512_fmadd_ps(t3, t3, s3);
  }
  for (; i + 16 <= d; i += 16) {
    __m512 t = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    s0 = _mm512_fmadd_ps(t, t, s0);
  }
  if (i < d) {
    __mmask16 m = TailMask(d - i);
    __m512 t = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i));
    s1 = _mm512_fmadd_ps(t, t, s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

float IpAvx512(const float* a, const float* b, size_t d) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  __m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 64 <= d; i += 64) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
    s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
  }
  for (; i + 16 <= d; i += 16) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
  }
  if (i < d) {
    __mmask16 m = TailMask(d - i);
    s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

void L2BatchAvx512(const float* q, const float* rows, size_t n, size_t d, float* out) {
  size_t r = 0;
  for (; r + 4 <= n; r += 4) {
    const float* x0 = rows + (r + 0) * d;
    const float* x1 = rows + (r + 1) * d;
    const float* x2 = rows + (r + 2) * d;
    const float* x3 = rows + (r + 3) * d;
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    __m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    for (size_t i = 0; i < d; i += 16) {
      __mmask16 m = d - i >= 16 ? __mmask16(0xFFFF) : TailMask(d - i);
      __m512 qv = _mm512_maskz_loadu_ps(m, q + i);
      __m512 t0 = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x0 + i), qv);
      __m512 t1 = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x1 + i), qv);
      __m512 t2 = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x2 + i), qv);
      __m512 t3 = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x3 + i), qv);
      s0 = _mm512_fmadd_ps(t0, t0, s0);
      s1 = _mm512_fmadd_ps(t1, t1, s1);
      s2 = _mm512_fmadd_ps(t2, t2, s2);
      s3 = _mm512_fmadd_ps(t3, t3, s3);
    }
    out[r] = _mm512_reduce_add_ps(s0);
    out[r + 1] = _mm512_reduce_add_ps(s1);
    out[r + 2] = _mm512_reduce_add_ps(s2);
    out[r + 3] = _mm512_reduce_add_ps(s3);
  }
  for (; r < n; ++r) out[r] = L2Avx512(q, rows + r * d, d);
}

void IpBatchAvx512(const float* q, const float* rows, size_t n, size_t d, float* out) {
  size_t r = 0;
  for (; r + 4 <= n; r += 4) {
    const float* x0 = rows + (r + 0) * d;
    const float* x1 = rows + (r + 1) * d;
    const float* x2 = rows + (r + 2) * d;
    const float* x3 = rows + (r + 3) * d;
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    __m512 s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    for (size_t i = 0; i < d; i += 16) {
      __mmask16 m = d - i >= 16 ? __mmask16(0xFFFF) : TailMask(d - i);
      __m512 qv = _mm512_maskz_loadu_ps(m, q + i);
      s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x0 + i), qv, s0);
      s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x1 + i), qv, s1);
      s2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x2 + i), qv, s2);
      s3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x3 + i), qv, s3);
    }
    out[r] = _mm512_reduce_add_ps(s0);
    out[r + 1] = _mm512_reduce_add_ps(s1);
    out[r + 2] = _mm512_reduce_add_ps(s2);
    out[r + 3] = _mm512_reduce_add_ps(s3);
  }
  for (; r < n; ++r) out[r] = IpAvx512(q, rows + r * d, d);
}

// 32 bytes widened to 32 x int16 per step (AVX-512BW), madd into int32.
uint32_t L2U8Avx512(const uint8_t* a, const uint8_t* b, size_t d) {
  __m512i s = _mm512_setzero_si512();
  size_t i = 0;
  for (; i + 32 <= d; i += 32) {
    __m512i a0 = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i)));
    __m512i b0 = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)));
    __m512i t = _mm512_sub_epi16(a0, b0);
    s = _mm512_add_epi32(s, _mm512_madd_epi16(t, t));
  }
  if (i < d) {
    __mmask32 m = static_cast<__mmask32>((uint64_t(1) << (d - i)) - 1);
    __m512i a0 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(_mm512_maskz_loadu_epi8(m, a + i)));
    __m512i b0 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(_mm512_maskz_loadu_epi8(m, b + i)));
    __m512i t = _mm512_sub_epi16(a0, b0);
    s = _mm512_add_epi32(s, _mm512_madd_epi16(t, t));
  }
  return uint32_t(_mm512_reduce_add_epi32(s));
}

uint32_t IpU8Avx512(const uint8_t* a, const uint8_t* b, size_t d) {
  __m512i s = _mm512_setzero_si512();
  size_t i = 0;
  for (; i + 32 <= d; i += 32) {
    __m512i a0 = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i)));
    __m512i b0 = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)));
    s = _mm512_add_epi32(s, _mm512_madd_epi16(a0, b0));
  }
  if (i < d) {
    __mmask32 m = static_cast<__mmask32>((uint64_t(1) << (d - i)) - 1);
    __m512i a0 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(_mm512_maskz_loadu_epi8(m, a + i)));
    __m512i b0 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(_mm512_maskz_loadu_epi8(m, b + i)));
    s = _mm512_add_epi32(s, _mm512_madd_epi16(a0, b0));
  }
  return uint32_t(_mm512_reduce_add_epi32(s));
}

inline __m512 LoadU8AsF32(__mmask16 m, const uint8_t* p) {
  // 512-bit masked load (AVX-512BW) so no VL extension is needed.
  return _mm512_cvtepi32_ps(
      _mm512_cvtepu8_epi32(_mm512_castsi512_si128(_mm512_maskz_loadu_epi8(__mmask64(m), p))));
}

float L2F32U8Avx512(const float* q, const uint8_t* c, size_t d) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= d; i += 32) {
    __m512 t0 = _mm512_sub_ps(_mm512_loadu_ps(q + i), LoadU8AsF32(0xFFFF, c + i));
    __m512 t1 = _mm512_sub_ps(_mm512_loadu_ps(q + i + 16), LoadU8AsF32(0xFFFF, c + i + 16));
    s0 = _mm512_fmadd_ps(t0, t0, s0);
    s1 = _mm512_fmadd_ps(t1, t1, s1);
  }
  for (; i < d; i += 16) {
    __mmask16 m = d - i >= 16 ? __mmask16(0xFFFF) : TailMask(d - i);
    __m512 t = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, q + i), LoadU8AsF32(m, c + i));
    s0 = _mm512_fmadd_ps(t, t, s0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

float IpF32U8Avx512(const float* q, const uint8_t* c, size_t d) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= d; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), LoadU8AsF32(0xFFFF, c + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16), LoadU8AsF32(0xFFFF, c + i + 16), s1);
  }
  for (; i < d; i += 16) {
    __mmask16 m = d - i >= 16 ? __mmask16(0xFFFF) : TailMask(d - i);
    s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), LoadU8AsF32(m, c + i), s0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

void PqAdcAvx512(const float* table, const uint8_t* codes, size_t n, size_t m, float* out) {
  const __m512i lane_base = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(256));
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* c = codes + i * m;
    __m512 acc = _mm512_setzero_ps();
    size_t j = 0;
    for (; j + 16 <= m; j += 16) {
      __m512i idx =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + j)));
      idx = _mm512_add_epi32(idx, lane_base);
      acc = _mm512_add_ps(acc, _mm512_i32gather_ps(idx, table + j * 256, 4));
    }
    float s = _mm512_reduce_add_ps(acc);
    for (; j < m; ++j) s += table[j * 256 + c[j]];
    out[i] = s;
  }
}

STRATA_VECTOR_TRANSPOSED_KERNELS(Avx512)

}  // namespace

const DistanceKernels& Avx512KernelTable() {
  static const DistanceKernels k{SimdLevel::kAvx512, L2Avx512,      IpAvx512,
                                 L2BatchAvx512,      IpBatchAvx512, L2U8Avx512,
                                 IpU8Avx512,         L2F32U8Avx512, IpF32U8Avx512,
                                 PqAdcAvx512, L2TransposedAvx512, IpTransposedAvx512};
  return k;
}

}  // namespace strata::vector::internal
