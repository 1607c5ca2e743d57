#include <strata/core/http_server.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_set>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <strata/core/log.h>
#include <strata/core/strings.h>

#include "no_sigpipe.h"

namespace strata::http {
namespace {

constexpr log::Logger kLog("http");

int64_t MonoNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The Date header, formatted once per second per thread.
std::string_view CachedDate() {
  thread_local int64_t cached_sec = -1;
  thread_local std::string cached;
  int64_t now = NowUnixNanos();
  int64_t sec = now / 1'000'000'000;
  if (sec != cached_sec) {
    cached_sec = sec;
    cached = FormatHttpDate(now);
  }
  return cached;
}

}  // namespace

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 416: return "Range Not Satisfiable";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 507: return "Insufficient Storage";
    default: return "Unknown";
  }
}

// One client connection. Owned by the worker serving it, or parked in epoll.
class Connection {
 public:
  Connection(int fd, SSL* ssl, std::string remote, const ServerOptions* opts)
      : fd_(fd), ssl_(ssl), remote_(std::move(remote)), opts_(opts) {
    buf_.resize(std::max<size_t>(opts->max_header_bytes + 4096, 32 * 1024));
  }
  ~Connection() {
    if (ssl_ != nullptr) {
      core_internal::WithoutSigpipe([&] { return SSL_shutdown(ssl_); });
      SSL_free(ssl_);
    }
    ::close(fd_);
  }

  int fd() const { return fd_; }
  SSL* ssl() const { return ssl_; }
  const std::string& remote() const { return remote_; }

