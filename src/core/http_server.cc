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

#include <strata/core/clock.h>
#include <strata/core/log.h>
#include <strata/core/strings.h>

#include "core/http_connection.h"
#include "core/no_sigpipe.h"

namespace strata::http {
namespace {

constexpr log::Logger kLog("http");

}  // namespace

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
  void Serve(Connection* c);
  void Park(Connection* c);
  void CloseConn(Connection* c);
  void SweepLoop();
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
    c->head_started_ns_ = MonotonicNanos();
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
                             : MonotonicNanos() + int64_t{opts.idle_timeout_ms} * 1'000'000;
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
    int64_t now = MonotonicNanos();
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
          SendLayerError(opts, w, 431, "the request head is larger than the server accepts");
          CloseConn(c);
          return;
        }
      }
      c->Compact();
      if (c->wpos_ == c->buf_.size()) c->buf_.resize(c->buf_.size() * 2);
      if (c->rpos_ == c->wpos_) c->head_started_ns_ = MonotonicNanos();
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
    requests.fetch_add(1, std::memory_order_relaxed);
    if (!ServeOneRequest(c, opts, handler) || !running.load(std::memory_order_relaxed)) {
      CloseConn(c);
      return;
    }
  }
}

}  // namespace strata::http
