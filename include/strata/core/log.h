// Named loggers, one per component ("s3", "objstore", ...), backed by spdlog.
//
// Messages are fmt-style. The sink is process-wide and replaceable so tests can
// capture output (SetLogSink). Thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace strata::log {

enum class Level { kTrace, kDebug, kInfo, kWarn, kError, kOff };

// Parses "trace|debug|info|warn|error|off"; returns kInfo for anything else.
Level ParseLevel(std::string_view s);
void SetLevel(Level level);
Level GetLevel();
// Replaces the default stderr sink; pass nullptr to restore it.
void SetLogSink(std::function<void(Level, std::string_view component, std::string_view msg)> sink);

void Write(Level level, std::string_view component, std::string_view msg);

class Logger {
 public:
  explicit constexpr Logger(std::string_view component) : component_(component) {}
  template <class... Args>
  void Debug(fmt::format_string<Args...> f, Args&&... a) const {
    if (GetLevel() <= Level::kDebug) Write(Level::kDebug, component_, fmt::format(f, std::forward<Args>(a)...));
  }
  template <class... Args>
  void Info(fmt::format_string<Args...> f, Args&&... a) const {
    if (GetLevel() <= Level::kInfo) Write(Level::kInfo, component_, fmt::format(f, std::forward<Args>(a)...));
  }
  template <class... Args>
  void Warn(fmt::format_string<Args...> f, Args&&... a) const {
    if (GetLevel() <= Level::kWarn) Write(Level::kWarn, component_, fmt::format(f, std::forward<Args>(a)...));
  }
  template <class... Args>
  void Error(fmt::format_string<Args...> f, Args&&... a) const {
    if (GetLevel() <= Level::kError) Write(Level::kError, component_, fmt::format(f, std::forward<Args>(a)...));
  }

 private:
  std::string_view component_;
};

}  // namespace strata::log
