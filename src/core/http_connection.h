// The HTTP/1.1 connection of http_server.h, private to core: the transport
// (a socket, TLS over one, or memory for ServeInMemory), the input buffer and
// the body framing of the request being served, and the one function that
// parses a request head, runs the handler and finishes the response. The
// epoll server (http_server.cc) and the in-memory entry (http_in_memory.cc)
// both serve through ServeOneRequest.
//
// Thread-safety: a Connection is served by one thread at a time. While it
// waits in epoll, the server's sweeper and acceptor read state_, deadline_ns_
// and idle_since_ns_, and may claim it for closing by one compare-and-swap of
// state_ (see Wait*).
#pragma once

#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <openssl/ssl.h>

#include <strata/core/http_server.h>
#include <strata/core/strings.h>

#include "core/no_sigpipe.h"

namespace strata::http {

// One client connection. Owned by the worker serving it, or parked in epoll.
class Connection {
 public:
  Connection(int fd, SSL* ssl, std::string remote, const ServerOptions* opts)
      : fd_(fd), ssl_(ssl), remote_(std::move(remote)), opts_(opts) {}  // buffer: EnsureBuffer
  // In memory (ServeInMemory): reads come from `in`, writes are appended to *out.
  Connection(std::string_view in, std::string* out, const ServerOptions* opts)
      : fd_(-1), ssl_(nullptr), remote_("in-memory"), opts_(opts), mem_in_(in), mem_out_(out) {
    EnsureBuffer();
  }
  ~Connection() {
    if (ssl_ != nullptr) {
      core_internal::WithoutSigpipe([&] { return SSL_shutdown(ssl_); });
      SSL_free(ssl_);
    }
    if (fd_ >= 0) ::close(fd_);
  }

  int fd() const { return fd_; }
  SSL* ssl() const { return ssl_; }
  const std::string& remote() const { return remote_; }

  // --- raw transport, blocking with io_timeout -------------------------------
  // Reads what is available; returns 0 on EOF, -1 with errno EAGAIN if nothing now.
  ssize_t RecvSome(char* p, size_t n) {
    if (mem_out_ != nullptr) {
      const size_t k = std::min(n, mem_in_.size());
      std::memcpy(p, mem_in_.data(), k);
      mem_in_.remove_prefix(k);
      return static_cast<ssize_t>(k);
    }
    if (ssl_ != nullptr) {
      // SSL_read may write too (TLS 1.3 tickets, alerts): a peer gone must not raise SIGPIPE.
      int r = core_internal::WithoutSigpipe(
          [&] { return SSL_read(ssl_, p, static_cast<int>(std::min<size_t>(n, INT32_MAX))); });
      if (r > 0) return r;
      int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        want_write_ = e == SSL_ERROR_WANT_WRITE;
        errno = EAGAIN;
        return -1;
      }
      if (e == SSL_ERROR_ZERO_RETURN) return 0;
      errno = ECONNRESET;
      return -1;
    }
    ssize_t r;
    do {
      r = ::recv(fd_, p, n, 0);
    } while (r < 0 && errno == EINTR);
    return r;
  }

  bool WaitFor(short events) {
    pollfd pfd{fd_, events, 0};
    for (;;) {
      int r = ::poll(&pfd, 1, opts_->io_timeout_ms);
      if (r > 0) return true;
      if (r == 0) return false;
      if (errno != EINTR) return false;
    }
  }

  Result<size_t> RecvBlocking(char* p, size_t n) {
    for (;;) {
      ssize_t r = RecvSome(p, n);
      if (r >= 0) return static_cast<size_t>(r);
      if (errno != EAGAIN && errno != EWOULDBLOCK) return Status::FromErrno(errno, "recv");
      if (!WaitFor(want_write_ ? POLLOUT : POLLIN))
        return Status::IOError("timed out waiting for the request body");
    }
  }

