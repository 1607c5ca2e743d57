// AVX2 + FMA kernels. This file alone is compiled with -mavx2 -mfma; nothing
// here runs unless distance.cc saw both features on the CPU.
#include <immintrin.h>

#include "vector/simd/distance_kernels.h"

namespace strata::vector::internal {
namespace {

inline float HSum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  __m128 sh = _mm_movehdup_ps(lo);
  __m128 s = _mm_add_ps(lo, sh);
  sh = _mm_movehl_ps(sh, s);
  s = _mm_add_ss(s, sh);
  return _mm_cvtss_f32(s);
}

inline uint32_t HSumI32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return uint32_t(_mm_cvtsi128_si32(s));
}

float L2Avx2(const float* a, const float* b, size_t d) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= d; i += 32) {
    __m256 t0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    __m256 t1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
    __m256 t2 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
    __m256 t3 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));
    s0 = _mm256_fmadd_ps(t0, t0, s0);
    s1 = _mm256_fmadd_ps(t1, t1, s1);
    s2 = _mm256_fmadd_ps(t2, t2, s2);
    s3 = _mm256_fmadd_ps(t3, t3, s3);
  }
  for (; i + 8 <= d; i += 8) {
    __m256 t = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    s0 = _mm256_fmadd_ps(t, t, s0);
  }
  float s = HSum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  for (; i < d; ++i) {
    float t = a[i] - b[i];
    s += t * t;
  }
  return s;
}

float IpAvx2(const float* a, const float* b, size_t d) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= d; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= d; i += 8) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  }
  float s = HSum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  for (; i < d; ++i) s += a[i] * b[i];
  return s;
}

// Four rows per pass share each query load.
void L2BatchAvx2(const float* q, const float* rows, size_t n, size_t d, float* out) {
  size_t r = 0;
  for (; r + 4 <= n; r += 4) {
    const float* x0 = rows + (r + 0) * d;
    const float* x1 = rows + (r + 1) * d;
    const float* x2 = rows + (r + 2) * d;
    const float* x3 = rows + (r + 3) * d;
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= d; i += 8) {
      __m256 qv = _mm256_loadu_ps(q + i);
      __m256 t0 = _mm256_sub_ps(_mm256_loadu_ps(x0 + i), qv);
      __m256 t1 = _mm256_sub_ps(_mm256_loadu_ps(x1 + i), qv);
      __m256 t2 = _mm256_sub_ps(_mm256_loadu_ps(x2 + i), qv);
      __m256 t3 = _mm256_sub_ps(_mm256_loadu_ps(x3 + i), qv);
      s0 = _mm256_fmadd_ps(t0, t0, s0);
      s1 = _mm256_fmadd_ps(t1, t1, s1);
      s2 = _mm256_fmadd_ps(t2, t2, s2);
      s3 = _mm256_fmadd_ps(t3, t3, s3);
    }
    float o0 = HSum(s0), o1 = HSum(s1), o2 = HSum(s2), o3 = HSum(s3);
    for (; i < d; ++i) {
      float t0 = x0[i] - q[i], t1 = x1[i] - q[i], t2 = x2[i] - q[i], t3 = x3[i] - q[i];
      o0 += t0 * t0;
      o1 += t1 * t1;
      o2 += t2 * t2;
      o3 += t3 * t3;
    }
    out[r] = o0;
    out[r + 1] = o1;
    out[r + 2] = o2;
    out[r + 3] = o3;
  }
  for (; r < n; ++r) out[r] = L2Avx2(q, rows + r * d, d);
}

void IpBatchAvx2(const float* q, const float* rows, size_t n, size_t d, float* out) {
  size_t r = 0;
  for (; r + 4 <= n; r += 4) {
    const float* x0 = rows + (r + 0) * d;
    const float* x1 = rows + (r + 1) * d;
    const float* x2 = rows + (r + 2) * d;
    const float* x3 = rows + (r + 3) * d;
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= d; i += 8) {
      __m256 qv = _mm256_loadu_ps(q + i);
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x0 + i), qv, s0);
      s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x1 + i), qv, s1);
      s2 = _mm256_fmadd_ps(_mm256_loadu_ps(x2 + i), qv, s2);
      s3 = _mm256_fmadd_ps(_mm256_loadu_ps(x3 + i), qv, s3);
    }
    float o0 = HSum(s0), o1 = HSum(s1), o2 = HSum(s2), o3 = HSum(s3);
    for (; i < d; ++i) {
      o0 += x0[i] * q[i];
      o1 += x1[i] * q[i];
      o2 += x2[i] * q[i];
      o3 += x3[i] * q[i];
    }
    out[r] = o0;
    out[r + 1] = o1;
    out[r + 2] = o2;
    out[r + 3] = o3;
  }
  for (; r < n; ++r) out[r] = IpAvx2(q, rows + r * d, d);
}

