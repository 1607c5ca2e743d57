// Object Lock: Put/GetObjectLockConfiguration, Put/GetObjectRetention,
// Put/GetObjectLegalHold, the lock of new versions (x-amz-object-lock-*
// headers, the bucket's default retention), the x-amz-object-lock-* headers
// of GET/HEAD, and the refusal to remove a locked version. The rules are in
// object_lock.h; a bucket gets Object Lock at creation
// (x-amz-bucket-object-lock-enabled, bucket_handlers.cc) or, when its
// versioning is Enabled, from PutObjectLockConfiguration, and keeps it.
#include <string>

#include <strata/core/clock.h>
#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/lifecycle.h"
#include "s3/object_lock.h"
#include "s3/xml.h"

namespace strata::s3 {

using objstore::ObjectMeta;
using objstore::PutOptions;

namespace {

Status MissingLockConfig() {
  return MakeError("InvalidRequest", "Bucket is missing Object Lock Configuration");
}

Status NeedsIntegrity(std::string_view op) {
  return MakeError("InvalidRequest", "Content-MD5 OR x-amz-checksum- HTTP header is required for " +
                                         std::string(op) + " requests with Object Lock parameters");
}

Status NoObjectLock() {
  return MakeError("NoSuchObjectLockConfiguration",
                   "The specified object does not have a ObjectLock configuration");
}

bool BypassRequested(const Ctx& c) {
  return IEquals(Trim(c.H("x-amz-bypass-governance-retention").value_or("")), "true");
}

// The lock the x-amz-object-lock-* headers ask for (mode kNone: none asked).
struct RequestedLock {
  Retention retention;
  std::optional<bool> legal_hold;
  bool any = false;  // some x-amz-object-lock-* header was sent
};

Result<RequestedLock> LockFromHeaders(const Ctx& c, int64_t now_ns) {
  RequestedLock l;
  const auto mode = c.H("x-amz-object-lock-mode");
  const auto until = c.H("x-amz-object-lock-retain-until-date");
  const auto hold = c.H("x-amz-object-lock-legal-hold");
  l.any = mode || until || hold;
  if (mode || until) {
    if (!mode || !until)
      return MakeError("InvalidArgument",
                       "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both "
                       "be supplied");
    l.retention.mode = ParseLockMode(Trim(*mode));
    if (l.retention.mode == LockMode::kNone)
      return MakeError("InvalidArgument",
                       "Unknown wormMode directive: x-amz-object-lock-mode "
                       "must be GOVERNANCE or COMPLIANCE");
    const std::optional<int64_t> t = ParseIso8601(Trim(*until));
    if (!t)
      return MakeError("InvalidArgument",
                       "x-amz-object-lock-retain-until-date must be an ISO 8601 date and time");
    if (*t <= now_ns)
      return MakeError("InvalidArgument", "The retain until date must be in the future!");
    l.retention.until_ns = *t;
  }
  if (hold) {
    const std::string_view h = Trim(*hold);
    if (h != "ON" && h != "OFF")
      return MakeError("InvalidArgument", "Legal Hold must be either of 'ON' or 'OFF'");
    l.legal_hold = h == "ON";
  }
  return l;
}

}  // namespace

int64_t Frontend::Impl::LockNow() const { return opts.clock ? opts.clock() : NowUnixNanos(); }

bool Frontend::Impl::LockEnabled(Ctx& c) {
  auto b = RequestBucket(c);
  return b.ok() && (*b)->Config(kObjectLockConfig) != nullptr;
}

Status Frontend::Impl::ObjectLockForWrite(Ctx& c, PutOptions& o, bool has_body) {
  const int64_t now = LockNow();
  STRATA_ASSIGN_OR_RETURN(RequestedLock l, LockFromHeaders(c, now));
  const bool enabled = LockEnabled(c);
  if (l.any && !enabled) return MissingLockConfig();
  const bool copy = c.H("x-amz-copy-source").has_value();
  if (!enabled && !copy) return Status::Ok();
  if (enabled && l.retention.mode == LockMode::kNone) {
    const std::optional<ObjectLockConfig> cfg =
        DecodeObjectLock(*(*RequestBucket(c))->Config(kObjectLockConfig));
    if (cfg && cfg->mode != LockMode::kNone)
      l.retention = Retention{cfg->mode, DefaultRetainUntil(*cfg, now)};
  }
  if (has_body && (l.retention.mode != LockMode::kNone || l.legal_hold.value_or(false)) &&
      !HasIntegrityHeader(c))
    return NeedsIntegrity(c.op);
  // A copy's metadata starts as its source's: its lock is not inherited.
  auto apply = [l](ObjectMeta& meta) {
    meta.internal.erase(kLockModeMeta);
    meta.internal.erase(kLockUntilMeta);
    meta.internal.erase(kLegalHoldMeta);
    SetRetention(meta, l.retention);
    if (l.legal_hold) SetLegalHold(meta, *l.legal_hold);
  };
  apply(o.meta);
  o.before_commit = [prev = std::move(o.before_commit), apply](const objstore::WriteDigest& d,
                                                               ObjectMeta& meta) -> Status {
    if (prev) STRATA_RETURN_IF_ERROR(prev(d, meta));
    apply(meta);
    return Status::Ok();
  };
  return Status::Ok();
}

void Frontend::Impl::AddObjectLockHeaders(Ctx& c, const ObjectMeta& m) {
  const Retention r = RetentionOf(m);
  if (r.mode != LockMode::kNone) {
    c.w.AddHeader("x-amz-object-lock-mode", LockModeName(r.mode));
    c.w.AddHeader("x-amz-object-lock-retain-until-date", FormatIso8601(r.until_ns));
  }
  if (std::optional<bool> h = LegalHoldOf(m))
    c.w.AddHeader("x-amz-object-lock-legal-hold", *h ? "ON" : "OFF");
}

Result<objstore::DeleteResult> Frontend::Impl::DeleteVersionChecked(Ctx& c, const std::string& key,
                                                                    const std::string& version_id) {
  if (!LockEnabled(c)) return engine->DeleteVersion(c.bucket, key, version_id);
  bool bypass = BypassRequested(c);
  if (bypass) {
    STRATA_ASSIGN_OR_RETURN(const objstore::BucketInfo* b, RequestBucket(c));
    bypass = AuthorizeAction(c, *b, "s3:BypassGovernanceRetention", key, true).ok();
  }
  const int64_t now = LockNow();
  return engine->DeleteVersionIf(c.bucket, key, version_id, [now, bypass](const ObjectMeta& m) {
    return CheckVersionDeletable(m, now, bypass);
  });
}

Status Frontend::Impl::PutObjectLockConfiguration(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(ObjectLockConfig cfg, ParseObjectLockXml(body));
  if (!HasIntegrityHeader(c)) return NeedsIntegrity("PutObjectLockConfiguration");
  STRATA_ASSIGN_OR_RETURN(objstore::BucketInfo b, engine->GetBucket(c.bucket));
  if (b.Config(kObjectLockConfig) == nullptr) {
    const std::string* v = b.Config(kVersioningConfig);
    if (v == nullptr || *v != "Enabled")
      return MakeError("InvalidBucketState",
                       "Versioning must be 'Enabled' on the bucket to apply a Object Lock "
                       "configuration");
  }
  STRATA_RETURN_IF_ERROR(
      engine->SetBucketConfig(c.bucket, kObjectLockConfig, EncodeObjectLock(cfg)));
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::GetObjectLockConfiguration(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(const objstore::BucketInfo* b, RequestBucket(c));
  const std::string* stored = b->Config(kObjectLockConfig);
  if (stored == nullptr)
    return MakeError("ObjectLockConfigurationNotFoundError",
                     "Object Lock configuration does not exist for this bucket");
  SendXml(c, 200, ObjectLockXml(DecodeObjectLock(*stored).value_or(ObjectLockConfig{})));
  return Status::Ok();
}

Status Frontend::Impl::PutObjectRetention(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  if (!LockEnabled(c)) return MissingLockConfig();
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(Retention next, ParseRetentionXml(body));
  if (!HasIntegrityHeader(c)) return NeedsIntegrity("PutObjectRetention");
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m, HeadForSubresource(c));
  (void)m;
  bool bypass = BypassRequested(c);
  if (bypass) {
    STRATA_ASSIGN_OR_RETURN(const objstore::BucketInfo* b, RequestBucket(c));
    bypass = AuthorizeAction(c, *b, "s3:BypassGovernanceRetention", c.key, true).ok();
  }
  const int64_t now = LockNow();
  STRATA_RETURN_IF_ERROR(
      engine->UpdateVersionMeta(c.bucket, c.key, c.Q("versionId"), [&](ObjectMeta& meta) {
        if (meta.delete_marker)
          return MakeError("MethodNotAllowed",
                           "The specified method is not allowed against this resource.");
        STRATA_RETURN_IF_ERROR(CheckRetentionChange(RetentionOf(meta), next, now, bypass));
        SetRetention(meta, next);
        return Status::Ok();
      }));
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::GetObjectRetention(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  if (!LockEnabled(c)) return MissingLockConfig();
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m, HeadForSubresource(c));
  const Retention r = RetentionOf(m);
  if (r.mode == LockMode::kNone) return NoObjectLock();
  SendXml(c, 200, RetentionXml(r));
  return Status::Ok();
}

Status Frontend::Impl::PutObjectLegalHold(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  if (!LockEnabled(c)) return MissingLockConfig();
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(bool on, ParseLegalHoldXml(body));
  if (!HasIntegrityHeader(c)) return NeedsIntegrity("PutObjectLegalHold");
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m, HeadForSubresource(c));
  (void)m;
  STRATA_RETURN_IF_ERROR(
      engine->UpdateVersionMeta(c.bucket, c.key, c.Q("versionId"), [&](ObjectMeta& meta) {
        if (meta.delete_marker)
          return MakeError("MethodNotAllowed",
                           "The specified method is not allowed against this resource.");
        SetLegalHold(meta, on);
        return Status::Ok();
      }));
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::GetObjectLegalHold(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  if (!LockEnabled(c)) return MissingLockConfig();
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m, HeadForSubresource(c));
  const std::optional<bool> on = LegalHoldOf(m);
  if (!on) return NoObjectLock();
  SendXml(c, 200, LegalHoldXml(*on));
  return Status::Ok();
}

}  // namespace strata::s3
