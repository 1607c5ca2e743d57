#include <strata/core/http_client.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>

#include <strata/core/strings.h>

#include "no_sigpipe.h"

namespace strata::http {
namespace {

constexpr size_t kIoChunk = 256 * 1024;

int64_t MonoMs() { return MonotonicNanos() / 1'000'000; }

std::string ErrnoText(int err) {
  char buf[128];
  return std::string(strerror_r(err, buf, sizeof(buf)));
}

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

using core_internal::WithoutSigpipe;

// One TCP (or TLS) connection with a read buffer.
class Conn {
 public:
  Conn(int fd, std::string key, int io_timeout_ms)
      : fd_(fd), key_(std::move(key)), io_timeout_ms_(io_timeout_ms) {}
  ~Conn() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  const std::string& key() const { return key_; }
  int fd() const { return fd_; }
  void set_ssl(SSL* ssl) { ssl_ = ssl; }
  SSL* ssl() const { return ssl_; }
  int64_t idle_since_ms = 0;
  uint64_t requests = 0;

  size_t buffered() const { return buf_.size() - pos_; }

  // Waits until the socket is ready for `events`.
  Status WaitFor(short events, int timeout_ms, std::string_view what) {
    const int64_t deadline = MonoMs() + timeout_ms;
    for (;;) {
      pollfd p{fd_, events, 0};
      const int64_t left = deadline - MonoMs();
      if (left <= 0) break;
      int r = ::poll(&p, 1, static_cast<int>(left));
      if (r > 0) return Status::Ok();
      if (r == 0) break;
      if (errno != EINTR) return Status::IOError("poll failed: " + ErrnoText(errno));
    }
    return Status::Unavailable("timed out after " + std::to_string(timeout_ms) + " ms " +
                               std::string(what) + " (" + key_ + ")");
  }

  Status WriteAll(const char* p, size_t n) {
    while (n > 0) {
      ssize_t w;
      int err = 0;
      if (ssl_ != nullptr) {
        int r = WithoutSigpipe([&] {
          return SSL_write(ssl_, p, static_cast<int>(std::min<size_t>(n, 1 << 20)));
        });
        if (r > 0) {
          w = r;
        } else {
          int e = SSL_get_error(ssl_, r);
          if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
            STRATA_RETURN_IF_ERROR(WaitFor(e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN,
                                           io_timeout_ms_, "sending the request"));
            continue;
          }
          return Status::IOError("TLS write to " + key_ + " failed: " +
                                 (e == SSL_ERROR_SYSCALL ? ErrnoText(errno) : OpenSslError()));
        }
      } else {
        w = ::send(fd_, p, n, MSG_NOSIGNAL);
        if (w < 0) err = errno;
      }
      if (w < 0) {
        if (err == EINTR) continue;
        if (err == EAGAIN || err == EWOULDBLOCK) {
          STRATA_RETURN_IF_ERROR(WaitFor(POLLOUT, io_timeout_ms_, "sending the request"));
          continue;
        }
        return Status::IOError("sending to " + key_ + " failed: " + ErrnoText(err));
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return Status::Ok();
  }

  // Reads up to n bytes from the socket (not the buffer); 0 at EOF.
  Result<size_t> RawRead(char* dst, size_t n) {
    for (;;) {
      if (ssl_ != nullptr) {
        // SSL_read may write too (key updates, alerts): a peer gone must not raise SIGPIPE.
        int r = WithoutSigpipe(
            [&] { return SSL_read(ssl_, dst, static_cast<int>(std::min<size_t>(n, INT32_MAX))); });
        if (r > 0) return static_cast<size_t>(r);
        int e = SSL_get_error(ssl_, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
          STRATA_RETURN_IF_ERROR(WaitFor(e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN,
                                         io_timeout_ms_, "waiting for the response"));
          continue;
        }
        if (e == SSL_ERROR_ZERO_RETURN) return size_t{0};
        if (e == SSL_ERROR_SYSCALL && (errno == 0 || ERR_peek_error() == 0)) {
          ERR_clear_error();
          if (errno == 0) return size_t{0};  // EOF without close_notify
          return Status::IOError("reading from " + key_ + " failed: " + ErrnoText(errno));
        }
        return Status::IOError("TLS read from " + key_ + " failed: " + OpenSslError());
      }
      ssize_t r = ::recv(fd_, dst, n, 0);
      if (r >= 0) return static_cast<size_t>(r);
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        STRATA_RETURN_IF_ERROR(WaitFor(POLLIN, io_timeout_ms_, "waiting for the response"));
        continue;
      }
      return Status::IOError("reading from " + key_ + " failed: " + ErrnoText(errno));
    }
  }

  // Buffered bytes first, then the socket; 0 at EOF.
  Result<size_t> Read(char* dst, size_t n) {
    if (buffered() > 0) {
      size_t k = std::min(n, buffered());
      std::memcpy(dst, buf_.data() + pos_, k);
      pos_ += k;
      if (pos_ == buf_.size()) {
        buf_.clear();
        pos_ = 0;
      }
      return k;
    }
    return RawRead(dst, n);
  }

  // Appends more socket bytes to the buffer; 0 at EOF.
  Result<size_t> Fill() {
    if (pos_ > 0 && pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    }
    const size_t old = buf_.size();
    buf_.resize(old + 16384);
    auto r = RawRead(buf_.data() + old, 16384);
    buf_.resize(old + (r.ok() ? *r : 0));
    return r;
  }

