// The console's shared state (sessions, metrics) and the helpers its API files
// use; see include/strata/console/console.h for what it promises.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <strata/console/console.h>

#include "console/metrics_history.h"

namespace strata::console {

struct Session {
  std::string access_key;
  std::string csrf;
  int64_t expires_ms = 0;
};

// A request rewritten for an in-process frontend: its own method, path,
// query and headers, the body still read from the browser's connection.
struct ForwardRequest {
  std::string method;
  std::string path;   // percent-encoded, as the frontend expects it
  std::string query;  // raw, without '?'
  std::vector<std::pair<std::string, std::string>> headers;
};

struct Console::Impl {
  ConsoleOptions opts;
  MetricsHistory history;
  std::mutex mu;
  std::map<std::string, Session> sessions;  // by session id; guarded by mu
  bool stopping = false;                    // guarded by mu
  std::condition_variable cv;
  std::thread sampler;

  explicit Impl(ConsoleOptions o);

  // The signed-in user of a request, or nullopt (and the 401 written).
  std::optional<std::pair<ConsoleUser, Session>> Authenticate(http::Request& req,
                                                              http::ResponseWriter& w);
  void Login(http::Request& req, http::ResponseWriter& w);
  void Logout(http::Request& req, http::ResponseWriter& w);
  void SessionInfo(const ConsoleUser& u, const Session& s, http::ResponseWriter& w);
  void Api(http::Request& req, http::ResponseWriter& w);

  // apis.cc
  void S3(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u, std::string_view rest);
  void Presign(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u);
  void Vector(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u,
              std::string_view rest);
  void Features(http::Request& req, http::ResponseWriter& w, std::string_view rest);

  // features_api.cc: reports over a view's offline source.
  void FeatureFreshness(http::Request& req, http::ResponseWriter& w);
  void FeatureSkew(http::Request& req, http::ResponseWriter& w);

  // datapath_api.cc
  void FsVolume(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u);
  void WarmJobs(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u);
  void LocalCheckpoints(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u);
  void VectorFilter(http::Request& req, http::ResponseWriter& w);
};

// {"error": code, "message": message} with this status.
void SendError(http::ResponseWriter& w, int status, std::string_view code,
               std::string_view message);
void SendJson(http::ResponseWriter& w, int status, const std::string& json);
// Runs `f` through `handler` as if it had arrived on `in`'s connection.
void Dispatch(const http::Request& in, ForwardRequest& f, const http::Handler& handler,
              http::ResponseWriter& w);

}  // namespace strata::console
