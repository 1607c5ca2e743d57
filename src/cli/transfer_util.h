// Helpers of the transfer subcommands (ls, cp, sync, rm, cat, mb, rb, du):
// locations, sizes, exit codes, and the reporter (per-object lines, --json,
// the progress bar). Paths, wildcards, filters and local walks are planning,
// in objstore/transfer_plan.h. Private to the CLI.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <strata/core/result.h>
#include <strata/objstore/transfer.h>

#include "cli/exit_codes.h"

namespace strata::cli {

// "s3://bucket/key" or a local path ("-" = stdin/stdout).
struct Location {
  bool s3 = false;
  std::string bucket;  // s3 only
  std::string key;     // s3: the key or prefix ("" for the bucket); local: the path
  std::string str() const { return s3 ? "s3://" + bucket + (key.empty() ? "" : "/" + key) : key; }
};
Result<Location> ParseLocation(std::string_view arg);

// 1536 -> "1.5 KiB"
std::string HumanBytes(uint64_t n);

// Per-object lines, JSON lines, the progress bar and the summary.
//   text (default): "upload: SRC to DST" per object on stdout, errors on stderr;
//   --quiet: errors only; --json: one JSON object per line on stdout, then a
//   summary object; the progress bar (stderr) only when stderr is a TTY and
//   neither --quiet, --json nor --no-progress was given.
class Reporter {
 public:
  struct Options {
    bool json = false;
    bool quiet = false;
    bool progress = true;
  };
  Reporter(Options o, objstore::TransferManager* mgr);
  ~Reporter();

  // One object done (ok or not).
  void Object(std::string_view op, const std::string& src, const std::string& dst, uint64_t size,
              const Status& st, double seconds);
  // One object left alone on purpose (--no-clobber, --if-size-differ,
  // --if-source-newer): "skip: SRC to DST (why)"; neither ok nor failed.
  void Skip(std::string_view op, const std::string& src, const std::string& dst, uint64_t size,
            std::string_view why);
  // A line of its own (e.g. "(dryrun) upload: ..."); JSON mode wraps it.
  void Note(std::string_view op, const std::string& src, const std::string& dst, uint64_t size);
  // An error not tied to one object (listing failed, ...).
  void Error(const Status& st, std::string_view context = "");
  // Stops the bar, prints the summary; returns the exit code.
  int Finish(std::string_view command);

  uint64_t failures() const { return failed_.load(); }
  bool json() const { return o_.json; }

 private:
  void BarLoop();
  void ClearBarLocked();
  void DrawBarLocked();

  Options o_;
  objstore::TransferManager* mgr_;
  bool bar_ = false;
  std::mutex mu_;                 // guards the terminal and what follows
  bool bar_drawn_ = false;
  Status first_error_;
  int error_kinds_ = 0;           // distinct exit codes seen (bits)
  std::atomic<uint64_t> ok_{0}, failed_{0}, skipped_{0}, bytes_{0};
  std::chrono::steady_clock::time_point start_;
  std::thread bar_thread_;
  std::condition_variable bar_cv_;
  bool stop_ = false;             // guarded by mu_
};

}  // namespace strata::cli