  // A CRLF-terminated line (without the CRLF). kIOError at EOF.
  Result<std::string> ReadLine(size_t max) {
    for (;;) {
      std::string_view avail(buf_.data() + pos_, buffered());
      size_t nl = avail.find('\n');
      if (nl != std::string_view::npos) {
        std::string line(avail.substr(0, nl));
        if (!line.empty() && line.back() == '\r') line.pop_back();
        pos_ += nl + 1;
        return line;
      }
      if (avail.size() > max) return Status::IOError("line too long in the response from " + key_);
      STRATA_ASSIGN_OR_RETURN(size_t got, Fill());
      if (got == 0) return Status::IOError("connection to " + key_ + " closed mid-response");
    }
  }

  // The response head up to and including the blank line; "" when the peer
  // closed before sending a byte. *any is set once a byte arrived.
  Result<std::string> ReadHead(size_t max, bool* any) {
    for (;;) {
      std::string_view avail(buf_.data() + pos_, buffered());
      if (!avail.empty()) *any = true;
      size_t end = avail.find("\r\n\r\n");
      size_t skip = 4;
      if (end == std::string_view::npos) {
        end = avail.find("\n\n");
        skip = 2;
      }
      if (end != std::string_view::npos) {
        std::string head(avail.substr(0, end + skip));
        pos_ += end + skip;
        return head;
      }
      if (avail.size() > max) {
        return Status::IOError("response head from " + key_ + " exceeds " + std::to_string(max) +
                               " bytes");
      }
      STRATA_ASSIGN_OR_RETURN(size_t got, Fill());
      if (got == 0) {
        if (buffered() == 0 && !*any) return std::string();
        return Status::IOError("connection to " + key_ + " closed in the middle of a response head");
      }
    }
  }

  // An idle connection is usable when nothing is readable: readable means the
  // peer closed it (EOF) or sent something unsolicited. TLS may carry
  // post-handshake messages (session tickets), which SSL_peek consumes.
  bool LooksAlive() {
    if (buffered() > 0) return false;
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, 0);
    if (r == 0) return true;
    if (r < 0) return false;
    if ((p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return false;
    if (ssl_ == nullptr) return false;
    char c;
    int n = SSL_peek(ssl_, &c, 1);
    if (n > 0) return false;
    int e = SSL_get_error(ssl_, n);
    ERR_clear_error();
    return e == SSL_ERROR_WANT_READ;
  }

 private:
  int fd_;
  SSL* ssl_ = nullptr;
  std::string key_;
  int io_timeout_ms_;
  std::string buf_;
  size_t pos_ = 0;
};

bool IsLocalhostName(std::string_view host) {
  std::string h = ToLower(host);
  if (!h.empty() && h.back() == '.') h.pop_back();
  return h == "localhost" || (h.size() > 10 && h.compare(h.size() - 10, 10, ".localhost") == 0);
}

std::optional<std::string_view> FindHeader(const HeaderList& hs, std::string_view name) {
  for (const auto& [k, v] : hs) {
    if (IEquals(k, name)) return std::string_view(v);
  }
  return std::nullopt;
}

bool HeaderHasToken(const HeaderList& hs, std::string_view name, std::string_view token) {
  for (const auto& [k, v] : hs) {
    if (!IEquals(k, name)) continue;
    for (std::string_view t : Split(v, ',')) {
      if (IEquals(Trim(t), token)) return true;
    }
  }
  return false;
}

enum class FaultKind { kNone, kError, kDropBeforeWrite, kDropRequestBody, kDropResponse };

struct FaultPlan {
  FaultKind kind = FaultKind::kNone;
  double fraction = 0;  // where in the body to cut
};

struct Head {
  int status = 0;
  int version_minor = 1;
  std::string reason;
  HeaderList headers;
};

Result<Head> ParseHead(std::string_view head, const std::string& key) {
  Head h;
  size_t eol = head.find('\n');
  std::string_view line = head.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // "HTTP/1.1 200 OK"
  if (line.size() < 12 || !StartsWith(line, "HTTP/1.") || line[8] != ' ') {
    return Status::IOError("malformed status line from " + key + ": \"" +
                           std::string(line.substr(0, 64)) + "\"");
  }
  h.version_minor = line[7] - '0';
  auto code = ParseUint64(line.substr(9, 3));
  if (!code || *code < 100 || *code > 999) {
    return Status::IOError("malformed status code from " + key + ": \"" +
                           std::string(line.substr(0, 64)) + "\"");
  }
  h.status = static_cast<int>(*code);
  if (line.size() > 13) h.reason = std::string(line.substr(13));
  size_t pos = eol == std::string_view::npos ? head.size() : eol + 1;
  while (pos < head.size()) {
    size_t e = head.find('\n', pos);
    if (e == std::string_view::npos) e = head.size();
    std::string_view l = head.substr(pos, e - pos);
    pos = e + 1;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty()) break;
    size_t colon = l.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Status::IOError("malformed header line from " + key + ": \"" +
                             std::string(l.substr(0, 64)) + "\"");
    }
    h.headers.emplace_back(std::string(Trim(l.substr(0, colon))),
                           std::string(Trim(l.substr(colon + 1))));
  }
  return h;
}

}  // namespace

// ---------------------------------------------------------------------------

