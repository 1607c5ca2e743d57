// Private to the CLI's transfer commands (transfer_cmds.cc, transfer_info_cmds.cc,
// transfer_session.cc): the options every command shares, the Session of one
// command (S3 client, stores per bucket, the transfer engine), error and usage
// replies, and the CLI11 callback wrapper.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include <strata/core/result.h>
#include <strata/core/status.h>
#include <strata/core/strings.h>
#include <strata/objstore/object_store.h>
#include <strata/objstore/rate_limit.h>
#include <strata/objstore/s3_client.h>
#include <strata/objstore/transfer.h>
#include <strata/objstore/transfer_plan.h>

namespace strata::cli::transfer {

using objstore::HasWildcard;
using objstore::IsLocalDir;
using objstore::LiteralPrefix;
using objstore::LocalFile;
using objstore::ObjectInfo;
using objstore::ObjectStore;
using objstore::PathFilter;
using objstore::S3Client;
using objstore::S3Url;
using objstore::TransferJob;
using objstore::TransferManager;
using objstore::TransferOptions;
using objstore::WildcardMatch;
using Clock = std::chrono::steady_clock;

inline double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// ---------------------------------------------------------------------------
// Options shared by every transfer command.

struct Common {
  std::string endpoint_url;
  std::string source_endpoint_url;  // cp/mv: the service of s3:// sources ("" = endpoint_url)
  std::string profile;
  std::string region;
  std::string ca_bundle;
  bool no_verify_ssl = false;
  std::vector<std::string> s3_options;  // KEY=VALUE, passed to the S3 client URL
  int concurrency = 16;
  std::string part_size = "8MiB";
  std::string multipart_threshold = "16MiB";
  bool fsync = false;
  bool json = false;
  bool quiet = false;
  bool no_progress = false;
  bool dryrun = false;
  std::vector<std::string> exclude;
  std::vector<std::string> include;
  std::vector<std::string> exclude_from, include_from;  // files of patterns (rclone)
  std::string max_age, min_age;                         // rclone durations or dates
  std::string sse_c_key;  // SSE-C: base64 of 32 bytes, or 32 raw bytes
  std::string bwlimit;    // rclone rate: 10M, 512K ("" = none)
};

// --max-age / --min-age (rclone): which modification times pass.
struct AgeFilter {
  std::optional<int64_t> min_mtime_ns;  // --max-age: younger than (mtime >= this)
  std::optional<int64_t> max_mtime_ns;  // --min-age: older than (mtime <= this)
  bool any() const { return min_mtime_ns || max_mtime_ns; }
  bool Included(int64_t mtime_ns) const {
    return (!min_mtime_ns || mtime_ns >= *min_mtime_ns) &&
           (!max_mtime_ns || mtime_ns <= *max_mtime_ns);
  }
};
// rclone's syntax: a duration (ms, s, m, h, d, w, M, y suffixes, combinable:
// 1h30m; a bare number is seconds) before now, or an absolute time
// (2006-01-02, 2006-01-02 15:04:05, RFC 3339; UTC unless it says otherwise).
Result<int64_t> ParseAgeCutoff(std::string_view text, int64_t now_ns);
Result<AgeFilter> BuildAgeFilter(const Common& c);
// The SSE-C key of --sse-c-key as 32 raw bytes.
Result<std::string> DecodeSseCustomerKey(const std::string& text);

void AddConnectionOptions(CLI::App* sub, Common& c);
void AddTransferOptions(CLI::App* sub, Common& c);
void AddOutputOptions(CLI::App* sub, Common& c);
void AddFilterOptions(CLI::App* sub, Common& c);
// --max-age / --min-age (cp, mv, sync).
void AddAgeOptions(CLI::App* sub, Common& c);
// --bwlimit (cp, mv, sync).
void AddBandwidthOption(CLI::App* sub, Common& c);
// rclone's --bwlimit: RATE (both directions together) or UP:DOWN, each a
// number with an optional B, K, M, G, T suffix (binary units; a bare number is
// KiB/s, as in rclone), or "off"/0 for no limit. Bytes per second, 0 = none.
struct BandwidthLimit {
  uint64_t up = 0, down = 0;
  bool shared = false;  // one RATE for both directions together
};
Result<BandwidthLimit> ParseBandwidthLimit(std::string_view text);
// --sse-c-key (commands that read or write object data).
void AddSseCustomerOption(CLI::App* sub, Common& c);
// awscli applies --exclude/--include in command-line order; the patterns of
// --exclude-from/--include-from files (one a line, # comments, blank lines
// skipped) are rules at the place of their flag.
Result<PathFilter> BuildFilters(const Common& c, const CLI::App* sub);

// Ctrl-C removes the active manager's temporary download files before exiting
// (resumable partial files of large downloads stay for the next run).
void SetActiveManager(TransferManager* m);
void InstallInterruptHandler();

// ---------------------------------------------------------------------------
// The session of one command: the S3 client, stores per bucket, the engine.

class Session {
 public:
  explicit Session(const Common& c) : c_(c) {}
  ~Session() {
    if (mgr_) SetActiveManager(nullptr);
  }

