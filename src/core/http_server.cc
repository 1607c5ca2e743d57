#include <strata/core/http_server.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

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

// Never-used connections closed per eviction scan when a limit is reached:
// one scan of the open connections pays for several accepts under a flood.
constexpr int kEvictBatch = 16;

uint64_t WaitOf(uint64_t state) { return state & Connection::kWaitMask; }
bool Parked(uint64_t wait) {
  return wait >= Connection::kWaitFirst && wait <= Connection::kWaitNext;
}
// Idle without a byte of a request: closing it loses nothing the client sent.
bool Evictable(uint64_t wait) {
  return wait == Connection::kWaitFirst || wait == Connection::kWaitNext;
}

// True at most once per interval (for warnings a flood would repeat).
bool Every(std::atomic<int64_t>& last_ns, int64_t interval_ns) {
  const int64_t now = MonotonicNanos();
  int64_t last = last_ns.load(std::memory_order_relaxed);
  return now - last >= interval_ns && last_ns.compare_exchange_strong(last, now);
}

}  // namespace

struct Server::Impl {
  ServerOptions opts;
  Handler handler;
  int listen_fd = -1;  // set by Start; closed by Stop once the workers are gone
  int epoll_fd = -1;
  int bound_port = 0;
  SSL_CTX* ssl_ctx = nullptr;
  std::atomic<bool> running{false};
  std::vector<std::thread> workers;
  std::thread sweeper;

  std::mutex conns_mu;
  std::unordered_set<Connection*> conns;  // guarded by conns_mu
  std::unordered_map<std::string, int>
      per_ip;  // slots held per remote address; guarded by conns_mu
  // Connections counted against max_connections: admitted and not yet claimed
  // for closing. Changed under conns_mu; read without it.
  std::atomic<int> slots{0};
  std::condition_variable sweeper_cv;  // with conns_mu

  // Taking the listener out of epoll and putting it back; acquired before
  // conns_mu when both are held.
  std::mutex accept_mu;
  std::atomic<bool> accept_paused{false};  // written under accept_mu
  std::atomic<int64_t> last_pause_log{0}, last_reject_log{0};

  std::atomic<uint64_t> accepted{0}, rejected{0}, evicted{0}, requests{0}, header_timeouts{0},
      idle_timeouts{0}, accept_pauses{0};
  std::atomic<int> open{0};

