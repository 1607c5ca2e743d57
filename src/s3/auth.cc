// Authentication (SigV4, header or query, through VerifySigV4) and
// authorization: admins see everything, users own their buckets, anonymous
// callers may read public-read buckets.
#include <optional>
#include <string>
#include <string_view>

#include <strata/core/clock.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/sigv4.h"

namespace strata::s3 {

Status Frontend::Impl::Authenticate(Ctx& c) {
  SigV4Request sr;
  sr.method = c.req.method;
  sr.path = c.req.path;
  sr.query = c.req.query;
  sr.headers.reserve(c.req.headers.size());
  for (const auto& h : c.req.headers) sr.headers.emplace_back(h.name, h.value);
  sr.now_ns = NowUnixNanos();
  ExpressSession session;  // S3 Express: only the session's own key may sign with its token
  STRATA_RETURN_IF_ERROR(ResolveExpressSession(c, sr.now_ns, session));
  auto lookup = [this, &session](std::string_view ak) -> std::optional<std::string> {
    if (session.user != nullptr)
      return ak == session.claims.access_key ? std::optional(session.secret) : std::nullopt;
    auto it = users_by_key.find(std::string(ak));
    if (it == users_by_key.end()) return std::nullopt;
    return it->second->secret_key;
  };
  STRATA_ASSIGN_OR_RETURN(c.auth, VerifySigV4(sr, lookup, opts.max_clock_skew_ns));
  if (session.user != nullptr && c.auth.payload_mode != PayloadMode::kAnonymous)
    return AdoptExpressSession(c, session);
  if (c.auth.payload_mode != PayloadMode::kAnonymous) {
    auto it = users_by_key.find(c.auth.access_key);
    if (it == users_by_key.end())
      return MakeError("InvalidAccessKeyId",
                       "The AWS Access Key Id you provided does not exist in our records.");
    c.user = it->second;
  }
  return Status::Ok();
}

// Admins see everything; other users own their buckets; anonymous callers may
// read public-read buckets.
Status Frontend::Impl::Authorize(Ctx& c, bool write) {
  if (c.user != nullptr && c.user->admin) return Status::Ok();
  if (c.bucket.empty()) {
    if (c.user == nullptr)
      return MakeError("AccessDenied", "Anonymous access is not allowed; sign the request");
    return Status::Ok();
  }
  auto b = engine->GetBucket(c.bucket);
  if (!b.ok()) {
    if (c.user == nullptr) return MakeError("AccessDenied", "Access Denied");
    return Status::Ok();  // let the operation report NoSuchBucket (or create it)
  }
  if (c.user != nullptr && b->owner == c.user->access_key) return Status::Ok();
  if (!write && b->public_read) return Status::Ok();
  return MakeError("AccessDenied",
                   c.user == nullptr
                       ? "Anonymous access to this bucket is not allowed; sign the request"
                       : "Access Denied: the bucket belongs to another user");
}

Status Frontend::Impl::CheckBucket(Ctx& c) {
  auto b = engine->GetBucket(c.bucket);
  if (!b.ok()) return MakeError("NoSuchBucket", "The specified bucket does not exist");
  return Status::Ok();
}

}  // namespace strata::s3
