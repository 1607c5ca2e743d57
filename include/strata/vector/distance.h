// Distance kernels for the vector indexes: float32 L2 (squared) and inner
// product, one-query-against-many-rows batch forms, and the 8-bit
// scalar-quantized forms the HNSW index uses.
//
// Each kernel exists once per instruction set (src/vector/simd/:
// distance_scalar.cc, distance_avx2.cc, distance_avx512.cc, as FAISS splits them) and the best one
// the CPU supports is chosen once, at first use, with __builtin_cpu_supports.
// The base build therefore runs on any x86-64. All functions are thread-safe
// and allocate nothing.
//
// Conventions used by every index: a *distance* is smaller-is-closer.
//   kL2            squared Euclidean distance
//   kInnerProduct  -<a, b>
//   kCosine        -<a, b> of the L2-normalised vectors (indexes normalise on
//                  Add and on Search, so cosine is inner product underneath)
// A user-facing similarity score is ScoreFromDistance(metric, distance).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata::vector {

enum class Metric : uint8_t { kL2 = 0, kInnerProduct = 1, kCosine = 2 };

std::string_view MetricName(Metric m);  // "L2", "IP", "COSINE"

enum class SimdLevel : uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// The instruction set the dispatched kernels use on this CPU.
SimdLevel ActiveSimdLevel();
std::string_view SimdLevelName(SimdLevel level);  // "scalar", "avx2", "avx512"

// Single pairs, float32.
float L2Sqr(const float* a, const float* b, size_t d);
float InnerProduct(const float* a, const float* b, size_t d);
// Per the conventions above (kCosine expects normalised inputs).
float Distance(Metric metric, const float* a, const float* b, size_t d);
// Similarity a user sees: L2 -> Euclidean distance (sqrt, smaller is closer, as
// Qdrant's "Euclid"); IP and COSINE -> the inner product / cosine (larger is closer).
float ScoreFromDistance(Metric metric, float distance);

// Normalises v in place to unit L2 norm; returns the original norm (0 leaves v as is).
float NormalizeL2(float* v, size_t d);

// One query against n contiguous rows (row i at rows + i*d): out[i] = dist(q, row i).
void L2SqrBatch(const float* q, const float* rows, size_t n, size_t d, float* out);
void InnerProductBatch(const float* q, const float* rows, size_t n, size_t d, float* out);
// out[i] = Distance(metric, q, row i).
void DistanceBatch(Metric metric, const float* q, const float* rows, size_t n, size_t d,
                   float* out);

// 8-bit codes (scalar quantization stores each component as 0..255).
// Symmetric code-to-code forms, exact in integer arithmetic.
uint32_t L2SqrU8(const uint8_t* a, const uint8_t* b, size_t d);
uint32_t InnerProductU8(const uint8_t* a, const uint8_t* b, size_t d);
// Asymmetric forms: a float query (already mapped into code space) against codes.
float L2SqrF32U8(const float* q, const uint8_t* code, size_t d);
float InnerProductF32U8(const float* q, const uint8_t* code, size_t d);

}  // namespace strata::vector
