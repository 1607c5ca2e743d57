// A minimal blocking HTTP/1.1 keep-alive client for the S3 benchmark driver.
//
// One Client owns one TCP connection (TCP_NODELAY) and one reused receive
// buffer. Do() writes a request head plus an optional body in one writev,
// parses the status line, Content-Length (or chunked framing) and
// Connection: close, and reads the body into the reused buffer, keeping only
// its length and (optionally) the first bytes. Nothing is allocated per
// request once the buffers have grown. Reconnects transparently when the
// server closed the previous connection.
//
// Thread-safety: none; one Client per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::bench {

struct Response {
  int status = 0;
  uint64_t body_bytes = 0;
  std::string body;   // kept only when Do(..., keep_body=true); else empty
};

class Client {
 public:
  Client(std::string host, int port);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // head: request line + headers + final CRLF. Returns false (and error()) on
  // a transport or framing error.
  bool Do(std::string_view head, const char* body, size_t body_len, bool keep_body,
          Response& resp);
  const std::string& error() const { return error_; }

 private:
  bool Connect();
  void Close();
  bool ReadMore();
  bool ReadHead(size_t& head_end);
  bool ReadBodyFixed(uint64_t n, bool keep, Response& resp);
  bool ReadBodyChunked(bool keep, Response& resp);
  bool ReadLine(std::string& line);
  bool Fail(std::string msg);

  std::string host_;
  int port_;
  int fd_ = -1;
  std::vector<char> buf_;   // receive buffer; [pos_, end_) holds unread bytes
  size_t pos_ = 0, end_ = 0;
  std::string error_;
};

}  // namespace strata::bench
