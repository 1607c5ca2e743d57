// A small, fast HTTP/1.1 server shared by every Strata frontend.
//
// Design: N worker threads wait on one epoll set with EPOLLONESHOT; the thread
// that wakes for a connection parses and serves its request inline (no handoff
// on the fast path). Header bytes are read non-blockingly and kept per
// connection, so a connection waiting for (the rest of) a request head holds no
// thread. Bodies are read and responses written in blocking style (poll with
// io_timeout) from the handler, so handlers stream: a body is never buffered
// whole by the server. `Expect: 100-continue` is answered when the handler
// first reads the body, or not at all when it answers first. Responses can use
// sendfile. Optional TLS via OpenSSL.
//
// Connections cannot starve the server (see ServerOptions for the numbers):
// - header_timeout runs from accept until the first request head is complete
//   (a connection that sends nothing is closed then, as Go's ReadHeaderTimeout
//   and nginx's client_header_timeout do), and on a keep-alive connection from
//   the first byte of each later head; idle_timeout applies only between
//   requests, after a first one.
// - At max_connections (or max_connections_per_ip for one address) the oldest
//   connections that have not sent a byte of a request are closed to make room
//   (never-used ones first, then idle keep-alive ones; nginx reuses its
//   "reusable" connections the same way). When none is idle the server stops
//   accepting: new connections wait in the kernel's listen backlog instead of
//   being accepted and answered 503. Only an address over its own cap with
//   every connection busy gets a 503.
//
// Thread-safety: Start/Stop from one thread. Handlers run concurrently on
// worker threads; one request per connection at a time.
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

struct HeaderField {
  std::string_view name;
  std::string_view value;
};

class Connection;

// A parsed request. Views point into the connection's buffer and stay valid
// until the handler returns.
class Request {
 public:
  std::string_view method;
  std::string_view target;   // raw request target: "/bucket/key?x=y"
  std::string_view path;     // target before '?', still percent-encoded
  std::string_view query;    // after '?', raw ("" if none)
  int version_minor = 1;
  std::vector<HeaderField> headers;
  std::string remote_addr;
  bool tls = false;

  // First header with this name, case-insensitive.
  std::optional<std::string_view> Header(std::string_view name) const;

  // Content-Length if present; chunked bodies report nullopt.
  std::optional<uint64_t> content_length;
  bool chunked = false;
  bool expect_continue = false;

  // Reads the decoded body (Content-Length or chunked transfer encoding).
  // Returns 0 at end of body. Errors: kIOError (peer closed, timeout),
  // kInvalidArgument (bad chunk framing). Sends "100 Continue" first if asked.
  Result<size_t> ReadBody(char* buf, size_t n);
  // Reads the whole body up to max bytes (kResourceExhausted beyond).
  Result<std::string> ReadAllBody(size_t max);
  bool body_done() const;

  Connection* conn = nullptr;  // internal
};

class ResponseWriter {
 public:
  explicit ResponseWriter(Connection* conn) : conn_(conn) {}

  void SetStatus(int code) { status_ = code; }
  int status() const { return status_; }
  void AddHeader(std::string_view name, std::string_view value);
  // Whole body in memory; sets Content-Length.
  Status Send(std::string_view body);
  // Streamed body of a known length: headers go out now.
  Status BeginBody(uint64_t content_length);
  Status Write(const char* data, size_t n);
  Status SendFile(int fd, uint64_t offset, uint64_t n);
  // Sends a head held back by BeginBody (the server calls it after the handler).
  Status Flush();
  // True once the response has started (a held-back head counts).
  bool headers_sent() const { return headers_sent_; }
  // Closes the connection after this response (e.g. a body left unread).
  void CloseAfter() { close_after_ = true; }
  bool close_after() const { return close_after_; }
  uint64_t bytes_sent() const { return bytes_sent_; }
  // True when BeginBody promised more bytes than were written (framing lost).
  bool incomplete() const { return bytes_sent_ < promised_; }

 private:
  std::string BuildHead(uint64_t content_length, size_t reserve_body) const;
  Connection* conn_;
  int status_ = 200;
  std::string headers_;
  std::string pending_head_;  // BeginBody's head, sent with the first body bytes
  bool headers_sent_ = false;
  bool close_after_ = false;
  uint64_t bytes_sent_ = 0;
  uint64_t promised_ = 0;
};

using Handler = std::function<void(Request&, ResponseWriter&)>;
// Writes an error the HTTP layer detected itself (malformed request line or
// header: 400; oversized head: 431) in the frontend's format. The connection is
// closed afterwards. Unset: a plain-text body.
using ErrorHandler = std::function<void(int status, std::string_view message, ResponseWriter&)>;