  // more: the caller sends more right after (MSG_MORE: one segment on the wire).
  Status SendAll(const char* p, size_t n, bool more = false) {
    if (mem_out_ != nullptr) {
      mem_out_->append(p, n);
      return Status::Ok();
    }
    int flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0);
    while (n > 0) {
      ssize_t r;
      if (ssl_ != nullptr) {
        int w = core_internal::WithoutSigpipe(
            [&] { return SSL_write(ssl_, p, static_cast<int>(std::min<size_t>(n, 1 << 20))); });
        if (w > 0) {
          r = w;
        } else {
          int e = SSL_get_error(ssl_, w);
          if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
            if (!WaitFor(e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN))
              return Status::IOError("timed out writing the response");
            continue;
          }
          return Status::IOError("TLS write failed");
        }
      } else {
        r = ::send(fd_, p, n, flags);
        if (r < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!WaitFor(POLLOUT)) return Status::IOError("timed out writing the response");
            continue;
          }
          return Status::FromErrno(errno, "send");
        }
      }
      p += r;
      n -= static_cast<size_t>(r);
    }
    return Status::Ok();
  }

  Status SendFileAll(int in_fd, uint64_t off, uint64_t n) {
    if (ssl_ != nullptr || mem_out_ != nullptr) {
      std::string tmp(std::min<uint64_t>(n, 1 << 20), '\0');
      while (n > 0) {
        size_t want = std::min<uint64_t>(n, tmp.size());
        ssize_t r = ::pread(in_fd, tmp.data(), want, static_cast<off_t>(off));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return Status::IOError("short read from data file");
        STRATA_RETURN_IF_ERROR(SendAll(tmp.data(), static_cast<size_t>(r)));
        off += static_cast<uint64_t>(r);
        n -= static_cast<uint64_t>(r);
      }
      return Status::Ok();
    }
    off_t o = static_cast<off_t>(off);
    while (n > 0) {
      ssize_t r = ::sendfile(fd_, in_fd, &o, std::min<uint64_t>(n, 1ull << 30));
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          if (!WaitFor(POLLOUT)) return Status::IOError("timed out writing the response");
          continue;
        }
        return Status::FromErrno(errno, "sendfile");
      }
      if (r == 0) return Status::IOError("data file shorter than expected");
      n -= static_cast<uint64_t>(r);
    }
    return Status::Ok();
  }

  // The input buffer is allocated when the first bytes arrive, so a connection
  // that never sends anything costs no buffer (thousands may be open).
  void EnsureBuffer() {
    if (buf_.empty()) buf_.resize(std::max<size_t>(opts_->max_header_bytes + 4096, 32 * 1024));
  }

  // --- request parsing ---------------------------------------------------------
  // Input buffer: [rpos_, wpos_) holds unread bytes.
  std::string buf_;
  size_t rpos_ = 0;
  size_t wpos_ = 0;
  size_t head_len_ = 0;        // bytes of the current request head, once complete
  int64_t head_started_ns_ = 0;  // when the first byte of the current head arrived

  // Body state of the current request.
  bool chunked_ = false;
  uint64_t body_left_ = 0;     // Content-Length mode: bytes left; chunked: left in chunk
  bool body_done_ = true;
  bool chunk_trailer_ = false;  // chunked: the 0-chunk was seen
  bool expect_continue_ = false;
  bool continue_sent_ = false;
  bool head_only_ = false;      // HEAD request: no response body

  // --- the server's view (http_server.cc) -------------------------------------
  // What a connection is doing, the low 3 bits of state_; the bits above count
  // the times it was parked, so a compare-and-swap from a state read earlier
  // fails once the connection has been served and parked again.
  enum Wait : uint64_t {
    kBusy = 0,       // a worker owns it
    kWaitFirst = 1,  // parked, no byte of a first request yet (TLS: handshake not done)
    kWaitHead = 2,   // parked with part of a request head
    kWaitNext = 3,   // parked between requests (keep-alive)
    kClosing = 4,    // claimed by the sweeper or an eviction: the worker that wakes closes it
  };
  static constexpr uint64_t kWaitMask = 7;
  std::atomic<uint64_t> state_{kBusy};
  std::atomic<int64_t> deadline_ns_{0};    // when the state parked in expires
  std::atomic<int64_t> idle_since_ns_{0};  // kWaitFirst: accept; kWaitNext: end of the last request
  int64_t accepted_ns_ = 0;
  uint64_t requests_started_ = 0;  // complete heads read on this connection
  bool slot_held_ = false;         // counted in the server's limits; guarded by its conns_mu
  bool handshake_done_ = false;

  void Compact() {
    if (rpos_ == wpos_) {
      rpos_ = wpos_ = 0;
    } else if (rpos_ > 0 && (buf_.size() - wpos_) < 4096) {
      std::memmove(buf_.data(), buf_.data() + rpos_, wpos_ - rpos_);
      wpos_ -= rpos_;
      rpos_ = 0;
    }
  }

  // Pulls raw body bytes: from the buffer first, then the socket.
  Result<size_t> RawRead(char* p, size_t n) {
    if (rpos_ < wpos_) {
      size_t k = std::min(n, wpos_ - rpos_);
      std::memcpy(p, buf_.data() + rpos_, k);
      rpos_ += k;
      return k;
    }
    return RecvBlocking(p, n);
  }

  // Reads one CRLF-terminated line of chunked framing into `line` (without CRLF).
  Status ReadLine(std::string& line, size_t max) {
    line.clear();
    for (;;) {
      if (rpos_ == wpos_) {
        rpos_ = wpos_ = 0;
        STRATA_ASSIGN_OR_RETURN(size_t got, RecvBlocking(buf_.data(), buf_.size()));
        if (got == 0) return Status::IOError("connection closed inside a chunked body");
        wpos_ = got;
      }
      char c = buf_[rpos_++];
      if (c == '\n') {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return Status::Ok();
      }
      line.push_back(c);
      if (line.size() > max) return Status::InvalidArgument("chunk header line too long");
    }
  }

  Status SendContinueIfNeeded() {
    if (expect_continue_ && !continue_sent_) {
      continue_sent_ = true;
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      return SendAll(kContinue.data(), kContinue.size());
    }
    return Status::Ok();
  }

  Result<size_t> ReadBody(char* p, size_t n) {
    if (body_done_ || n == 0) return size_t{0};
    STRATA_RETURN_IF_ERROR(SendContinueIfNeeded());
    if (!chunked_) {
      STRATA_ASSIGN_OR_RETURN(size_t got, RawRead(p, std::min<uint64_t>(n, body_left_)));
      if (got == 0) return Status::IOError("client closed the connection before the body ended");
      body_left_ -= got;
      if (body_left_ == 0) body_done_ = true;
      return got;
    }
    std::string line;
    while (body_left_ == 0) {
      STRATA_RETURN_IF_ERROR(ReadLine(line, 1024));
      size_t semi = line.find(';');
      std::string_view hex = Trim(std::string_view(line).substr(0, semi));
      if (hex.empty() || hex.size() > 15) return Status::InvalidArgument("bad chunk size line");
      uint64_t size = 0;
      for (char c : hex) {
        int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                            : -1;
        if (v < 0) return Status::InvalidArgument("bad chunk size");
        size = size * 16 + static_cast<uint64_t>(v);
      }
      if (size == 0) {
        // Trailer section: header lines until an empty line.
        for (int i = 0; i < 64; ++i) {
          STRATA_RETURN_IF_ERROR(ReadLine(line, opts_->max_header_bytes));
          if (line.empty()) {
            body_done_ = true;
            return size_t{0};
          }
        }
        return Status::InvalidArgument("too many trailer lines");
      }
      body_left_ = size;
      chunk_trailer_ = true;  // a CRLF follows this chunk's data
    }
    STRATA_ASSIGN_OR_RETURN(size_t got, RawRead(p, std::min<uint64_t>(n, body_left_)));
    if (got == 0) return Status::IOError("client closed the connection inside a chunk");
    body_left_ -= got;
    if (body_left_ == 0 && chunk_trailer_) {
      chunk_trailer_ = false;
      STRATA_RETURN_IF_ERROR(ReadLine(line, 2));
      if (!line.empty()) return Status::InvalidArgument("missing CRLF after chunk data");
    }
    return got;
  }

  const ServerOptions* opts() const { return opts_; }
  bool want_write_ = false;

 private:
  int fd_;
  SSL* ssl_;
  std::string remote_;
  const ServerOptions* opts_;
  std::string_view mem_in_;        // in memory: request bytes not yet read
  std::string* mem_out_ = nullptr;  // in memory: where the response goes
};


// Sends an error the HTTP layer found itself (malformed head: 400, 431) in the
// frontend's format (options.error_handler) or as plain text; the connection
// closes after it.
void SendLayerError(const ServerOptions& options, ResponseWriter& w, int status,
                    std::string_view message);

// Serves the request whose complete head (CRLFCRLF included) is the first
// head_len_ bytes after rpos_ in c->buf_: parses it, runs the handler,
// finishes the response and reads what is left of the body. Returns false
// when the connection must close (a broken request, Connection: close, a
// response cut short, a body that cannot be drained).
bool ServeOneRequest(Connection* c, const ServerOptions& options, const Handler& handler);

}  // namespace strata::http