  Status Init(bool need_manager, const objstore::WriteOptions* write = nullptr) {
    auto ps = ParseByteSize(c_.part_size);
    auto mt = ParseByteSize(c_.multipart_threshold);
    if (!ps)
      return Status::InvalidArgument("--part-size \"" + c_.part_size +
                                     "\" is not a size (e.g. 8MiB)");
    if (!mt) {
      return Status::InvalidArgument("--multipart-threshold \"" + c_.multipart_threshold +
                                     "\" is not a size (e.g. 16MiB)");
    }
    if (*ps < (5ull << 20))
      return Status::InvalidArgument("--part-size must be at least 5MiB (S3's minimum)");
    if (*ps > (5ull << 30))
      return Status::InvalidArgument("--part-size must be at most 5GiB (S3's maximum)");
    if (*mt > (5ull << 30)) {
      return Status::InvalidArgument(
          "--multipart-threshold must be at most 5GiB (S3's largest single PUT)");
    }
    topts_.concurrency = c_.concurrency;
    topts_.part_size = *ps;
    topts_.multipart_threshold = *mt;
    topts_.fsync = c_.fsync;
    if (!c_.bwlimit.empty()) {
      auto bw = ParseBandwidthLimit(c_.bwlimit);
      if (!bw.ok()) return bw.error();
      if (bw->up != 0) topts_.upload_limit = std::make_shared<objstore::RateLimiter>(bw->up);
      if (bw->shared) {
        topts_.download_limit = topts_.upload_limit;
      } else if (bw->down != 0) {
        topts_.download_limit = std::make_shared<objstore::RateLimiter>(bw->down);
      }
    }
    if (!c_.sse_c_key.empty()) {
      auto key = DecodeSseCustomerKey(c_.sse_c_key);
      if (!key.ok()) return key.error();
      sse_c_key_ = std::move(*key);
    }
    if (write != nullptr) topts_.write = *write;
    if (need_manager) {
      mgr_ = std::make_unique<TransferManager>(topts_);
      SetActiveManager(mgr_.get());
    }
    return Status::Ok();
  }

  // Options Init does not set (metadata directive, ...): change them before Init.
  TransferOptions& options_before_init() { return topts_; }
  TransferManager& mgr() { return *mgr_; }
  TransferManager* mgr_ptr() { return mgr_.get(); }
  const TransferOptions& topts() const { return topts_; }
  bool anonymous() const { return anonymous_; }  // after Client(): no credentials found

  Result<S3Client*> Client() {
    std::lock_guard l(mu_);
    if (client_) return client_.get();
    auto c = MakeClient(c_.endpoint_url, true);
    if (!c.ok()) return c.error();
    client_ = std::move(*c);
    return client_.get();
  }

  Result<ObjectStore*> Bucket(const std::string& bucket) {
    STRATA_ASSIGN_OR_RETURN(S3Client * c, Client());
    std::lock_guard l(mu_);
    auto& s = stores_[bucket];
    if (!s) s = c->OpenBucket(bucket);
    return s.get();
  }

  // --source-endpoint-url: the client and stores of s3:// sources (the
  // destination's when not given).
  bool has_source_endpoint() const { return !c_.source_endpoint_url.empty(); }
  Result<S3Client*> SourceClient() {
    if (!has_source_endpoint()) return Client();
    std::lock_guard l(mu_);
    if (source_client_) return source_client_.get();
    auto c = MakeClient(c_.source_endpoint_url, false);
    if (!c.ok()) return c.error();
    source_client_ = std::move(*c);
    return source_client_.get();
  }
  Result<ObjectStore*> SourceBucket(const std::string& bucket) {
    if (!has_source_endpoint()) return Bucket(bucket);
    STRATA_ASSIGN_OR_RETURN(S3Client * c, SourceClient());
    std::lock_guard l(mu_);
    auto& s = source_stores_[bucket];
    if (!s) s = c->OpenBucket(bucket);
    return s.get();
  }