struct HttpClient::Pool {
  explicit Pool(const ClientOptions& o) : options(o), rng(o.faults.seed) {}
  ~Pool() {
    idle.clear();
    if (ssl_ctx != nullptr) SSL_CTX_free(ssl_ctx);
  }

  const ClientOptions options;
  std::mutex mu;
  std::map<std::string, std::deque<std::unique_ptr<Conn>>> idle;  // guarded by mu
  std::mt19937_64 rng;                                            // guarded by mu

  std::once_flag ssl_once;
  SSL_CTX* ssl_ctx = nullptr;  // set once under ssl_once
  Status ssl_status;           // set once under ssl_once

  std::atomic<uint64_t> requests{0}, opened{0}, reused{0}, stale_discarded{0}, stale_retries{0},
      injected_errors{0}, injected_drops{0};

  std::unique_ptr<Conn> TakeIdle(const std::string& key) {
    const int64_t now = MonoMs();
    std::lock_guard<std::mutex> lock(mu);
    auto it = idle.find(key);
    if (it == idle.end()) return nullptr;
    auto& q = it->second;
    while (!q.empty()) {
      std::unique_ptr<Conn> c = std::move(q.back());  // most recently used: warmest
      q.pop_back();
      if (now - c->idle_since_ms > options.max_idle_ms || !c->LooksAlive()) {
        stale_discarded.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      reused.fetch_add(1, std::memory_order_relaxed);
      return c;
    }
    return nullptr;
  }

  void Return(std::unique_ptr<Conn> c) {
    if (options.max_idle_per_host == 0) return;
    c->idle_since_ms = MonoMs();
    std::lock_guard<std::mutex> lock(mu);
    auto& q = idle[c->key()];
    q.push_back(std::move(c));
    while (q.size() > options.max_idle_per_host) q.pop_front();  // the coldest goes
  }

  FaultPlan Roll(const ClientRequest& req) {
    const ClientFaults& f = options.faults;
    if (f.error_rate <= 0 && f.drop_rate <= 0) return {};
    std::lock_guard<std::mutex> lock(mu);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double roll = u(rng);
    FaultPlan plan;
    plan.fraction = u(rng);
    if (roll < f.error_rate) {
      plan.kind = FaultKind::kError;
      return plan;
    }
    if (roll >= f.error_rate + f.drop_rate) return plan;
    const bool has_body = req.body_source != nullptr
                              ? (!req.content_length || *req.content_length > 0)
                              : !req.body.empty();
    const bool half = u(rng) < 0.5;
    if (has_body) {
      plan.kind = half ? FaultKind::kDropRequestBody : FaultKind::kDropResponse;
    } else if (req.method == "GET" || req.method == "HEAD") {
      plan.kind = half ? FaultKind::kDropBeforeWrite : FaultKind::kDropResponse;
    } else {
      // A bodiless write is never cut after the server may have acted on it.
      plan.kind = FaultKind::kDropBeforeWrite;
    }
    return plan;
  }

  Status InitTls() {
    std::call_once(ssl_once, [this] {
      ssl_ctx = SSL_CTX_new(TLS_client_method());
      if (ssl_ctx == nullptr) {
        ssl_status = Status::Internal("cannot create a TLS context: " + OpenSslError());
        return;
      }
      SSL_CTX_set_min_proto_version(ssl_ctx, TLS1_2_VERSION);
      SSL_CTX_set_mode(ssl_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
      if (options.tls_verify) {
        SSL_CTX_set_verify(ssl_ctx, SSL_VERIFY_PEER, nullptr);
        int ok = options.tls_ca_file.empty()
                     ? SSL_CTX_set_default_verify_paths(ssl_ctx)
                     : SSL_CTX_load_verify_locations(ssl_ctx, options.tls_ca_file.c_str(), nullptr);
        if (ok != 1) {
          ssl_status = Status::InvalidArgument("cannot load TLS CA certificates" +
                                               (options.tls_ca_file.empty()
                                                    ? std::string()
                                                    : " from \"" + options.tls_ca_file + "\"") +
                                               ": " + OpenSslError());
        }
      } else {
        SSL_CTX_set_verify(ssl_ctx, SSL_VERIFY_NONE, nullptr);
      }
    });
    return ssl_status;
  }

  Result<std::unique_ptr<Conn>> Connect(const ClientRequest& req, uint16_t port,
                                        const std::string& key) {
    const bool tls = req.scheme == "https";
    if (tls) STRATA_RETURN_IF_ERROR(InitTls());
    std::string host = IsLocalhostName(req.host) ? std::string("127.0.0.1") : req.host;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const std::string port_s = std::to_string(port);
    int gai = ::getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res);
    if (gai != 0) {
      return Status::Unavailable("cannot resolve \"" + req.host + "\": " + gai_strerror(gai));
    }
    Status last = Status::Unavailable("no address for \"" + req.host + "\"");
    std::unique_ptr<Conn> conn;
    for (addrinfo* ai = res; ai != nullptr && conn == nullptr; ai = ai->ai_next) {
      int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        ai->ai_protocol);
      if (fd < 0) {
        last = Status::IOError("socket() failed: " + ErrnoText(errno));
        continue;
      }
      auto c = std::make_unique<Conn>(fd, key, options.io_timeout_ms);
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      int r = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
      if (r != 0 && errno != EINPROGRESS) {
        last = Status::Unavailable("cannot connect to " + key + ": " + ErrnoText(errno));
        continue;
      }
      if (r != 0) {
        Status w = c->WaitFor(POLLOUT, options.connect_timeout_ms, "connecting");
        if (!w.ok()) {
          last = w;
          continue;
        }
        int err = 0;
        socklen_t len = sizeof(err);
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          last = Status::Unavailable("cannot connect to " + key + ": " + ErrnoText(err));
          continue;
        }
      }
      conn = std::move(c);
    }
    ::freeaddrinfo(res);
    if (conn == nullptr) return last;
    if (tls) STRATA_RETURN_IF_ERROR(Handshake(*conn, req.host));
    opened.fetch_add(1, std::memory_order_relaxed);
    return conn;
  }

  Status Handshake(Conn& c, const std::string& host) {
    SSL* ssl = SSL_new(ssl_ctx);
    if (ssl == nullptr) return Status::Internal("SSL_new failed: " + OpenSslError());
    c.set_ssl(ssl);
    SSL_set_fd(ssl, c.fd());
    in6_addr a6;
    in_addr a4;
    const bool is_ip = inet_pton(AF_INET, host.c_str(), &a4) == 1 ||
                       inet_pton(AF_INET6, host.c_str(), &a6) == 1;
    if (!is_ip) SSL_set_tlsext_host_name(ssl, host.c_str());
    if (options.tls_verify) {
      if (is_ip) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
      } else {
        SSL_set1_host(ssl, host.c_str());
      }
    }
    SSL_set_connect_state(ssl);
    for (;;) {
      int r = WithoutSigpipe([&] { return SSL_do_handshake(ssl); });
      if (r == 1) return Status::Ok();
      int e = SSL_get_error(ssl, r);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        STRATA_RETURN_IF_ERROR(c.WaitFor(e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN,
                                         options.connect_timeout_ms, "in the TLS handshake"));
        continue;
      }
      std::string why = OpenSslError();
      long v = SSL_get_verify_result(ssl);
      if (v != X509_V_OK) why = X509_verify_cert_error_string(v);
      return Status::Unavailable("TLS handshake with " + c.key() + " failed: " + why +
                                 (v != X509_V_OK ? " (set tls_ca_file, or tls_verify=false for "
                                                   "a test server)"
                                                 : ""));
    }
  }
};

