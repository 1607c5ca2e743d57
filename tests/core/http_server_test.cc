#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/http_server.h>
#include <strata/core/strings.h>

#include "testutil/testutil.h"

namespace strata::http {
namespace {

// A blocking test client on one TCP connection.
class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~Client() { ::close(fd_); }
  bool connected() const { return connected_; }
  void Send(std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      s.remove_prefix(static_cast<size_t>(n));
    }
  }
  // Reads until `want` appears or the peer closes or timeout; returns what came.
  std::string ReadUntil(std::string_view want, int timeout_ms = 3000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (buf_.find(want) == std::string::npos) {
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now())
                                      .count());
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, left) <= 0) break;
      char tmp[65536];
      ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      buf_.append(tmp, static_cast<size_t>(n));
    }
    size_t pos = buf_.find(want);
    std::string out;
    if (pos == std::string::npos) {
      out.swap(buf_);
    } else {
      out = buf_.substr(0, pos + want.size());
      buf_.erase(0, pos + want.size());
    }
    return out;
  }
  // Reads one response with a Content-Length body.
  std::string ReadResponse() {
    std::string head = ReadUntil("\r\n\r\n");
    size_t cl = head.find("Content-Length: ");
    if (cl == std::string::npos) return head;
    size_t n = std::stoul(head.substr(cl + 16));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (buf_.size() < n && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char tmp[65536];
      ssize_t r = ::recv(fd_, tmp, sizeof(tmp), 0);
      if (r <= 0) break;
      buf_.append(tmp, static_cast<size_t>(r));
    }
    std::string body = buf_.substr(0, n);
    buf_.erase(0, std::min(n, buf_.size()));
    return head + body;
  }
  // True when the server closes the connection within timeout_ms.
  bool WaitClosed(int timeout_ms) {
    ReadUntil("\x01\x02never", timeout_ms);
    return closed_;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
  std::string buf_;
};

// Echoes the request body; "/method" answers the method; "/reject" answers 403 unread;
// "/head" streams 10 bytes with BeginBody.
void EchoHandler(Request& req, ResponseWriter& w) {
  if (req.path == "/reject") {
    w.SetStatus(403);
    (void)w.Send("no");
    return;
  }
  if (req.path == "/head") {
    (void)w.BeginBody(10);
    (void)w.Write("0123456789", 10);
    return;
  }
  auto body = req.ReadAllBody(1 << 20);
  if (!body.ok()) {
    w.SetStatus(400);
    (void)w.Send(body.error().ToString());
    return;
  }
  w.AddHeader("X-Method", req.method);
  (void)w.Send(*body);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions o = {}, int threads = 4) {
    o.threads = threads;
    server_ = std::make_unique<Server>(o, EchoHandler);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (server_) server_->Stop(1000);
  }
  std::unique_ptr<Server> server_;
};

