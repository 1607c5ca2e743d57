// HttpClient: a blocking HTTP/1.1 client with a keep-alive connection pool.
//
// One HttpClient keeps idle connections per scheme://host:port (at most
// ClientOptions::max_idle_per_host each); a request takes one (or dials a new
// one), and the connection goes back to the pool when its response body has
// been read to the end and neither side asked to close. Every connect, read and
// write is bounded by a timeout (poll), so a dead peer never hangs a caller.
//
// Bodies stream both ways: a request body is pulled from a BodySource (sent
// with Content-Length when its size is known, chunked otherwise); a response
// body is read incrementally from the ClientResponse (Read/ReadTo), so neither
// side is ever buffered whole. `Expect: 100-continue` is supported.
//
// A pooled connection the server closed while it sat idle is detected before
// use (poll) and discarded; if the server closes it while the request is being
// sent, before any byte of the response arrived, an idempotent request is sent
// once more on a fresh connection, provided its body can be replayed (in-memory,
// not yet read, or BodySource::Rewind()). Anything else fails with a Status the
// caller classifies: kUnavailable (connect refused, timeouts) and kIOError
// (resets, truncation) are transport errors; retry policy (backoff, which
// HTTP statuses to repeat) belongs to the caller (e.g. the S3 client).
//
// ClientOptions::faults injects failures at this level for tests: synthetic
// 503 SlowDown responses and connections dropped in the middle of a request or
// response body, deterministic for a seed.
//
// Plain TCP and, for https://, TLS through OpenSSL (peer verification on by
// default).
//
// Thread-safety: HttpClient is thread-safe (the pool is guarded by a mutex);
// one ClientResponse is used by one thread at a time and may outlive the client.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <strata/core/result.h>

namespace strata::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// Failures injected by the client itself (tests, benchmarks). Each request
// rolls once: with error_rate it gets a synthetic "503 SlowDown" without
// reaching the server; with drop_rate its connection is cut (kIOError) at a
// random point of the request body, or of the response body, or before the
// request is written when neither has a body.
struct ClientFaults {
  double error_rate = 0;
  double drop_rate = 0;
  uint64_t seed = 1;
};

struct ClientOptions {
  int connect_timeout_ms = 10'000;
  int io_timeout_ms = 60'000;        // each blocking read or write, not the whole request
  int continue_timeout_ms = 1'000;   // wait for "100 Continue" before sending the body anyway
  size_t max_idle_per_host = 32;     // idle pooled connections per scheme://host:port
  int max_idle_ms = 20'000;          // older idle connections are closed, not reused
  size_t max_response_head = 64 * 1024;
  bool tls_verify = true;            // verify the server certificate and host name
  std::string tls_ca_file;           // PEM bundle; "" = the system default paths
  ClientFaults faults;
};

// A pull-style request body. Read returns 0 at the end.
class BodySource {
 public:
  virtual ~BodySource() = default;
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
  // Back to the first byte, so the request can be sent again; false if it
  // cannot (then a request whose body was partly read is never repeated).
  virtual bool Rewind() { return false; }
};

struct ClientRequest {
  std::string method = "GET";
  std::string scheme = "http";     // "http" or "https"
  std::string host;                // DNS name or address (IPv6 without brackets)
  uint16_t port = 0;               // 0: 80 or 443 by scheme
  std::string target = "/";        // path and query, already percent-encoded
  // Sent as given. The client adds Host (unless present), Content-Length or
  // Transfer-Encoding, and Expect when expect_continue.
  HeaderList headers;
  // The body: body_source when set, else the bytes in `body` (may be empty).
  std::string_view body;
  BodySource* body_source = nullptr;
  std::optional<uint64_t> content_length;  // body_source's size; nullopt = chunked
  bool expect_continue = false;
  // Safe to send twice (all of S3 but POST-to-create): allows the one silent
  // retry on a connection that turned out to be stale.
  bool idempotent = true;

  // The value of the Host header (host, plus :port when not the default).
  std::string HostHeader() const;
};

class ClientResponse {
 public:
  ~ClientResponse();
  ClientResponse(const ClientResponse&) = delete;
  ClientResponse& operator=(const ClientResponse&) = delete;

  int status() const;
  const std::string& reason() const;
  const HeaderList& headers() const;
  // First header with this name, case-insensitive.
  std::optional<std::string_view> Header(std::string_view name) const;
  // From Content-Length; nullopt for chunked or read-until-close bodies.
  std::optional<uint64_t> content_length() const;

  // Reads decoded body bytes (chunked framing removed); 0 at the end.
  // Errors: kIOError (reset, truncated body), kUnavailable (timeout).
  Result<size_t> Read(char* buf, size_t n);
  // Hands the rest of the body to sink in pieces; a sink error is returned as is.
  Status ReadTo(const std::function<Status(const char* data, size_t n)>& sink);
  // The rest of the body in memory; kResourceExhausted beyond max bytes.
  Result<std::string> ReadAll(size_t max = 16 << 20);
  // True once the body has been read to its end.
  bool body_done() const;
  // Bytes of the body read so far.
  uint64_t body_bytes_read() const;

  struct Impl;
  explicit ClientResponse(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

class HttpClient {
 public:
  explicit HttpClient(ClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends the request and reads the response head; the body is read from the
  // returned response. `req` is not modified, but its body_source is read
  // (and may be rewound).
  Result<std::unique_ptr<ClientResponse>> Send(const ClientRequest& req);

  // Closes every idle pooled connection.
  void CloseIdle();

  struct Stats {
    uint64_t requests = 0;
    uint64_t connections_opened = 0;
    uint64_t connections_reused = 0;
    uint64_t stale_discarded = 0;  // idle connections found closed before use
    uint64_t stale_retries = 0;    // requests re-sent after a stale connection failed them
    uint64_t injected_errors = 0;
    uint64_t injected_drops = 0;
  };
  Stats stats() const;
  const ClientOptions& options() const;

  struct Pool;

 private:
  ClientOptions options_;
  std::shared_ptr<Pool> pool_;  // shared with responses that outlive the client
};

// Splits "http://host:port/path?q" into its parts (no user-info, no fragment).
struct ParsedUrl {
  std::string scheme;   // lower-case
  std::string host;     // without brackets
  uint16_t port = 0;    // explicit or the scheme's default
  std::string target;   // "/path?q" ("/" when empty)
};
Result<ParsedUrl> ParseHttpUrl(std::string_view url);

}  // namespace strata::http
