// The S3 frontend's entry points: Frontend construction, Handle (a request
// id, routing, error replies, latency and byte metrics), the HTTP layer's own
// errors as S3 XML, per-operation request counters, and the bucket naming
// rules. Routing is in router.cc, the operations in *_handlers.cc.
#include <map>
#include <random>
#include <string>
#include <utility>

#include <fmt/format.h>

#include <strata/core/clock.h>
#include <strata/core/strings.h>
#include <strata/s3/frontend.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"

namespace strata::s3 {

namespace {

bool IsIpv4(std::string_view s) {
  int dots = 0;
  for (char c : s) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots == 3;
}

}  // namespace

bool IsValidBucketName(std::string_view name) {
  if (name.size() < 3 || name.size() > 63) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return false;
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  if (name.find("..") != std::string_view::npos || name.find(".-") != std::string_view::npos ||
      name.find("-.") != std::string_view::npos)
    return false;
  if (IsIpv4(name)) return false;
  if (StartsWith(name, "xn--") || StartsWith(name, "sthree-")) return false;
  if (name.size() >= 8 && name.substr(name.size() - 8) == "-s3alias") return false;
  if (name.size() >= 6 && name.substr(name.size() - 6) == "--ol-s3") return false;
  return true;
}

Frontend::Frontend(objstore::LocalEngine* engine, FrontendOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->engine = engine;
  impl_->opts = std::move(options);
  if (impl_->opts.user_store == nullptr) {
    auto store = UserStore::Open(impl_->opts.users, "");
    if (!store.ok()) kLog.Error("S3 users: {}", store.error().ToString());
    impl_->own_users = store.ok() ? std::move(*store) : nullptr;
    if (!impl_->own_users) impl_->own_users = std::move(*UserStore::Open({}, ""));
    impl_->opts.user_store = impl_->own_users.get();
  }
  impl_->users = impl_->opts.user_store;
  std::random_device rd;
  impl_->id_prefix = (uint64_t{rd()} << 32) ^ rd();
  auto& reg = metrics::Registry::Global();
  impl_->latency = &reg.GetHistogram("strata_s3_request_duration_seconds",
                                     "S3 request latency, from parsed head to last byte");
  impl_->bytes_in = &reg.GetCounter("strata_s3_received_bytes_total", "S3 object bytes received");
  impl_->bytes_out = &reg.GetCounter("strata_s3_sent_bytes_total", "S3 response bytes sent");
}

Frontend::~Frontend() = default;

void Frontend::Handle(http::Request& req, http::ResponseWriter& w) { impl_->Handle(req, w); }

void Frontend::HandleTransportError(int status, std::string_view message, http::ResponseWriter& w) {
  std::string id =
      fmt::format("{:016X}{:08X}", impl_->id_prefix, impl_->request_seq.fetch_add(1) & 0xffffffff);
  // 503 is the HTTP layer's "too many connections from this address": S3's SlowDown.
  const char* code = status == 431   ? "RequestHeaderSectionTooLarge"
                     : status == 503 ? "SlowDown"
                                     : "InvalidRequest";
  S3Error e{status, code, std::string(message)};
  w.AddHeader("x-amz-request-id", id);
  w.AddHeader("x-amz-id-2", id);
  w.AddHeader("Content-Type", "application/xml");
  (void)w.Send(ErrorXml(e, "", id));
  impl_->RequestCounter("Malformed", status).Inc();
}

metrics::Counter& Frontend::Impl::RequestCounter(std::string_view op, int status) {
  // Per-thread memo: the hot path formats no label string and takes no lock.
  thread_local std::map<std::pair<std::string, int>, metrics::Counter*, std::less<>> memo;
  thread_local const Impl* memo_owner = nullptr;
  if (memo_owner != this) {
    memo.clear();
    memo_owner = this;
  }
  std::pair<std::string, int> mk(op, status);
  if (auto it = memo.find(mk); it != memo.end()) return *it->second;
  metrics::Counter& c = RequestCounterSlow(op, status);
  memo.emplace(std::move(mk), &c);
  return c;
}

metrics::Counter& Frontend::Impl::RequestCounterSlow(std::string_view op, int status) {
  std::string labels = fmt::format("op=\"{}\",code=\"{}\"", op, status);
  std::lock_guard<std::mutex> lock(counters_mu);
  auto it = counters.find(labels);
  if (it != counters.end()) return *it->second;
  auto& c = metrics::Registry::Global().GetCounter(
      "strata_s3_requests_total", "S3 requests by operation and HTTP status", labels);
  counters.emplace(labels, &c);
  return c;
}

void Frontend::Impl::Handle(http::Request& req, http::ResponseWriter& w) {
  const int64_t t0 = MonotonicNanos();
  Ctx c(req, w, fmt::format("{:016X}{:08X}", id_prefix, request_seq.fetch_add(1) & 0xffffffff));
  w.AddHeader("x-amz-request-id", c.request_id);
  w.AddHeader("x-amz-id-2", c.request_id);
  Status st = Route(c);
  if (!st.ok()) {
    // A missing bucket under an object operation is NoSuchBucket, not NoSuchKey
    // (looked up on the error path only).
    std::string_view nf = c.has_key && (c.bucket.empty() || engine->GetBucket(c.bucket).ok())
                              ? "NoSuchKey"
                              : "NoSuchBucket";
    if (c.op == "AbortMultipartUpload" || c.op == "UploadPart" || c.op == "ListParts" ||
        c.op == "CompleteMultipartUpload")
      nf = "NoSuchUpload";
    SendError(c, st, nf);
  }
  latency->Observe(static_cast<double>(MonotonicNanos() - t0) / 1e9);
  bytes_out->Inc(w.bytes_sent());
  RequestCounter(c.op, w.status()).Inc();
}

void Frontend::Impl::SendError(Ctx& c, const Status& st, std::string_view fallback_not_found) {
  S3Error e = ToS3Error(st, fallback_not_found);
  if (c.w.headers_sent()) {
    // Mid-stream failure (e.g. a corrupt block): the only honest signal left is
    // to cut the connection so the client sees a short body.
    kLog.Error("{} {} failed after the response started: {}", c.op, c.Resource(), st.ToString());
    c.w.CloseAfter();
    return;
  }
  // 501 is a client asking for what Strata does not implement, not a server fault.
  if (e.http_status >= 500 && e.http_status != 501) kLog.Error("{} {}: {}", c.op, c.Resource(), st.ToString());
  c.w.SetStatus(e.http_status);
  if (c.req.method == "HEAD") {
    c.w.AddHeader("x-amz-error-code", e.code);
    (void)c.w.Send("");
    return;
  }
  c.w.AddHeader("Content-Type", "application/xml");
  // The request body may be unread (e.g. auth failed on a PUT): don't make the
  // client push it all just to see the error.
  if (!c.req.body_done()) c.w.CloseAfter();
  (void)c.w.Send(ErrorXml(e, c.Resource(), c.request_id));
}

void Frontend::Impl::SendXml(Ctx& c, int status, const std::string& xml) {
  c.w.SetStatus(status);
  c.w.AddHeader("Content-Type", "application/xml");
  (void)c.w.Send(xml);
}

}  // namespace strata::s3