TEST_F(HttpServerTest, KeepAliveAndPipelining) {
  StartServer();
  Client c(server_->port());
  ASSERT_TRUE(c.connected());
  c.Send("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
  std::string r1 = c.ReadResponse();
  EXPECT_NE(r1.find("HTTP/1.1 200 OK"), std::string::npos) << r1;
  EXPECT_NE(r1.find("hello"), std::string::npos);
  // Two pipelined requests in one write, on the same connection.
  c.Send("POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /c HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string r2 = c.ReadResponse();
  std::string r3 = c.ReadResponse();
  EXPECT_NE(r2.find("abc"), std::string::npos) << r2;
  EXPECT_NE(r3.find("X-Method: GET"), std::string::npos) << r3;
}

TEST_F(HttpServerTest, ChunkedRequestBody) {
  StartServer();
  Client c(server_->port());
  c.Send("PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
         "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n");
  std::string r = c.ReadResponse();
  EXPECT_NE(r.find("hello world"), std::string::npos) << r;
  // Bad framing -> 400 from the handler's read error.
  c.Send("PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
  std::string bad = c.ReadResponse();
  EXPECT_NE(bad.find("400"), std::string::npos) << bad;
}

TEST_F(HttpServerTest, ExpectContinueIsAnsweredWhenTheBodyIsRead) {
  StartServer();
  Client c(server_->port());
  c.Send("PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
  std::string cont = c.ReadUntil("\r\n\r\n", 2000);
  EXPECT_NE(cont.find("100 Continue"), std::string::npos) << cont;
  c.Send("data");
  std::string r = c.ReadResponse();
  EXPECT_NE(r.find("200 OK"), std::string::npos);
  EXPECT_NE(r.find("data"), std::string::npos);
}

TEST_F(HttpServerTest, ExpectContinueRejectedWithoutReadingTheBody) {
  StartServer();
  Client c(server_->port());
  c.Send("PUT /reject HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n");
  std::string r = c.ReadResponse();
  EXPECT_NE(r.find("403"), std::string::npos) << r;
  EXPECT_EQ(r.find("100 Continue"), std::string::npos) << r;
  EXPECT_TRUE(c.WaitClosed(2000));  // the unread body makes the connection unusable
}

TEST_F(HttpServerTest, HeadSendsNoBody) {
  StartServer();
  Client c(server_->port());
  c.Send("HEAD /head HTTP/1.1\r\nHost: x\r\n\r\nGET /head HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string head = c.ReadUntil("\r\n\r\n");
  EXPECT_NE(head.find("Content-Length: 10"), std::string::npos) << head;
  std::string get = c.ReadResponse();
  EXPECT_EQ(get.substr(0, 15), "HTTP/1.1 200 OK") << get;  // no stray body before it
  EXPECT_NE(get.find("0123456789"), std::string::npos);
}

TEST_F(HttpServerTest, OversizedHeaderGets431) {
  ServerOptions o;
  o.max_header_bytes = 4096;
  StartServer(o);
  Client c(server_->port());
  c.Send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n");
  std::string r = c.ReadUntil("\r\n\r\n");
  EXPECT_NE(r.find("431"), std::string::npos) << r;
  EXPECT_TRUE(c.WaitClosed(2000));
}

TEST_F(HttpServerTest, MalformedRequestsGet400AndServerKeepsServing) {
  StartServer();
  {
    Client c(server_->port());
    c.Send("garbage\r\n\r\n");
    EXPECT_NE(c.ReadUntil("\r\n\r\n").find("400"), std::string::npos);
  }
  {
    Client c(server_->port());
    c.Send("GET / HTTP/1.1\r\nno colon here\r\n\r\n");
    EXPECT_NE(c.ReadUntil("\r\n\r\n").find("400"), std::string::npos);
  }
  {
    Client c(server_->port());
    c.Send("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n");
    EXPECT_NE(c.ReadUntil("\r\n\r\n").find("400"), std::string::npos);
  }
  Client ok(server_->port());
  ok.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(ok.ReadResponse().find("200 OK"), std::string::npos);
}

TEST_F(HttpServerTest, SlowLorisIsCutOffWhileOthersAreServed) {
  ServerOptions o;
  o.header_timeout_ms = 500;
  StartServer(o);
  Client slow(server_->port());
  slow.Send("GET / HTTP/1.1\r\n");
  std::thread trickle([&] {
    for (int i = 0; i < 10; ++i) {
      slow.Send("X");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  // Meanwhile a normal client is served at once.
  Client fast(server_->port());
  fast.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(fast.ReadResponse().find("200 OK"), std::string::npos);
  EXPECT_TRUE(slow.WaitClosed(3000));
  trickle.join();
  EXPECT_GE(server_->GetStats().header_timeouts, 1u);
}

// Milliseconds since t0.
int64_t MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               t0)
      .count();
}

constexpr std::string_view kGet = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

// A connection that sends nothing is closed after the header timeout, counted
// from accept; the (much longer) idle timeout is for keep-alive connections
// between requests. This was the starvation defect: silent connections held
// their slot for the 60 s idle timeout.
TEST_F(HttpServerTest, SilentConnectionIsClosedAtTheHeaderTimeoutNotTheIdleTimeout) {
  ServerOptions o;
  o.header_timeout_ms = 400;
  o.idle_timeout_ms = 60'000;
  StartServer(o);
  const auto t0 = std::chrono::steady_clock::now();
  Client silent(server_->port());
  ASSERT_TRUE(silent.connected());
  EXPECT_TRUE(silent.WaitClosed(5000));
  const int64_t ms = MsSince(t0);
  EXPECT_GE(ms, 350) << "closed before its header timeout";
  EXPECT_LT(ms, 5000);
  EXPECT_EQ(server_->GetStats().header_timeouts, 1u);
  EXPECT_EQ(server_->GetStats().idle_timeouts, 0u);
}

// The first head's clock starts at accept, not at its first byte: waiting
// before sending does not buy a fresh header timeout.
TEST_F(HttpServerTest, HeaderClockStartsAtAccept) {
  ServerOptions o;
  o.header_timeout_ms = 1500;
  StartServer(o);
  const auto t0 = std::chrono::steady_clock::now();
  Client slow(server_->port());
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  slow.Send("GET / HTTP/1.1\r\n");
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop.load()) {
      slow.Send("X");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  EXPECT_TRUE(slow.WaitClosed(5000));
  const int64_t ms = MsSince(t0);
  stop = true;
  trickle.join();
  // From the first byte it would be closed at 2.5 s.
  EXPECT_LT(ms, 2300);
  EXPECT_GE(ms, 1400);
  EXPECT_EQ(server_->GetStats().header_timeouts, 1u);
}

// The header timeout includes the TLS handshake: a TLS connection that sends
// nothing, or only the start of a ClientHello, is closed by it.
TEST_F(HttpServerTest, HeaderTimeoutCoversTheTlsHandshake) {
  strata::testing::TempDir dir;
  const std::string cert = dir.Join("cert.pem"), key = dir.Join("key.pem");
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                          "-keyout " + key + " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl CLI failed";
  ServerOptions o;
  o.tls_cert_file = cert;
  o.tls_key_file = key;
  o.header_timeout_ms = 400;
  StartServer(o);
  const auto t0 = std::chrono::steady_clock::now();
  Client silent(server_->port()), partial(server_->port());
  partial.Send(std::string("\x16\x03\x01\x00\xc8\x01", 6));  // a ClientHello's first bytes
  EXPECT_TRUE(silent.WaitClosed(5000));
  EXPECT_TRUE(partial.WaitClosed(5000));
  EXPECT_LT(MsSince(t0), 5000);
  EXPECT_EQ(server_->GetStats().header_timeouts, 2u);
}

// A slow-loris sending one header byte per second is closed at the header
// deadline, however steadily it sends; other clients are served meanwhile.
TEST_F(HttpServerTest, SlowLorisOneBytePerSecondIsClosedAtTheHeaderDeadline) {
  ServerOptions o;
  o.header_timeout_ms = 2500;
  StartServer(o);
  const auto t0 = std::chrono::steady_clock::now();
  Client slow(server_->port());
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    const std::string head = "GET /slow HTTP/1.1\r\nHost: x\r\nX-Pad: aaaaaaaaaaaaaaaaaaaa";
    for (size_t i = 0; i < head.size() && !stop.load(); ++i) {
      slow.Send(head.substr(i, 1));
      for (int k = 0; k < 10 && !stop.load(); ++k)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  Client fast(server_->port());
  fast.Send(kGet);
  EXPECT_NE(fast.ReadResponse().find("200 OK"), std::string::npos);
  EXPECT_TRUE(slow.WaitClosed(8000));
  const int64_t ms = MsSince(t0);
  stop = true;
  trickle.join();
  EXPECT_GE(ms, 2400);
  EXPECT_LT(ms, 4500);
  EXPECT_EQ(server_->GetStats().header_timeouts, 1u);
}

// After a first request, the idle timeout applies between requests: a pause
// longer than the header timeout is fine, one longer than the idle timeout
// closes the connection.
TEST_F(HttpServerTest, IdleTimeoutAppliesBetweenRequests) {
  ServerOptions o;
  o.header_timeout_ms = 300;
  o.idle_timeout_ms = 1500;
  StartServer(o);
  Client c(server_->port());
  c.Send(kGet);
  EXPECT_NE(c.ReadResponse().find("200 OK"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // > header timeout
  c.Send(kGet);
  EXPECT_NE(c.ReadResponse().find("200 OK"), std::string::npos);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.WaitClosed(5000));
  const int64_t ms = MsSince(t0);
  EXPECT_GE(ms, 1400);
  EXPECT_LT(ms, 4000);
  EXPECT_EQ(server_->GetStats().idle_timeouts, 1u);
  EXPECT_EQ(server_->GetStats().header_timeouts, 0u);
}

// Idle connections are parked in epoll and hold no worker thread: with one
// worker and a hundred silent or half-sent connections, a request is served.
TEST_F(HttpServerTest, WaitingConnectionsHoldNoThread) {
  server_ = std::make_unique<Server>(
      [] {
        ServerOptions o;
        o.threads = 1;
        return o;
      }(),
      EchoHandler);
  ASSERT_TRUE(server_->Start().ok());
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 100; ++i) {
    idle.push_back(std::make_unique<Client>(server_->port()));
    if (i % 2 == 0) idle.back()->Send("GET / HTTP/1.1\r\nHost:");
  }
  Client c(server_->port());
  c.Send(kGet);
  EXPECT_NE(c.ReadResponse().find("200 OK"), std::string::npos);
}

// At max_connections a new connection closes the oldest idle one: one that has
// sent nothing first, then the longest-idle keep-alive one. Nobody gets 503.
// One worker: with several, two acceptors may each close one for the same
// waiting connection (the server accepts that race for speed).
TEST_F(HttpServerTest, AtTheConnectionLimitTheOldestIdleConnectionMakesRoom) {
  ServerOptions o;
  o.max_connections = 3;
  StartServer(o, /*threads=*/1);
  Client never(server_->port());
  Client a(server_->port());
  a.Send(kGet);
  EXPECT_NE(a.ReadResponse().find("200 OK"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Client b(server_->port());
  b.Send(kGet);
  EXPECT_NE(b.ReadResponse().find("200 OK"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // b parked again
  // Full. c takes the slot of the connection that never sent anything.
  Client c(server_->port());
  c.Send(kGet);
  EXPECT_NE(c.ReadResponse().find("200 OK"), std::string::npos);
  EXPECT_TRUE(never.WaitClosed(2000));
  // d takes the slot of a, idle longest of the keep-alive ones.
  Client d(server_->port());
  d.Send(kGet);
  EXPECT_NE(d.ReadResponse().find("200 OK"), std::string::npos);
  EXPECT_TRUE(a.WaitClosed(2000));
  b.Send(kGet);
  EXPECT_NE(b.ReadResponse().find("200 OK"), std::string::npos);
  const auto st = server_->GetStats();
  EXPECT_EQ(st.connections_evicted, 2u);
  EXPECT_EQ(st.connections_rejected, 0u);
  EXPECT_EQ(st.open_connections, 3);
}

// At max_connections with every connection busy (here: mid-head), a new one
// is not accepted and answered 503; it waits in the listen backlog and is
// served once a slot frees.
TEST_F(HttpServerTest, AtTheLimitWithNothingIdleNewConnectionsWaitInTheBacklog) {
  ServerOptions o;
  o.max_connections = 2;
  StartServer(o);
  Client a(server_->port()), b(server_->port());
  a.Send("GET / HTTP/1.1\r\n");
  b.Send("GET / HTTP/1.1\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Client c(server_->port());
  ASSERT_TRUE(c.connected());  // the kernel completes it; the server does not accept it yet
  c.Send(kGet);
  EXPECT_EQ(c.ReadUntil("\r\n\r\n", 500), "");
  EXPECT_GE(server_->GetStats().accept_pauses, 1u);  // (the sweeper's tick re-checks a pause)
  a.Send("Host: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(a.ReadResponse().find("200 OK"), std::string::npos);
  EXPECT_NE(c.ReadResponse().find("200 OK"), std::string::npos);
  b.Send("Host: x\r\n\r\n");
  EXPECT_NE(b.ReadResponse().find("200 OK"), std::string::npos);
  const auto st = server_->GetStats();
  EXPECT_EQ(st.connections_rejected, 0u);
  EXPECT_GE(st.accept_pauses, 1u);
  EXPECT_FALSE(st.accept_paused);
}

// Over max_connections_per_ip, that address's oldest idle connection makes
// room; when all of its connections are busy, the new one gets 503.
TEST_F(HttpServerTest, PerAddressCap) {
  ServerOptions o;
  o.max_connections_per_ip = 2;
  StartServer(o);
  Client a(server_->port()), b(server_->port());
  a.Send("GET / HTTP/1.1\r\n");
  b.Send("GET / HTTP/1.1\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  {
    Client c(server_->port());
    std::string r = c.ReadUntil("\r\n\r\n", 2000);
    EXPECT_NE(r.find("503"), std::string::npos) << r;
    EXPECT_NE(r.find("Retry-After: 1"), std::string::npos) << r;
    EXPECT_TRUE(c.WaitClosed(2000));
  }
  EXPECT_EQ(server_->GetStats().connections_rejected, 1u);
  a.Send("Host: x\r\n\r\n");
  EXPECT_NE(a.ReadResponse().find("200 OK"), std::string::npos);
  // a is idle now (once parked): the next connection from this address closes it.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Client d(server_->port());
  d.Send(kGet);
  EXPECT_NE(d.ReadResponse().find("200 OK"), std::string::npos);
  EXPECT_TRUE(a.WaitClosed(2000));
  b.Send("Host: x\r\n\r\n");
  EXPECT_NE(b.ReadResponse().find("200 OK"), std::string::npos);
  EXPECT_EQ(server_->GetStats().connections_evicted, 1u);
  EXPECT_EQ(server_->GetStats().connections_rejected, 1u);
}

TEST_F(HttpServerTest, Http10ClosesByDefault) {
  StartServer();
  Client c(server_->port());
  c.Send("GET / HTTP/1.0\r\n\r\n");
  std::string r = c.ReadResponse();
  EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
  EXPECT_TRUE(c.WaitClosed(2000));
}

}  // namespace
}  // namespace strata::http