// 16 bytes at a time widened to int16; madd_epi16 squares and pairs into int32
// (|diff| <= 255, so a pair sum is at most 130050: no overflow).
uint32_t L2U8Avx2(const uint8_t* a, const uint8_t* b, size_t d) {
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 32 <= d; i += 32) {
    __m256i a0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    __m256i b0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    __m256i a1 =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i + 16)));
    __m256i b1 =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i + 16)));
    __m256i t0 = _mm256_sub_epi16(a0, b0);
    __m256i t1 = _mm256_sub_epi16(a1, b1);
    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(t0, t0));
    s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(t1, t1));
  }
  for (; i + 16 <= d; i += 16) {
    __m256i a0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    __m256i b0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    __m256i t0 = _mm256_sub_epi16(a0, b0);
    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(t0, t0));
  }
  uint32_t s = HSumI32(_mm256_add_epi32(s0, s1));
  for (; i < d; ++i) {
    int t = int(a[i]) - int(b[i]);
    s += uint32_t(t * t);
  }
  return s;
}

// Products of two values <= 255 fit int16 madd's int32 pair sums (<= 130050).
uint32_t IpU8Avx2(const uint8_t* a, const uint8_t* b, size_t d) {
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 32 <= d; i += 32) {
    __m256i a0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    __m256i b0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    __m256i a1 =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i + 16)));
    __m256i b1 =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i + 16)));
    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(a0, b0));
    s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(a1, b1));
  }
  for (; i + 16 <= d; i += 16) {
    __m256i a0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    __m256i b0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(a0, b0));
  }
  uint32_t s = HSumI32(_mm256_add_epi32(s0, s1));
  for (; i < d; ++i) s += uint32_t(a[i]) * uint32_t(b[i]);
  return s;
}

inline __m256 LoadU8AsF32(const uint8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

float L2F32U8Avx2(const float* q, const uint8_t* c, size_t d) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= d; i += 16) {
    __m256 t0 = _mm256_sub_ps(_mm256_loadu_ps(q + i), LoadU8AsF32(c + i));
    __m256 t1 = _mm256_sub_ps(_mm256_loadu_ps(q + i + 8), LoadU8AsF32(c + i + 8));
    s0 = _mm256_fmadd_ps(t0, t0, s0);
    s1 = _mm256_fmadd_ps(t1, t1, s1);
  }
  for (; i + 8 <= d; i += 8) {
    __m256 t0 = _mm256_sub_ps(_mm256_loadu_ps(q + i), LoadU8AsF32(c + i));
    s0 = _mm256_fmadd_ps(t0, t0, s0);
  }
  float s = HSum(_mm256_add_ps(s0, s1));
  for (; i < d; ++i) {
    float t = q[i] - float(c[i]);
    s += t * t;
  }
  return s;
}

float IpF32U8Avx2(const float* q, const uint8_t* c, size_t d) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= d; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), LoadU8AsF32(c + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), LoadU8AsF32(c + i + 8), s1);
  }
  for (; i + 8 <= d; i += 8) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), LoadU8AsF32(c + i), s0);
  }
  float s = HSum(_mm256_add_ps(s0, s1));
  for (; i < d; ++i) s += q[i] * float(c[i]);
  return s;
}

// Eight sub-quantizers per gather: lane j reads table[(j0+j)*256 + code[j0+j]].
void PqAdcAvx2(const float* table, const uint8_t* codes, size_t n, size_t m, float* out) {
  const __m256i lane_base = _mm256_setr_epi32(0, 256, 512, 768, 1024, 1280, 1536, 1792);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* c = codes + i * m;
    __m256 acc = _mm256_setzero_ps();
    size_t j = 0;
    for (; j + 8 <= m; j += 8) {
      __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c + j)));
      idx = _mm256_add_epi32(idx, lane_base);
      acc = _mm256_add_ps(acc, _mm256_i32gather_ps(table + j * 256, idx, 4));
    }
    float s = HSum(acc);
    for (; j < m; ++j) s += table[j * 256 + c[j]];
    out[i] = s;
  }
}

STRATA_VECTOR_TRANSPOSED_KERNELS(Avx2)

}  // namespace

const DistanceKernels& Avx2KernelTable() {
  static const DistanceKernels k{SimdLevel::kAvx2, L2Avx2,      IpAvx2,      L2BatchAvx2,
                                 IpBatchAvx2,      L2U8Avx2,    IpU8Avx2,    L2F32U8Avx2,
                                 IpF32U8Avx2,      PqAdcAvx2, L2TransposedAvx2, IpTransposedAvx2};
  return k;
}

}  // namespace strata::vector::internal