  // --- raw transport, blocking with io_timeout -------------------------------
  // Reads what is available; returns 0 on EOF, -1 with errno EAGAIN if nothing now.
  ssize_t RecvSome(char* p, size_t n) {
    if (ssl_ != nullptr) {
      int r = SSL_read(ssl_, p, static_cast<int>(std::min<size_t>(n, INT32_MAX)));
      if (r > 0) return r;
      int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        want_write_ = e == SSL_ERROR_WANT_WRITE;
        errno = EAGAIN;
        return -1;
      }
      if (e == SSL_ERROR_ZERO_RETURN) return 0;
      errno = ECONNRESET;
      return -1;
    }
    ssize_t r;
    do {
      r = ::recv(fd_, p, n, 0);
    } while (r < 0 && errno == EINTR);
    return r;
  }

  bool WaitFor(short events) {
    pollfd pfd{fd_, events, 0};
    for (;;) {
      int r = ::poll(&pfd, 1, opts_->io_timeout_ms);
      if (r > 0) return true;
      if (r == 0) return false;
      if (errno != EINTR) return false;
    }
  }

  Result<size_t> RecvBlocking(char* p, size_t n) {
    for (;;) {
      ssize_t r = RecvSome(p, n);
      if (r >= 0) return static_cast<size_t>(r);
      if (errno != EAGAIN && errno != EWOULDBLOCK) return Status::FromErrno(errno, "recv");
      if (!WaitFor(want_write_ ? POLLOUT : POLLIN))
        return Status::IOError("timed out waiting for the request body");
    }
  }

  // more: the caller sends more right after (MSG_MORE: one segment on the wire).
  Status SendAll(const char* p, size_t n, bool more = false) {
    int flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0);
    while (n > 0) {
      ssize_t r;
      if (ssl_ != nullptr) {
        int w = core_internal::WithoutSigpipe(
            [&] { return SSL_write(ssl_, p, static_cast<int>(std::min<size_t>(n, 1 << 20))); });
        if (w > 0) {
          r = w;
        } else {
          int e = SSL_get_error(ssl_, w);
          if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
            if (!WaitFor(e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN))
              return Status::IOError("timed out writing the response");
            continue;
          }
          return Status::IOError("TLS write failed");
        }
      } else {
        r = ::send(fd_, p, n, flags);
        if (r < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!WaitFor(POLLOUT)) return Status::IOError("timed out writing the response");
            continue;
          }
          return Status::FromErrno(errno, "send");
        }
      }
      p += r;
      n -= static_cast<size_t>(r);
    }
    return Status::Ok();
  }

  Status SendFileAll(int in_fd, uint64_t off, uint64_t n) {
    if (ssl_ != nullptr) {
      std::string tmp(std::min<uint64_t>(n, 1 << 20), '\0');
      while (n > 0) {
        size_t want = std::min<uint64_t>(n, tmp.size());
        ssize_t r = ::pread(in_fd, tmp.data(), want, static_cast<off_t>(off));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return Status::IOError("short read from data file");
        STRATA_RETURN_IF_ERROR(SendAll(tmp.data(), static_cast<size_t>(r)));
        off += static_cast<uint64_t>(r);
        n -= static_cast<uint64_t>(r);
      }
      return Status::Ok();
    }
    off_t o = static_cast<off_t>(off);
    while (n > 0) {
      ssize_t r = ::sendfile(fd_, in_fd, &o, std::min<uint64_t>(n, 1ull << 30));
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          if (!WaitFor(POLLOUT)) return Status::IOError("timed out writing the response");
          continue;
        }
        return Status::FromErrno(errno, "sendfile");
      }
      if (r == 0) return Status::IOError("data file shorter than expected");
      n -= static_cast<uint64_t>(r);
    }
    return Status::Ok();
  }

  // --- request parsing ---------------------------------------------------------
  // Input buffer: [rpos_, wpos_) holds unread bytes.
  std::string buf_;
  size_t rpos_ = 0;
  size_t wpos_ = 0;
  size_t head_len_ = 0;        // bytes of the current request head, once complete
  int64_t head_started_ns_ = 0;  // when the first byte of the current head arrived

  // Body state of the current request.
  bool chunked_ = false;
  uint64_t body_left_ = 0;     // Content-Length mode: bytes left; chunked: left in chunk
  bool body_done_ = true;
  bool chunk_trailer_ = false;  // chunked: the 0-chunk was seen
  bool expect_continue_ = false;
  bool continue_sent_ = false;
  bool head_only_ = false;      // HEAD request: no response body

  // Parks state for epoll: true while waiting in epoll (the sweeper may shut it down).
  std::atomic<bool> parked_{false};
  std::atomic<int64_t> deadline_ns_{0};
  std::atomic<bool> in_head_{false};
  bool handshake_done_ = false;

  void Compact() {
    if (rpos_ == wpos_) {
      rpos_ = wpos_ = 0;
    } else if (rpos_ > 0 && (buf_.size() - wpos_) < 4096) {
      std::memmove(buf_.data(), buf_.data() + rpos_, wpos_ - rpos_);
      wpos_ -= rpos_;
      rpos_ = 0;
    }
  }

  // Pulls raw body bytes: from the buffer first, then the socket.
  Result<size_t> RawRead(char* p, size_t n) {
    if (rpos_ < wpos_) {
      size_t k = std::min(n, wpos_ - rpos_);
      std::memcpy(p, buf_.data() + rpos_, k);
      rpos_ += k;
      return k;
    }
    return RecvBlocking(p, n);
  }

  // Reads one CRLF-terminated line of chunked framing into `line` (without CRLF).
  Status ReadLine(std::string& line, size_t max) {
    line.clear();
    for (;;) {
      if (rpos_ == wpos_) {
        rpos_ = wpos_ = 0;
        STRATA_ASSIGN_OR_RETURN(size_t got, RecvBlocking(buf_.data(), buf_.size()));
        if (got == 0) return Status::IOError("connection closed inside a chunked body");
        wpos_ = got;
      }
      char c = buf_[rpos_++];
      if (c == '\n') {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return Status::Ok();
      }
      line.push_back(c);
      if (line.size() > max) return Status::InvalidArgument("chunk header line too long");
    }
  }

  Status SendContinueIfNeeded() {
    if (expect_continue_ && !continue_sent_) {
      continue_sent_ = true;
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      return SendAll(kContinue.data(), kContinue.size());
    }
    return Status::Ok();
  }

  Result<size_t> ReadBody(char* p, size_t n) {
    if (body_done_ || n == 0) return size_t{0};
    STRATA_RETURN_IF_ERROR(SendContinueIfNeeded());
    if (!chunked_) {
      STRATA_ASSIGN_OR_RETURN(size_t got, RawRead(p, std::min<uint64_t>(n, body_left_)));
      if (got == 0) return Status::IOError("client closed the connection before the body ended");
      body_left_ -= got;
      if (body_left_ == 0) body_done_ = true;
      return got;
    }
    std::string line;
    while (body_left_ == 0) {
      STRATA_RETURN_IF_ERROR(ReadLine(line, 1024));
      size_t semi = line.find(';');
      std::string_view hex = Trim(std::string_view(line).substr(0, semi));
      if (hex.empty() || hex.size() > 15) return Status::InvalidArgument("bad chunk size line");
      uint64_t size = 0;
      for (char c : hex) {
        int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                            : -1;
        if (v < 0) return Status::InvalidArgument("bad chunk size");
        size = size * 16 + static_cast<uint64_t>(v);
      }
      if (size == 0) {
        // Trailer section: header lines until an empty line.
        for (int i = 0; i < 64; ++i) {
          STRATA_RETURN_IF_ERROR(ReadLine(line, opts_->max_header_bytes));
          if (line.empty()) {
            body_done_ = true;
            return size_t{0};
          }
        }
        return Status::InvalidArgument("too many trailer lines");
      }
      body_left_ = size;
      chunk_trailer_ = true;  // a CRLF follows this chunk's data
    }
    STRATA_ASSIGN_OR_RETURN(size_t got, RawRead(p, std::min<uint64_t>(n, body_left_)));
    if (got == 0) return Status::IOError("client closed the connection inside a chunk");
    body_left_ -= got;
    if (body_left_ == 0 && chunk_trailer_) {
      chunk_trailer_ = false;
      STRATA_RETURN_IF_ERROR(ReadLine(line, 2));
      if (!line.empty()) return Status::InvalidArgument("missing CRLF after chunk data");
    }
    return got;
  }

  const ServerOptions* opts() const { return opts_; }
  bool want_write_ = false;

 private:
  int fd_;
  SSL* ssl_;
  std::string remote_;
  const ServerOptions* opts_;
};

