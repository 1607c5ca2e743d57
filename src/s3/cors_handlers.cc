// CORS: Put/Get/DeleteBucketCors, the preflight (OPTIONS /bucket[/key],
// anonymous, answered from the bucket's rules) and the Access-Control-*
// headers of actual cross-origin requests (see cors.h for the matching).
#include <string>
#include <vector>

#include <strata/core/strings.h>

#include "s3/cors.h"
#include "s3/errors.h"
#include "s3/frontend_internal.h"

namespace strata::s3 {

namespace {

constexpr const char* kCorsNotAllowed =
    "CORSResponse: This CORS request is not allowed. This is usually because the evalution of "
    "Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers "
    "are not whitelisted by the resource's CORS spec.";

}  // namespace

Status Frontend::Impl::PutBucketCors(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(CorsConfig config, ParseCorsConfig(body));
  // Stored as GetBucketCors answers it: the rules as parsed, nothing else.
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, kCorsConfig, CorsConfigXml(config)));
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::GetBucketCors(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(const objstore::BucketInfo* b, RequestBucket(c));
  const std::string* doc = b->Config(kCorsConfig);
  if (doc == nullptr)
    return MakeError("NoSuchCORSConfiguration", "The CORS configuration does not exist");
  SendXml(c, 200, *doc);
  return Status::Ok();
}

Status Frontend::Impl::DeleteBucketCors(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, kCorsConfig, std::nullopt));
  c.w.SetStatus(204);
  return c.w.Send("");
}

// Browsers send preflights without credentials: nothing is authenticated,
// and the answer reveals only what the bucket's rules allow.
Status Frontend::Impl::CorsPreflight(Ctx& c) {
  c.op = "PreflightRequest";
  auto origin = c.H("origin");
  if (!origin || Trim(*origin).empty())
    return MakeError("BadRequest", "Insufficient information. Origin request header needed.");
  auto method = c.H("access-control-request-method");
  if (!method || Trim(*method).empty())
    return MakeError("BadRequest", "Invalid Access-Control-Request-Method: null");
  auto b = RequestBucket(c);
  if (!b.ok()) {
    if (b.error().code() != StatusCode::kNotFound) return b.error();
    return MakeError("AccessForbidden", "CORSResponse: Bucket not found");
  }
  auto access = AccessOf(**b);
  if (!access->cors)
    return MakeError("AccessForbidden", "CORSResponse: CORS is not enabled for this bucket.");
  const std::vector<std::string> headers =
      SplitHeaderList(c.H("access-control-request-headers").value_or(""));
  const CorsRule* rule = MatchCorsRule(*access->cors, *origin, Trim(*method), &headers);
  if (rule == nullptr) return MakeError("AccessForbidden", kCorsNotAllowed);
  for (const auto& [name, value] : CorsResponseHeaders(*rule, *origin, &headers))
    c.w.AddHeader(name, value);
  c.w.SetStatus(200);
  return c.w.Send("");
}

void Frontend::Impl::AddCorsHeaders(Ctx& c) {
  auto origin = c.H("origin");
  if (!origin || origin->empty() || c.bucket.empty()) return;
  auto b = RequestBucket(c);
  if (!b.ok() || (*b)->Config(kCorsConfig) == nullptr) return;
  auto access = AccessOf(**b);
  if (!access->cors) return;
  if (const CorsRule* rule = MatchCorsRule(*access->cors, *origin, c.req.method, nullptr)) {
    for (const auto& [name, value] : CorsResponseHeaders(*rule, *origin, nullptr))
      c.w.AddHeader(name, value);
  }
}

}  // namespace strata::s3
