#include <strata/core/http_server.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <strata/core/strings.h>

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
  void StartServer(ServerOptions o = {}) {
    o.threads = 4;
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

TEST_F(HttpServerTest, ConnectionLimit) {
  ServerOptions o;
  o.max_connections = 2;
  StartServer(o);
  Client a(server_->port()), b(server_->port());
  a.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  b.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(a.ReadResponse().find("200"), std::string::npos);
  EXPECT_NE(b.ReadResponse().find("200"), std::string::npos);
  Client c(server_->port());
  EXPECT_NE(c.ReadUntil("\r\n\r\n").find("503"), std::string::npos);
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
