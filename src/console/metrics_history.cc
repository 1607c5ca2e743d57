#include "console/metrics_history.h"

#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include <strata/core/strings.h>

namespace strata::console {
namespace {

enum class Kind { kRate, kGauge, kP99, kHitRatio };

// One chart: what it plots and the series it reads. `filter` keeps only the
// label sets that contain one of its fragments ("" keeps all).
struct Chart {
  const char* id;
  const char* title;
  const char* unit;
  Kind kind;
  const char* family;
  std::vector<const char*> filter;
  const char* family2 = nullptr;  // kHitRatio: misses
};

const std::vector<Chart>& Charts() {
  static const std::vector<Chart> charts = {
      {"s3_requests", "S3 requests", "req/s", Kind::kRate, "strata_s3_requests_total", {}},
      {"s3_errors",
       "S3 errors (4xx and 5xx)",
       "req/s",
       Kind::kRate,
       "strata_s3_requests_total",
       {"code=\"4", "code=\"5"}},
      {"s3_p99", "S3 p99 latency", "s", Kind::kP99, "strata_s3_request_duration_seconds", {}},
      {"s3_bytes_in", "S3 bytes in", "B/s", Kind::kRate, "strata_s3_received_bytes_total", {}},
      {"s3_bytes_out", "S3 bytes out", "B/s", Kind::kRate, "strata_s3_sent_bytes_total", {}},
      {"vector_requests",
       "Vector API requests",
       "req/s",
       Kind::kRate,
       "strata_vector_http_requests_total",
       {}},
      {"vector_search_p99",
       "Vector search p99",
       "s",
       Kind::kP99,
       "strata_vector_search_seconds",
       {}},
      {"vector_points", "Vector points", "points", Kind::kGauge, "strata_vector_points", {}},
      {"cache_hit_ratio",
       "Cache hit ratio",
       "ratio",
       Kind::kHitRatio,
       "strata_cache_hits_total",
       {},
       "strata_cache_misses_total"},
      {"cache_used", "Cache used", "B", Kind::kGauge, "strata_cache_used_bytes", {}},
  };
  return charts;
}

bool Keeps(const Chart& c, std::string_view labels) {
  if (c.filter.empty()) return true;
  for (const char* f : c.filter)
    if (labels.find(f) != std::string_view::npos) return true;
  return false;
}

// The le="..." of a bucket's labels; NaN when missing.
double LeOf(std::string_view labels) {
  size_t p = labels.find("le=\"");
  if (p == std::string_view::npos) return NAN;
  std::string v(labels.substr(p + 4, labels.find('"', p + 4) - p - 4));
  if (v == "+Inf") return INFINITY;
  return std::strtod(v.c_str(), nullptr);
}

}  // namespace

MetricsHistory::MetricsHistory(size_t capacity) : capacity_(capacity < 2 ? 2 : capacity) {}

void MetricsHistory::Add(int64_t now_ms, std::string_view text) {
  const auto& charts = Charts();
  Sample s;
  s.t_ms = now_ms;
  s.values.assign(charts.size() * 2, 0.0);
  s.hists.resize(charts.size());
  for (std::string_view line : Split(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    size_t name_end = line.find_first_of("{ ");
    if (name_end == std::string_view::npos) continue;
    std::string_view name = line.substr(0, name_end);
    std::string_view labels;
    size_t value_at = name_end;
    if (line[name_end] == '{') {
      size_t close = line.find('}', name_end);
      if (close == std::string_view::npos) continue;
      labels = line.substr(name_end + 1, close - name_end - 1);
      value_at = close + 1;
    }
    std::string value_text(Trim(line.substr(value_at)));
    value_text = value_text.substr(0, value_text.find(' '));  // a timestamp may follow
    double v = std::strtod(value_text.c_str(), nullptr);
    for (size_t i = 0; i < charts.size(); ++i) {
      const Chart& c = charts[i];
      if (!Keeps(c, labels)) continue;
      if (c.kind == Kind::kP99) {
        if (name.size() == std::string_view(c.family).size() + 7 && StartsWith(name, c.family) &&
            name.substr(name.size() - 7) == "_bucket") {
          double le = LeOf(labels);
          if (!std::isnan(le)) s.hists[i][le] += v;
        }
      } else if (name == c.family) {
        s.values[2 * i] += v;
      } else if (c.family2 != nullptr && name == c.family2) {
        s.values[2 * i + 1] += v;
      }
    }
  }
  std::lock_guard lock(mu_);
  samples_.push_back(std::move(s));
  while (samples_.size() > capacity_) samples_.pop_front();
}

size_t MetricsHistory::size() const {
  std::lock_guard lock(mu_);
  return samples_.size();
}

double MetricsHistory::QuantileBetween(const std::map<double, double>& before,
                                       const std::map<double, double>& after, double q) {
  if (after.empty()) return -1;
  auto delta = [&](double le, double cum) {
    auto it = before.find(le);
    return cum - (it == before.end() ? 0.0 : it->second);
  };
  double total = delta(after.rbegin()->first, after.rbegin()->second);
  if (total <= 0) return -1;
  double rank = q * total;
  double prev_le = 0, prev_cum = 0;
  for (const auto& [le, cum] : after) {
    double c = delta(le, cum);
    if (c >= rank) {
      if (std::isinf(le)) return prev_le;  // beyond the last bound: its lower edge
      if (c == prev_cum) return le;
      return prev_le + (le - prev_le) * (rank - prev_cum) / (c - prev_cum);
    }
    prev_le = le;
    prev_cum = c;
  }
  return prev_le;
}

std::string MetricsHistory::ChartsJson() const {
  const auto& charts = Charts();
  std::lock_guard lock(mu_);
  nlohmann::json out = nlohmann::json::object();
  out["samples"] = samples_.size();
  nlohmann::json arr = nlohmann::json::array();
  for (size_t i = 0; i < charts.size(); ++i) {
    const Chart& c = charts[i];
    nlohmann::json points = nlohmann::json::array();
    for (size_t k = 0; k < samples_.size(); ++k) {
      const Sample& b = samples_[k];
      if (c.kind == Kind::kGauge) {
        points.push_back({b.t_ms, b.values[2 * i]});
        continue;
      }
      if (k == 0) continue;
      const Sample& a = samples_[k - 1];
      double dt = static_cast<double>(b.t_ms - a.t_ms) / 1000.0;
      if (dt <= 0) continue;
      double d1 = b.values[2 * i] - a.values[2 * i];
      double d2 = b.values[2 * i + 1] - a.values[2 * i + 1];
      if (c.kind == Kind::kRate) {
        if (d1 >= 0) points.push_back({b.t_ms, d1 / dt});  // < 0: a counter reset
      } else if (c.kind == Kind::kHitRatio) {
        if (d1 >= 0 && d2 >= 0 && d1 + d2 > 0) points.push_back({b.t_ms, d1 / (d1 + d2)});
      } else {
        double p = QuantileBetween(a.hists[i], b.hists[i], 0.99);
        if (p >= 0) points.push_back({b.t_ms, p});
      }
    }
    arr.push_back(
        {{"id", c.id}, {"title", c.title}, {"unit", c.unit}, {"points", std::move(points)}});
  }
  out["charts"] = std::move(arr);
  return out.dump();
}

}  // namespace strata::console
