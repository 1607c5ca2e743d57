#include <strata/core/metrics.h>

#include <cmath>

#include <fmt/format.h>

namespace strata::metrics {

const std::array<double, Histogram::kBuckets>& Histogram::Bounds() {
  static const std::array<double, kBuckets> bounds = [] {
    std::array<double, kBuckets> b{};
    double v = 50e-6;
    for (int i = 0; i < kBuckets; ++i) {
      b[i] = v;
      v *= 2;
    }
    return b;
  }();
  return bounds;
}

void Histogram::Observe(double seconds) {
  const auto& b = Bounds();
  int i = 0;
  while (i < kBuckets && seconds > b[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(static_cast<uint64_t>(seconds * 1e6), std::memory_order_relaxed);
}

void Histogram::Read(std::array<uint64_t, kBuckets>& cumulative, uint64_t& count,
                     double& sum) const {
  uint64_t acc = 0;
  for (int i = 0; i < kBuckets; ++i) {
    acc += buckets_[i].load(std::memory_order_relaxed);
    cumulative[i] = acc;
  }
  count = acc + buckets_[kBuckets].load(std::memory_order_relaxed);
  sum = static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1e6;
}

struct Registry::Family {
  enum Kind { kCounter, kGauge, kHistogram, kCallback } kind;
  std::string help;
  std::map<std::string, std::unique_ptr<Counter>, std::less<>> counters;
  std::map<std::string, std::unique_ptr<Gauge>, std::less<>> gauges;
  std::map<std::string, std::unique_ptr<Histogram>, std::less<>> histograms;
  std::function<double()> callback;
};

Registry& Registry::Global() {
  static Registry* r = new Registry();
  return *r;
}

namespace {
template <class Map>
auto& GetOrCreate(Map& m, std::string_view labels) {
  auto it = m.find(labels);
  if (it == m.end()) {
    it = m.emplace(std::string(labels), std::make_unique<typename Map::mapped_type::element_type>())
             .first;
  }
  return *it->second;
}
}  // namespace

Counter& Registry::GetCounter(std::string_view name, std::string_view help,
                              std::string_view labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& f = families_[std::string(name)];
  if (!f) f = std::make_unique<Family>(Family{Family::kCounter, std::string(help), {}, {}, {}, {}});
  return GetOrCreate(f->counters, labels);
}

Gauge& Registry::GetGauge(std::string_view name, std::string_view help, std::string_view labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& f = families_[std::string(name)];
  if (!f) f = std::make_unique<Family>(Family{Family::kGauge, std::string(help), {}, {}, {}, {}});
  return GetOrCreate(f->gauges, labels);
}

Histogram& Registry::GetHistogram(std::string_view name, std::string_view help,
                                  std::string_view labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& f = families_[std::string(name)];
  if (!f)
    f = std::make_unique<Family>(Family{Family::kHistogram, std::string(help), {}, {}, {}, {}});
  return GetOrCreate(f->histograms, labels);
}

void Registry::AddCallbackGauge(std::string_view name, std::string_view help,
                                std::function<double()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& f = families_[std::string(name)];
  f = std::make_unique<Family>(Family{Family::kCallback, std::string(help), {}, {}, {}, std::move(fn)});
}

namespace {
std::string Braced(std::string_view labels) {
  return labels.empty() ? std::string() : fmt::format("{{{}}}", labels);
}
std::string WithLe(std::string_view labels, std::string_view le) {
  return labels.empty() ? fmt::format("{{le=\"{}\"}}", le) : fmt::format("{{{},le=\"{}\"}}", labels, le);
}
}  // namespace

std::string Registry::ExportPrometheus() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    const char* type = f->kind == Family::kCounter     ? "counter"
                       : f->kind == Family::kHistogram ? "histogram"
                                                       : "gauge";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, f->help, name, type);
    switch (f->kind) {
      case Family::kCounter:
        for (const auto& [l, c] : f->counters) out += fmt::format("{}{} {}\n", name, Braced(l), c->Value());
        break;
      case Family::kGauge:
        for (const auto& [l, g] : f->gauges) out += fmt::format("{}{} {}\n", name, Braced(l), g->Value());
        break;
      case Family::kCallback:
        out += fmt::format("{} {}\n", name, f->callback());
        break;
      case Family::kHistogram:
        for (const auto& [l, h] : f->histograms) {
          std::array<uint64_t, Histogram::kBuckets> cum{};
          uint64_t count = 0;
          double sum = 0;
          h->Read(cum, count, sum);
          const auto& bounds = Histogram::Bounds();
          for (int i = 0; i < Histogram::kBuckets; ++i)
            out += fmt::format("{}_bucket{} {}\n", name, WithLe(l, fmt::format("{:g}", bounds[i])), cum[i]);
          out += fmt::format("{}_bucket{} {}\n", name, WithLe(l, "+Inf"), count);
          out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", name, Braced(l), sum, name, Braced(l), count);
        }
        break;
    }
  }
  return out;
}

}  // namespace strata::metrics