std::optional<std::string_view> Request::Header(std::string_view name) const {
  for (const auto& h : headers)
    if (IEquals(h.name, name)) return h.value;
  return std::nullopt;
}

Result<size_t> Request::ReadBody(char* buf, size_t n) { return conn->ReadBody(buf, n); }

bool Request::body_done() const { return conn->body_done_; }

Result<std::string> Request::ReadAllBody(size_t max) {
  std::string out;
  if (content_length) {
    if (*content_length > max)
      return Status::ResourceExhausted("request body too large");
    out.resize(*content_length);
    size_t off = 0;
    while (off < out.size()) {
      STRATA_ASSIGN_OR_RETURN(size_t got, ReadBody(out.data() + off, out.size() - off));
      if (got == 0) break;
      off += got;
    }
    out.resize(off);
    return out;
  }
  char tmp[16384];
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(size_t got, ReadBody(tmp, sizeof(tmp)));
    if (got == 0) break;
    if (out.size() + got > max) return Status::ResourceExhausted("request body too large");
    out.append(tmp, got);
  }
  return out;
}

void ResponseWriter::AddHeader(std::string_view name, std::string_view value) {
  headers_.append(name);
  headers_.append(": ");
  headers_.append(value);
  headers_.append("\r\n");
}

std::string ResponseWriter::BuildHead(uint64_t content_length, size_t reserve_body) const {
  std::string head;
  head.reserve(headers_.size() + 160 + reserve_body);
  head.append("HTTP/1.1 ");
  head.append(std::to_string(status_));
  head.push_back(' ');
  head.append(ReasonPhrase(status_));
  head.append("\r\nServer: Strata\r\nDate: ");
  head.append(CachedDate());
  head.append("\r\n");
  if (status_ != 204 && status_ != 304) {
    head.append("Content-Length: ");
    head.append(std::to_string(content_length));
    head.append("\r\n");
  }
  if (close_after_) head.append("Connection: close\r\n");
  head.append(headers_);
  head.append("\r\n");
  return head;
}

Status ResponseWriter::Send(std::string_view body) {
  if (headers_sent_) return Status::Internal("response already started");
  bool with_body = !conn_->head_only_ && status_ != 204 && status_ != 304;
  headers_sent_ = true;
  if (!with_body) {
    std::string head = BuildHead(body.size(), 0);
    return conn_->SendAll(head.data(), head.size());
  }
  bytes_sent_ = body.size();
  if (body.size() <= 256 * 1024) {
    // One write for head and body: saves a syscall and a packet on small replies.
    std::string head = BuildHead(body.size(), body.size());
    head.append(body);
    return conn_->SendAll(head.data(), head.size());
  }
  std::string head = BuildHead(body.size(), 0);
  STRATA_RETURN_IF_ERROR(conn_->SendAll(head.data(), head.size(), /*more=*/true));
  return conn_->SendAll(body.data(), body.size());
}

