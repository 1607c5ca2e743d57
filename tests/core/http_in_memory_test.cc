// ServeInMemory: the HTTP layer without a socket, as the frontends' unit tests use it.
#include <strata/core/http_server.h>

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "testutil/testutil.h"

namespace strata::http {
namespace {

// Echoes method, path, query, one header and the body it read.
void Echo(Request& req, ResponseWriter& w) {
  auto body = req.ReadAllBody(1 << 20);
  w.AddHeader("X-Method", req.method);
  w.AddHeader("X-Path", req.path);
  w.AddHeader("X-Query", req.query);
  w.AddHeader("X-Token", req.Header("x-token").value_or("-"));
  if (!body.has_value()) {
    w.SetStatus(413);
    (void)w.Send(body.error().message());
    return;
  }
  (void)w.Send(*body);
}

TEST(HttpInMemoryTest, RequestAndResponseGoThroughTheServersParser) {
  RecordedResponse r = ServeInMemory(
      Echo, FormatRequest("PUT", "/b/k%20x?uploads&a=1", {{"X-Token", "t1"}}, "hello body"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello body");
  EXPECT_EQ(r.Header("x-method").value_or(""), "PUT");
  EXPECT_EQ(r.Header("X-Path").value_or(""), "/b/k%20x");
  EXPECT_EQ(r.Header("x-query").value_or(""), "uploads&a=1");
  EXPECT_EQ(r.Header("x-token").value_or(""), "t1");
  EXPECT_EQ(r.Header("content-length").value_or(""), "10");
  EXPECT_TRUE(r.Header("date").has_value());
}

TEST(HttpInMemoryTest, ChunkedBodyIsDecoded) {
  const std::string raw =
      "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
  RecordedResponse r = ServeInMemory(Echo, raw);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello world");
}

TEST(HttpInMemoryTest, HeadHasNoBodyAndBadRequestsGetTheErrorHandler) {
  RecordedResponse head = ServeInMemory(Echo, FormatRequest("HEAD", "/", {}));
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());

  ServerOptions o;
  o.error_handler = [](int status, std::string_view msg, ResponseWriter& w) {
    w.AddHeader("Content-Type", "application/xml");
    (void)w.Send("<Error>" + std::string(msg) + "</Error>");
  };
  RecordedResponse bad = ServeInMemory(Echo, "GARBAGE\r\n\r\n", o);
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("<Error>malformed HTTP request line"), std::string::npos) << bad.body;
  EXPECT_EQ(bad.Header("connection").value_or(""), "close");

  o.max_header_bytes = 64;
  RecordedResponse big = ServeInMemory(Echo, FormatRequest("GET", "/", {{"X-Pad", std::string(200, 'p')}}), o);
  EXPECT_EQ(big.status, 431);

  RecordedResponse cut = ServeInMemory(Echo, "GET / HTTP/1.1\r\nHost: x\r\n");
  EXPECT_EQ(cut.status, 400) << "a head that never ends";

  RecordedResponse short_body = ServeInMemory(Echo, "PUT / HTTP/1.1\r\nContent-Length: 100\r\n\r\nonly this");
  EXPECT_EQ(short_body.status, 413) << "the body read fails (ended early): " << short_body.body;
}

TEST(HttpInMemoryTest, StreamedAndSendfileBodies) {
  ::strata::testing::TempDir dir;
  const std::string path = dir.Join("f");
  ASSERT_TRUE(::strata::testing::WriteFile(path, "0123456789abcdef"));
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  auto handler = [fd](Request&, ResponseWriter& w) {
    ASSERT_OK(w.BeginBody(8));
    ASSERT_OK(w.Write("AB", 2));
    ASSERT_OK(w.SendFile(fd, 10, 6));
  };
  RecordedResponse r = ServeInMemory(handler, FormatRequest("GET", "/f", {}));
  ::close(fd);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ABabcdef");
}

}  // namespace
}  // namespace strata::http
