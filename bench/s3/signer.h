// Builds HTTP/1.1 request heads for the benchmark, signed with AWS SigV4
// header auth (Authorization, x-amz-date, x-amz-content-sha256) when a
// credential is set, plain otherwise (the nginx side).
//
// Signing runs per request, as a real client does: one SHA-256 of the
// canonical request and one HMAC; the signing key is derived once per day and
// cached per thread by s3::DeriveSigningKey.
//
// Thread-safety: a RequestBuilder is per thread (it reuses its buffers).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::bench {

struct SigningConfig {
  std::string access_key;   // empty: do not sign
  std::string secret_key;
  std::string region = "us-east-1";
};

class RequestBuilder {
 public:
  RequestBuilder(std::string host_header, SigningConfig cfg)
      : host_(std::move(host_header)), cfg_(std::move(cfg)) {}
  bool signing() const { return !cfg_.access_key.empty(); }

  // path: already URI-encoded ("/bucket/key"); query: raw, already encoded
  // ("list-type=2&max-keys=1000"), "" if none. body_len is sent as
  // Content-Length for PUT (UNSIGNED-PAYLOAD); GETs sign the empty hash.
  // Returns a view into an internal buffer, valid until the next call.
  std::string_view Build(std::string_view method, std::string_view path, std::string_view query,
                         uint64_t body_len);

 private:
  std::string host_;
  SigningConfig cfg_;
  std::string head_, canonical_, sts_;
  std::string date_cache_;      // amz date of the last call ("20240102T030405Z")
  int64_t date_cache_sec_ = -1;
};

}  // namespace strata::bench