// ---------------------------------------------------------------------------

struct ClientResponse::Impl {
  enum class Framing { kNone, kLength, kChunked, kClose, kMemory };

  std::shared_ptr<HttpClient::Pool> pool;
  std::unique_ptr<Conn> conn;
  Head head;
  Framing framing = Framing::kNone;
  std::optional<uint64_t> content_length;
  uint64_t remaining = 0;        // kLength: body bytes left; kChunked: of this chunk
  bool chunk_need_crlf = false;  // kChunked: a chunk's data ended, CRLF next
  bool done = false;
  bool failed = false;
  bool keep_alive = true;
  uint64_t read_total = 0;
  std::optional<uint64_t> cut_at;  // injected drop
  std::string memory;              // kMemory: synthetic response body

  ~Impl() { Release(); }

  void Release() {
    if (conn == nullptr) return;
    if (done && !failed && keep_alive && conn->buffered() == 0 && pool != nullptr) {
      conn->requests++;
      pool->Return(std::move(conn));
    }
    conn.reset();
  }

  void Finish() {
    done = true;
    Release();
  }

  Status Fail(Status s) {
    failed = true;
    conn.reset();
    return s;
  }

  Result<size_t> Read(char* buf, size_t n) {
    if (done || n == 0) return size_t{0};
    if (failed) return Status::IOError("the response body already failed");
    if (cut_at && read_total >= *cut_at) {
      if (pool) pool->injected_drops.fetch_add(1, std::memory_order_relaxed);
      return Fail(Status::IOError("connection reset by peer in the middle of the response body "
                                  "(fault injected by the HTTP client)"));
    }
    if (cut_at) n = std::min<uint64_t>(n, *cut_at - read_total);
    switch (framing) {
      case Framing::kNone:
        Finish();
        return size_t{0};
      case Framing::kMemory: {
        size_t k = std::min(n, memory.size() - read_total);
        std::memcpy(buf, memory.data() + read_total, k);
        read_total += k;
        if (read_total == memory.size()) done = true;
        return k;
      }
      case Framing::kLength: {
        if (remaining == 0) {
          Finish();
          return size_t{0};
        }
        auto r = conn->Read(buf, std::min<uint64_t>(n, remaining));
        if (!r.ok()) return Fail(r.error());
        if (*r == 0) {
          return Fail(Status::IOError("connection to " + conn->key() + " closed with " +
                                      std::to_string(remaining) +
                                      " bytes of the response body missing"));
        }
        remaining -= *r;
        read_total += *r;
        if (remaining == 0) Finish();
        return *r;
      }
      case Framing::kClose: {
        auto r = conn->Read(buf, n);
        if (!r.ok()) return Fail(r.error());
        if (*r == 0) {
          Finish();
          return size_t{0};
        }
        read_total += *r;
        return *r;
      }
      case Framing::kChunked:
        return ReadChunked(buf, n);
    }
    return size_t{0};
  }