  void WorkerLoop();
  void AcceptAll();
  void Admit(int fd, const std::string& host);
  bool MakeRoom();
  int EvictLocked(const std::string* remote, int want, int extra);
  void ClaimLocked(Connection* c);
  void ReleaseSlotLocked(Connection* c);
  void Reject(Connection* c, int have);
  void PauseAccept(bool for_slots);
  void ResumeAccept();
  void Serve(Connection* c);
  void Park(Connection* c);
  void ParkAndArm(Connection* c, uint32_t events, int op);
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
  s.connections_evicted = impl_->evicted.load();
  s.requests = impl_->requests.load();
  s.header_timeouts = impl_->header_timeouts.load();
  s.idle_timeouts = impl_->idle_timeouts.load();
  s.accept_pauses = impl_->accept_pauses.load();
  s.open_connections = impl_->open.load();
  s.accept_paused = impl_->accept_paused.load();
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
  if (!im.opts.listen) {
    // Connections arrive through Adopt (a frontend that shares its port).
    im.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (im.epoll_fd < 0) return Status::FromErrno(errno, "epoll_create1");
    StartWorkers();
    return Status::Ok();
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
  // A deep backlog: at the connection limit new connections wait here (the
  // kernel truncates it to net.core.somaxconn).
  if (::listen(fd, 65535) != 0) {
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
  StartWorkers();
  return Status::Ok();
}

void Server::StartWorkers() {
  Impl& im = *impl_;
  im.running = true;
  int n = im.opts.threads;
  if (n <= 0) n = std::max(8, 4 * static_cast<int>(std::thread::hardware_concurrency()));
  for (int i = 0; i < n; ++i) im.workers.emplace_back([&im] { im.WorkerLoop(); });
  im.sweeper = std::thread([&im] { im.SweepLoop(); });
}

Status Server::Adopt(int fd, const std::string& remote_addr) {
  Impl& im = *impl_;
  if (!im.running.load()) {
    ::close(fd);
    return Status::Unavailable(im.opts.name + ": the server is not running");
  }
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    const int e = errno;
    ::close(fd);
    return Status::FromErrno(e, "fcntl");
  }
  if (!im.MakeRoom()) {
    ::close(fd);
    return Status::ResourceExhausted(im.opts.name +
                                     ": at --max-connections with none idle; connection closed");
  }
  im.Admit(fd, remote_addr);
  return Status::Ok();
}

void Server::Stop(int grace_ms) {
  Impl& im = *impl_;
  if (!im.running.exchange(false)) return;
  {
    // Stop listening now (new connections are refused) but keep the
    // descriptor until the workers are gone: one may be in accept4 on it.
    std::lock_guard<std::mutex> lock(im.accept_mu);
    if (im.listen_fd >= 0) {
      if (!im.accept_paused.load()) epoll_ctl(im.epoll_fd, EPOLL_CTL_DEL, im.listen_fd, nullptr);
      ::shutdown(im.listen_fd, SHUT_RDWR);
    }
  }
  // Wake parked connections so workers close them; busy ones finish their request.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(im.conns_mu);
      for (Connection* c : im.conns)
        if (WaitOf(c->state_.load()) != Connection::kBusy) ::shutdown(c->fd(), SHUT_RDWR);
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
    im.per_ip.clear();
    im.slots = 0;
  }
  if (im.listen_fd >= 0) {
    ::close(im.listen_fd);
    im.listen_fd = -1;
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
  // Several workers may accept at once (EPOLLEXCLUSIVE can wake more than
  // one); one acceptor at a time was measured slower under a flood on busy
  // cores (p99 of new connections 46-92 ms against 9-29 ms). The price: at the
  // limit two may each close an idle connection for one that was waiting.
  for (;;) {
    if (!running.load(std::memory_order_relaxed)) return;
    if (slots.load() >= opts.max_connections) {
      // Full: close idle connections only for one that is waiting.
      pollfd p{listen_fd, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return;
      if (!MakeRoom()) {
        PauseAccept(/*for_slots=*/true);
        return;
      }
    }
    sockaddr_storage ss{};
    socklen_t sl = sizeof(ss);
    int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &sl,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the pending connection stays in the backlog (a
        // level-triggered listener would wake every worker in a loop), idle
        // connections are closed for room, and a close or the sweeper resumes.
        const int e = errno;
        {
          std::lock_guard<std::mutex> lock(conns_mu);
          EvictLocked(nullptr, 1, kEvictBatch - 1);
        }
        if (Every(last_pause_log, 10'000'000'000))
          kLog.Warn(
              "{}: cannot accept a connection: {} ({} open; raise ulimit -n or lower "
              "--max-connections)",
              opts.name, std::strerror(e), open.load());
        PauseAccept(/*for_slots=*/false);
      }
      return;  // EAGAIN or a transient error: try again on the next wakeup
    }
    char host[INET6_ADDRSTRLEN] = {0};
    if (ss.ss_family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, host, sizeof(host));
    else
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, host, sizeof(host));
    Admit(fd, host);
  }
}

// A connection accepted here or handed over by Adopt: counted against the
// limits, then parked until its first bytes.
void Server::Impl::Admit(int fd, const std::string& host) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  SSL* ssl = nullptr;
  if (ssl_ctx != nullptr) {
    ssl = SSL_new(ssl_ctx);
    SSL_set_fd(ssl, fd);
    SSL_set_accept_state(ssl);
  }
  auto* c = new Connection(fd, ssl, host, &opts);
  c->accepted_ns_ = MonotonicNanos();
  c->head_started_ns_ = c->accepted_ns_;
  int over_cap = 0;  // > 0: this address's open connections, all busy
  {
    std::lock_guard<std::mutex> lock(conns_mu);
    const int cap = opts.max_connections_per_ip;
    if (cap > 0) {
      auto it = per_ip.find(c->remote());
      const int have = it == per_ip.end() ? 0 : it->second;
      if (have >= cap) {
        const int need = have - cap + 1;
        if (EvictLocked(&c->remote(), need, kEvictBatch - 1) < need) over_cap = have;
      }
    }
    if (over_cap == 0) {
      c->slot_held_ = true;
      slots.fetch_add(1);
      ++per_ip[c->remote()];
      conns.insert(c);
    }
  }
  if (over_cap > 0) {
    Reject(c, over_cap);
    return;
  }
  accepted.fetch_add(1);
  open.fetch_add(1);
  ParkAndArm(c, EPOLLIN, EPOLL_CTL_ADD);
}

// True when a connection may be admitted: a slot is free, or idle connections
// were claimed for closing to free one.
bool Server::Impl::MakeRoom() {
  if (slots.load() < opts.max_connections) return true;
  std::lock_guard<std::mutex> lock(conns_mu);
  const int need = slots.load() - opts.max_connections + 1;
  if (need <= 0) return true;
  return EvictLocked(nullptr, need, kEvictBatch - 1) >= need;
}

// Claims up to `want` idle connections (of `remote` only, when given) for
// closing, and up to `extra` more that were never used (one scan then pays
// for several accepts under a flood): never-used ones before keep-alive ones,
// the longest idle first; one whose request bytes wait unread is not idle.
// Returns how many. Their slots are free at once; the worker that wakes for
// each (shutdown makes epoll report it) closes it.
int Server::Impl::EvictLocked(const std::string* remote, int want, int extra) {
  struct Candidate {
    uint64_t state;
    int64_t since;
    Connection* c;
  };
  std::vector<Candidate> cands;
  for (Connection* c : conns) {
    const uint64_t st = c->state_.load(std::memory_order_acquire);
    if (!Evictable(WaitOf(st)) || (remote != nullptr && c->remote() != *remote)) continue;
    cands.push_back({st, c->idle_since_ns_.load(std::memory_order_relaxed), c});
  }
  auto older = [](const Candidate& a, const Candidate& b) {
    const uint64_t wa = WaitOf(a.state), wb = WaitOf(b.state);
    return wa != wb ? wa == Connection::kWaitFirst : a.since < b.since;
  };
  // A few more than needed: a candidate served meanwhile is skipped.
  const size_t take = std::min(cands.size(), static_cast<size_t>(want + extra) * 2);
  std::partial_sort(cands.begin(), cands.begin() + static_cast<ptrdiff_t>(take), cands.end(),
                    older);
  int won = 0;
  for (size_t i = 0; i < cands.size() && won < want + extra; ++i) {
    if (i == take) {  // rare: many were served meanwhile; order the rest too
      std::sort(cands.begin() + static_cast<ptrdiff_t>(take), cands.end(), older);
    }
    // Beyond `want`, only never-used ones: a keep-alive connection is closed
    // only when its slot is needed.
    if (won >= want && WaitOf(cands[i].state) != Connection::kWaitFirst) break;
    Connection* c = cands[i].c;
    uint64_t expect = cands[i].state;
    const uint64_t closing = (expect & ~Connection::kWaitMask) | Connection::kClosing;
    if (!c->state_.compare_exchange_strong(expect, closing, std::memory_order_acq_rel)) continue;
    // Bytes in its socket buffer: a request (or a TLS hello) arrived that no
    // worker has read yet; under a flood that can take a while. Not idle:
    // hand it back, unless its worker already saw the claim (then it closes).
    int pending = 0;
    if (::ioctl(c->fd(), FIONREAD, &pending) == 0 && pending > 0) {
      uint64_t claimed = closing;
      if (c->state_.compare_exchange_strong(claimed, cands[i].state, std::memory_order_acq_rel))
        continue;
    }
    ClaimLocked(c);
    evicted.fetch_add(1);
    ++won;
  }
  return won;
}

// The connection was claimed (its state set to kClosing): give back its slot
// and wake the worker that will close it.
void Server::Impl::ClaimLocked(Connection* c) {
  ReleaseSlotLocked(c);
  ::shutdown(c->fd(), SHUT_RDWR);
}

void Server::Impl::ReleaseSlotLocked(Connection* c) {
  if (!c->slot_held_) return;
  c->slot_held_ = false;
  slots.fetch_sub(1);
  auto it = per_ip.find(c->remote());
  if (it != per_ip.end() && --it->second <= 0) per_ip.erase(it);
}

// A new connection over max_connections_per_ip while all of that address's
// connections are busy: 503 (plain HTTP; a TLS client gets a close), then close.
void Server::Impl::Reject(Connection* c, int have) {
  rejected.fetch_add(1);
  if (Every(last_reject_log, 10'000'000'000))
    kLog.Warn(
        "{}: refused a connection from {}: {} connections from it are open and busy "
        "(--max-connections-per-ip {})",
        opts.name, c->remote(), have, opts.max_connections_per_ip);
  if (c->ssl() == nullptr) {
    ResponseWriter w(c);
    w.AddHeader("Retry-After", "1");
    SendLayerError(opts, w, 503,
                   "too many connections from " + c->remote() + " (" +
                       std::to_string(opts.max_connections_per_ip) +
                       " per address, all busy); retry later");
  }
  delete c;
}

void Server::Impl::PauseAccept(bool for_slots) {
  std::lock_guard<std::mutex> lock(accept_mu);
  if (accept_paused.load() || !running.load() || listen_fd < 0) return;
  epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
  accept_paused.store(true);
  accept_pauses.fetch_add(1);
  // A slot freed between MakeRoom and here saw accept_paused false and did not
  // resume; seeing it here is guaranteed (both sides are seq_cst). A
  // connection parked idle meanwhile is found by a second MakeRoom (and any
  // left over by the sweeper's next tick).
  if (for_slots && MakeRoom()) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLEXCLUSIVE;
    ev.data.ptr = nullptr;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
    accept_paused.store(false);
    return;
  }
  if (for_slots && Every(last_pause_log, 10'000'000'000))
    kLog.Warn(
        "{}: {} connections open and none idle (--max-connections): new connections "
        "wait in the listen backlog",
        opts.name, open.load());
}

void Server::Impl::ResumeAccept() {
  std::lock_guard<std::mutex> lock(accept_mu);
  if (!accept_paused.load() || !running.load() || listen_fd < 0) return;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLEXCLUSIVE;
  ev.data.ptr = nullptr;  // nullptr = the listener
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
  accept_paused.store(false);
}

// Hands the connection back to epoll's watch (the caller re-arms it): which
// wait it is in, and when that wait expires.
void Server::Impl::Park(Connection* c) {
  const int64_t now = MonotonicNanos();
  const int64_t header_ns = int64_t{opts.header_timeout_ms} * 1'000'000;
  uint64_t wait;
  int64_t deadline;
  int64_t since = now;
  if (c->rpos_ < c->wpos_) {
    wait = Connection::kWaitHead;
    deadline = c->head_started_ns_ + header_ns;
  } else if (c->requests_started_ == 0) {
    // Nothing yet (or a TLS handshake under way): the head's clock started at accept.
    wait = Connection::kWaitFirst;
    deadline = c->accepted_ns_ + header_ns;
    since = c->accepted_ns_;
  } else {
    wait = Connection::kWaitNext;
    deadline = now + int64_t{opts.idle_timeout_ms} * 1'000'000;
  }
  c->deadline_ns_.store(deadline, std::memory_order_relaxed);
  c->idle_since_ns_.store(since, std::memory_order_relaxed);
  // Only this worker changes a busy connection's state: a plain store.
  const uint64_t parks = (c->state_.load(std::memory_order_relaxed) >> 3) + 1;
  c->state_.store((parks << 3) | wait, std::memory_order_release);
  // Accepting stopped for want of an idle connection to close: here is one.
  if (Evictable(wait) && accept_paused.load(std::memory_order_relaxed)) ResumeAccept();
}

// Parks the connection and hands it to epoll for `events`. Once parked it may
// be claimed, and once armed another worker may close it: nothing of it is
// read after Park.
void Server::Impl::ParkAndArm(Connection* c, uint32_t events, int op) {
  const int fd = c->fd();
  epoll_event ev{};
  ev.events = events | EPOLLRDHUP | EPOLLONESHOT;
  ev.data.ptr = c;
  Park(c);
  epoll_ctl(epoll_fd, op, fd, &ev);
}

void Server::Impl::CloseConn(Connection* c) {
  {
    std::lock_guard<std::mutex> lock(conns_mu);
    conns.erase(c);
    ReleaseSlotLocked(c);
  }
  epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd(), nullptr);
  open.fetch_sub(1);
  delete c;
  if (accept_paused.load()) ResumeAccept();
}

void Server::Impl::SweepLoop() {
  // Ticks fine enough for short test timeouts, at most 4 per second.
  const int tick_ms =
      std::clamp(std::min(opts.header_timeout_ms, opts.idle_timeout_ms) / 5, 20, 250);
  std::unique_lock<std::mutex> lock(conns_mu);
  while (running.load()) {
    sweeper_cv.wait_for(lock, std::chrono::milliseconds(tick_ms));
    const int64_t now = MonotonicNanos();
    for (Connection* c : conns) {
      uint64_t st = c->state_.load(std::memory_order_acquire);
      const uint64_t wait = WaitOf(st);
      if (!Parked(wait) || c->deadline_ns_.load(std::memory_order_relaxed) >= now) continue;
      if (!c->state_.compare_exchange_strong(
              st, (st & ~Connection::kWaitMask) | Connection::kClosing, std::memory_order_acq_rel))
        continue;  // served meanwhile
      (wait == Connection::kWaitNext ? idle_timeouts : header_timeouts).fetch_add(1);
      ClaimLocked(c);
    }
    // A safety net for pauses nothing else ends (out of descriptors).
    if (accept_paused.load()) {
      lock.unlock();
      ResumeAccept();
      lock.lock();
    }
  }
}

void Server::Impl::Serve(Connection* c) {
  // Busy, keeping the park count (see Park); unless claimed for closing.
  uint64_t was = c->state_.load(std::memory_order_acquire);
  while (WaitOf(was) != Connection::kClosing &&
         !c->state_.compare_exchange_weak(was, (was & ~Connection::kWaitMask) | Connection::kBusy,
                                          std::memory_order_acq_rel)) {
  }
  if (WaitOf(was) == Connection::kClosing) {  // claimed by the sweeper or an eviction
    CloseConn(c);
    return;
  }
  if (c->ssl() != nullptr && !c->handshake_done_) {
    int r = core_internal::WithoutSigpipe([&] { return SSL_do_handshake(c->ssl()); });
    if (r != 1) {
      int e = SSL_get_error(c->ssl(), r);
      if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) && running.load()) {
        ParkAndArm(c, e == SSL_ERROR_WANT_WRITE ? EPOLLOUT : EPOLLIN, EPOLL_CTL_MOD);
        return;
      }
      CloseConn(c);
      return;
    }
    c->handshake_done_ = true;
  }
  c->EnsureBuffer();
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
      // A later request's head is timed from its first byte; the first one's from accept.
      if (c->rpos_ == c->wpos_ && c->requests_started_ > 0) c->head_started_ns_ = MonotonicNanos();
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
      ParkAndArm(c, c->want_write_ ? EPOLLOUT : EPOLLIN, EPOLL_CTL_MOD);
      return;
    }
    ++c->requests_started_;
    requests.fetch_add(1, std::memory_order_relaxed);
    if (!ServeOneRequest(c, opts, handler) || !running.load(std::memory_order_relaxed)) {
      CloseConn(c);
      return;
    }
    // Pipelined bytes of the next head: its clock starts now.
    if (c->rpos_ < c->wpos_) c->head_started_ns_ = MonotonicNanos();
  }
}

}  // namespace strata::http
