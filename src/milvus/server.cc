// Hosts the Milvus API on one port (server.h): an acceptor that reads each
// connection's first bytes and hands it to gRPC (the HTTP/2 preface) or to
// the HTTP/1.1 server of the REST API.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/server_posix.h>

#include <strata/core/clock.h>
#include <strata/core/log.h>
#include <strata/milvus/server.h>

#include "milvus/auth.h"
#include "milvus/guarded_service.h"
#include "milvus/rest.h"
#include "milvus/service.h"

namespace strata::milvus {

namespace {
constexpr log::Logger kLog("milvus");

// What a connection's first bytes say. gRPC clients open with the HTTP/2
// connection preface (RFC 9113 section 3.4; h2c with prior knowledge);
// anything else is taken as HTTP/1.1.
constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// A connection that sends nothing for this long is closed, as the HTTP
// server's header_timeout does.
constexpr int64_t kSniffTimeoutNs = 10'000'000'000;
}  // namespace

ConnKind ClassifyFirstBytes(std::string_view first) {
  const size_t n = std::min(first.size(), kH2Preface.size());
  if (first.substr(0, n) != kH2Preface.substr(0, n)) return ConnKind::kHttp1;
  return n == kH2Preface.size() ? ConnKind::kGrpc : ConnKind::kUndecided;
}

struct Server::Impl {
  vector::CollectionManager* manager;
  ServerOptions opts;
  std::unique_ptr<Authenticator> auth;
  std::unique_ptr<MilvusServiceImpl> service;
  std::unique_ptr<GuardedService> guarded;
  std::unique_ptr<grpc::Server> grpc_server;
  std::unique_ptr<RestHandler> rest;
  std::unique_ptr<http::Server> http;
  int listen_fd = -1;
  int wake_pipe[2] = {-1, -1};  // written by Stop to end the acceptor's poll
  std::thread acceptor;
  int port = 0;

  struct Pending {
    int fd;
    std::string remote;
    int64_t deadline_ns;
    int64_t retry_ns = 0;  // a partial preface: look again from then (no busy poll)
  };
  Status Listen();
  void AcceptLoop();
  void Route(Pending& p, ConnKind kind);
};

Status Server::Impl::Listen() {
  std::string host = opts.address;
  std::string port_str;
  const size_t colon = host.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument(
        fmt::format("Milvus API address \"{}\" must be HOST:PORT", opts.address));
  }
  port_str = host.substr(colon + 1);
  host = host.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port_str.c_str(), &hints, &res);
      rc != 0) {
    return Status::InvalidArgument(
        fmt::format("bad Milvus API address \"{}\": {}", opts.address, gai_strerror(rc)));
  }
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(res);
    return Status::FromErrno(errno, "socket");
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const int rc = ::bind(fd, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  if (rc != 0 || ::listen(fd, 4096) != 0) {
    ::close(fd);
    return Status::Unavailable(
        fmt::format("cannot listen on {} for the Milvus API (address in use?)", opts.address));
  }
  sockaddr_storage ss{};
  socklen_t sl = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl);
  port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  listen_fd = fd;
  return Status::Ok();
}

void Server::Impl::Route(Pending& p, ConnKind kind) {
  if (kind == ConnKind::kGrpc) {
    // gRPC reads the preface itself: MSG_PEEK left it in the socket.
    grpc::AddInsecureChannelFromFd(grpc_server.get(), p.fd);
    return;
  }
  if (http == nullptr) {  // REST switched off: an HTTP/1.1 client gets a close
    ::close(p.fd);
    return;
  }
  Status st = http->Adopt(p.fd, p.remote);
  if (!st.ok()) kLog.Debug("REST connection from {} refused: {}", p.remote, st.ToString());
}

