#include <strata/core/http_client.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/checksum.h>
#include <strata/core/http_server.h>
#include <strata/core/strings.h>

#include "testutil/testutil.h"

namespace strata::http {
namespace {

using strata::testing::TempDir;

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (size_t i = 0; i < n; i += 4) {
    uint32_t v = rng();
    std::memcpy(&s[i], &v, std::min<size_t>(4, n - i));
  }
  return s;
}

// A source over a string, optionally rewindable, that counts reads.
class StringBody : public BodySource {
 public:
  StringBody(std::string data, bool rewindable, size_t max_read = 1 << 20)
      : data_(std::move(data)), rewindable_(rewindable), max_read_(max_read) {}
  Result<size_t> Read(char* buf, size_t n) override {
    size_t k = std::min({n, data_.size() - pos_, max_read_});
    std::memcpy(buf, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  bool Rewind() override {
    if (!rewindable_) return false;
    pos_ = 0;
    ++rewinds;
    return true;
  }
  int rewinds = 0;

 private:
  std::string data_;
  bool rewindable_;
  size_t max_read_;
  size_t pos_ = 0;
};

// The project's HTTP server with a handler that answers by path:
//   /echo      echoes the request body (Content-Length response)
//   /size      answers "<bytes>:<hex sha256>" of the body
//   /blob/N    N pattern bytes
//   /deny      403 without reading the body
class ServerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.threads = 4;
    server_ = std::make_unique<Server>(o, [this](Request& req, ResponseWriter& w) {
      ++requests_;
      std::string path(req.path);
      if (path == "/echo") {
        auto body = req.ReadAllBody(64 << 20);
        if (!body.ok()) {
          w.SetStatus(400);
          (void)w.Send(body.error().ToString());
          return;
        }
        w.AddHeader("X-Method", std::string(req.method));
        (void)w.Send(*body);
      } else if (path == "/size") {
        auto h = Hasher::Create(ChecksumAlgorithm::kSha256);
        uint64_t total = 0;
        char buf[65536];
        for (;;) {
          auto r = req.ReadBody(buf, sizeof(buf));
          if (!r.ok() || *r == 0) break;
          h->Update(buf, *r);
          total += *r;
        }
        (void)w.Send(std::to_string(total) + ":" + HexEncode(h->Digest()));
      } else if (StartsWith(path, "/blob/")) {
        size_t n = std::stoul(path.substr(6));
        std::string data = Pattern(n, 7);
        (void)w.BeginBody(n);
        for (size_t off = 0; off < n; off += 1 << 20) {
          if (!w.Write(data.data() + off, std::min<size_t>(1 << 20, n - off)).ok()) return;
        }
      } else if (path == "/deny") {
        w.SetStatus(403);
        w.CloseAfter();
        (void)w.Send("denied");
      } else {
        w.SetStatus(404);
        (void)w.Send("no such path");
      }
    });
    ASSERT_OK(server_->Start());
  }
  void TearDown() override { server_->Stop(); }

  ClientRequest Req(std::string method, std::string target) {
    ClientRequest r;
    r.method = std::move(method);
    r.host = "127.0.0.1";
    r.port = static_cast<uint16_t>(server_->port());
    r.target = std::move(target);
    return r;
  }

