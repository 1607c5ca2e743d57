// MetricsHistory: the last hour of this server's own Prometheus series, for the
// console's charts. Each sample parses the exposition text once and keeps, per
// chart, one number (a sum over label sets) or one cumulative histogram; charts
// are derived when asked: counter rates between samples, the p99 of the
// observations made between two samples (as histogram_quantile over a rate),
// gauges as sampled, hit ratios. A ring of window/interval samples.
//
// Thread-safety: Add and ChartsJson may be called concurrently (one mutex).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace strata::console {

class MetricsHistory {
 public:
  explicit MetricsHistory(size_t capacity);

  void Add(int64_t now_ms, std::string_view prometheus_text);
  // {"charts":[{"id","title","unit","points":[[t_ms, value], ...]}, ...]}
  std::string ChartsJson() const;
  size_t size() const;

  // The q-quantile of the observations between two cumulative histograms
  // (le -> count, the same bounds, +Inf last); -1 when none were made.
  static double QuantileBetween(const std::map<double, double>& before,
                                const std::map<double, double>& after, double q);

 private:
  struct Sample {
    int64_t t_ms = 0;
    std::vector<double> values;                   // per chart source (sums)
    std::vector<std::map<double, double>> hists;  // per chart source (histograms)
  };
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<Sample> samples_;  // guarded by mu_, oldest first
};

}  // namespace strata::console
