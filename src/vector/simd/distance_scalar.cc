// Portable kernels: the reference the SIMD versions are tested against and the
// fallback on CPUs without AVX2. Eight independent partial sums let GCC use
// SSE2 lanes without -ffast-math (it may not reassociate a single float sum).
#include "vector/simd/distance_kernels.h"

namespace strata::vector::internal {
namespace {

float L2Scalar(const float* a, const float* b, size_t d) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= d; i += 8) {
    for (int j = 0; j < 8; ++j) {
      float t = a[i + j] - b[i + j];
      acc[j] += t * t;
    }
  }
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < d; ++i) {
    float t = a[i] - b[i];
    s += t * t;
  }
  return s;
}

float IpScalar(const float* a, const float* b, size_t d) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= d; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < d; ++i) s += a[i] * b[i];
  return s;
}

void L2BatchScalar(const float* q, const float* rows, size_t n, size_t d, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = L2Scalar(q, rows + i * d, d);
}

void IpBatchScalar(const float* q, const float* rows, size_t n, size_t d, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = IpScalar(q, rows + i * d, d);
}

uint32_t L2U8Scalar(const uint8_t* a, const uint8_t* b, size_t d) {
  uint32_t s = 0;
  for (size_t i = 0; i < d; ++i) {
    int t = int(a[i]) - int(b[i]);
    s += uint32_t(t * t);
  }
  return s;
}

uint32_t IpU8Scalar(const uint8_t* a, const uint8_t* b, size_t d) {
  uint32_t s = 0;
  for (size_t i = 0; i < d; ++i) s += uint32_t(a[i]) * uint32_t(b[i]);
  return s;
}

float L2F32U8Scalar(const float* q, const uint8_t* c, size_t d) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= d; i += 8) {
    for (int j = 0; j < 8; ++j) {
      float t = q[i + j] - float(c[i + j]);
      acc[j] += t * t;
    }
  }
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < d; ++i) {
    float t = q[i] - float(c[i]);
    s += t * t;
  }
  return s;
}

float IpF32U8Scalar(const float* q, const uint8_t* c, size_t d) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= d; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += q[i + j] * float(c[i + j]);
  }
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < d; ++i) s += q[i] * float(c[i]);
  return s;
}

void PqAdcScalar(const float* table, const uint8_t* codes, size_t n, size_t m, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* c = codes + i * m;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t j = 0;
    for (; j + 4 <= m; j += 4) {
      s0 += table[(j + 0) * 256 + c[j + 0]];
      s1 += table[(j + 1) * 256 + c[j + 1]];
      s2 += table[(j + 2) * 256 + c[j + 2]];
      s3 += table[(j + 3) * 256 + c[j + 3]];
    }
    for (; j < m; ++j) s0 += table[j * 256 + c[j]];
    out[i] = (s0 + s1) + (s2 + s3);
  }
}

STRATA_VECTOR_TRANSPOSED_KERNELS(Scalar)

}  // namespace

const DistanceKernels& ScalarKernels() {
  static const DistanceKernels k{SimdLevel::kScalar, L2Scalar,     IpScalar,
                                 L2BatchScalar,      IpBatchScalar, L2U8Scalar,
                                 IpU8Scalar,         L2F32U8Scalar, IpF32U8Scalar,
                                 PqAdcScalar, L2TransposedScalar, IpTransposedScalar};
  return k;
}

}  // namespace strata::vector::internal
