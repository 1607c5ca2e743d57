#include "core/http_connection.h"

#include <strata/core/clock.h>
#include <strata/core/log.h>

namespace strata::http {
namespace {

constexpr log::Logger kLog("http");

// The Date header, formatted once per second per thread.
std::string_view CachedDate() {
  thread_local int64_t cached_sec = -1;
  thread_local std::string cached;
  const int64_t now = NowUnixNanos();
  int64_t sec = now / 1'000'000'000;
  if (sec != cached_sec) {
    cached_sec = sec;
    cached = FormatHttpDate(now);
  }
  return cached;
}

}  // namespace

Status ProtocolError(int http_status, std::string_view message) {
  StatusCode code = StatusCode::kInvalidArgument;
  if (http_status == 401) code = StatusCode::kPermissionDenied;
  if (http_status == 413) code = StatusCode::kResourceExhausted;
  if (http_status >= 500) code = StatusCode::kInternal;
  return Status(code, std::string(message)).WithDetail(http_status);
}

int ProtocolErrorStatus(const Status& st) {
  const int d = st.detail();
  return d >= 100 && d <= 599 ? d : 0;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 416: return "Range Not Satisfiable";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 507: return "Insufficient Storage";
    default: return "Unknown";
  }
}

std::optional<std::string_view> Request::Header(std::string_view name) const {
  for (const auto& h : headers)
    if (IEquals(h.name, name)) return h.value;
  return std::nullopt;
}

Result<size_t> Request::ReadBody(char* buf, size_t n) { return conn->ReadBody(buf, n); }

bool Request::body_done() const { return conn->body_done_; }

Result<std::string> Request::ReadAllBody(size_t max) {
  std::string out;
  if (content_length) {
    if (*content_length > max)
      return Status::ResourceExhausted("request body too large");
    out.resize(*content_length);
    size_t off = 0;
    while (off < out.size()) {
      STRATA_ASSIGN_OR_RETURN(size_t got, ReadBody(out.data() + off, out.size() - off));
      if (got == 0) break;
      off += got;
    }
    out.resize(off);
    return out;
  }
  char tmp[16384];
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(size_t got, ReadBody(tmp, sizeof(tmp)));
    if (got == 0) break;
    if (out.size() + got > max) return Status::ResourceExhausted("request body too large");
    out.append(tmp, got);
  }
  return out;
}

void ResponseWriter::AddHeader(std::string_view name, std::string_view value) {
  headers_.append(name);
  headers_.append(": ");
  headers_.append(value);
  headers_.append("\r\n");
}

std::string ResponseWriter::BuildHead(uint64_t content_length, size_t reserve_body) const {
  std::string head;
  head.reserve(headers_.size() + 160 + reserve_body);
  head.append("HTTP/1.1 ");
  head.append(std::to_string(status_));
  head.push_back(' ');
  head.append(ReasonPhrase(status_));
  head.append("\r\nServer: Strata\r\nDate: ");
  head.append(CachedDate());
  head.append("\r\n");
  if (status_ != 204 && status_ != 304) {
    head.append("Content-Length: ");
    head.append(std::to_string(content_length));
    head.append("\r\n");
  }
  if (close_after_) head.append("Connection: close\r\n");
  head.append(headers_);
  head.append("\r\n");
  return head;
}

Status ResponseWriter::Send(std::string_view body) {
  if (headers_sent_) return Status::Internal("response already started");
  bool with_body = !conn_->head_only_ && status_ != 204 && status_ != 304;
  headers_sent_ = true;
  if (!with_body) {
    std::string head = BuildHead(body.size(), 0);
    return conn_->SendAll(head.data(), head.size());
  }
  bytes_sent_ = body.size();
  if (body.size() <= 256 * 1024) {
    // One write for head and body: saves a syscall and a packet on small replies.
    std::string head = BuildHead(body.size(), body.size());
    head.append(body);
    return conn_->SendAll(head.data(), head.size());
  }
  std::string head = BuildHead(body.size(), 0);
  STRATA_RETURN_IF_ERROR(conn_->SendAll(head.data(), head.size(), /*more=*/true));
  return conn_->SendAll(body.data(), body.size());
}

// The head is held back until the first body bytes (or Flush), so a small
// streamed response still goes out in one send.
Status ResponseWriter::BeginBody(uint64_t content_length) {
  if (headers_sent_) return Status::Internal("response already started");
  if (!conn_->head_only_) promised_ = content_length;
  headers_sent_ = true;
  pending_head_ = BuildHead(content_length, conn_->head_only_ ? 0 : std::min<uint64_t>(content_length, 256 * 1024));
  return Status::Ok();
}

Status ResponseWriter::Flush() {
  if (pending_head_.empty()) return Status::Ok();
  std::string head = std::move(pending_head_);
  pending_head_.clear();
  return conn_->SendAll(head.data(), head.size());
}

Status ResponseWriter::Write(const char* data, size_t n) {
  if (conn_->head_only_) return Status::Ok();
  bytes_sent_ += n;
  if (!pending_head_.empty()) {
    std::string head = std::move(pending_head_);
    pending_head_.clear();
    if (n <= 256 * 1024) {
      head.append(data, n);
      return conn_->SendAll(head.data(), head.size());
    }
    STRATA_RETURN_IF_ERROR(conn_->SendAll(head.data(), head.size(), /*more=*/true));
  }
  return conn_->SendAll(data, n);
}

