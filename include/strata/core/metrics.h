// Process-wide metrics registry: counters, gauges and latency histograms,
// exported as Prometheus text (exposition format 0.0.4).
//
// Metric objects are created once (Registry::Counter etc. return a stable
// reference) and updated lock-free on hot paths. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace strata::metrics {

class Counter {
 public:
  void Inc(uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { v_.store(v, std::memory_order_relaxed); }
  void Add(int64_t d) { v_.fetch_add(d, std::memory_order_relaxed); }
  int64_t Value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

// Fixed exponential buckets in seconds, from 50 us to ~100 s.
class Histogram {
 public:
  static constexpr int kBuckets = 22;
  static const std::array<double, kBuckets>& Bounds();
  void Observe(double seconds);
  // Snapshot for export.
  void Read(std::array<uint64_t, kBuckets>& cumulative, uint64_t& count, double& sum) const;

 private:
  std::array<std::atomic<uint64_t>, kBuckets + 1> buckets_{};
  std::atomic<uint64_t> sum_us_{0};
};

class Registry {
 public:
  static Registry& Global();

  // name: "strata_s3_requests_total"; labels: `op="GetObject",code="200"` (already formatted).
  Counter& GetCounter(std::string_view name, std::string_view help, std::string_view labels = "");
  Gauge& GetGauge(std::string_view name, std::string_view help, std::string_view labels = "");
  Histogram& GetHistogram(std::string_view name, std::string_view help,
                          std::string_view labels = "");
  // A gauge computed at export time.
  void AddCallbackGauge(std::string_view name, std::string_view help, std::function<double()> fn);

  std::string ExportPrometheus() const;

 private:
  struct Family;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Family>, std::less<>> families_;  // guarded by mu_
};

}  // namespace strata::metrics
