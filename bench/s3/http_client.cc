#include "http_client.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

namespace strata::bench {
namespace {

constexpr size_t kBufSize = 512 * 1024;  // large reads keep 64 MiB bodies at ~128 recv calls

bool IEq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
    if (x != y) return false;
  }
  return true;
}

std::string_view TrimWs(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

Client::Client(std::string host, int port) : host_(std::move(host)), port_(port), buf_(kBufSize) {}

Client::~Client() { Close(); }

void Client::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  pos_ = end_ = 0;
}

bool Client::Fail(std::string msg) {
  error_ = std::move(msg);
  Close();
  return false;
}

bool Client::Connect() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return Fail(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port_));
  if (::inet_pton(AF_INET, host_.c_str(), &a.sin_addr) != 1) return Fail("bad IPv4 address " + host_);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0)
    return Fail("connect " + host_ + ":" + std::to_string(port_) + ": " + std::strerror(errno));
  pos_ = end_ = 0;
  return true;
}

bool Client::ReadMore() {
  if (pos_ == end_) pos_ = end_ = 0;
  if (end_ == buf_.size()) {
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
    } else {
      buf_.resize(buf_.size() * 2);
    }
  }
  for (;;) {
    ssize_t n = ::recv(fd_, buf_.data() + end_, buf_.size() - end_, 0);
    if (n > 0) {
      end_ += static_cast<size_t>(n);
      return true;
    }
    if (n == 0) return Fail("server closed the connection");
    if (errno == EINTR) continue;
    return Fail(std::string("recv: ") + std::strerror(errno));
  }
}

bool Client::ReadHead(size_t& head_end) {
  for (;;) {  // heads are small: rescanning from the start is cheaper than bookkeeping
    std::string_view v(buf_.data() + pos_, end_ - pos_);
    size_t p = v.find("\r\n\r\n");
    if (p != std::string_view::npos) {
      head_end = pos_ + p + 4;
      return true;
    }
    if (end_ - pos_ > 64 * 1024) return Fail("response head larger than 64 KiB");
    if (!ReadMore()) return false;
  }
}

bool Client::ReadBodyFixed(uint64_t n, bool keep, Response& resp) {
  while (n > 0) {
    if (pos_ == end_ && !ReadMore()) return false;
    size_t take = static_cast<size_t>(std::min<uint64_t>(n, end_ - pos_));
    if (keep) resp.body.append(buf_.data() + pos_, take);
    resp.body_bytes += take;
    pos_ += take;
    n -= take;
  }
  return true;
}

bool Client::ReadLine(std::string& line) {
  line.clear();
  for (;;) {
    std::string_view v(buf_.data() + pos_, end_ - pos_);
    size_t p = v.find("\r\n");
    if (p != std::string_view::npos) {
      line.assign(v.substr(0, p));
      pos_ += p + 2;
      return true;
    }
    if (end_ - pos_ > 8192) return Fail("chunk line too long");
    if (!ReadMore()) return false;
  }
}

bool Client::ReadBodyChunked(bool keep, Response& resp) {
  std::string line;
  for (;;) {
    if (!ReadLine(line)) return false;
    uint64_t size = 0;
    auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
    if (ec != std::errc() || ptr == line.data()) return Fail("bad chunk size line: " + line);
    if (size == 0) {
      do {  // trailers up to the empty line
        if (!ReadLine(line)) return false;
      } while (!line.empty());
      return true;
    }
    if (!ReadBodyFixed(size, keep, resp)) return false;
    if (!ReadLine(line) || !line.empty()) return Fail("missing CRLF after chunk");
  }
}

bool Client::Do(std::string_view head, const char* body, size_t body_len, bool keep_body,
                Response& resp) {
  resp.status = 0;
  resp.body_bytes = 0;
  resp.body.clear();
  if (fd_ < 0 && !Connect()) return false;

  iovec iov[2] = {{const_cast<char*>(head.data()), head.size()},
                  {const_cast<char*>(body), body_len}};
  int iovcnt = body_len > 0 ? 2 : 1;
  iovec* cur = iov;
  while (iovcnt > 0) {
    ssize_t n = ::writev(fd_, cur, iovcnt);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(std::string("writev: ") + std::strerror(errno));
    }
    size_t left = static_cast<size_t>(n);
    while (iovcnt > 0 && left >= cur->iov_len) {
      left -= cur->iov_len;
      ++cur;
      --iovcnt;
    }
    if (iovcnt > 0) {
      cur->iov_base = static_cast<char*>(cur->iov_base) + left;
      cur->iov_len -= left;
    }
  }

  size_t head_end = 0;
  if (!ReadHead(head_end)) return false;
  std::string_view h(buf_.data() + pos_, head_end - pos_);
  pos_ = head_end;
  // "HTTP/1.1 200 OK"
  if (h.size() < 12 || h.substr(0, 5) != "HTTP/") return Fail("bad status line");
  int status = 0;
  std::from_chars(h.data() + 9, h.data() + 12, status);
  resp.status = status;
  bool has_len = false, chunked = false, close_after = false;
  uint64_t len = 0;
  size_t line_start = h.find("\r\n") + 2;
  while (line_start < h.size()) {
    size_t line_end = h.find("\r\n", line_start);
    if (line_end == std::string_view::npos || line_end == line_start) break;
    std::string_view line = h.substr(line_start, line_end - line_start);
    line_start = line_end + 2;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = line.substr(0, colon), value = TrimWs(line.substr(colon + 1));
    if (IEq(name, "content-length")) {
      has_len = true;
      std::from_chars(value.data(), value.data() + value.size(), len);
    } else if (IEq(name, "transfer-encoding")) {
      chunked = value.find("chunked") != std::string_view::npos;
    } else if (IEq(name, "connection")) {
      close_after = IEq(value, "close");
    }
  }
  keep_body = keep_body || status >= 300;  // error bodies are small and worth showing
  bool ok = true;
  if (status == 204 || status == 304 || (status >= 100 && status < 200)) {
    // no body
  } else if (chunked) {
    ok = ReadBodyChunked(keep_body, resp);
  } else if (has_len) {
    ok = ReadBodyFixed(len, keep_body, resp);
  } else {
    return Fail("response without Content-Length or chunked framing (status " +
                std::to_string(status) + ")");
  }
  if (!ok) return false;
  if (close_after) Close();
  return true;
}

}  // namespace strata::bench