 private:
  Result<std::shared_ptr<S3Client>> MakeClient(const std::string& endpoint, bool main) {
    std::vector<std::pair<std::string, std::string>> params;
    if (!endpoint.empty()) params.emplace_back("endpoint", endpoint);
    if (!c_.region.empty()) params.emplace_back("region", c_.region);
    if (!c_.profile.empty()) params.emplace_back("profile", c_.profile);
    if (!c_.ca_bundle.empty()) params.emplace_back("ca_file", c_.ca_bundle);
    if (c_.no_verify_ssl) params.emplace_back("tls_verify", "false");
    // Keep a pooled connection for every request in flight.
    params.emplace_back("max_idle_connections", std::to_string(c_.concurrency + 8));
    params.emplace_back("part_size", std::to_string(topts_.part_size));
    params.emplace_back("multipart_threshold",
                        std::to_string(std::max<uint64_t>(topts_.multipart_threshold, 5ull << 20)));
    for (const std::string& kv : c_.s3_options) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        return Status::InvalidArgument("--s3-option \"" + kv + "\" is not KEY=VALUE");
      }
      params.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    std::string url = "s3://strata-cli";
    char sep = '?';
    for (const auto& [k, v] : params) {
      url += sep + UriEncode(k, false) + "=" + UriEncode(v, false);
      sep = '&';
    }
    auto resolved = objstore::ResolveS3Url(url);
    if (!resolved.ok()) return resolved.error();
    if (main) {
      anonymous_ = resolved->first.credentials.access_key.empty();
      aws_endpoint_ = resolved->first.endpoint.empty();
    }
    resolved->first.sse_customer_key = sse_c_key_;
    resolved->first.sse_copy_source_customer_key = sse_c_key_;
    return S3Client::Create(resolved->first);
  }

 public:
  // Adds what to do about it to errors whose cause is plain.
  Status Explain(Status s) const {
    if (s.code() == StatusCode::kPermissionDenied && anonymous_) {
      return s.WithContext(
          "no credentials were found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or use "
          "--profile)");
    }
    if (s.code() == StatusCode::kUnavailable && aws_endpoint_) {
      return s.WithContext(
          "cannot reach AWS S3 (for another service, set --endpoint-url or AWS_ENDPOINT_URL)");
    }
    return s;
  }

 private:
  const Common& c_;
  TransferOptions topts_;
  std::unique_ptr<TransferManager> mgr_;
  std::mutex mu_;
  std::shared_ptr<S3Client> client_;                                      // guarded by mu_
  std::unordered_map<std::string, std::unique_ptr<ObjectStore>> stores_;  // guarded by mu_
  std::shared_ptr<S3Client> source_client_;                               // guarded by mu_
  std::unordered_map<std::string, std::unique_ptr<ObjectStore>> source_stores_;  // guarded by mu_
  bool anonymous_ = false;
  bool aws_endpoint_ = false;  // no endpoint configured: AWS itself
  std::string sse_c_key_;      // raw 32 bytes ("" = none)
};

// The error of a command on stderr (or as JSON), and its exit code.
int Fail(const Status& s, std::string_view cmd, bool json = false);
// A usage error: the message and a pointer to --help; kExitUsage.
int Usage(std::string_view cmd, const std::string& msg);
std::string FormatLocalTime(int64_t ns);

// A command's CLI11 callback: runs fn and stores its exit code (keep holds the
// parsed arguments alive).
std::function<void()> Wrap(std::shared_ptr<void> keep, int* exit_code, std::function<int()> fn);
// A --help footer: the examples, then the exit codes.
std::string Footer(std::string examples);

// transfer_cmds.cc: ls, cp, mv, sync, rm, cat, mb, rb, du.
void RegisterCopyCommands(CLI::App& app, int* exit_code);
// transfer_info_cmds.cc: head, presign.
void RegisterInfoCommands(CLI::App& app, int* exit_code);
// transfer_bucket_cmds.cc: ls, mb, rb, du.
void RegisterBucketCommands(CLI::App& app, int* exit_code);
// transfer_run_cmd.cc: run.
void RegisterRunCommand(CLI::App& app, int* exit_code);

}  // namespace strata::cli::transfer