void Server::Impl::AcceptLoop() {
  std::vector<Pending> pending;
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({wake_pipe[0], POLLIN, 0});
    fds.push_back({listen_fd, POLLIN, 0});
    int timeout_ms = 250;
    const int64_t before = MonotonicNanos();
    for (const Pending& p : pending) {
      const bool wait = p.retry_ns > before;
      fds.push_back({p.fd, static_cast<short>(wait ? 0 : POLLIN), 0});
      if (wait) timeout_ms = std::min(timeout_ms, 2);
    }
    int rc = ::poll(fds.data(), fds.size(), timeout_ms);
    if (rc < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // Stop
    const int64_t now = MonotonicNanos();
    std::vector<Pending> still;
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      const short ev = fds[i + 2].revents;
      if (ev == 0) {
        if (now > p.deadline_ns) {
          ::close(p.fd);
        } else {
          still.push_back(p);
        }
        continue;
      }
      char buf[kH2Preface.size()];
      const ssize_t n = ::recv(p.fd, buf, sizeof(buf), MSG_PEEK);
      if (n <= 0) {
        ::close(p.fd);  // closed (or failed) before saying anything
        continue;
      }
      const ConnKind kind = ClassifyFirstBytes(std::string_view(buf, static_cast<size_t>(n)));
      if (kind == ConnKind::kUndecided) {
        p.retry_ns = now + 2'000'000;
        still.push_back(p);
        continue;
      }
      Route(p, kind);
    }
    pending.swap(still);
    if (fds[1].revents & POLLIN) {
      for (;;) {
        sockaddr_storage ss{};
        socklen_t sl = sizeof(ss);
        int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &sl,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN, or out of descriptors (retried on the next wakeup)
        // As gRPC and the HTTP server set on the sockets they accept: small
        // frames (HTTP/2 SETTINGS, acks, responses) must not wait for Nagle.
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        char host[INET6_ADDRSTRLEN] = {0};
        if (ss.ss_family == AF_INET) {
          inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, host, sizeof(host));
        } else {
          inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, host, sizeof(host));
        }
        pending.push_back({fd, host, now + kSniffTimeoutNs});
      }
    }
  }
  for (Pending& p : pending) ::close(p.fd);
}

Server::Server(vector::CollectionManager* manager, ServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->manager = manager;
  impl_->opts = std::move(options);
}

Server::~Server() { Stop(); }

Status Server::Start() {
  Impl& im = *impl_;
  STRATA_RETURN_IF_ERROR(im.Listen());
  im.auth = std::make_unique<Authenticator>(im.opts.auth);
  im.service = std::make_unique<MilvusServiceImpl>(im.manager);
  grpc::ServerBuilder b;
  b.SetMaxReceiveMessageSize(static_cast<int>(im.opts.max_message_bytes));
  b.SetMaxSendMessageSize(static_cast<int>(im.opts.max_message_bytes));
  // The SDKs ping every 10 s, with or without calls in flight (the Node
  // SDK: keepalive_time 10 s, permit_without_calls); Milvus's server allows
  // pings 5 s apart without streams. gRPC's defaults (5 min, 2 strikes)
  // would answer them with GOAWAY and drop the calls in flight, which the
  // SDKs then retry: a retried Insert stores its rows twice.
  b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Pollers left free while handlers run long writes, so that HTTP/2 pings
  // are acknowledged within the SDKs' keepalive timeout (5 s).
  b.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 4);
  b.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 8);
  if (im.auth->enabled()) {
    im.guarded = std::make_unique<GuardedService>(im.service.get(), im.auth.get());
    b.RegisterService(im.guarded.get());
  } else {
    b.RegisterService(im.service.get());
  }
  im.grpc_server = b.BuildAndStart();  // no ports: connections come from AcceptLoop
  if (!im.grpc_server) {
    Stop();
    return Status::Internal("cannot start the Milvus gRPC server");
  }
  if (im.opts.rest) {
    im.rest = std::make_unique<RestHandler>(im.service.get(), im.auth.get());
    http::ServerOptions h = im.opts.http;
    h.name = "milvus-rest";
    h.listen = false;
    h.tls_cert_file.clear();
    h.tls_key_file.clear();
    im.http = http::FrontendServer(h, im.rest.get());
    if (Status st = im.http->Start(); !st.ok()) {
      Stop();
      return st;
    }
  }
  if (::pipe2(im.wake_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    Stop();
    return Status::FromErrno(e, "pipe2");
  }
  im.acceptor = std::thread([&im] { im.AcceptLoop(); });
  kLog.Info("Milvus API (gRPC{}) listening on {} (port {}){}", im.opts.rest ? " and REST v2" : "",
            im.opts.address, im.port, im.auth->enabled() ? ", authentication on" : "");
  return Status::Ok();
}

void Server::Stop() {
  Impl& im = *impl_;
  if (im.acceptor.joinable()) {
    (void)!::write(im.wake_pipe[1], "x", 1);
    im.acceptor.join();
  }
  for (int& fd : im.wake_pipe) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  if (im.listen_fd >= 0) {
    ::close(im.listen_fd);
    im.listen_fd = -1;
  }
  if (im.http) im.http->Stop(2000);
  if (im.grpc_server) {
    im.grpc_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    im.grpc_server->Wait();
  }
  im.http.reset();
  im.rest.reset();
  im.grpc_server.reset();
  im.guarded.reset();
  im.service.reset();
  im.auth.reset();
  im.port = 0;
}

int Server::port() const { return impl_->port; }

}  // namespace strata::milvus
