#include "cli/transfer_util.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/strings.h>
#include <strata/objstore/transfer_plan.h>

namespace strata::cli {

Result<Location> ParseLocation(std::string_view arg) {
  Location l;
  if (arg.size() >= 5 && IEquals(arg.substr(0, 5), "s3://")) {
    l.s3 = true;
    std::string_view rest = arg.substr(5);
    const size_t slash = rest.find('/');
    l.bucket = std::string(rest.substr(0, slash));
    if (slash != std::string_view::npos) l.key = std::string(rest.substr(slash + 1));
    if (l.bucket.empty()) {
      return Status::InvalidArgument("\"" + std::string(arg) + "\" names no bucket (expected s3://BUCKET[/KEY])");
    }
    if (objstore::HasWildcard(l.bucket)) {
      return Status::InvalidArgument("wildcards are not allowed in bucket names (\"" + std::string(arg) + "\")");
    }
    return l;
  }
  if (arg.find("://") != std::string_view::npos) {
    return Status::InvalidArgument("\"" + std::string(arg) +
                                   "\": only s3:// URLs and local paths are supported");
  }
  if (arg.empty()) return Status::InvalidArgument("empty path");
  l.key = std::string(arg);
  return l;
}

std::string HumanBytes(uint64_t n) {
  static const char* kUnits[] = {"Bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (n < 1024) return fmt::format("{} Bytes", n);
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

// ---------------------------------------------------------------------------
// Reporter

Reporter::Reporter(Options o, objstore::TransferManager* mgr)
    : o_(o), mgr_(mgr), start_(std::chrono::steady_clock::now()) {
  bar_ = o_.progress && !o_.quiet && !o_.json && mgr_ != nullptr && ::isatty(STDERR_FILENO);
  if (bar_) bar_thread_ = std::thread([this] { BarLoop(); });
}

Reporter::~Reporter() {
  {
    std::lock_guard l(mu_);
    stop_ = true;
  }
  bar_cv_.notify_all();
  if (bar_thread_.joinable()) bar_thread_.join();
}

void Reporter::ClearBarLocked() {
  if (bar_drawn_) {
    std::fputs("\r\033[K", stderr);
    bar_drawn_ = false;
  }
}

namespace {
std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  const uint64_t t = static_cast<uint64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}
}  // namespace

void Reporter::DrawBarLocked() {
  // Throughput over the last few seconds, so the ETA follows the current rate.
  static thread_local std::deque<std::pair<double, uint64_t>> samples;
  const objstore::TransferProgress p = mgr_->progress();
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  samples.emplace_back(now, p.bytes_done);
  while (samples.size() > 2 && now - samples.front().first > 5.0) samples.pop_front();
  double rate = 0;
  if (samples.size() >= 2 && samples.back().first > samples.front().first) {
    rate = static_cast<double>(samples.back().second - std::min(samples.back().second, samples.front().second)) /
           (samples.back().first - samples.front().first);
  }
  const uint64_t total = std::max(p.bytes_total, p.bytes_done);
  const double frac = total > 0 ? static_cast<double>(p.bytes_done) / static_cast<double>(total) : 0.0;
  constexpr int kWidth = 24;
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  const double eta = rate > 0 ? static_cast<double>(total - p.bytes_done) / rate : -1;
  std::string line = fmt::format("\r\033[K{:3.0f}% [{}] {} / {}  {}/s  ETA {}  {}/{} objects", frac * 100, bar,
                                 HumanBytes(p.bytes_done), HumanBytes(total), HumanBytes(static_cast<uint64_t>(rate)),
                                 FormatDuration(eta), p.objects_done, p.objects_total);
  if (p.objects_failed > 0) line += fmt::format(", {} failed", p.objects_failed);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  bar_drawn_ = true;
}

void Reporter::BarLoop() {
  std::unique_lock l(mu_);
  while (!stop_) {
    bar_cv_.wait_for(l, std::chrono::milliseconds(200));
    if (stop_) break;
    DrawBarLocked();
  }
  ClearBarLocked();
}

void Reporter::Object(std::string_view op, const std::string& src, const std::string& dst,
                      uint64_t size, const Status& st, double seconds) {
  if (st.ok()) {
    ok_.fetch_add(1);
    bytes_.fetch_add(size);
  } else {
    failed_.fetch_add(1);
  }
  std::lock_guard l(mu_);
  if (!st.ok()) {
    if (first_error_.ok()) first_error_ = st;
    error_kinds_ |= 1 << std::min(ExitCodeFor(st), 30);
  }
  if (o_.json) {
    nlohmann::json j{{"op", op}, {"source", src}, {"size", size}, {"ok", st.ok()},
                     {"seconds", std::round(seconds * 1000) / 1000}};
    if (!dst.empty()) j["dest"] = dst;
    if (!st.ok()) {
      j["error"] = st.ToString();
      j["exit_code"] = ExitCodeFor(st);
    }
    std::fputs((j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
    return;
  }
  ClearBarLocked();
  if (!st.ok()) {
    if (dst.empty() || st.message().find(src) != std::string::npos) {
      // The message names the object already (the engine adds it).
      if (st.message().find(src) != std::string::npos) {
        std::fputs(fmt::format("{} failed: {}\n", op, st.ToString()).c_str(), stderr);
      } else {
        std::fputs(fmt::format("{} failed: {}: {}\n", op, src, st.ToString()).c_str(), stderr);
      }
    } else {
      std::fputs(fmt::format("{} failed: {} to {}: {}\n", op, src, dst, st.ToString()).c_str(), stderr);
    }
  } else if (!o_.quiet) {
    if (dst.empty()) {
      std::fputs(fmt::format("{}: {}\n", op, src).c_str(), stdout);
    } else {
      std::fputs(fmt::format("{}: {} to {}\n", op, src, dst).c_str(), stdout);
    }
    if (bar_) std::fflush(stdout);
  }
}

void Reporter::Skip(std::string_view op, const std::string& src, const std::string& dst,
                    uint64_t size, std::string_view why) {
  skipped_.fetch_add(1);
  std::lock_guard l(mu_);
  if (o_.json) {
    nlohmann::json j{
        {"op", op}, {"source", src}, {"size", size}, {"skipped", true}, {"reason", why}};
    if (!dst.empty()) j["dest"] = dst;
    std::fputs((j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(),
               stdout);
    return;
  }
  if (o_.quiet) return;
  ClearBarLocked();
  std::fputs(fmt::format("skip: {} to {} ({})\n", src, dst, why).c_str(), stdout);
}

void Reporter::Note(std::string_view op, const std::string& src, const std::string& dst, uint64_t size) {
  std::lock_guard l(mu_);
  if (o_.json) {
    nlohmann::json j{{"op", op}, {"source", src}, {"size", size}, {"dryrun", true}};
    if (!dst.empty()) j["dest"] = dst;
    std::fputs((j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
    return;
  }
  if (o_.quiet) return;
  ClearBarLocked();
  if (dst.empty()) {
    std::fputs(fmt::format("(dryrun) {}: {}\n", op, src).c_str(), stdout);
  } else {
    std::fputs(fmt::format("(dryrun) {}: {} to {}\n", op, src, dst).c_str(), stdout);
  }
}

void Reporter::Error(const Status& st, std::string_view context) {
  failed_.fetch_add(1);
  std::lock_guard l(mu_);
  if (first_error_.ok()) first_error_ = st;
  error_kinds_ |= 1 << std::min(ExitCodeFor(st), 30);
  const std::string msg = context.empty() ? st.ToString() : std::string(context) + ": " + st.ToString();
  if (o_.json) {
    nlohmann::json j{{"error", msg}, {"exit_code", ExitCodeFor(st)}};
    std::fputs((j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
    return;
  }
  ClearBarLocked();
  std::fputs(fmt::format("error: {}\n", msg).c_str(), stderr);
}

int Reporter::Finish(std::string_view command) {
  {
    std::lock_guard l(mu_);
    stop_ = true;
  }
  bar_cv_.notify_all();
  if (bar_thread_.joinable()) bar_thread_.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const uint64_t ok = ok_.load(), failed = failed_.load(), skipped = skipped_.load(),
                 bytes = bytes_.load();
  int code = kExitOk;
  if (failed > 0) {
    // One kind of failure and nothing succeeded: say which; else "some failed".
    const bool one_kind = (error_kinds_ & (error_kinds_ - 1)) == 0;
    code = (ok == 0 && one_kind) ? ExitCodeFor(first_error_) : kExitSomeFailed;
  }
  if (o_.json) {
    nlohmann::json j{{"summary", true},
                     {"command", command},
                     {"ok", ok},
                     {"failed", failed},
                     {"skipped", skipped},
                     {"bytes", bytes},
                     {"seconds", std::round(secs * 1000) / 1000},
                     {"exit_code", code}};
    std::fputs((j.dump() + "\n").c_str(), stdout);
  } else if (bar_ && (ok + failed) > 0) {
    std::fputs(fmt::format("{}: {} object(s), {} in {:.1f}s ({}/s){}\n", command, ok, HumanBytes(bytes), secs,
                           HumanBytes(secs > 0 ? static_cast<uint64_t>(static_cast<double>(bytes) / secs) : 0),
                           failed > 0 ? fmt::format(", {} FAILED", failed) : "")
                   .c_str(),
               stderr);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  return code;
}

}  // namespace strata::cli
