// Put/Get/DeleteBucketLifecycleConfiguration and the x-amz-expiration header
// of GET/HEAD (S3 API Reference; the rules themselves: lifecycle.h).
#include <memory>
#include <string>

#include <fmt/format.h>

#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/lifecycle.h"

namespace strata::s3 {

namespace {

// PutBucketLifecycleConfiguration is an httpChecksumRequired operation: S3
// refuses a body without Content-MD5 or an x-amz-checksum-* (header or trailer).
bool HasBodyChecksum(const Ctx& c) {
  if (c.H("content-md5") || c.H("x-amz-trailer")) return true;
  for (const http::HeaderField& h : c.req.headers) {
    if (h.name.size() > 15 && IEquals(h.name.substr(0, 15), "x-amz-checksum-")) return true;
  }
  return false;
}

// rule-id="..." carries the ID as given; only the quote is escaped.
std::string QuoteRuleId(std::string_view id) {
  std::string out;
  for (char ch : id) {
    if (ch == '"' || ch == '%' || static_cast<unsigned char>(ch) < 0x20)
      out += fmt::format("%{:02X}", static_cast<unsigned char>(ch));
    else
      out += ch;
  }
  return out;
}

}  // namespace

std::shared_ptr<const LifecycleConfig> Frontend::Impl::BucketLifecycle(
    const objstore::BucketInfo& b) {
  const std::string* doc = b.Config(kLifecycleConfig);
  if (doc == nullptr) return nullptr;
  {
    std::lock_guard lk(lifecycle_mu);
    auto it = lifecycle_cache.find(b.name);
    if (it != lifecycle_cache.end() && it->second.configs == b.configs) return it->second.config;
  }
  auto parsed = ParseLifecycle(*doc);
  if (!parsed.ok()) {
    kLog.Warn("bucket {}: stored lifecycle configuration unreadable: {}", b.name,
              parsed.error().ToString());
    return nullptr;
  }
  auto config = std::make_shared<const LifecycleConfig>(std::move(*parsed));
  std::lock_guard lk(lifecycle_mu);
  lifecycle_cache[b.name] = LifecycleCacheEntry{b.configs, config};
  return config;
}

void Frontend::Impl::AddExpirationHeader(Ctx& c, const objstore::ObjectMeta& m) {
  auto b = RequestBucket(c);
  if (!b.ok() || (*b)->Config(kLifecycleConfig) == nullptr) return;
  std::shared_ptr<const LifecycleConfig> config = BucketLifecycle(**b);
  if (!config) return;
  LifecycleObject o{m.key.empty() ? std::string_view(c.key) : std::string_view(m.key), m.size,
                    m.mtime_ns, &m.tags};
  auto match = EarliestExpiry(*config, o);
  if (!match) return;
  c.w.AddHeader("x-amz-expiration",
                fmt::format("expiry-date=\"{}\", rule-id=\"{}\"", FormatHttpDate(match->at_ns),
                            QuoteRuleId(match->rule->id)));
}

Status Frontend::Impl::PutBucketLifecycle(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  if (!HasBodyChecksum(c))
    return MakeError("InvalidRequest", "Missing required header for this request: Content-MD5");
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(LifecycleConfig config, ParseLifecycle(body));
  STRATA_RETURN_IF_ERROR(
      engine->SetBucketConfig(c.bucket, kLifecycleConfig, SerializeLifecycle(config)));
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::GetBucketLifecycle(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(objstore::BucketInfo b, engine->GetBucket(c.bucket));
  const std::string* doc = b.Config(kLifecycleConfig);
  if (doc == nullptr)
    return MakeError("NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist");
  SendXml(c, 200, *doc);
  return Status::Ok();
}

Status Frontend::Impl::DeleteBucketLifecycle(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, kLifecycleConfig, std::nullopt));
  c.w.SetStatus(204);
  return Status::Ok();
}

}  // namespace strata::s3
