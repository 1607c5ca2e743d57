// The S3 API over a LocalEngine: request routing, SigV4 authentication,
// S3 XML and errors. An adapter at the edge: it owns no storage and knows the
// HTTP layer only through strata::http::Request/ResponseWriter.
//
// Thread-safety: Handle() is called concurrently from the server's workers;
// users come from a UserStore that may change while requests run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <strata/core/http_server.h>
#include <strata/objstore/local_engine.h>
#include <strata/s3/kms.h>
#include <strata/s3/user_store.h>

namespace strata::s3 {

struct FrontendOptions {
  std::string region = "us-east-1";
  // The users and their policies, consulted per request; not owned, must
  // outlive the Frontend. nullptr: a store of `users` in memory, fixed.
  UserStore* user_store = nullptr;
  std::vector<User> users;
  // Virtual-host-style addressing: "bucket.<domain>" in the Host header.
  std::vector<std::string> domains = {"localhost"};
  int64_t max_clock_skew_ns = 15ll * 60 * 1'000'000'000;
  uint64_t max_object_size = 5ull << 40;       // 5 TiB, as S3
  uint64_t max_put_size = 5ull << 30;          // single PUT / part: 5 GiB, as S3
  size_t max_xml_body = 2 << 20;               // CompleteMultipartUpload, DeleteObjects, ...
  // Keys for SSE-S3 and SSE-KMS; without it those answer NotImplemented (SSE-C works).
  std::shared_ptr<const KeyManager> kms;
  // The clock Object Lock retention is judged by (Unix nanoseconds); empty:
  // the system clock. Test-only override (`strata server --test-clock-file`).
  std::function<int64_t()> clock;
};

class Frontend {
 public:
  Frontend(objstore::LocalEngine* engine, FrontendOptions options);
  ~Frontend();
  void Handle(http::Request& req, http::ResponseWriter& w);
  // For http::ServerOptions::error_handler: errors found by the HTTP layer
  // (malformed request, oversized head) as S3 XML with a request id.
  void HandleTransportError(int status, std::string_view message, http::ResponseWriter& w);

  // Defined in src/s3/frontend_internal.h; named here so the routing table
  // (src/s3/router.h) can point at its handlers.
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// S3 bucket naming rules (3-63 chars, lower-case letters, digits, '.', '-', ...).
bool IsValidBucketName(std::string_view name);

}  // namespace strata::s3