  std::unique_ptr<Server> server_;
  std::atomic<int> requests_{0};
};

TEST_F(ServerFixture, GetAndPutReuseOneConnection) {
  HttpClient client;
  for (int i = 0; i < 5; ++i) {
    ClientRequest r = Req("PUT", "/echo");
    std::string body = "hello " + std::to_string(i);
    r.body = body;
    ASSERT_OK_AND_ASSIGN(auto resp, client.Send(r));
    EXPECT_EQ(resp->status(), 200);
    EXPECT_EQ(resp->Header("x-method").value_or(""), "PUT");
    ASSERT_OK_AND_ASSIGN(std::string got, resp->ReadAll());
    EXPECT_EQ(got, body);
    EXPECT_TRUE(resp->body_done());
  }
  EXPECT_EQ(client.stats().connections_opened, 1u);
  EXPECT_EQ(client.stats().connections_reused, 4u);
  EXPECT_EQ(server_->GetStats().connections_accepted, 1u);
}

TEST_F(ServerFixture, UnreadBodyClosesTheConnection) {
  HttpClient client;
  {
    ASSERT_OK_AND_ASSIGN(auto resp, client.Send(Req("GET", "/blob/100000")));
    char buf[10];
    ASSERT_OK(resp->Read(buf, sizeof(buf)));
  }  // dropped mid-body: the connection cannot be reused
  ASSERT_OK_AND_ASSIGN(auto resp, client.Send(Req("GET", "/blob/10")));
  ASSERT_OK_AND_ASSIGN(std::string got, resp->ReadAll());
  EXPECT_EQ(got, Pattern(10, 7));
  EXPECT_EQ(client.stats().connections_opened, 2u);
}

TEST_F(ServerFixture, StreamsLargeBodiesBothWays) {
  HttpClient client;
  const std::string data = Pattern(24 << 20, 3);
  // Content-Length upload from a source.
  {
    StringBody src(data, false, 100000);
    ClientRequest r = Req("PUT", "/size");
    r.body_source = &src;
    r.content_length = data.size();
    ASSERT_OK_AND_ASSIGN(auto resp, client.Send(r));
    ASSERT_OK_AND_ASSIGN(std::string got, resp->ReadAll());
    EXPECT_EQ(got, std::to_string(data.size()) + ":" + HexEncode(Sha256(data)));
  }
  // Chunked upload (size unknown).
  {
    StringBody src(data, false, 77777);
    ClientRequest r = Req("PUT", "/size");
    r.body_source = &src;
    ASSERT_OK_AND_ASSIGN(auto resp, client.Send(r));
    ASSERT_OK_AND_ASSIGN(std::string got, resp->ReadAll());
    EXPECT_EQ(got, std::to_string(data.size()) + ":" + HexEncode(Sha256(data)));
  }
  // Streamed download.
  {
    ASSERT_OK_AND_ASSIGN(auto resp, client.Send(Req("GET", "/blob/" + std::to_string(20 << 20))));
    EXPECT_EQ(resp->content_length().value_or(0), 20u << 20);
    std::string got;
    size_t calls = 0;
    ASSERT_OK(resp->ReadTo([&](const char* p, size_t n) {
      ++calls;
      got.append(p, n);
      return Status::Ok();
    }));
    EXPECT_GT(calls, 10u);  // pieces, not one buffer
    EXPECT_TRUE(got == Pattern(20 << 20, 7));
  }
}

TEST_F(ServerFixture, SourceShorterThanContentLengthFails) {
  HttpClient client;
  StringBody src("short", false);
  ClientRequest r = Req("PUT", "/size");
  r.body_source = &src;
  r.content_length = 100;
  auto resp = client.Send(r);
  EXPECT_STATUS_CODE(resp, StatusCode::kInvalidArgument);
}

TEST_F(ServerFixture, ExpectContinue) {
  HttpClient client;
  const std::string data = Pattern(1 << 20, 5);
  {
    StringBody src(data, false);
    ClientRequest r = Req("PUT", "/size");
    r.body_source = &src;
    r.content_length = data.size();
    r.expect_continue = true;
    ASSERT_OK_AND_ASSIGN(auto resp, client.Send(r));
    ASSERT_OK_AND_ASSIGN(std::string got, resp->ReadAll());
    EXPECT_EQ(got, std::to_string(data.size()) + ":" + HexEncode(Sha256(data)));
  }
  {
    // The server refuses before reading: the body is never sent.
    StringBody src(data, false);
    ClientRequest r = Req("PUT", "/deny");
    r.body_source = &src;
    r.content_length = data.size();
    r.expect_continue = true;
    ASSERT_OK_AND_ASSIGN(auto resp, client.Send(r));
    EXPECT_EQ(resp->status(), 403);
    ASSERT_OK_AND_ASSIGN(std::string got, resp->ReadAll());
    EXPECT_EQ(got, "denied");
  }
}

TEST_F(ServerFixture, ConcurrentRequestsShareABoundedPool) {
  ClientOptions o;
  o.max_idle_per_host = 2;
  HttpClient client(o);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        ClientRequest r = Req("PUT", "/echo");
        std::string body = std::to_string(t * 1000 + i);
        r.body = body;
        auto resp = client.Send(r);
        if (!resp.ok()) continue;
        auto got = (*resp)->ReadAll();
        if (got.ok() && *got == body) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 120);
  EXPECT_GT(client.stats().connections_reused, 0u);
  EXPECT_LE(client.stats().connections_opened, 120u);
}

