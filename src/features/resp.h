// A minimal Redis client (RESP2): pipelined commands over one blocking TCP
// connection. Private to the features component (its Redis online store) and
// its benchmark. Not thread-safe: one connection per thread at a time.
#pragma once

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <strata/core/result.h>

namespace strata::features {


struct Reply {
  enum Type { kStatus, kError, kInt, kBulk, kNil, kArray } type = kNil;
  std::string str;
  int64_t i = 0;
  std::vector<Reply> elems;
};

class RespConnection {
 public:
  ~RespConnection() {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Connect(const std::string& host, const std::string& port) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
      return Status::Unavailable(fmt::format("redis {}:{}: {}", host, port, gai_strerror(rc)));
    }
    Status st = Status::Unavailable(fmt::format("redis {}:{}: cannot connect", host, port));
    for (addrinfo* a = res; a; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fd_ = fd;
        st = Status::Ok();
        break;
      }
      st = Status::Unavailable(fmt::format("redis {}:{}: {} (is redis-server running?)", host, port, std::strerror(errno)));
      ::close(fd);
    }
    ::freeaddrinfo(res);
    return st;
  }

  static void Append(std::string* out, const std::vector<std::string_view>& args) {
    AppendHeader(out, '*', args.size());
    for (std::string_view a : args) {
      AppendHeader(out, '$', a.size());
      out->append(a.data(), a.size());
      *out += "\r\n";
    }
  }

  Status SendRaw(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t w = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        broken_ = true;
        return Status::Unavailable(fmt::format("redis send: {}", std::strerror(errno)));
      }
      done += static_cast<size_t>(w);
    }
    return Status::Ok();
  }

  Result<Reply> ReadReply() {
    STRATA_ASSIGN_OR_RETURN(std::string line, ReadLine());
    if (line.empty()) return Broken("empty reply line");
    Reply r;
    const std::string rest = line.substr(1);
    switch (line[0]) {
      case '+': r.type = Reply::kStatus; r.str = rest; return r;
      case '-': r.type = Reply::kError; r.str = rest; return r;
      case ':': r.type = Reply::kInt; r.i = std::strtoll(rest.c_str(), nullptr, 10); return r;
      case '$': {
        const long long len = std::strtoll(rest.c_str(), nullptr, 10);
        if (len < 0) {
          r.type = Reply::kNil;
          return r;
        }
        if (len > (512LL << 20)) return Broken("bulk reply too large");
        STRATA_RETURN_IF_ERROR(Fill(static_cast<size_t>(len) + 2));
        r.type = Reply::kBulk;
        r.str = buf_.substr(pos_, static_cast<size_t>(len));
        pos_ += static_cast<size_t>(len) + 2;
        return r;
      }
      case '*': {
        const long long n = std::strtoll(rest.c_str(), nullptr, 10);
        if (n < 0) {
          r.type = Reply::kNil;
          return r;
        }
        r.type = Reply::kArray;
        for (long long k = 0; k < n; ++k) {
          STRATA_ASSIGN_OR_RETURN(Reply e, ReadReply());
          r.elems.push_back(std::move(e));
        }
        return r;
      }
      default: return Broken("unknown reply type");
    }
  }

  bool broken() const { return broken_; }

 private:
  static void AppendHeader(std::string* out, char type, size_t n) {
    char buf[24];
    buf[0] = type;
    const auto r = std::to_chars(buf + 1, buf + sizeof buf - 2, n);
    char* p = r.ptr;
    *p++ = '\r';
    *p++ = '\n';
    out->append(buf, static_cast<size_t>(p - buf));
  }
  Status Broken(const char* why) {
    broken_ = true;
    return Status::Corruption(fmt::format("redis protocol error: {}", why));
  }
  Status Fill(size_t n) {
    while (buf_.size() - pos_ < n) {
      if (pos_ > 0 && pos_ == buf_.size()) {
        buf_.clear();
        pos_ = 0;
      }
      char tmp[65536];
      const ssize_t r = ::recv(fd_, tmp, sizeof tmp, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        broken_ = true;
        return Status::Unavailable(r == 0 ? "redis closed the connection" : fmt::format("redis recv: {}", std::strerror(errno)));
      }
      buf_.append(tmp, static_cast<size_t>(r));
    }
    return Status::Ok();
  }
  Result<std::string> ReadLine() {
    while (true) {
      const size_t e = buf_.find("\r\n", pos_);
      if (e != std::string::npos) {
        std::string line = buf_.substr(pos_, e - pos_);
        pos_ = e + 2;
        if (pos_ == buf_.size()) {
          buf_.clear();
          pos_ = 0;
        }
        return line;
      }
      STRATA_RETURN_IF_ERROR(Fill(buf_.size() - pos_ + 1));
    }
  }

  int fd_ = -1;
  std::string buf_;
  size_t pos_ = 0;
  bool broken_ = false;
};


}  // namespace strata::features
