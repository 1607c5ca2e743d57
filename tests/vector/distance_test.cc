// Every kernel of every instruction set this CPU runs, against a double
// precision reference, over dimensions that hit each tail path.
#include <strata/vector/distance.h>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "vector/simd/distance_kernels.h"

namespace strata::vector {
namespace {

using internal::DistanceKernels;

std::vector<const DistanceKernels*> AvailableKernels() {
  std::vector<const DistanceKernels*> v{&internal::ScalarKernels()};
  if (auto* k = internal::Avx2Kernels()) v.push_back(k);
  if (auto* k = internal::Avx512Kernels()) v.push_back(k);
  return v;
}

const size_t kDims[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65,
                        96, 100, 127, 128, 129, 255, 256, 300, 768, 784, 1000};

std::vector<float> RandomFloats(size_t n, uint32_t seed, float lo = -2, float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = uint8_t(rng());
  return v;
}

double RefL2(const float* a, const float* b, size_t d) {
  double s = 0;
  for (size_t i = 0; i < d; ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return s;
}
double RefIp(const float* a, const float* b, size_t d) {
  double s = 0;
  for (size_t i = 0; i < d; ++i) s += double(a[i]) * b[i];
  return s;
}

// Float sums reorder freely across kernels; allow a relative error scaled by
// the magnitude of the summed terms.
void ExpectClose(double want, float got, double scale, const std::string& what) {
  EXPECT_NEAR(want, got, 1e-5 * scale + 1e-6) << what;
}

TEST(DistanceTest, DispatchPicksASupportedLevel) {
  SimdLevel level = ActiveSimdLevel();
  if (level == SimdLevel::kAvx512) {
    EXPECT_NE(internal::Avx512Kernels(), nullptr);
  } else if (level == SimdLevel::kAvx2) {
    EXPECT_NE(internal::Avx2Kernels(), nullptr);
  }
  EXPECT_FALSE(SimdLevelName(level).empty());
  std::printf("active SIMD level: %s\n", std::string(SimdLevelName(level)).c_str());
}

TEST(DistanceTest, FloatKernelsMatchReference) {
  for (const DistanceKernels* K : AvailableKernels()) {
    for (size_t d : kDims) {
      auto a = RandomFloats(d, 1 + uint32_t(d));
      auto b = RandomFloats(d, 1000 + uint32_t(d));
      std::string what = std::string(SimdLevelName(K->level)) + " d=" + std::to_string(d);
      double l2 = RefL2(a.data(), b.data(), d);
      double ip = RefIp(a.data(), b.data(), d);
      ExpectClose(l2, K->l2(a.data(), b.data(), d), 16.0 * d, what + " l2");
      ExpectClose(ip, K->ip(a.data(), b.data(), d), 4.0 * d, what + " ip");
    }
  }
}

TEST(DistanceTest, BatchKernelsMatchSingle) {
  for (const DistanceKernels* K : AvailableKernels()) {
    for (size_t d : kDims) {
      for (size_t n : {1, 3, 4, 5, 9, 17}) {
        auto q = RandomFloats(d, 7 + uint32_t(d));
        auto rows = RandomFloats(n * d, 77 + uint32_t(d * n));
        std::vector<float> l2(n), ip(n);
        K->l2_batch(q.data(), rows.data(), n, d, l2.data());
        K->ip_batch(q.data(), rows.data(), n, d, ip.data());
        for (size_t i = 0; i < n; ++i) {
          std::string what = std::string(SimdLevelName(K->level)) + " d=" + std::to_string(d) +
                             " n=" + std::to_string(n) + " row=" + std::to_string(i);
          ExpectClose(RefL2(q.data(), rows.data() + i * d, d), l2[i], 16.0 * d, what);
          ExpectClose(RefIp(q.data(), rows.data() + i * d, d), ip[i], 4.0 * d, what);
        }
      }
    }
  }
}

TEST(DistanceTest, Uint8KernelsAreExact) {
  for (const DistanceKernels* K : AvailableKernels()) {
    for (size_t d : kDims) {
      auto a = RandomBytes(d, 3 + uint32_t(d));
      auto b = RandomBytes(d, 300 + uint32_t(d));
      // Extremes too: all 0 against all 255 maximises every term.
      std::vector<uint8_t> zeros(d, 0), full(d, 255);
      uint64_t l2 = 0, ip = 0;
      for (size_t i = 0; i < d; ++i) {
        int t = int(a[i]) - int(b[i]);
        l2 += uint64_t(t * t);
        ip += uint64_t(a[i]) * b[i];
      }
      std::string what = std::string(SimdLevelName(K->level)) + " d=" + std::to_string(d);
      EXPECT_EQ(l2, K->l2_u8(a.data(), b.data(), d)) << what;
      EXPECT_EQ(ip, K->ip_u8(a.data(), b.data(), d)) << what;
      EXPECT_EQ(uint64_t(d) * 255 * 255, K->l2_u8(zeros.data(), full.data(), d)) << what;
      EXPECT_EQ(uint64_t(d) * 255 * 255, K->ip_u8(full.data(), full.data(), d)) << what;
    }
  }
}

TEST(DistanceTest, FloatByUint8KernelsMatchReference) {
  for (const DistanceKernels* K : AvailableKernels()) {
    for (size_t d : kDims) {
      auto q = RandomFloats(d, 5 + uint32_t(d), 0, 255);
      auto c = RandomBytes(d, 500 + uint32_t(d));
      double l2 = 0, ip = 0;
      for (size_t i = 0; i < d; ++i) {
        l2 += (double(q[i]) - c[i]) * (double(q[i]) - c[i]);
        ip += double(q[i]) * c[i];
      }
      std::string what = std::string(SimdLevelName(K->level)) + " d=" + std::to_string(d);
      ExpectClose(l2, K->l2_f32_u8(q.data(), c.data(), d), 65025.0 * d, what);
      ExpectClose(ip, K->ip_f32_u8(q.data(), c.data(), d), 65025.0 * d, what);
    }
  }
}

TEST(DistanceTest, PqAdcMatchesReference) {
  for (const DistanceKernels* K : AvailableKernels()) {
    for (size_t m : {1, 4, 7, 8, 16, 17, 32, 64}) {
      auto table = RandomFloats(m * 256, 9 + uint32_t(m), 0, 10);
      const size_t n = 13;
      auto codes = RandomBytes(n * m, 90 + uint32_t(m));
      std::vector<float> out(n);
      K->pq_adc_batch(table.data(), codes.data(), n, m, out.data());
      for (size_t i = 0; i < n; ++i) {
        double want = 0;
        for (size_t j = 0; j < m; ++j) want += table[j * 256 + codes[i * m + j]];
        ExpectClose(want, out[i], 10.0 * m,
                    std::string(SimdLevelName(K->level)) + " m=" + std::to_string(m));
      }
    }
  }
}

TEST(DistanceTest, PublicWrappers) {
  const size_t d = 37;
  auto a = RandomFloats(d, 11);
  auto b = RandomFloats(d, 12);
  EXPECT_NEAR(RefL2(a.data(), b.data(), d), L2Sqr(a.data(), b.data(), d), 1e-3);
  EXPECT_NEAR(-RefIp(a.data(), b.data(), d), Distance(Metric::kInnerProduct, a.data(), b.data(), d),
              1e-3);
  std::vector<float> out(1);
  DistanceBatch(Metric::kCosine, a.data(), b.data(), 1, d, out.data());
  EXPECT_NEAR(-RefIp(a.data(), b.data(), d), out[0], 1e-3);

  std::vector<float> v = {3, 4};
  EXPECT_FLOAT_EQ(5.0f, NormalizeL2(v.data(), 2));
  EXPECT_FLOAT_EQ(0.6f, v[0]);
  EXPECT_FLOAT_EQ(0.8f, v[1]);
  std::vector<float> z = {0, 0};
  EXPECT_EQ(0.0f, NormalizeL2(z.data(), 2));
  EXPECT_EQ(0.0f, z[0]);

  EXPECT_FLOAT_EQ(3.0f, ScoreFromDistance(Metric::kL2, 9.0f));
  EXPECT_FLOAT_EQ(0.5f, ScoreFromDistance(Metric::kCosine, -0.5f));
  EXPECT_EQ("COSINE", MetricName(Metric::kCosine));
}

}  // namespace
}  // namespace strata::vector