  Result<size_t> ReadChunked(char* buf, size_t n) {
    for (;;) {
      if (remaining > 0) {
        auto r = conn->Read(buf, std::min<uint64_t>(n, remaining));
        if (!r.ok()) return Fail(r.error());
        if (*r == 0) {
          return Fail(Status::IOError("connection to " + conn->key() +
                                      " closed in the middle of a chunk"));
        }
        remaining -= *r;
        read_total += *r;
        if (remaining == 0) chunk_need_crlf = true;
        return *r;
      }
      if (chunk_need_crlf) {
        auto line = conn->ReadLine(16);
        if (!line.ok()) return Fail(line.error());
        if (!line->empty()) {
          return Fail(Status::IOError("bad chunked framing from " + conn->key() +
                                      ": no CRLF after chunk data"));
        }
        chunk_need_crlf = false;
      }
      auto line = conn->ReadLine(4096);
      if (!line.ok()) return Fail(line.error());
      std::string_view size_s = *line;
      if (size_t semi = size_s.find(';'); semi != std::string_view::npos) {
        size_s = size_s.substr(0, semi);
      }
      size_s = Trim(size_s);
      uint64_t size = 0;
      if (size_s.empty() || size_s.size() > 15) {
        return Fail(Status::IOError("bad chunk size line from " + conn->key()));
      }
      for (char c : size_s) {
        int v = (c >= '0' && c <= '9')   ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : -1;
        if (v < 0) return Fail(Status::IOError("bad chunk size line from " + conn->key()));
        size = size * 16 + static_cast<uint64_t>(v);
      }
      if (size == 0) {
        // Trailers until an empty line; added to the headers.
        for (;;) {
          auto t = conn->ReadLine(8192);
          if (!t.ok()) return Fail(t.error());
          if (t->empty()) break;
          size_t colon = t->find(':');
          if (colon != std::string::npos) {
            head.headers.emplace_back(std::string(Trim(std::string_view(*t).substr(0, colon))),
                                      std::string(Trim(std::string_view(*t).substr(colon + 1))));
          }
        }
        Finish();
        return size_t{0};
      }
      remaining = size;
    }
  }
};

ClientResponse::ClientResponse(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClientResponse::~ClientResponse() = default;
int ClientResponse::status() const { return impl_->head.status; }
const std::string& ClientResponse::reason() const { return impl_->head.reason; }
const HeaderList& ClientResponse::headers() const { return impl_->head.headers; }
std::optional<std::string_view> ClientResponse::Header(std::string_view name) const {
  return FindHeader(impl_->head.headers, name);
}
std::optional<uint64_t> ClientResponse::content_length() const { return impl_->content_length; }
Result<size_t> ClientResponse::Read(char* buf, size_t n) { return impl_->Read(buf, n); }
bool ClientResponse::body_done() const { return impl_->done; }
uint64_t ClientResponse::body_bytes_read() const { return impl_->read_total; }

Status ClientResponse::ReadTo(const std::function<Status(const char* data, size_t n)>& sink) {
  std::unique_ptr<char[]> buf(new char[kIoChunk]);
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(size_t n, Read(buf.get(), kIoChunk));
    if (n == 0) return Status::Ok();
    STRATA_RETURN_IF_ERROR(sink(buf.get(), n));
  }
}

Result<std::string> ClientResponse::ReadAll(size_t max) {
  std::string out;
  if (impl_->content_length) {
    if (*impl_->content_length > max) {
      return Status::ResourceExhausted("response body of " +
                                       std::to_string(*impl_->content_length) +
                                       " bytes exceeds the " + std::to_string(max) + " allowed");
    }
    out.reserve(*impl_->content_length);
  }
  char buf[16384];
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(size_t n, Read(buf, sizeof(buf)));
    if (n == 0) return out;
    if (out.size() + n > max) {
      return Status::ResourceExhausted("response body exceeds the " + std::to_string(max) +
                                       " bytes allowed");
    }
    out.append(buf, n);
  }
}

// ---------------------------------------------------------------------------

std::string ClientRequest::HostHeader() const {
  const bool v6 = host.find(':') != std::string::npos;
  std::string h = v6 ? "[" + host + "]" : host;
  const uint16_t def = scheme == "https" ? 443 : 80;
  if (port != 0 && port != def) h += ":" + std::to_string(port);
  return h;
}

HttpClient::HttpClient(ClientOptions options)
    : options_(std::move(options)), pool_(std::make_shared<Pool>(options_)) {}

HttpClient::~HttpClient() = default;

const ClientOptions& HttpClient::options() const { return options_; }

void HttpClient::CloseIdle() {
  std::lock_guard<std::mutex> lock(pool_->mu);
  pool_->idle.clear();
}

HttpClient::Stats HttpClient::stats() const {
  Stats s;
  s.requests = pool_->requests.load();
  s.connections_opened = pool_->opened.load();
  s.connections_reused = pool_->reused.load();
  s.stale_discarded = pool_->stale_discarded.load();
  s.stale_retries = pool_->stale_retries.load();
  s.injected_errors = pool_->injected_errors.load();
  s.injected_drops = pool_->injected_drops.load();
  return s;
}