struct ServerOptions {
  std::string name = "http";          // for logs and metrics
  std::string bind_address = "127.0.0.1";
  int port = 0;                       // 0 = pick a free port (see Server::port())
  int threads = 0;                    // 0 = max(8, 4 * cores): handlers may block on disk
  size_t max_header_bytes = 16 * 1024;  // request line + headers; beyond -> 431
  // Open connections. At the limit the oldest idle ones are closed; when none
  // is idle, accepting waits (the kernel's backlog holds new connections).
  // Each connection is a file descriptor: `strata server` raises ulimit -n.
  int max_connections = 4096;
  // Open connections from one remote address; 0 = no cap. At the cap that
  // address's oldest idle connection is closed; when all of them are busy the
  // new one gets 503 and is closed. Generous because one host (a proxy, a
  // NAT, a parallel client) legitimately holds many; it keeps one address's
  // idle or slow connections from taking every slot of max_connections.
  int max_connections_per_ip = 1024;
  // Time to send a complete request head: from accept for the first request
  // (so a connection that sends nothing is closed after it), from the first
  // byte of the head for later ones on a keep-alive connection. Includes the
  // TLS handshake. 10 s: long enough for any client, short enough that idle
  // sockets cannot pile up (Go's ReadHeaderTimeout is commonly 5-10 s, nginx's
  // client_header_timeout 60 s).
  int header_timeout_ms = 10'000;
  int idle_timeout_ms = 60'000;       // between requests on a keep-alive connection
  int io_timeout_ms = 30'000;         // each body read / response write
  // false: no listening socket; connections are handed in by Adopt (a
  // frontend that accepts on a port shared with another protocol).
  bool listen = true;
  std::string tls_cert_file;          // both set -> TLS
  std::string tls_key_file;
  ErrorHandler error_handler;
};

class Server {
 public:
  Server(ServerOptions options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  Status Start();
  // Serves a connection accepted elsewhere (the server takes the descriptor
  // and closes it when done, or at once on an error): bytes already peeked
  // and left in the socket are read as the start of its first request. The
  // same limits apply as to a connection accepted here. Call after Start.
  Status Adopt(int fd, const std::string& remote_addr);
  // Stops accepting, lets in-flight requests finish (up to grace_ms), closes the rest.
  void Stop(int grace_ms = 5000);
  int port() const;
  const ServerOptions& options() const;

  struct Stats {
    uint64_t connections_accepted = 0;
    uint64_t connections_rejected = 0;  // over max_connections_per_ip, all busy: 503
    uint64_t connections_evicted = 0;   // idle, closed to make room for a new one
    uint64_t requests = 0;
    uint64_t header_timeouts = 0;  // closed without a complete head in time
    uint64_t idle_timeouts = 0;    // keep-alive connections idle past idle_timeout
    uint64_t accept_pauses = 0;    // times accepting stopped (no slot, no descriptor)
    int open_connections = 0;
    bool accept_paused = false;  // not accepting right now
  };
  Stats GetStats() const;

 private:
  void StartWorkers();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "Not Found" for 404 etc.
std::string_view ReasonPhrase(int status);

// A protocol frontend is a class with `void Handle(Request&, ResponseWriter&)`
// and `void HandleTransportError(int, std::string_view, ResponseWriter&)` (the
// errors the HTTP layer finds itself, in the protocol's format). These bind
// one, which must outlive what they return, to a server or to ServeInMemory.
template <class Frontend>
Handler FrontendHandler(Frontend* f) {
  return [f](Request& req, ResponseWriter& w) { f->Handle(req, w); };
}
template <class Frontend>
ServerOptions WithFrontendErrors(ServerOptions options, Frontend* f) {
  options.error_handler = [f](int status, std::string_view message, ResponseWriter& w) {
    f->HandleTransportError(status, message, w);
  };
  return options;
}
template <class Frontend>
std::unique_ptr<Server> FrontendServer(ServerOptions options, Frontend* f) {
  return std::make_unique<Server>(WithFrontendErrors(std::move(options), f), FrontendHandler(f));
}

// An error of an HTTP protocol itself rather than of the domain under it (401
// at the door, 405 on a known path, 413, a body that is not JSON): a Status
// whose frontend answers with exactly this HTTP status and message. Its code
// follows the status (401 PermissionDenied, 413 ResourceExhausted, 5xx
// Internal, else InvalidArgument); the HTTP status is its detail().
Status ProtocolError(int http_status, std::string_view message);
// The HTTP status a ProtocolError carries; 0 for any other Status.
int ProtocolErrorStatus(const Status& st);

// A response as a client receives it (ServeInMemory).
struct RecordedResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // in the order sent
  std::string body;
  // First header with this name, case-insensitive.
  std::optional<std::string_view> Header(std::string_view name) const;
};

// Serves one request in memory: no socket, no thread. `raw_request` is the
// request as it would arrive on the wire (head, then a body framed by
// Content-Length or chunked encoding); it goes through the same parsing,
// framing and error replies as on a Server with these options. Each protocol
// frontend's unit tests drive its handler this way.
RecordedResponse ServeInMemory(const Handler& handler, std::string_view raw_request,
                               const ServerOptions& options = {});
// The wire form of a request: request line, the headers given (plus
// Content-Length when a body is given and no framing header is), CRLF, body.
std::string FormatRequest(std::string_view method, std::string_view target,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          std::string_view body = {});

}  // namespace strata::http