// The head is held back until the first body bytes (or Flush), so a small
// streamed response still goes out in one send.
Status ResponseWriter::BeginBody(uint64_t content_length) {
  if (headers_sent_) return Status::Internal("response already started");
  if (!conn_->head_only_) promised_ = content_length;
  headers_sent_ = true;
  pending_head_ = BuildHead(content_length, conn_->head_only_ ? 0 : std::min<uint64_t>(content_length, 256 * 1024));
  return Status::Ok();
}

Status ResponseWriter::Flush() {
  if (pending_head_.empty()) return Status::Ok();
  std::string head = std::move(pending_head_);
  pending_head_.clear();
  return conn_->SendAll(head.data(), head.size());
}

Status ResponseWriter::Write(const char* data, size_t n) {
  if (conn_->head_only_) return Status::Ok();
  bytes_sent_ += n;
  if (!pending_head_.empty()) {
    std::string head = std::move(pending_head_);
    pending_head_.clear();
    if (n <= 256 * 1024) {
      head.append(data, n);
      return conn_->SendAll(head.data(), head.size());
    }
    STRATA_RETURN_IF_ERROR(conn_->SendAll(head.data(), head.size(), /*more=*/true));
  }
  return conn_->SendAll(data, n);
}

Status ResponseWriter::SendFile(int fd, uint64_t offset, uint64_t n) {
  if (conn_->head_only_) return Status::Ok();
  bytes_sent_ += n;
  if (!pending_head_.empty()) {
    std::string head = std::move(pending_head_);
    pending_head_.clear();
    STRATA_RETURN_IF_ERROR(conn_->SendAll(head.data(), head.size(), /*more=*/true));
  }
  return conn_->SendFileAll(fd, offset, n);
}

// ---------------------------------------------------------------------------

struct Server::Impl {
  ServerOptions opts;
  Handler handler;
  int listen_fd = -1;
  int epoll_fd = -1;
  int bound_port = 0;
  SSL_CTX* ssl_ctx = nullptr;
  std::atomic<bool> running{false};
  std::vector<std::thread> workers;
  std::thread sweeper;

  std::mutex conns_mu;
  std::unordered_set<Connection*> conns;  // guarded by conns_mu
  std::condition_variable sweeper_cv;      // with conns_mu

  std::atomic<uint64_t> accepted{0}, rejected{0}, requests{0}, header_timeouts{0};
  std::atomic<int> open{0};

  void WorkerLoop();
  void AcceptAll();
  void SendLayerError(ResponseWriter& w, int status, std::string_view msg);
  void Serve(Connection* c);
  void Park(Connection* c);
  void CloseConn(Connection* c);
  void SweepLoop();
  // Returns false when the connection must be closed.
  bool HandleOne(Connection* c);
};

Server::Server(ServerOptions options, Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(options);
  impl_->handler = std::move(handler);
}

Server::~Server() { Stop(0); }

int Server::port() const { return impl_->bound_port; }
const ServerOptions& Server::options() const { return impl_->opts; }

Server::Stats Server::GetStats() const {
  Stats s;
  s.connections_accepted = impl_->accepted.load();
  s.connections_rejected = impl_->rejected.load();
  s.requests = impl_->requests.load();
  s.header_timeouts = impl_->header_timeouts.load();
  s.open_connections = impl_->open.load();
  return s;
}

