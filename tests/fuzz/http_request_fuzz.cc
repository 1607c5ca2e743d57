// Fuzzes the HTTP/1.1 request parser of core's server: request line, header
// fields, Content-Length / Transfer-Encoding framing and the chunked body
// decoder, through ServeInMemory (the same ServeOneRequest the epoll server
// runs). The handler looks at what a frontend looks at (method, target, every
// header) and reads the body in a way picked by the input's length (all at
// once, in 7-byte pieces, or not at all, leaving it to the server to drain).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <strata/core/http_server.h>

namespace {

void Handle(strata::http::Request& req, strata::http::ResponseWriter& w, int body_mode) {
  size_t sum = req.method.size() + req.path.size() + req.query.size();
  for (const auto& h : req.headers) sum += h.name.size() + h.value.size();
  if (auto host = req.Header("host")) sum += host->size();
  std::string body;
  if (body_mode == 0) {
    auto all = req.ReadAllBody(64 << 10);
    if (all.has_value()) body = std::move(*all);
  } else if (body_mode == 1) {
    char buf[7];
    for (;;) {
      auto got = req.ReadBody(buf, sizeof(buf));
      if (!got.has_value() || *got == 0) break;
      body.append(buf, *got);
    }
  }
  w.AddHeader("X-Sum", std::to_string(sum));
  (void)w.Send(body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const strata::http::ServerOptions* options = [] {
    auto* o = new strata::http::ServerOptions;
    o->max_header_bytes = 2048;  // small, so inputs reach the 431 boundary
    return o;
  }();
  const int body_mode = static_cast<int>(size % 3);
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  auto r = strata::http::ServeInMemory(
      [body_mode](strata::http::Request& req, strata::http::ResponseWriter& w) {
        Handle(req, w, body_mode);
      },
      raw, *options);
  // Every request gets an answer: a handler's response or the layer's 4xx.
  if (r.status < 100 || r.status > 599) __builtin_trap();
  return 0;
}
