// ServeInMemory: one request through the HTTP layer without a socket.
#include <strata/core/http_server.h>

#include <strata/core/strings.h>

#include "core/http_connection.h"

namespace strata::http {
namespace {

RecordedResponse ParseResponse(std::string_view raw, bool head_only) {
  RecordedResponse r;
  const size_t head_end = raw.find("\r\n\r\n");
  std::string_view head = raw.substr(0, head_end);
  std::string_view rest = head_end == std::string_view::npos ? std::string_view() : raw.substr(head_end + 4);
  // "HTTP/1.1 200 OK"
  const size_t line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  const size_t sp = status_line.find(' ');
  if (sp != std::string_view::npos) {
    r.status = static_cast<int>(ParseUint64(status_line.substr(sp + 1, 3)).value_or(0));
  }
  std::string_view headers = line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 2);
  std::optional<uint64_t> length;
  while (!headers.empty()) {
    const size_t e = headers.find("\r\n");
    std::string_view h = headers.substr(0, e);
    headers = e == std::string_view::npos ? std::string_view() : headers.substr(e + 2);
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos) continue;
    r.headers.emplace_back(std::string(h.substr(0, colon)), std::string(Trim(h.substr(colon + 1))));
    if (IEquals(r.headers.back().first, "content-length")) length = ParseUint64(r.headers.back().second);
  }
  if (!head_only) r.body = std::string(length ? rest.substr(0, *length) : rest);
  return r;
}

}  // namespace

std::optional<std::string_view> RecordedResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (IEquals(k, name)) return std::string_view(v);
  }
  return std::nullopt;
}

RecordedResponse ServeInMemory(const Handler& handler, std::string_view raw_request,
                               const ServerOptions& options) {
  std::string out;
  Connection c(raw_request, &out, &options);
  // Gather the head as the server does: up to max_header_bytes, then 431.
  for (;;) {
    std::string_view pending(c.buf_.data() + c.rpos_, c.wpos_ - c.rpos_);
    const size_t end = pending.find("\r\n\r\n");
    if (end != std::string_view::npos && end + 4 <= options.max_header_bytes) {
      c.head_len_ = end + 4;
      break;
    }
    if (end != std::string_view::npos || pending.size() > options.max_header_bytes) {
      ResponseWriter w(&c);
      SendLayerError(options, w, 431, "the request head is larger than the server accepts");
      return ParseResponse(out, false);
    }
    if (c.wpos_ == c.buf_.size()) c.buf_.resize(c.buf_.size() * 2);
    const ssize_t got = c.RecvSome(c.buf_.data() + c.wpos_, c.buf_.size() - c.wpos_);
    if (got <= 0) {
      ResponseWriter w(&c);
      SendLayerError(options, w, 400, "the request ended inside its head");
      return ParseResponse(out, false);
    }
    c.wpos_ += static_cast<size_t>(got);
  }
  const bool head_only = raw_request.substr(0, 5) == "HEAD ";
  ServeOneRequest(&c, options, handler);
  return ParseResponse(out, head_only);
}

std::string FormatRequest(std::string_view method, std::string_view target,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          std::string_view body) {
  std::string s;
  s.reserve(64 + target.size() + body.size());
  s.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
  bool framed = false;
  for (const auto& [k, v] : headers) {
    if (IEquals(k, "content-length") || IEquals(k, "transfer-encoding")) framed = true;
    s.append(k).append(": ").append(v).append("\r\n");
  }
  if (!framed && !body.empty()) s.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  s.append("\r\n").append(body);
  return s;
}

}  // namespace strata::http