TEST_F(ServerFixture, InjectedErrorsAndDrops) {
  {
    ClientOptions o;
    o.faults.error_rate = 1.0;
    HttpClient client(o);
    ASSERT_OK_AND_ASSIGN(auto resp, client.Send(Req("GET", "/blob/10")));
    EXPECT_EQ(resp->status(), 503);
    ASSERT_OK_AND_ASSIGN(std::string body, resp->ReadAll());
    EXPECT_NE(body.find("<Code>SlowDown</Code>"), std::string::npos);
    EXPECT_EQ(requests_.load(), 0);  // never reached the server
  }
  {
    ClientOptions o;
    o.faults.drop_rate = 1.0;
    o.faults.seed = 42;
    HttpClient client(o);
    int failed = 0;
    for (int i = 0; i < 20; ++i) {
      auto resp = client.Send(Req("GET", "/blob/100000"));
      if (!resp.ok()) {
        EXPECT_EQ(resp.error().code(), StatusCode::kIOError);
        ++failed;
        continue;
      }
      auto body = (*resp)->ReadAll();
      ASSERT_FALSE(body.ok()) << "a dropped response must not end cleanly";
      EXPECT_EQ(body.error().code(), StatusCode::kIOError);
      ++failed;
    }
    EXPECT_EQ(failed, 20);
    EXPECT_EQ(client.stats().injected_drops, 20u);
    // Uploads are cut in the request body or the response.
    std::string data = Pattern(300000, 1);
    for (int i = 0; i < 10; ++i) {
      ClientRequest r = Req("PUT", "/echo");
      r.body = data;
      auto resp = client.Send(r);
      if (resp.ok()) {
        auto body = (*resp)->ReadAll();
        EXPECT_FALSE(body.ok());
      }
    }
  }
}

TEST_F(ServerFixture, ConnectRefusedIsUnavailable) {
  // Bind a port and close it: nobody listens there.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  HttpClient client;
  ClientRequest r;
  r.host = "127.0.0.1";
  r.port = ntohs(a.sin_port);
  auto resp = client.Send(r);
  EXPECT_STATUS_CODE(resp, StatusCode::kUnavailable);
  EXPECT_NE(resp.error().message().find("cannot connect"), std::string::npos)
      << resp.error().ToString();
}

TEST_F(ServerFixture, LocalhostNamesResolveToLoopback) {
  HttpClient client;
  ClientRequest r = Req("GET", "/blob/3");
  r.host = "bucket.localhost";
  ASSERT_OK_AND_ASSIGN(auto resp, client.Send(r));
  EXPECT_EQ(resp->status(), 200);
}

// ---- A scripted raw server for behaviours the real server never shows.

class RawServer {
 public:
  using Script = std::function<void(int fd, int index)>;
  explicit RawServer(Script script) : script_(std::move(script)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 16);
    thread_ = std::thread([this] {
      for (int i = 0;; ++i) {
        pollfd p{fd_, POLLIN, 0};
        while (!stop_ && ::poll(&p, 1, 50) == 0) {
        }
        if (stop_) return;
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        ++accepted;
        script_(c, i);
        ::close(c);
      }
    });
  }
  ~RawServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  std::atomic<int> accepted{0};

  // Reads one request head (and drops any body bytes that came with it).
  static std::string ReadHead(int fd) {
    std::string s;
    char c;
    while (s.find("\r\n\r\n") == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) return s;
      if (::recv(fd, &c, 1, 0) <= 0) return s;
      s.push_back(c);
    }
    return s;
  }
  static void Send(int fd, std::string_view s) { ::send(fd, s.data(), s.size(), MSG_NOSIGNAL); }

 private:
  Script script_;
  int fd_;
  uint16_t port_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

ClientRequest RawReq(const RawServer& s, std::string method = "GET") {
  ClientRequest r;
  r.method = std::move(method);
  r.host = "127.0.0.1";
  r.port = s.port();
  r.target = "/x";
  return r;
}

