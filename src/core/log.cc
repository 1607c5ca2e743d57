#include <strata/core/log.h>

#include <atomic>
#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace strata::log {
namespace {

std::atomic<Level> g_level{Level::kInfo};
std::mutex g_sink_mu;
std::function<void(Level, std::string_view, std::string_view)> g_sink;  // guarded by g_sink_mu

spdlog::logger& Default() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("strata");
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ %v");
    l->set_level(spdlog::level::trace);  // filtering is ours
    return l;
  }();
  return *logger;
}

spdlog::level::level_enum ToSpd(Level l) {
  switch (l) {
    case Level::kTrace: return spdlog::level::trace;
    case Level::kDebug: return spdlog::level::debug;
    case Level::kInfo: return spdlog::level::info;
    case Level::kWarn: return spdlog::level::warn;
    case Level::kError: return spdlog::level::err;
    case Level::kOff: return spdlog::level::off;
  }
  return spdlog::level::info;
}

}  // namespace

Level ParseLevel(std::string_view s) {
  if (s == "trace") return Level::kTrace;
  if (s == "debug") return Level::kDebug;
  if (s == "warn" || s == "warning") return Level::kWarn;
  if (s == "error") return Level::kError;
  if (s == "off") return Level::kOff;
  return Level::kInfo;
}

void SetLevel(Level level) { g_level.store(level, std::memory_order_relaxed); }
Level GetLevel() { return g_level.load(std::memory_order_relaxed); }

void SetLogSink(std::function<void(Level, std::string_view, std::string_view)> sink) {
  std::lock_guard<std::mutex> lock(g_sink_mu);
  g_sink = std::move(sink);
}

void Write(Level level, std::string_view component, std::string_view msg) {
  {
    std::lock_guard<std::mutex> lock(g_sink_mu);
    if (g_sink) {
      g_sink(level, component, msg);
      return;
    }
  }
  Default().log(ToSpd(level), "[{}] {}", component, msg);
}

}  // namespace strata::log