Status Server::Start() {
  Impl& im = *impl_;
  if (!im.opts.tls_cert_file.empty() || !im.opts.tls_key_file.empty()) {
    im.ssl_ctx = SSL_CTX_new(TLS_server_method());
    if (im.ssl_ctx == nullptr) return Status::Internal("cannot create a TLS context");
    SSL_CTX_set_min_proto_version(im.ssl_ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(im.ssl_ctx, im.opts.tls_cert_file.c_str()) != 1)
      return Status::InvalidArgument("cannot load TLS certificate \"" + im.opts.tls_cert_file +
                                     "\": check the path and that it is PEM");
    if (SSL_CTX_use_PrivateKey_file(im.ssl_ctx, im.opts.tls_key_file.c_str(), SSL_FILETYPE_PEM) !=
        1)
      return Status::InvalidArgument("cannot load TLS key \"" + im.opts.tls_key_file +
                                     "\": check the path and that it matches the certificate");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  addrinfo* res = nullptr;
  std::string port_str = std::to_string(im.opts.port);
  if (int rc = getaddrinfo(im.opts.bind_address.c_str(), port_str.c_str(), &hints, &res); rc != 0)
    return Status::InvalidArgument("bad bind address \"" + im.opts.bind_address +
                                   "\": " + gai_strerror(rc));
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(res);
    return Status::FromErrno(errno, "socket");
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
    int e = errno;
    freeaddrinfo(res);
    ::close(fd);
    return Status::FromErrno(e, im.opts.name + ": cannot listen on " + im.opts.bind_address + ":" +
                                    port_str + " (is another server using the port?)");
  }
  freeaddrinfo(res);
  if (::listen(fd, 1024) != 0) {
    int e = errno;
    ::close(fd);
    return Status::FromErrno(e, "listen");
  }
  sockaddr_storage ss{};
  socklen_t sl = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl);
  im.bound_port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                                 : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  im.listen_fd = fd;
  im.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLEXCLUSIVE;
  ev.data.ptr = nullptr;  // nullptr = the listener
  epoll_ctl(im.epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  im.running = true;
  int n = im.opts.threads;
  if (n <= 0) n = std::max(8, 4 * static_cast<int>(std::thread::hardware_concurrency()));
  for (int i = 0; i < n; ++i) im.workers.emplace_back([&im] { im.WorkerLoop(); });
  im.sweeper = std::thread([&im] { im.SweepLoop(); });
  return Status::Ok();
}

void Server::Stop(int grace_ms) {
  Impl& im = *impl_;
  if (!im.running.exchange(false)) return;
  if (im.listen_fd >= 0) {
    epoll_ctl(im.epoll_fd, EPOLL_CTL_DEL, im.listen_fd, nullptr);
    ::close(im.listen_fd);
    im.listen_fd = -1;
  }
  // Wake parked connections so workers close them; busy ones finish their request.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(im.conns_mu);
      for (Connection* c : im.conns)
        if (c->parked_.load()) ::shutdown(c->fd(), SHUT_RDWR);
      if (im.conns.empty()) break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::lock_guard<std::mutex> lock(im.conns_mu);
      for (Connection* c : im.conns) ::shutdown(c->fd(), SHUT_RDWR);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  im.sweeper_cv.notify_all();
  for (auto& t : im.workers) t.join();
  im.workers.clear();
  if (im.sweeper.joinable()) im.sweeper.join();
  {
    std::lock_guard<std::mutex> lock(im.conns_mu);
    for (Connection* c : im.conns) delete c;
    im.conns.clear();
  }
  ::close(im.epoll_fd);
  im.epoll_fd = -1;
  if (im.ssl_ctx != nullptr) {
    SSL_CTX_free(im.ssl_ctx);
    im.ssl_ctx = nullptr;
  }
}

void Server::Impl::SendLayerError(ResponseWriter& w, int status, std::string_view msg) {
  w.SetStatus(status);
  w.CloseAfter();
  if (opts.error_handler) {
    opts.error_handler(status, msg, w);
    if (w.headers_sent()) return;
  }
  w.AddHeader("Content-Type", "text/plain");
  (void)w.Send(std::string(msg) + "\n");
}

void Server::Impl::WorkerLoop() {
  epoll_event events[4];
  while (running.load(std::memory_order_relaxed)) {
    int n = epoll_wait(epoll_fd, events, 4, 200);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) {
        AcceptAll();
      } else {
        Serve(static_cast<Connection*>(events[i].data.ptr));
      }
    }
  }
}

void Server::Impl::AcceptAll() {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t sl = sizeof(ss);
    int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &sl,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return;  // EAGAIN or a transient error (EMFILE...): try again on the next wakeup
    }
    if (open.load() >= opts.max_connections) {
      rejected.fetch_add(1);
      static constexpr std::string_view k503 =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)!::send(fd, k503.data(), k503.size(), MSG_NOSIGNAL);
      ::close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char host[INET6_ADDRSTRLEN] = {0};
    if (ss.ss_family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, host, sizeof(host));
    else
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, host, sizeof(host));
    SSL* ssl = nullptr;
    if (ssl_ctx != nullptr) {
      ssl = SSL_new(ssl_ctx);
      SSL_set_fd(ssl, fd);
      SSL_set_accept_state(ssl);
    }
    auto* c = new Connection(fd, ssl, host, &opts);
    accepted.fetch_add(1);
    open.fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(conns_mu);
      conns.insert(c);
    }
    c->head_started_ns_ = MonoNanos();
    Park(c);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.ptr = c;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
}

