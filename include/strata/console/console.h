// The web console on the admin port: a single-page app (assets compiled into
// the binary) and its JSON API under /console/api/.
//
// Sign-in takes an S3 access key and secret, checked against the server's
// users through `find_user`; the session lives in this process (an HttpOnly,
// SameSite=Strict cookie names it) and the secret never goes back to the
// browser. Every write (any method but GET/HEAD) must carry the session's CSRF
// token in X-CSRF-Token. The console acts with the signed-in user's own
// rights: object requests are re-signed with the user's keys (SigV4) and
// handed to the S3 frontend in-process, so the S3 policy and ACL checks decide
// exactly as they would for awscli; vector writes need an admin user (the
// vector API has one server-wide key, no per-user rights).
//
// Ownership: the handlers and callbacks in ConsoleOptions are not owned and
// must outlive the Console. Thread-safety: Handle() runs concurrently;
// sessions are guarded by a mutex, metrics history by its own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/http_server.h>
#include <strata/core/result.h>

namespace strata::console {

struct ConsoleUser {
  std::string name;
  std::string access_key;
  std::string secret_key;
  bool admin = false;
};

struct ConsoleOptions {
  // The server's users by access key; nullopt for an unknown key.
  std::function<std::optional<ConsoleUser>(std::string_view access_key)> find_user;
  http::Handler s3;         // the S3 frontend; empty: object APIs answer 501
  std::string s3_endpoint;  // "http://127.0.0.1:9000": host of signed and presigned requests
  std::string region = "us-east-1";
  http::Handler vector;  // the Qdrant-compatible handler; empty: 501
  std::string vector_api_key;
  http::Handler features;  // the Feast-compatible handler; empty: 501
  std::string features_api_key;
  std::string features_repo;  // the feature repository served ("" none)
  // The feature server's served-vector log directory ("" none), and a call
  // that publishes what it has queued (so a skew report sees recent requests).
  std::string serving_log_dir;
  std::function<Status()> flush_serving_log;
  // Directories on this host (admin only: they expose paths): `strata warm`
  // cache directories whose warm.progress.json is shown, and local checkpoint
  // directories (CheckpointManager's local_dir), each or one level below.
  std::vector<std::string> warm_dirs;
  std::vector<std::string> checkpoint_dirs;
  // Prometheus text of this process (metrics::Registry::Global()).
  std::function<std::string()> metrics_text;
  int metrics_interval_ms = 5000;  // one sample every ...
  int metrics_window_s = 3600;     // kept this long
  int64_t session_ttl_s = 12 * 3600;
};

class Console {
 public:
  explicit Console(ConsoleOptions options);
  ~Console();  // Stop()
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // Starts the metrics sampler (one background thread).
  Status Start();
  void Stop();

  // True for the paths the console serves: "/", "/console", "/console/...".
  static bool Serves(std::string_view path);
  void Handle(http::Request& req, http::ResponseWriter& w);
  void HandleTransportError(int status, std::string_view message, http::ResponseWriter& w);

  // Takes one metrics sample now (tests; the sampler calls it on its own).
  void SampleMetrics(int64_t now_ms);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::console