TEST(HttpClientRawTest, ChunkedResponseWithTrailers) {
  RawServer server([](int fd, int) {
    RawServer::ReadHead(fd);
    RawServer::Send(fd,
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Checksum: abc\r\n\r\n");
    RawServer::ReadHead(fd);  // keep the connection until the client is done
  });
  HttpClient client;
  ASSERT_OK_AND_ASSIGN(auto resp, client.Send(RawReq(server)));
  EXPECT_FALSE(resp->content_length().has_value());
  ASSERT_OK_AND_ASSIGN(std::string body, resp->ReadAll());
  EXPECT_EQ(body, "hello, world");
  EXPECT_EQ(resp->Header("x-checksum").value_or(""), "abc");
}

TEST(HttpClientRawTest, TruncatedBodyIsAnError) {
  RawServer server([](int fd, int) {
    RawServer::ReadHead(fd);
    RawServer::Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this");
  });
  HttpClient client;
  ASSERT_OK_AND_ASSIGN(auto resp, client.Send(RawReq(server)));
  auto body = resp->ReadAll();
  EXPECT_STATUS_CODE(body, StatusCode::kIOError);
}

TEST(HttpClientRawTest, ReadUntilCloseBody) {
  RawServer server([](int fd, int) {
    RawServer::ReadHead(fd);
    RawServer::Send(fd, "HTTP/1.0 200 OK\r\n\r\nall of it");
  });
  HttpClient client;
  ASSERT_OK_AND_ASSIGN(auto resp, client.Send(RawReq(server)));
  ASSERT_OK_AND_ASSIGN(std::string body, resp->ReadAll());
  EXPECT_EQ(body, "all of it");
}

TEST(HttpClientRawTest, ResponseTimeout) {
  RawServer server([](int fd, int) {
    RawServer::ReadHead(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
  });
  ClientOptions o;
  o.io_timeout_ms = 150;
  HttpClient client(o);
  auto t0 = std::chrono::steady_clock::now();
  auto resp = client.Send(RawReq(server));
  EXPECT_STATUS_CODE(resp, StatusCode::kUnavailable);
  EXPECT_NE(resp.error().message().find("timed out"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(550));
}

TEST(HttpClientRawTest, IdleConnectionClosedByServerIsDiscarded) {
  RawServer server([](int fd, int) {
    RawServer::ReadHead(fd);
    RawServer::Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    // and close at once: the pooled connection goes stale
  });
  HttpClient client;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(auto resp, client.Send(RawReq(server)));
    ASSERT_OK_AND_ASSIGN(std::string body, resp->ReadAll());
    EXPECT_EQ(body, "ok");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(client.stats().stale_discarded, 1u);
  EXPECT_EQ(client.stats().stale_retries, 0u);
}

// The server keeps the first connection, answers one request, then closes it
// when the second request arrives (the race an idle timeout causes) without
// answering. Later connections are answered normally.
RawServer::Script CloseOnSecondRequest(std::atomic<int>* bodies) {
  return [bodies](int fd, int index) {
    for (int n = 0;; ++n) {
      std::string head = RawServer::ReadHead(fd);
      if (head.empty()) return;
      if (index == 0 && n == 1) {
        // Read a little of the body (if any) and hang up.
        char buf[100];
        (void)::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        ::shutdown(fd, SHUT_RDWR);
        return;
      }
      size_t cl = head.find("Content-Length: ");
      if (cl != std::string::npos) {
        size_t want = std::stoul(head.substr(cl + 16));
        std::string body;
        char buf[65536];
        while (body.size() < want) {
          ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
          if (r <= 0) return;
          body.append(buf, static_cast<size_t>(r));
        }
        ++*bodies;
      }
      RawServer::Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
  };
}

TEST(HttpClientRawTest, StaleConnectionRetriedOnceWhenIdempotent) {
  std::atomic<int> bodies{0};
  RawServer server(CloseOnSecondRequest(&bodies));
  HttpClient client;
  for (int i = 0; i < 2; ++i) {
    ClientRequest r = RawReq(server, "PUT");
    StringBody src(Pattern(200000, 9), /*rewindable=*/true);
    r.body_source = &src;
    r.content_length = 200000;
    ASSERT_OK_AND_ASSIGN(auto resp, client.Send(r));
    ASSERT_OK_AND_ASSIGN(std::string body, resp->ReadAll());
    EXPECT_EQ(body, "ok");
  }
  EXPECT_EQ(client.stats().stale_retries, 1u);
  EXPECT_EQ(bodies.load(), 2);
  EXPECT_EQ(server.accepted.load(), 2);
}

TEST(HttpClientRawTest, StaleConnectionNotRetriedWhenNotIdempotent) {
  std::atomic<int> bodies{0};
  RawServer server(CloseOnSecondRequest(&bodies));
  HttpClient client;
  ClientRequest r = RawReq(server, "POST");
  r.idempotent = false;
  r.body = "a";
  ASSERT_OK_AND_ASSIGN(auto resp, client.Send(r));
  ASSERT_OK(resp->ReadAll());
  auto second = client.Send(r);
  EXPECT_STATUS_CODE(second, StatusCode::kIOError);
  EXPECT_EQ(client.stats().stale_retries, 0u);
}

TEST(HttpClientRawTest, StaleConnectionNotRetriedWhenBodyCannotRewind) {
  std::atomic<int> bodies{0};
  RawServer server(CloseOnSecondRequest(&bodies));
  HttpClient client;
  for (int i = 0; i < 2; ++i) {
    ClientRequest r = RawReq(server, "PUT");
    StringBody src(Pattern(4 << 20, 9), /*rewindable=*/false);
    r.body_source = &src;
    r.content_length = 4 << 20;
    auto resp = client.Send(r);
    if (i == 0) {
      ASSERT_OK(resp);
      ASSERT_OK((*resp)->ReadAll());
    } else {
      EXPECT_STATUS_CODE(resp, StatusCode::kIOError);
    }
  }
  EXPECT_EQ(client.stats().stale_retries, 0u);
}

TEST(HttpClientRawTest, MalformedResponses) {
  const char* bad[] = {"garbage\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"};
  for (const char* b : bad) {
    RawServer server([b](int fd, int) {
      RawServer::ReadHead(fd);
      RawServer::Send(fd, b);
    });
    HttpClient client;
    auto resp = client.Send(RawReq(server));
    Status s = resp.ok() ? (*resp)->ReadAll().status() : resp.error();
    EXPECT_EQ(s.code(), StatusCode::kIOError) << b << " -> " << s.ToString();
  }
  // A head that never ends is bounded.
  RawServer server([](int fd, int) {
    RawServer::ReadHead(fd);
    RawServer::Send(fd, "HTTP/1.1 200 OK\r\n" + std::string(100000, 'x'));
  });
  ClientOptions o;
  o.max_response_head = 4096;
  HttpClient client(o);
  EXPECT_STATUS_CODE(client.Send(RawReq(server)), StatusCode::kIOError);
}

TEST(HttpClientTest, ParseHttpUrl) {
  ASSERT_OK_AND_ASSIGN(ParsedUrl u, ParseHttpUrl("http://127.0.0.1:9000/a/b?c=d"));
  EXPECT_EQ(u.scheme, "http");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 9000);
  EXPECT_EQ(u.target, "/a/b?c=d");
  ASSERT_OK_AND_ASSIGN(u, ParseHttpUrl("HTTPS://s3.amazonaws.com"));
  EXPECT_EQ(u.scheme, "https");
  EXPECT_EQ(u.port, 443);
  EXPECT_EQ(u.target, "/");
  ASSERT_OK_AND_ASSIGN(u, ParseHttpUrl("http://[::1]:8080?x"));
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 8080);
  EXPECT_EQ(u.target, "/?x");
  EXPECT_STATUS_CODE(ParseHttpUrl("ftp://x"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(ParseHttpUrl("http://:80/"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(ParseHttpUrl("http://h:99999/"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(ParseHttpUrl("nourl"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(ParseHttpUrl("http://u:p@h/"), StatusCode::kInvalidArgument);
}

// TLS against the project's server with a throwaway self-signed certificate.
TEST(HttpClientTlsTest, HttpsWithVerification) {
  TempDir dir;
  const std::string cert = dir.Join("cert.pem"), key = dir.Join("key.pem");
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                          "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
                          key + " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0)
      << "openssl CLI failed (scripts/install-deps.sh test installs it)";
  ServerOptions so;
  so.tls_cert_file = cert;
  so.tls_key_file = key;
  so.threads = 2;
  Server server(so, [](Request& req, ResponseWriter& w) {
    auto body = req.ReadAllBody(1 << 20);
    (void)w.Send("tls:" + (body.ok() ? *body : std::string()));
  });
  ASSERT_OK(server.Start());
  ClientRequest r;
  r.method = "PUT";
  r.scheme = "https";
  r.host = "127.0.0.1";
  r.port = static_cast<uint16_t>(server.port());
  r.body = "secret";
  {
    ClientOptions o;
    o.tls_ca_file = cert;
    HttpClient client(o);
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK_AND_ASSIGN(auto resp, client.Send(r));
      ASSERT_OK_AND_ASSIGN(std::string body, resp->ReadAll());
      EXPECT_EQ(body, "tls:secret");
    }
    EXPECT_EQ(client.stats().connections_opened, 1u);
  }
  {
    HttpClient client;  // system CAs: the self-signed certificate is refused
    auto resp = client.Send(r);
    EXPECT_STATUS_CODE(resp, StatusCode::kUnavailable);
  }
  {
    ClientOptions o;
    o.tls_verify = false;
    HttpClient client(o);
    ASSERT_OK_AND_ASSIGN(auto resp, client.Send(r));
    EXPECT_EQ(resp->status(), 200);
  }
  server.Stop();
}

}  // namespace
}  // namespace strata::http
