// StrataServer: the process behind `strata server`. Opens the local engine in
// the data directory and hosts the frontends (S3 on 9000, admin on 9001 with
// /metrics and /health, the Qdrant-compatible vector API on 6333 over
// DATA/vector, the Milvus-compatible gRPC API on 19530 over the same
// collections, the Feast-compatible feature server on 6566 over a feature
// repository, by default DATA/features, created empty), each on its own HTTP
// server and switchable.
//
// Credentials: the root user comes from STRATA_ROOT_USER/STRATA_ROOT_PASSWORD,
// else from DATA/credentials (created at first start, mode 0600); further users
// and their policies live in DATA/users (s3::UserStore), managed while the
// server runs through the admin API (/admin/v1/users, `strata user ...`).
//
// Thread-safety: Start/Stop from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <strata/core/result.h>
#include <strata/objstore/local_engine.h>
#include <strata/s3/frontend.h>

namespace strata::server {

struct ServerOptions {
  std::string data_dir = "./strata-data";
  bool enable_s3 = true;
  std::string s3_address = "127.0.0.1:9000";
  bool enable_admin = true;
  std::string admin_address = "127.0.0.1:9001";
  bool enable_vector = true;
  std::string vector_address = "127.0.0.1:6333";
  std::string vector_api_key;      // non-empty: required in the `api-key` header
  // false: when vector_address cannot be bound (another server holds the
  // default port) the vector API is skipped with a warning, not fatal.
  bool vector_bind_required = false;
  // The Milvus-compatible gRPC API over the same collections (needs enable_vector).
  bool enable_milvus = true;
  std::string milvus_address = "127.0.0.1:19530";
  bool milvus_bind_required = false;  // as vector_bind_required, for milvus_address
  bool enable_features = true;
  std::string features_address = "127.0.0.1:6566";
  std::string features_repo;       // "" = DATA/features (created with a default feature_store.yaml)
  std::string features_api_key;    // non-empty: required as "Authorization: Bearer" or X-API-Key
  bool features_bind_required = false;  // as vector_bind_required, for features_address
  // Served-vector logging; < 0 keeps what the repository's feature_store.yaml says.
  double features_log_sample_rate = -1;
  std::string features_log_dir;  // "" = the repository's (default REPO/data/served_log)
  std::string region = "us-east-1";
  std::vector<std::string> domains = {"localhost"};
  std::string tls_cert_file;
  std::string tls_key_file;
  int threads = 0;                 // HTTP worker threads per frontend; 0 = auto
  int max_connections = 4096;      // per frontend; see http::ServerOptions
  int max_connections_per_ip = 1024;  // per frontend and remote address; 0 = no cap
  size_t max_header_bytes = 16 * 1024;
  int header_timeout_ms = 10'000;
  int idle_timeout_ms = 60'000;
  int io_timeout_ms = 30'000;
  bool sync = true;                // fsync data and WAL on every commit
  // S3 server-side encryption keys (s3/kms.h): the master key file ("" =
  // DATA/kms-master.key, created 0600 at first start) and the named SSE-KMS
  // keys (none: one key, "aws/s3"); the first is the default key id.
  std::string kms_key_file;
  std::vector<std::string> kms_keys;
  // The S3 lifecycle worker (s3/lifecycle.h): runs with the S3 API.
  bool enable_lifecycle = true;
  int64_t lifecycle_interval_ms = 60 * 60 * 1000;  // between the starts of two passes
  int lifecycle_page_keys = 1000;                  // keys read per listing page
  int64_t lifecycle_page_pause_ms = 10;            // pause after each page
  double lifecycle_max_actions_per_sec = 1000;     // expirations + aborts; 0 = unlimited
  // Test-only: the lifecycle worker's "now" is the Unix time in this file (s3::FileClock).
  std::string test_clock_file;
};

// The root credentials of a data directory.
struct Credentials {
  std::vector<s3::User> users;     // users[0] is root (the only entry)
  bool generated = false;          // root keys were created by this call
};
Result<Credentials> LoadOrCreateCredentials(const std::string& data_dir);

class StrataServer {
 public:
  explicit StrataServer(ServerOptions options);
  ~StrataServer();
  Status Start();
  void Stop();
  int s3_port() const;
  int admin_port() const;
  int vector_port() const;
  int features_port() const;
  int milvus_port() const;  // 0 when the Milvus API is not served
  const Credentials& credentials() const;
  // "http://127.0.0.1:9000"
  std::string s3_endpoint() const;
  std::string admin_endpoint() const;
  std::string vector_endpoint() const;
  std::string features_endpoint() const;
  std::string features_repo() const;  // the repository served (absolute)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "host:port" -> (host, port); host may be "[::1]".
Status ParseHostPort(const std::string& s, std::string& host, int& port);

}  // namespace strata::server