namespace {

// Sends one request on `conn` and reads the response head. On failure,
// *response_started tells whether any response byte had arrived and
// *source_read how many body bytes were pulled from the source.
struct ExchangeState {
  bool response_started = false;
  bool injected = false;
  uint64_t source_read = 0;
};

std::string BuildHead(const ClientRequest& req, bool chunked, std::optional<uint64_t> length) {
  std::string h;
  h.reserve(256 + req.target.size());
  h.append(req.method).push_back(' ');
  h.append(req.target.empty() ? std::string_view("/") : std::string_view(req.target));
  h.append(" HTTP/1.1\r\n");
  if (!FindHeader(req.headers, "host")) h.append("Host: ").append(req.HostHeader()).append("\r\n");
  for (const auto& [k, v] : req.headers) {
    if (IEquals(k, "content-length") || IEquals(k, "transfer-encoding") || IEquals(k, "expect")) {
      continue;
    }
    h.append(k).append(": ").append(v).append("\r\n");
  }
  if (chunked) {
    h.append("Transfer-Encoding: chunked\r\n");
  } else if (length) {
    h.append("Content-Length: ").append(std::to_string(*length)).append("\r\n");
  }
  if (req.expect_continue && (chunked || (length && *length > 0))) {
    h.append("Expect: 100-continue\r\n");
  }
  h.append("\r\n");
  return h;
}

}  // namespace

namespace {

// The 503 SlowDown a fault plan answers with, without touching the network.
std::unique_ptr<ClientResponse> InjectedSlowDown() {
  auto impl = std::make_unique<ClientResponse::Impl>();
  impl->head.status = 503;
  impl->head.reason = "Slow Down";
  impl->memory =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please "
      "reduce your request rate. (fault injected by the HTTP client)</Message></Error>";
  impl->head.headers = {{"Content-Type", "application/xml"},
                        {"Content-Length", std::to_string(impl->memory.size())}};
  impl->content_length = impl->memory.size();
  impl->framing = ClientResponse::Impl::Framing::kMemory;
  return std::make_unique<ClientResponse>(std::move(impl));
}

// One attempt of Send on one connection: the request out, the response head in.
struct Exchange {
  HttpClient::Pool& pool;
  const ClientOptions& options;
  const ClientRequest& req;
  const std::string& key;
  const FaultPlan& plan;
  const std::string& head;
  bool chunked;
  std::optional<uint64_t> length;
  bool has_source;
  bool has_body;
  Conn* conn;
  ClientResponse::Impl* impl;
  ExchangeState st;

