// PSI: hand-computed values, stable and shifted samples, NULL bins, errors.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include <strata/features/skew.h>

#include "testutil/testutil.h"

namespace strata::features {
namespace {

Column Strings(const std::vector<std::pair<const char*, int>>& counts) {
  Column c(DataType::String());
  for (const auto& [s, n] : counts) {
    for (int i = 0; i < n; ++i) s ? c.AppendString(s) : c.AppendNull();
  }
  return c;
}

TEST(SkewTest, CategoricalByHand) {
  ASSERT_OK_AND_ASSIGN(PsiResult r, ComputePsi("city", Strings({{"a", 50}, {"b", 50}}), Strings({{"a", 90}, {"b", 10}})));
  const double want = 0.4 * std::log(0.9 / 0.5) + (-0.4) * std::log(0.1 / 0.5);
  EXPECT_NEAR(r.psi, want, 1e-12);
  EXPECT_EQ(r.kind, "categorical");
  EXPECT_EQ(r.verdict, "significant");
  // A category never seen in the reference counts with epsilon 1e-4.
  ASSERT_OK_AND_ASSIGN(PsiResult n, ComputePsi("city", Strings({{"a", 100}}), Strings({{"a", 99}, {"z", 1}})));
  const double want2 = (0.99 - 1.0) * std::log(0.99 / 1.0) + (0.01 - 1e-4) * std::log(0.01 / 1e-4);
  EXPECT_NEAR(n.psi, want2, 1e-12);
  ASSERT_OK_AND_ASSIGN(PsiResult nul, ComputePsi("city", Strings({{"a", 80}, {nullptr, 20}}), Strings({{"a", 80}, {nullptr, 20}})));
  EXPECT_NEAR(nul.psi, 0, 1e-12);
  EXPECT_EQ(nul.bins.back().label, "NULL");
}

TEST(SkewTest, NumericQuantileBins) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n01(0, 1), shifted(1, 1);
  Column ref(DataType::Double()), same(DataType::Double()), moved(DataType::Double()), small(DataType::Double());
  for (int i = 0; i < 20000; ++i) {
    ref.Append<double>(n01(rng));
    same.Append<double>(n01(rng));
    moved.Append<double>(shifted(rng));
    small.Append<double>(n01(rng) + 0.2);
  }
  ASSERT_OK_AND_ASSIGN(PsiResult s, ComputePsi("x", ref, same));
  EXPECT_EQ(s.bins.size(), 10u);
  for (const PsiBin& b : s.bins) EXPECT_NEAR(b.reference, 0.1, 0.001);
  EXPECT_LT(s.psi, 0.01);
  EXPECT_EQ(s.verdict, "stable");
  ASSERT_OK_AND_ASSIGN(PsiResult m, ComputePsi("x", ref, moved));
  EXPECT_GT(m.psi, 0.25);
  EXPECT_EQ(m.verdict, "significant");
  ASSERT_OK_AND_ASSIGN(PsiResult mid, ComputePsi("x", ref, small));
  EXPECT_GT(mid.psi, 0.02);
  EXPECT_LT(mid.psi, 0.25);
  // Integers with few distinct values: equal edges merge.
  Column a(DataType::Int64()), b(DataType::Int64());
  for (int i = 0; i < 1000; ++i) {
    a.Append<int64_t>(i % 3);
    b.Append<int64_t>(i % 3);
  }
  ASSERT_OK_AND_ASSIGN(PsiResult few, ComputePsi("k", a, b));
  EXPECT_EQ(few.bins.size(), 4u);  // (-inf,0] (0,1] (1,2] and the open (2,inf)
  EXPECT_NEAR(few.psi, 0, 1e-12);
}

TEST(SkewTest, TablesAndErrors) {
  Table ref(Schema{{"x", DataType::Double()}, {"c", DataType::String()}, {"ts", DataType::Timestamp()}});
  Table srv(Schema{{"x", DataType::Double()}, {"c", DataType::String()}});
  for (int i = 0; i < 100; ++i) {
    ref.column(0).Append<double>(i);
    ref.column(1).AppendString(i % 2 ? "a" : "b");
    ref.column(2).Append<int64_t>(i);
    srv.column(0).Append<double>(i);
    srv.column(1).AppendString("a");
  }
  ASSERT_OK_AND_ASSIGN(auto all, ComputeSkew(ref, srv));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].verdict, "stable");
  EXPECT_EQ(all[1].verdict, "significant");
  EXPECT_STATUS_CODE(ComputeSkew(ref, srv, {"nope"}), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(ComputePsi("x", ref.column(0), srv.column(1)), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(ComputePsi("x", Column(DataType::Double()), srv.column(0)), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::features