void Server::Impl::Park(Connection* c) {
  bool partial = c->rpos_ < c->wpos_ || (c->ssl() != nullptr && !c->handshake_done_);
  c->in_head_.store(partial);
  int64_t deadline = partial ? c->head_started_ns_ + int64_t{opts.header_timeout_ms} * 1'000'000
                             : MonoNanos() + int64_t{opts.idle_timeout_ms} * 1'000'000;
  c->deadline_ns_.store(deadline);
  c->parked_.store(true);
}

void Server::Impl::CloseConn(Connection* c) {
  {
    std::lock_guard<std::mutex> lock(conns_mu);
    conns.erase(c);
  }
  epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd(), nullptr);
  open.fetch_sub(1);
  delete c;
}

void Server::Impl::SweepLoop() {
  std::unique_lock<std::mutex> lock(conns_mu);
  while (running.load()) {
    sweeper_cv.wait_for(lock, std::chrono::milliseconds(250));
    int64_t now = MonoNanos();
    for (Connection* c : conns) {
      if (c->parked_.load() && c->deadline_ns_.load() < now) {
        if (c->in_head_.load()) header_timeouts.fetch_add(1);
        c->deadline_ns_.store(INT64_MAX);
        ::shutdown(c->fd(), SHUT_RDWR);  // the worker that wakes closes it
      }
    }
  }
}

void Server::Impl::Serve(Connection* c) {
  c->parked_.store(false);
  if (c->ssl() != nullptr && !c->handshake_done_) {
    int r = core_internal::WithoutSigpipe([&] { return SSL_do_handshake(c->ssl()); });
    if (r != 1) {
      int e = SSL_get_error(c->ssl(), r);
      if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) && running.load()) {
        Park(c);
        epoll_event ev{};
        ev.events = (e == SSL_ERROR_WANT_WRITE ? EPOLLOUT : EPOLLIN) | EPOLLRDHUP | EPOLLONESHOT;
        ev.data.ptr = c;
        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd(), &ev);
        return;
      }
      CloseConn(c);
      return;
    }
    c->handshake_done_ = true;
  }
  for (;;) {
    // Read what is there without blocking; a partial head goes back to epoll.
    bool eof = false;
    for (;;) {
      if (c->rpos_ < c->wpos_) {
        std::string_view pending(c->buf_.data() + c->rpos_, c->wpos_ - c->rpos_);
        size_t end = pending.find("\r\n\r\n");
        if (end != std::string_view::npos && end + 4 <= opts.max_header_bytes) {
          c->head_len_ = end + 4;
          break;
        }
        if (end != std::string_view::npos || pending.size() > opts.max_header_bytes) {
          ResponseWriter w(c);
          c->head_only_ = false;
          SendLayerError(w, 431, "the request head is larger than the server accepts");
          CloseConn(c);
          return;
        }
      }
      c->Compact();
      if (c->wpos_ == c->buf_.size()) c->buf_.resize(c->buf_.size() * 2);
      if (c->rpos_ == c->wpos_) c->head_started_ns_ = MonoNanos();
      ssize_t r = c->RecvSome(c->buf_.data() + c->wpos_, c->buf_.size() - c->wpos_);
      if (r > 0) {
        c->wpos_ += static_cast<size_t>(r);
        continue;
      }
      if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) eof = true;
      break;
    }
    if (eof || !running.load()) {
      CloseConn(c);
      return;
    }
    if (c->head_len_ == 0) {
      if (c->ssl() != nullptr && SSL_pending(c->ssl()) > 0) continue;
      Park(c);
      epoll_event ev{};
      ev.events = (c->want_write_ ? EPOLLOUT : EPOLLIN) | EPOLLRDHUP | EPOLLONESHOT;
      ev.data.ptr = c;
      epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd(), &ev);
      return;
    }
    if (!HandleOne(c)) {
      CloseConn(c);
      return;
    }
  }
}