Status ResponseWriter::SendFile(int fd, uint64_t offset, uint64_t n) {
  if (conn_->head_only_) return Status::Ok();
  bytes_sent_ += n;
  if (!pending_head_.empty()) {
    std::string head = std::move(pending_head_);
    pending_head_.clear();
    STRATA_RETURN_IF_ERROR(conn_->SendAll(head.data(), head.size(), /*more=*/true));
  }
  return conn_->SendFileAll(fd, offset, n);
}

void SendLayerError(const ServerOptions& opts, ResponseWriter& w, int status, std::string_view msg) {
  w.SetStatus(status);
  w.CloseAfter();
  if (opts.error_handler) {
    opts.error_handler(status, msg, w);
    if (w.headers_sent()) return;
  }
  w.AddHeader("Content-Type", "text/plain");
  (void)w.Send(std::string(msg) + "\n");
}

bool ServeOneRequest(Connection* c, const ServerOptions& opts, const Handler& handler) {
  std::string_view head(c->buf_.data() + c->rpos_, c->head_len_ - 4);
  Request req;
  req.conn = c;
  req.remote_addr = c->remote();
  req.tls = c->ssl() != nullptr;
  ResponseWriter w(c);

  auto bad_request = [&](int code, std::string_view msg) {
    c->head_only_ = false;
    SendLayerError(opts, w, code, msg);
    return false;
  };

  size_t line_end = head.find("\r\n");
  std::string_view line = head.substr(0, line_end);
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) {
    c->rpos_ += c->head_len_;
    c->head_len_ = 0;
    return bad_request(400, "malformed HTTP request line");
  }
  req.method = line.substr(0, sp1);
  req.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (version == "HTTP/1.1") {
    req.version_minor = 1;
  } else if (version == "HTTP/1.0") {
    req.version_minor = 0;
  } else {
    c->rpos_ += c->head_len_;
    c->head_len_ = 0;
    return bad_request(400, "unsupported HTTP version (HTTP/1.0 and HTTP/1.1 are served)");
  }
  size_t q = req.target.find('?');
  req.path = req.target.substr(0, q);
  req.query = q == std::string_view::npos ? std::string_view() : req.target.substr(q + 1);

  bool keep_alive = req.version_minor == 1;
  std::string_view rest = line_end == std::string_view::npos ? std::string_view()
                                                               : head.substr(line_end + 2);
  bool malformed = false;
  while (!rest.empty()) {
    size_t e = rest.find("\r\n");
    std::string_view h = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 2);
    size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0 || h[0] == ' ' || h[0] == '\t') {
      malformed = true;
      break;
    }
    HeaderField f{h.substr(0, colon), Trim(h.substr(colon + 1))};
    if (IEquals(f.name, "content-length")) {
      auto v = ParseUint64(f.value);
      if (!v || (req.content_length && *req.content_length != *v)) {
        malformed = true;
        break;
      }
      req.content_length = *v;
    } else if (IEquals(f.name, "transfer-encoding")) {
      if (ToLower(f.value).find("chunked") != std::string::npos) req.chunked = true;
    } else if (IEquals(f.name, "expect")) {
      if (IEquals(f.value, "100-continue")) req.expect_continue = true;
    } else if (IEquals(f.name, "connection")) {
      std::string v = ToLower(f.value);
      if (v.find("close") != std::string::npos) keep_alive = false;
      if (v.find("keep-alive") != std::string::npos) keep_alive = true;
    }
    req.headers.push_back(f);
  }
  c->rpos_ += c->head_len_;
  c->head_len_ = 0;
  if (malformed) return bad_request(400, "malformed HTTP header");
  if (req.chunked) req.content_length.reset();  // chunked wins (RFC 9112 6.3)

  c->chunked_ = req.chunked;
  c->chunk_trailer_ = false;
  c->body_left_ = req.chunked ? 0 : req.content_length.value_or(0);
  c->body_done_ = !req.chunked && c->body_left_ == 0;
  c->expect_continue_ = req.expect_continue;
  c->continue_sent_ = false;
  c->head_only_ = req.method == "HEAD";
  if (!keep_alive) w.CloseAfter();

  try {
    handler(req, w);
  } catch (const std::exception& e) {
    kLog.Error("{}: handler threw: {}", opts.name, e.what());
    if (!w.headers_sent()) {
      w.SetStatus(500);
      w.CloseAfter();
      (void)w.Send("internal error\n");
    } else {
      return false;
    }
  }
  if (!w.headers_sent()) {
    if (!w.Send("").ok()) return false;
  } else if (!w.Flush().ok()) {
    return false;
  }
  if (w.close_after() || w.incomplete()) return false;
  // Leftover body: drain a little, otherwise the framing is lost; close.
  if (!c->body_done_) {
    if (c->expect_continue_ && !c->continue_sent_) return false;
    uint64_t drained = 0;
    char tmp[16384];
    while (!c->body_done_ && drained < (1u << 20)) {
      auto r = c->ReadBody(tmp, sizeof(tmp));
      if (!r.ok() || *r == 0) break;
      drained += *r;
    }
    if (!c->body_done_) return false;
  }
  return true;
}

}  // namespace strata::http
