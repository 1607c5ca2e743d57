// OnlineService: what a feature server serves, without HTTP or sockets. It
// holds an applied repository (the registry plus the repo's config) and its
// online store, and answers Feast's online operations: get_online_features
// (feature references or a feature service, per-value statuses and TTL),
// push / write_to_online_store, materialize and materialize-incremental.
//
// The registry file is re-read when it changes (checked at most every
// registry_refresh_ms), so `strata features apply` reaches a running server; a
// registry that cannot be read keeps the previous one serving. With
// logging.sample_rate > 0 a sample of the served vectors is written to Parquet
// in the background (serving_log.h). Errors are Status: kInvalidArgument for a
// bad request, kNotFound for an unknown view, feature or service.
//
// Ownership: the service owns the registry, the store and the logger.
// Thread-safety: GetOnlineFeatures, WriteToOnlineStore and Materialize run
// concurrently (readers share the registry; a materialization works on a copy
// and swaps it in; materializations are serialized). Open and Close from one
// thread, before and after the requests.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include <strata/core/result.h>
#include <strata/features/online.h>
#include <strata/features/repo.h>
#include <strata/features/serving_log.h>
#include <strata/features/table.h>

namespace strata::features {

struct OnlineServiceOptions {
  int registry_refresh_ms = 1000;  // 0: never re-read the registry
  ServingLogOptions logging;       // sample_rate 0: no logging
};

// The logging options feature_store.yaml asks for (feature_server.logging).
ServingLogOptions LoggingOptionsFromConfig(const RepoConfig& config);

// What a long-running server serves from repository `dir`: its config and, once
// `apply` has written it, its registry (before that: no definitions; the
// server picks the registry up when it appears).
Result<FeatureRepo> LoadServingRepo(const std::string& dir);

// get_online_features: the features to read and the entity rows.
struct OnlineRequest {
  std::optional<std::string> feature_service;  // set: that service's features
  std::vector<std::string> features;           // otherwise: "view:feature" references
  // One column per join key, all of the same length.
  std::vector<std::pair<std::string, std::vector<OnlineValue>>> entities;
  bool full_feature_names = false;  // name features view__feature
};

// The answer, and what the served-vector log needs of it when the request was
// sampled (LogServed takes it after the caller has encoded the response).
struct OnlineAnswer {
  OnlineResponse response;
  bool sampled = false;
  std::vector<DataType> feature_types;  // sampled: one per feature column
  size_t key_columns = 0;               // the response's leading join-key columns
  int64_t now_us = 0;                   // the time the values were judged at
};

// push / write_to_online_store: rows for one view. `rows` builds them from the
// view's definition (the caller types its columns by the view's schema); it
// runs while the registry is held for reading.
struct WriteRequest {
  std::string view;
  // push: `view` names a push source; the rows go to every view it feeds (a
  // name no view's source declares is taken as a view's name, as before push
  // sources were recorded).
  bool push_source = false;
  std::function<Result<Table>(const FeatureViewDef& view)> rows;
};

struct MaterializeRequest {
  bool incremental = false;        // from each view's last materialized end to end_us
  std::vector<std::string> views;  // empty: every online view
  int64_t start_us = 0;            // not incremental: feature rows with start <= ts <= end
  int64_t end_us = 0;
};

class OnlineService {
 public:
  // `registry` is the applied repository (LoadRegistry + the repo's config).
  OnlineService(FeatureRepo registry, std::unique_ptr<OnlineStore> store,
                OnlineServiceOptions options);
  ~OnlineService();  // Close()
  OnlineService(const OnlineService&) = delete;
  OnlineService& operator=(const OnlineService&) = delete;

  // Starts the served-vector logger (when sampling) and the registry watch.
  Status Open();
  // Publishes the open log files and stops the logger.
  Status Close();

  Result<OnlineAnswer> GetOnlineFeatures(const OnlineRequest& request);
  // Hands a sampled answer to the served-vector log (a no-op otherwise); it
  // moves the response, so encode it first.
  void LogServed(OnlineAnswer&& answer);
  Status WriteToOnlineStore(const WriteRequest& request);
  Result<MaterializeStats> Materialize(const MaterializeRequest& request);

  // The served-vector logger, or nullptr when logging is off.
  ServingLogger* logger();
  const OnlineServiceOptions& options() const { return options_; }

 private:
  void StampRegistry();
  void MaybeRefresh(bool force);

  std::unique_ptr<OnlineStore> store_;
  OnlineServiceOptions options_;
  std::unique_ptr<ServingLogger> logger_;
  // Registry refresh: the file's stamp when last read; next_refresh_us_ gates
  // the stat to once per interval across all request threads.
  std::string registry_path_;
  RepoConfig config_;
  std::atomic<int64_t> next_refresh_us_{0};
  std::mutex refresh_mu_;  // guards reg_mtime_, reg_size_
  std::filesystem::file_time_type reg_mtime_{};
  uintmax_t reg_size_ = 0;
  // Readers share the registry; a materialization works on a copy (so reads go
  // on meanwhile) and swaps it in. materialize_mu_ serializes materializations.
  std::shared_mutex registry_mu_;  // guards registry_
  FeatureRepo registry_;
  std::mutex materialize_mu_;
};

}  // namespace strata::features