bool Server::Impl::HandleOne(Connection* c) {
  requests.fetch_add(1, std::memory_order_relaxed);
  std::string_view head(c->buf_.data() + c->rpos_, c->head_len_ - 4);
  Request req;
  req.conn = c;
  req.remote_addr = c->remote();
  req.tls = c->ssl() != nullptr;
  ResponseWriter w(c);

  auto bad_request = [&](int code, std::string_view msg) {
    c->head_only_ = false;
    SendLayerError(w, code, msg);
    return false;
  };

  size_t line_end = head.find("\r\n");
  std::string_view line = head.substr(0, line_end);
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) {
    c->rpos_ += c->head_len_;
    c->head_len_ = 0;
    return bad_request(400, "malformed HTTP request line");
  }
  req.method = line.substr(0, sp1);
  req.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (version == "HTTP/1.1") {
    req.version_minor = 1;
  } else if (version == "HTTP/1.0") {
    req.version_minor = 0;
  } else {
    c->rpos_ += c->head_len_;
    c->head_len_ = 0;
    return bad_request(400, "unsupported HTTP version (HTTP/1.0 and HTTP/1.1 are served)");
  }
  size_t q = req.target.find('?');
  req.path = req.target.substr(0, q);
  req.query = q == std::string_view::npos ? std::string_view() : req.target.substr(q + 1);

  bool keep_alive = req.version_minor == 1;
  std::string_view rest = line_end == std::string_view::npos ? std::string_view()
                                                               : head.substr(line_end + 2);
  bool malformed = false;
  while (!rest.empty()) {
    size_t e = rest.find("\r\n");
    std::string_view h = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 2);
    size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0 || h[0] == ' ' || h[0] == '\t') {
      malformed = true;
      break;
    }
    HeaderField f{h.substr(0, colon), Trim(h.substr(colon + 1))};
    if (IEquals(f.name, "content-length")) {
      auto v = ParseUint64(f.value);
      if (!v || (req.content_length && *req.content_length != *v)) {
        malformed = true;
        break;
      }
      req.content_length = *v;
    } else if (IEquals(f.name, "transfer-encoding")) {
      if (ToLower(f.value).find("chunked") != std::string::npos) req.chunked = true;
    } else if (IEquals(f.name, "expect")) {
      if (IEquals(f.value, "100-continue")) req.expect_continue = true;
    } else if (IEquals(f.name, "connection")) {
      std::string v = ToLower(f.value);
      if (v.find("close") != std::string::npos) keep_alive = false;
      if (v.find("keep-alive") != std::string::npos) keep_alive = true;
    }
    req.headers.push_back(f);
  }
  c->rpos_ += c->head_len_;
  c->head_len_ = 0;
  if (malformed) return bad_request(400, "malformed HTTP header");
  if (req.chunked) req.content_length.reset();  // chunked wins (RFC 9112 6.3)

  c->chunked_ = req.chunked;
  c->chunk_trailer_ = false;
  c->body_left_ = req.chunked ? 0 : req.content_length.value_or(0);
  c->body_done_ = !req.chunked && c->body_left_ == 0;
  c->expect_continue_ = req.expect_continue;
  c->continue_sent_ = false;
  c->head_only_ = req.method == "HEAD";
  if (!keep_alive) w.CloseAfter();

  try {
    handler(req, w);
  } catch (const std::exception& e) {
    kLog.Error("{}: handler threw: {}", opts.name, e.what());
    if (!w.headers_sent()) {
      w.SetStatus(500);
      w.CloseAfter();
      (void)w.Send("internal error\n");
    } else {
      return false;
    }
  }
  if (!w.headers_sent()) {
    if (!w.Send("").ok()) return false;
  } else if (!w.Flush().ok()) {
    return false;
  }
  if (w.close_after() || w.incomplete()) return false;
  // Leftover body: drain a little, otherwise the framing is lost; close.
  if (!c->body_done_) {
    if (c->expect_continue_ && !c->continue_sent_) return false;
    uint64_t drained = 0;
    char tmp[16384];
    while (!c->body_done_ && drained < (1u << 20)) {
      auto r = c->ReadBody(tmp, sizeof(tmp));
      if (!r.ok() || *r == 0) break;
      drained += *r;
    }
    if (!c->body_done_) return false;
  }
  return running.load(std::memory_order_relaxed);
}

}  // namespace strata::http
