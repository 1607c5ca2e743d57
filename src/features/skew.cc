#include <strata/features/skew.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace strata::features {

namespace {

bool Numeric(TypeId t) {
  return t == TypeId::kInt32 || t == TypeId::kInt64 || t == TypeId::kFloat || t == TypeId::kDouble ||
         t == TypeId::kTimestamp || t == TypeId::kDate;
}

std::string Num(double v) { return fmt::format("{:.6g}", v); }

void Finish(PsiResult* r) {
  double total = 0;
  for (PsiBin& b : r->bins) {
    b.reference = std::max(b.reference, kPsiEpsilon);
    b.serving = std::max(b.serving, kPsiEpsilon);
    total += (b.serving - b.reference) * std::log(b.serving / b.reference);
  }
  r->psi = total;
  r->verdict = PsiVerdict(total);
}

}  // namespace

const char* PsiVerdict(double psi) {
  if (psi < 0.1) return "stable";
  if (psi < 0.25) return "moderate";
  return "significant";
}

Result<PsiResult> ComputePsi(const std::string& name, const Column& ref, const Column& srv) {
  PsiResult r;
  r.feature = name;
  r.reference_rows = static_cast<int64_t>(ref.size());
  r.serving_rows = static_cast<int64_t>(srv.size());
  if (ref.size() == 0 || srv.size() == 0) {
    return Status::InvalidArgument(fmt::format("feature \"{}\": the {} sample is empty", name,
                                               ref.size() == 0 ? "reference" : "serving"));
  }
  const size_t ref_nulls = ref.null_count(), srv_nulls = srv.null_count();
  const double rn = static_cast<double>(ref.size()), sn = static_cast<double>(srv.size());
  const bool numeric = Numeric(ref.type().id) && Numeric(srv.type().id);
  if (!numeric && (Numeric(ref.type().id) != Numeric(srv.type().id))) {
    return Status::InvalidArgument(fmt::format("feature \"{}\" is {} in the reference but {} when served", name,
                                               ref.type().ToString(), srv.type().ToString()));
  }
  if (numeric) {
    r.kind = "numeric";
    std::vector<double> rv;
    rv.reserve(ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      if (!ref.IsNull(i) && !std::isnan(ref.DoubleAt(i))) rv.push_back(ref.DoubleAt(i));
    }
    std::sort(rv.begin(), rv.end());
    std::vector<double> edges;  // upper bounds of bins 0..k-2; the last bin is open
    if (!rv.empty()) {
      for (int q = 1; q < 10; ++q) {
        const double e = rv[std::min(rv.size() - 1, static_cast<size_t>(q * rv.size() / 10))];
        if (edges.empty() || e > edges.back()) edges.push_back(e);
      }
    }
    std::vector<double> rc(edges.size() + 1, 0), sc(edges.size() + 1, 0);
    auto bin = [&](double v) { return static_cast<size_t>(std::lower_bound(edges.begin(), edges.end(), v) - edges.begin()); };
    for (double v : rv) rc[bin(v)] += 1;
    size_t srv_nan = 0;
    for (size_t i = 0; i < srv.size(); ++i) {
      if (srv.IsNull(i)) continue;
      const double v = srv.DoubleAt(i);
      if (std::isnan(v)) {
        ++srv_nan;
        continue;
      }
      sc[bin(v)] += 1;
    }
    for (size_t b = 0; b <= edges.size(); ++b) {
      const std::string lo = b == 0 ? "-inf" : Num(edges[b - 1]);
      const std::string hi = b == edges.size() ? "inf" : Num(edges[b]);
      r.bins.push_back({fmt::format("({}, {}]", lo, hi), rc[b] / rn, sc[b] / sn});
    }
    const double ref_missing = rn - static_cast<double>(rv.size());
    const double srv_missing = static_cast<double>(srv_nulls + srv_nan);
    if (ref_missing > 0 || srv_missing > 0) r.bins.push_back({"NULL/NaN", ref_missing / rn, srv_missing / sn});
  } else {
    r.kind = "categorical";
    std::map<std::string, std::pair<double, double>> cats;
    for (size_t i = 0; i < ref.size(); ++i) {
      if (!ref.IsNull(i)) cats[ref.FormatValue(i)].first += 1;
    }
    for (size_t i = 0; i < srv.size(); ++i) {
      if (!srv.IsNull(i)) cats[srv.FormatValue(i)].second += 1;
    }
    for (const auto& [label, c] : cats) r.bins.push_back({label, c.first / rn, c.second / sn});
    if (ref_nulls > 0 || srv_nulls > 0) {
      r.bins.push_back({"NULL", static_cast<double>(ref_nulls) / rn, static_cast<double>(srv_nulls) / sn});
    }
  }
  Finish(&r);
  return r;
}

Result<std::vector<PsiResult>> ComputeSkew(const Table& reference, const Table& serving,
                                           const std::vector<std::string>& features) {
  std::vector<std::string> names = features;
  if (names.empty()) {
    for (const Field& f : reference.schema()) {
      if (f.type.id != TypeId::kTimestamp && serving.FieldIndex(f.name) >= 0) names.push_back(f.name);
    }
    if (names.empty()) return Status::InvalidArgument("the reference and serving samples share no feature column");
  }
  std::vector<PsiResult> out;
  for (const std::string& n : names) {
    const int a = reference.FieldIndex(n), b = serving.FieldIndex(n);
    if (a < 0) return Status::NotFound(fmt::format("the reference sample has no column \"{}\"", n));
    if (b < 0) return Status::NotFound(fmt::format("the serving sample has no column \"{}\"", n));
    STRATA_ASSIGN_OR_RETURN(PsiResult r, ComputePsi(n, reference.column(a), serving.column(b)));
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<PsiResult>> ComputeSkew(const Table& reference,
                                           const std::vector<std::pair<std::string, Column>>& serving,
                                           const std::vector<std::string>& features) {
  auto find = [&](const std::string& n) -> const Column* {
    for (const auto& [name, col] : serving) {
      if (name == n) return &col;
    }
    return nullptr;
  };
  std::vector<std::string> names = features;
  if (names.empty()) {
    for (const Field& f : reference.schema()) {
      if (f.type.id != TypeId::kTimestamp && find(f.name)) names.push_back(f.name);
    }
    if (names.empty()) return Status::InvalidArgument("the reference and serving samples share no feature column");
  }
  std::vector<PsiResult> out;
  for (const std::string& n : names) {
    const int a = reference.FieldIndex(n);
    const Column* b = find(n);
    if (a < 0) return Status::NotFound(fmt::format("the reference sample has no column \"{}\"", n));
    if (!b) return Status::NotFound(fmt::format("the serving sample has no column \"{}\"", n));
    STRATA_ASSIGN_OR_RETURN(PsiResult r, ComputePsi(n, reference.column(a), *b));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace strata::features
