// http::Server without a listener: connections accepted elsewhere are handed
// in with Adopt (as the Milvus port does for its REST side), bytes already
// in the socket included, and served like accepted ones.
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include <strata/core/http_server.h>

namespace strata::http {
namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

TEST(HttpAdoptTest, ServesAnAdoptedConnectionIncludingBytesSentBefore) {
  ServerOptions o;
  o.listen = false;
  o.threads = 2;
  Server srv(
      o, [](Request& req, ResponseWriter& w) { (void)w.Send("path=" + std::string(req.path)); });
  ASSERT_TRUE(srv.Start().ok());
  EXPECT_EQ(srv.port(), 0);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  // The request is in the socket before the server sees the descriptor.
  const std::string req = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::write(sv[0], req.data(), req.size()), static_cast<ssize_t>(req.size()));
  ASSERT_TRUE(srv.Adopt(sv[1], "10.0.0.1").ok());
  const std::string resp = ReadAll(sv[0]);
  ::close(sv[0]);
  EXPECT_NE(resp.find("200"), std::string::npos) << resp;
  EXPECT_NE(resp.find("path=/hello"), std::string::npos) << resp;
  EXPECT_EQ(srv.GetStats().connections_accepted, 1u);
  srv.Stop();
}

TEST(HttpAdoptTest, RefusedWhenNotRunning) {
  ServerOptions o;
  o.listen = false;
  Server srv(o, [](Request&, ResponseWriter& w) { (void)w.Send("x"); });
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  EXPECT_FALSE(srv.Adopt(sv[1], "10.0.0.1").ok());  // and the descriptor is closed
  char c;
  EXPECT_EQ(::read(sv[0], &c, 1), 0);
  ::close(sv[0]);
}

}  // namespace
}  // namespace strata::http
