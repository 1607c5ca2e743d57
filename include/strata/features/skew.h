// Training-serving skew: the population stability index (PSI) per feature
// between a reference sample (a training set, an offline window) and a serving
// sample (logged or online values).
//
// Numeric features: 10 quantile bins from the reference (open at both ends;
// equal edges merged), categorical features (strings, booleans): one bin per
// category seen on either side; NULLs get a bin of their own when either side
// has any. Empty shares become 1e-4. PSI = sum (a - e) * ln(a / e) with e the
// reference share; below 0.1 is "stable", below 0.25 "moderate", else
// "significant". Pure functions, thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <strata/core/result.h>
#include <strata/features/table.h>

namespace strata::features {

struct PsiBin {
  std::string label;       // "(-inf, 0.25]", "paris", "NULL"
  double reference = 0;    // shares, after the epsilon
  double serving = 0;
};

struct PsiResult {
  std::string feature;
  std::string kind;        // "numeric" | "categorical"
  double psi = 0;
  std::string verdict;     // stable | moderate | significant
  int64_t reference_rows = 0, serving_rows = 0;
  std::vector<PsiBin> bins;
};

constexpr double kPsiEpsilon = 1e-4;
const char* PsiVerdict(double psi);

Result<PsiResult> ComputePsi(const std::string& name, const Column& reference, const Column& serving);
// Every named feature (empty: every column both tables share, except timestamps).
Result<std::vector<PsiResult>> ComputeSkew(const Table& reference, const Table& serving,
                                           const std::vector<std::string>& features = {});
// The same against a serving sample given as named columns (ReadServingSample's
// answer: a served-vector log or an online snapshot). Default features: every
// non-timestamp reference column the sample holds.
Result<std::vector<PsiResult>> ComputeSkew(const Table& reference,
                                           const std::vector<std::pair<std::string, Column>>& serving,
                                           const std::vector<std::string>& features = {});

}  // namespace strata::features
