// Private: the per-instruction-set kernel tables behind strata/vector/distance.h.
//
// Hot loops (HNSW, IVF scans) fetch Kernels() once and call through the table,
// so a distance costs one indirect call and no dispatch branch.
#pragma once

#include <cstddef>
#include <cstdint>

#include <strata/vector/distance.h>

namespace strata::vector::internal {

struct DistanceKernels {
  SimdLevel level;
  float (*l2)(const float* a, const float* b, size_t d);
  float (*ip)(const float* a, const float* b, size_t d);
  void (*l2_batch)(const float* q, const float* rows, size_t n, size_t d, float* out);
  void (*ip_batch)(const float* q, const float* rows, size_t n, size_t d, float* out);
  uint32_t (*l2_u8)(const uint8_t* a, const uint8_t* b, size_t d);
  uint32_t (*ip_u8)(const uint8_t* a, const uint8_t* b, size_t d);
  float (*l2_f32_u8)(const float* q, const uint8_t* c, size_t d);
  float (*ip_f32_u8)(const float* q, const uint8_t* c, size_t d);
  // Product-quantizer asymmetric distances, 8-bit codes: table is m x 256
  // floats, codes n x m bytes; out[i] = sum_j table[j*256 + codes[i*m + j]].
  void (*pq_adc_batch)(const float* table, const uint8_t* codes, size_t n, size_t m, float* out);
  // One short vector against k centroids stored transposed (ct[t*k + c]):
  // out[c] = sum_t (x[t] - ct[t*k + c])^2, or sum_t x[t] * ct[t*k + c]. The
  // loop runs over contiguous c, so it vectorises for any d (PQ sub-spaces
  // are 2-16 wide, too short for the row kernels).
  void (*l2_transposed)(const float* x, const float* ct, size_t d, size_t k, float* out);
  void (*ip_transposed)(const float* x, const float* ct, size_t d, size_t k, float* out);
};

// The transposed kernels are the same C++ in every ISA's file; the compiler
// vectorises each copy for that file's flags.
#define STRATA_VECTOR_TRANSPOSED_KERNELS(Suffix)                                          \
  void L2Transposed##Suffix(const float* __restrict x, const float* __restrict ct, size_t d, \
                            size_t k, float* __restrict out) {                            \
    for (size_t c = 0; c < k; ++c) out[c] = 0;                                            \
    for (size_t t = 0; t < d; ++t) {                                                      \
      const float v = x[t];                                                               \
      const float* __restrict row = ct + t * k;                                           \
      for (size_t c = 0; c < k; ++c) {                                                    \
        float diff = v - row[c];                                                          \
        out[c] += diff * diff;                                                            \
      }                                                                                   \
    }                                                                                     \
  }                                                                                       \
  void IpTransposed##Suffix(const float* __restrict x, const float* __restrict ct, size_t d, \
                            size_t k, float* __restrict out) {                            \
    for (size_t c = 0; c < k; ++c) out[c] = 0;                                            \
    for (size_t t = 0; t < d; ++t) {                                                      \
      const float v = x[t];                                                               \
      const float* __restrict row = ct + t * k;                                           \
      for (size_t c = 0; c < k; ++c) out[c] += v * row[c];                                \
    }                                                                                     \
  }

// Always available.
const DistanceKernels& ScalarKernels();
// nullptr when the CPU lacks the instruction set (or the compiler could not build it).
const DistanceKernels* Avx2Kernels();
const DistanceKernels* Avx512Kernels();
// The table chosen for this CPU (best supported), fixed after first call.
const DistanceKernels& Kernels();

// Implemented in each ISA's translation unit; return the table unconditionally.
const DistanceKernels& Avx2KernelTable();
const DistanceKernels& Avx512KernelTable();

}  // namespace strata::vector::internal