  Status Run();
  // With Expect: 100-continue, the head alone, then a wait for 100 or a final answer.
  Status SendHeadExpectingContinue(bool* body_sent, bool* got_head, std::string* head_bytes);
  Status SendSmallRequest();
  Status StreamBody();
  Status SendBytes(const char* p, size_t n, const std::optional<uint64_t>& cut, uint64_t* sent);
  Status ReadResponseHead(bool got_head, std::string head_bytes);
  // After a failed write: the server may have answered early and closed (e.g. an
  // auth error before the body); that answer is the result when it is there.
  Status RecoverEarlyAnswer(Status s);
};

Status Exchange::Run() {
  if (plan.kind == FaultKind::kDropBeforeWrite) {
    st.injected = true;
    pool.injected_drops.fetch_add(1, std::memory_order_relaxed);
    return Status::IOError("connection reset by peer before the request was sent (fault "
                           "injected by the HTTP client)");
  }
  bool body_sent = !has_body;
  bool got_head = false;
  std::string head_bytes;
  if (req.expect_continue && has_body) {
    STRATA_RETURN_IF_ERROR(SendHeadExpectingContinue(&body_sent, &got_head, &head_bytes));
  } else if (!has_source && has_body && req.body.size() <= 64 * 1024) {
    STRATA_RETURN_IF_ERROR(SendSmallRequest());
    body_sent = true;
  } else {
    STRATA_RETURN_IF_ERROR(conn->WriteAll(head.data(), head.size()));
  }
  if (!body_sent) STRATA_RETURN_IF_ERROR(StreamBody());
  return ReadResponseHead(got_head, std::move(head_bytes));
}

Status Exchange::SendHeadExpectingContinue(bool* body_sent, bool* got_head,
                                           std::string* head_bytes) {
  STRATA_RETURN_IF_ERROR(conn->WriteAll(head.data(), head.size()));
  if (!conn->WaitFor(POLLIN, options.continue_timeout_ms, "").ok()) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(*head_bytes, conn->ReadHead(options.max_response_head, &st.response_started));
  if (head_bytes->empty()) {
    return Status::IOError("connection to " + key + " closed before the response");
  }
  STRATA_ASSIGN_OR_RETURN(Head h, ParseHead(*head_bytes, key));
  if (h.status == 100) {
    head_bytes->clear();
  } else {
    // A final answer before the body: the body is never sent, and the
    // connection cannot be reused (the server may expect it).
    *got_head = true;
    *body_sent = true;
    impl->keep_alive = false;
  }
  return Status::Ok();
}

// One write for a small request.
Status Exchange::SendSmallRequest() {
  std::string all = head;
  all.append(req.body);
  if (plan.kind == FaultKind::kDropRequestBody) {
    size_t cut = head.size() + static_cast<size_t>(plan.fraction * req.body.size());
    STRATA_RETURN_IF_ERROR(conn->WriteAll(all.data(), cut));
    st.injected = true;
    pool.injected_drops.fetch_add(1, std::memory_order_relaxed);
    return Status::IOError("connection reset by peer in the middle of the request body "
                           "(fault injected by the HTTP client)");
  }
  return conn->WriteAll(all.data(), all.size());
}

Status Exchange::SendBytes(const char* p, size_t n, const std::optional<uint64_t>& cut,
                           uint64_t* sent) {
  if (cut && *sent + n >= *cut) {
    STRATA_RETURN_IF_ERROR(conn->WriteAll(p, *cut - *sent));
    st.injected = true;
    pool.injected_drops.fetch_add(1, std::memory_order_relaxed);
    return Status::IOError("connection reset by peer in the middle of the request body "
                           "(fault injected by the HTTP client)");
  }
  *sent += n;
  return conn->WriteAll(p, n);
}

Status Exchange::StreamBody() {
  std::optional<uint64_t> cut;
  if (plan.kind == FaultKind::kDropRequestBody) {
    const uint64_t total = length ? *length : (1u << 20);
    cut = static_cast<uint64_t>(plan.fraction * static_cast<double>(total));
  }
  uint64_t sent = 0;
  if (!has_source) return SendBytes(req.body.data(), req.body.size(), cut, &sent);
  std::unique_ptr<char[]> buf(new char[kIoChunk + 32]);
  char* data = buf.get() + 16;  // room for the chunk size line
  uint64_t total = 0;
  for (;;) {
    size_t want = kIoChunk;
    if (length) want = static_cast<size_t>(std::min<uint64_t>(want, *length - total));
    size_t n = 0;
    if (want > 0) {
      auto r = req.body_source->Read(data, want);
      if (!r.ok()) return r.error().WithContext("reading the request body");
      n = *r;
      st.source_read += n;
    }
    if (n == 0) {
      if (length && total != *length) {
        return Status::InvalidArgument("request body ended after " + std::to_string(total) +
                                       " bytes; Content-Length promised " + std::to_string(*length));
      }
      if (length) {
        // The source must be exhausted too: more bytes than promised is a caller bug.
        char probe;
        auto extra = req.body_source->Read(&probe, 1);
        if (extra.ok() && *extra > 0) {
          return Status::InvalidArgument("request body is longer than its Content-Length " +
                                         std::to_string(*length));
        }
      }
      if (chunked) STRATA_RETURN_IF_ERROR(SendBytes("0\r\n\r\n", 5, cut, &sent));
      return Status::Ok();
    }
    total += n;
    if (chunked) {
      char line[24];
      int k = snprintf(line, sizeof(line), "%zx\r\n", n);
      char* start = data - k;
      std::memcpy(start, line, static_cast<size_t>(k));
      data[n] = '\r';
      data[n + 1] = '\n';
      STRATA_RETURN_IF_ERROR(SendBytes(start, n + static_cast<size_t>(k) + 2, cut, &sent));
    } else {
      STRATA_RETURN_IF_ERROR(SendBytes(data, n, cut, &sent));
    }
  }
}

// The response head, skipping interim 1xx responses.
Status Exchange::ReadResponseHead(bool got_head, std::string head_bytes) {
  for (;;) {
    if (!got_head) {
      STRATA_ASSIGN_OR_RETURN(head_bytes,
                              conn->ReadHead(options.max_response_head, &st.response_started));
      if (head_bytes.empty()) {
        return Status::IOError("connection to " + key + " closed before the response");
      }
    }
    STRATA_ASSIGN_OR_RETURN(impl->head, ParseHead(head_bytes, key));
    got_head = false;
    if (impl->head.status >= 100 && impl->head.status < 200) continue;
    return Status::Ok();
  }
}

Status Exchange::RecoverEarlyAnswer(Status s) {
  if (s.ok() || st.injected || st.response_started || conn == nullptr || conn->fd() < 0 ||
      s.code() != StatusCode::kIOError) {
    return s;
  }
  bool any = false;
  if (conn->WaitFor(POLLIN, 50, "").ok()) {
    auto hb = conn->ReadHead(options.max_response_head, &any);
    if (hb.ok() && !hb->empty()) {
      if (auto h = ParseHead(*hb, key); h.ok() && h->status >= 200) {
        impl->head = std::move(*h);
        impl->keep_alive = false;
        s = Status::Ok();
      }
    }
  }
  st.response_started = st.response_started || any;
  return s;
}

// How the response body is framed (RFC 9112 section 6.3); an error for a malformed length.
Status SetFraming(const ClientRequest& req, const std::string& key, ClientResponse::Impl* impl) {
  const Head& h = impl->head;
  impl->keep_alive = impl->keep_alive && !HeaderHasToken(h.headers, "connection", "close") &&
                     (h.version_minor >= 1 || HeaderHasToken(h.headers, "connection", "keep-alive"));
  using Framing = ClientResponse::Impl::Framing;
  if (req.method == "HEAD" || h.status == 204 || h.status == 304) {
    impl->framing = Framing::kNone;
    impl->content_length = 0;
    if (auto cl = FindHeader(h.headers, "content-length"); cl && req.method == "HEAD") {
      impl->content_length = ParseUint64(Trim(*cl));
    }
  } else if (HeaderHasToken(h.headers, "transfer-encoding", "chunked")) {
    impl->framing = Framing::kChunked;
  } else if (auto cl = FindHeader(h.headers, "content-length")) {
    auto v = ParseUint64(Trim(*cl));
    if (!v) return Status::IOError("malformed Content-Length in the response from " + key);
    impl->framing = Framing::kLength;
    impl->remaining = *v;
    impl->content_length = *v;
  } else {
    impl->framing = Framing::kClose;
    impl->keep_alive = false;
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<ClientResponse>> HttpClient::Send(const ClientRequest& req) {
  Pool& pool = *pool_;
  pool.requests.fetch_add(1, std::memory_order_relaxed);
  if (req.scheme != "http" && req.scheme != "https") {
    return Status::InvalidArgument("unsupported URL scheme \"" + req.scheme +
                                   "\" (use http or https)");
  }
  if (req.host.empty()) return Status::InvalidArgument("HTTP request without a host");
  const uint16_t port = req.port != 0 ? req.port : (req.scheme == "https" ? 443 : 80);
  const bool v6 = req.host.find(':') != std::string::npos;
  const std::string key = req.scheme + "://" + (v6 ? "[" + req.host + "]" : req.host) + ":" +
                          std::to_string(port);

  const FaultPlan plan = pool.Roll(req);
  if (plan.kind == FaultKind::kError) {
    pool.injected_errors.fetch_add(1, std::memory_order_relaxed);
    return InjectedSlowDown();
  }

  const bool has_source = req.body_source != nullptr;
  const bool chunked = has_source && !req.content_length;
  std::optional<uint64_t> length;
  if (has_source) {
    length = req.content_length;
  } else if (!req.body.empty() || req.method == "PUT" || req.method == "POST" ||
             req.method == "PATCH") {
    length = req.body.size();
  }
  const std::string head = BuildHead(req, chunked, length);
  const bool has_body = chunked || (length && *length > 0);

  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<Conn> conn = attempt == 0 ? pool.TakeIdle(key) : nullptr;
    const bool reused = conn != nullptr;
    if (!conn) {
      STRATA_ASSIGN_OR_RETURN(conn, pool.Connect(req, port, key));
    }
    auto impl = std::make_unique<ClientResponse::Impl>();
    impl->pool = pool_;
    Exchange ex{pool, options_, req, key, plan, head, chunked, length, has_source, has_body,
                conn.get(), impl.get(), {}};
    Status s = ex.RecoverEarlyAnswer(ex.Run());
    if (!s.ok()) {
      const bool transport =
          s.code() == StatusCode::kIOError || s.code() == StatusCode::kUnavailable;
      bool replayable = !has_source || ex.st.source_read == 0;
      if (reused && attempt == 0 && transport && !ex.st.injected && !ex.st.response_started &&
          req.idempotent) {
        if (!replayable) replayable = req.body_source->Rewind();
        if (replayable) {
          pool.stale_retries.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
      }
      return s;
    }
    STRATA_RETURN_IF_ERROR(SetFraming(req, key, impl.get()));
    using Framing = ClientResponse::Impl::Framing;
    impl->conn = std::move(conn);
    if (plan.kind == FaultKind::kDropResponse) {
      const bool body = impl->framing != Framing::kNone &&
                        !(impl->framing == Framing::kLength && impl->remaining == 0);
      if (body) {
        const uint64_t total = impl->content_length ? *impl->content_length : (64u << 10);
        impl->cut_at = static_cast<uint64_t>(plan.fraction * static_cast<double>(total));
      } else if (req.method == "GET" || req.method == "HEAD") {
        pool.injected_drops.fetch_add(1, std::memory_order_relaxed);
        return Status::IOError("connection reset by peer after the response head (fault "
                               "injected by the HTTP client)");
      }
    }
    if (impl->framing == Framing::kNone) impl->Finish();
    else if (impl->framing == Framing::kLength && impl->remaining == 0 && !impl->cut_at) impl->Finish();
    return std::make_unique<ClientResponse>(std::move(impl));
  }
}

Result<ParsedUrl> ParseHttpUrl(std::string_view url) {
  ParsedUrl u;
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) {
    return Status::InvalidArgument("\"" + std::string(url) + "\" is not a URL (expected http://HOST[:PORT]/...)");
  }
  u.scheme = ToLower(url.substr(0, sep));
  if (u.scheme != "http" && u.scheme != "https") {
    return Status::InvalidArgument("unsupported URL scheme in \"" + std::string(url) +
                                   "\" (use http or https)");
  }
  std::string_view rest = url.substr(sep + 3);
  size_t slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  std::string_view target = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (size_t hash = target.find('#'); hash != std::string_view::npos) target = target.substr(0, hash);
  if (authority.find('@') != std::string_view::npos) {
    return Status::InvalidArgument("URLs with user info are not supported: \"" + std::string(url) + "\"");
  }
  std::string_view port_s;
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("unbalanced '[' in \"" + std::string(url) + "\"");
    }
    u.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        return Status::InvalidArgument("bad authority in \"" + std::string(url) + "\"");
      }
      port_s = authority.substr(close + 2);
    }
  } else {
    size_t colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_s = authority.substr(colon + 1);
  }
  if (u.host.empty()) return Status::InvalidArgument("no host in \"" + std::string(url) + "\"");
  if (!port_s.empty()) {
    auto p = ParseUint64(port_s);
    if (!p || *p == 0 || *p > 65535) {
      return Status::InvalidArgument("bad port in \"" + std::string(url) + "\"");
    }
    u.port = static_cast<uint16_t>(*p);
  } else {
    u.port = u.scheme == "https" ? 443 : 80;
  }
  u.target = target.empty() ? "/" : std::string(target);
  if (u.target[0] == '?') u.target = "/" + u.target;
  return u;
}

}  // namespace strata::http
