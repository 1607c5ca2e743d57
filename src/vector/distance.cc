// Runtime dispatch for the distance kernels, and the public wrappers.
#include <strata/vector/distance.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "vector/simd/distance_kernels.h"

namespace strata::vector {
namespace internal {

const DistanceKernels* Avx2Kernels() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok ? &Avx2KernelTable() : nullptr;
}

const DistanceKernels* Avx512Kernels() {
  static const bool ok = __builtin_cpu_supports("avx512f") &&
                         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("fma");
  return ok ? &Avx512KernelTable() : nullptr;
}

namespace {
// STRATA_VECTOR_SIMD=scalar|avx2 caps the level (for benchmarks and bisecting).
const DistanceKernels& Choose() {
  const char* cap = std::getenv("STRATA_VECTOR_SIMD");
  std::string_view c = cap ? cap : "";
  if (c != "scalar" && c != "avx2") {
    if (const DistanceKernels* k = Avx512Kernels()) return *k;
  }
  if (c != "scalar") {
    if (const DistanceKernels* k = Avx2Kernels()) return *k;
  }
  return ScalarKernels();
}
}  // namespace

const DistanceKernels& Kernels() {
  static const DistanceKernels& k = Choose();
  return k;
}

}  // namespace internal

using internal::Kernels;

std::string_view MetricName(Metric m) {
  switch (m) {
    case Metric::kL2: return "L2";
    case Metric::kInnerProduct: return "IP";
    case Metric::kCosine: return "COSINE";
  }
  return "?";
}

SimdLevel ActiveSimdLevel() { return Kernels().level; }

std::string_view SimdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar: return "scalar";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
  }
  return "?";
}

float L2Sqr(const float* a, const float* b, size_t d) { return Kernels().l2(a, b, d); }
float InnerProduct(const float* a, const float* b, size_t d) { return Kernels().ip(a, b, d); }

float Distance(Metric metric, const float* a, const float* b, size_t d) {
  return metric == Metric::kL2 ? Kernels().l2(a, b, d) : -Kernels().ip(a, b, d);
}

float ScoreFromDistance(Metric metric, float distance) {
  return metric == Metric::kL2 ? std::sqrt(std::max(distance, 0.0f)) : -distance;
}

float NormalizeL2(float* v, size_t d) {
  float n = std::sqrt(Kernels().ip(v, v, d));
  if (n > 0) {
    float inv = 1.0f / n;
    for (size_t i = 0; i < d; ++i) v[i] *= inv;
  }
  return n;
}

void L2SqrBatch(const float* q, const float* rows, size_t n, size_t d, float* out) {
  Kernels().l2_batch(q, rows, n, d, out);
}
void InnerProductBatch(const float* q, const float* rows, size_t n, size_t d, float* out) {
  Kernels().ip_batch(q, rows, n, d, out);
}
void DistanceBatch(Metric metric, const float* q, const float* rows, size_t n, size_t d,
                   float* out) {
  if (metric == Metric::kL2) {
    Kernels().l2_batch(q, rows, n, d, out);
  } else {
    Kernels().ip_batch(q, rows, n, d, out);
    for (size_t i = 0; i < n; ++i) out[i] = -out[i];
  }
}

uint32_t L2SqrU8(const uint8_t* a, const uint8_t* b, size_t d) { return Kernels().l2_u8(a, b, d); }
uint32_t InnerProductU8(const uint8_t* a, const uint8_t* b, size_t d) {
  return Kernels().ip_u8(a, b, d);
}
float L2SqrF32U8(const float* q, const uint8_t* code, size_t d) {
  return Kernels().l2_f32_u8(q, code, d);
}
float InnerProductF32U8(const float* q, const uint8_t* code, size_t d) {
  return Kernels().ip_f32_u8(q, code, d);
}

}  // namespace strata::vector
