// Authentication (SigV4, header or query, through VerifySigV4, against the
// user table of the moment) and authorization, in the order AWS documents for
// a request within one account:
//   1. root (admin) users are allowed everything;
//   2. an explicit Deny in the bucket policy or the caller's user policy wins;
//   3. the bucket owner is allowed on their bucket;
//   4. an Allow in the bucket policy or the user policy, or an ACL grant, allows;
//   5. anything else is denied (implicit deny).
// Anonymous callers can only be allowed by a policy naming Principal "*" or an
// ACL grant to AllUsers, and the bucket's PublicAccessBlock can take those
// away (RestrictPublicBuckets, IgnorePublicAcls).
//
// A Strata deviation kept from before ACLs had grants: a bucket ACL's READ
// grant also lets the grantee read the bucket's objects (a public-read bucket
// serves its objects to anonymous callers), where S3 would need object ACLs.
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include <strata/core/clock.h>
#include <strata/core/strings.h>

#include "s3/acl.h"
#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/policy.h"
#include "s3/public_access.h"
#include "s3/sigv4.h"

namespace strata::s3 {

namespace {

// Condition keys of one request, computed when a statement asks for them.
class CtxConditions final : public ConditionValues {
 public:
  CtxConditions(const Ctx& c, std::string_view action) : c_(c), action_(action) {}
  std::optional<std::string> Get(std::string_view k) const override {
    if (k == "aws:sourceip") {
      if (c_.req.remote_addr.empty() || c_.req.remote_addr == "in-memory") return std::nullopt;
      return c_.req.remote_addr;
    }
    if (k == "aws:securetransport") return std::string(c_.req.tls ? "true" : "false");
    if (k == "aws:username")
      return c_.user ? std::optional<std::string>(c_.user->name) : std::nullopt;
    if (k == "aws:userid")
      return c_.user ? std::optional<std::string>(c_.user->access_key) : std::nullopt;
    if (k == "aws:principaltype")
      return std::string(c_.user == nullptr ? "Anonymous" : c_.user->admin ? "Account" : "User");
    if (k == "aws:currenttime") return FormatIso8601(NowUnixNanos());
    if (k == "aws:epochtime") return std::to_string(NowUnixNanos() / 1'000'000'000);
    if (k == "aws:useragent") return Header("user-agent");
    if (k == "aws:referer") return Header("referer");
    if (k == "s3:signatureversion")
      return c_.user ? std::optional<std::string>("AWS4-HMAC-SHA256") : std::nullopt;
    if (k == "s3:authtype") {
      if (c_.user == nullptr) return std::nullopt;
      return std::string(c_.auth.presigned ? "REST-QUERY-STRING" : "REST-HEADER");
    }
    if (k == "s3:prefix" || k == "s3:delimiter" || k == "s3:max-keys") {
      // Listing keys: present on s3:ListBucket requests that carry the parameter.
      if (!IEquals(action_, "s3:ListBucket") && !IEquals(action_, "s3:ListBucketVersions"))
        return std::nullopt;
      std::string q(k.substr(3));
      if (!c_.Has(q)) return std::nullopt;
      return c_.Q(q);
    }
    if (StartsWith(k, "s3:x-amz-")) return Header(k.substr(3));
    return std::nullopt;
  }

 private:
  std::optional<std::string> Header(std::string_view name) const {
    auto h = c_.req.Header(name);
    if (!h) return std::nullopt;
    return std::string(*h);
  }
  const Ctx& c_;
  std::string_view action_;
};

std::string Arn(std::string_view bucket, std::string_view key, bool object) {
  std::string a = "arn:aws:s3:::";
  a += bucket;
  if (object) {
    a += '/';
    a += key;
  }
  return a;
}

// The ACL permission that grants an action, 0 when no ACL can grant it.
// object: whether the permission is looked up on the object's ACL.
uint8_t AclPermFor(std::string_view action, bool object) {
  if (object) {
    if (action == "s3:GetObject") return kAclRead;
    if (action == "s3:GetObjectAcl") return kAclReadAcp;
    if (action == "s3:PutObjectAcl") return kAclWriteAcp;
    return 0;
  }
  if (action == "s3:ListBucket" || action == "s3:ListBucketVersions" ||
      action == "s3:ListBucketMultipartUploads" || action == "s3:GetObject")
    return kAclRead;
  if (action == "s3:PutObject" || action == "s3:DeleteObject" ||
      action == "s3:AbortMultipartUpload" || action == "s3:ListMultipartUploadParts")
    return kAclWrite;
  if (action == "s3:GetBucketAcl") return kAclReadAcp;
  if (action == "s3:PutBucketAcl") return kAclWriteAcp;
  return 0;
}

}  // namespace

Status Frontend::Impl::Authenticate(Ctx& c) {
  c.users = users->Snapshot();
  const UserStore::Table& table = *c.users;
  SigV4Request sr;
  sr.method = c.req.method;
  sr.path = c.req.path;
  sr.query = c.req.query;
  sr.headers.reserve(c.req.headers.size());
  for (const auto& h : c.req.headers) sr.headers.emplace_back(h.name, h.value);
  sr.now_ns = NowUnixNanos();
  ExpressSession session;  // S3 Express: only the session's own key may sign with its token
  STRATA_RETURN_IF_ERROR(ResolveExpressSession(c, sr.now_ns, session));
  auto lookup = [&table, &session](std::string_view ak) -> std::optional<std::string> {
    if (session.user != nullptr)
      return ak == session.claims.access_key ? std::optional(session.secret) : std::nullopt;
    auto it = table.by_key.find(std::string(ak));
    if (it == table.by_key.end()) return std::nullopt;
    return it->second->user.secret_key;
  };
  STRATA_ASSIGN_OR_RETURN(c.auth, VerifySigV4(sr, lookup, opts.max_clock_skew_ns));
  if (session.user != nullptr && c.auth.payload_mode != PayloadMode::kAnonymous)
    return AdoptExpressSession(c, session);
  if (c.auth.payload_mode != PayloadMode::kAnonymous) {
    auto it = table.by_key.find(c.auth.access_key);
    if (it == table.by_key.end())
      return MakeError("InvalidAccessKeyId",
                       "The AWS Access Key Id you provided does not exist in our records.");
    c.user = &it->second->user;
    c.user_policy = it->second->policy.get();
  }
  return Status::Ok();
}

std::shared_ptr<const Frontend::Impl::BucketAccess> Frontend::Impl::AccessOf(
    const objstore::BucketInfo& b) {
  {
    std::shared_lock lock(access_mu);
    auto it = access_cache.find(b.name);
    if (it != access_cache.end() && it->second->configs == b.configs) return it->second;
  }
  auto a = std::make_shared<BucketAccess>();
  a->configs = b.configs;
  if (const std::string* p = b.Config("policy")) {
    auto parsed = Policy::Parse(*p, PolicyKind::kBucket, b.name);
    // A stored policy was checked when it was put; one that no longer parses
    // (a newer server wrote it) denies everything but the owner.
    if (parsed.ok()) {
      a->policy = std::move(*parsed);
    } else {
      kLog.Error("bucket {}: stored policy does not parse: {}", b.name, parsed.error().ToString());
      auto deny = Policy::Parse(
          R"({"Statement":[{"Effect":"Deny","Principal":"*","Action":"*","Resource":"arn:aws:s3:::*"}]})",
          PolicyKind::kBucket);
      if (deny.ok()) a->policy = std::move(*deny);
    }
  }
  if (const std::string* p = b.Config(kPublicAccessBlockConfig))
    a->pab = DecodePublicAccessBlock(*p);
  if (const std::string* p = b.Config(kCorsConfig)) {
    // Stored by PutBucketCors after it parsed; one that no longer parses allows nothing.
    auto parsed = ParseCorsConfig(*p);
    if (parsed.ok()) {
      a->cors = std::make_shared<const CorsConfig>(std::move(*parsed));
    } else {
      kLog.Error("bucket {}: stored CORS configuration does not parse: {}", b.name,
                 parsed.error().ToString());
      a->cors = std::make_shared<const CorsConfig>();
    }
  }
  std::unique_lock lock(access_mu);
  access_cache[b.name] = a;
  return a;
}

Status Frontend::Impl::AuthorizeAction(Ctx& c, const objstore::BucketInfo& b,
                                       std::string_view action, std::string_view key,
                                       bool object_resource) {
  if (c.user != nullptr && c.user->admin) return Status::Ok();
  const bool owner = c.user != nullptr && b.owner == c.user->access_key;
  // The common case, an owner on a bucket without a policy, costs nothing more.
  if (owner && b.Config("policy") == nullptr && c.user_policy == nullptr) return Status::Ok();
  auto access = AccessOf(b);
  const std::string arn = Arn(b.name, key, object_resource);
  CtxConditions cond(c, action);
  PolicyRequest pr;
  pr.action = action;
  pr.resource = arn;
  pr.anonymous = c.user == nullptr;
  if (c.user != nullptr) {
    pr.user_id = c.user->access_key;
    pr.user_name = c.user->name;
  }
  pr.conditions = &cond;
  Effect bucket_effect = access->policy ? access->policy->Evaluate(pr) : Effect::kNone;
  // RestrictPublicBuckets: a public policy grants nothing to callers outside
  // the account (here: anonymous ones).
  if (bucket_effect == Effect::kAllow && c.user == nullptr &&
      (access->pab & kRestrictPublicBuckets) && access->policy->IsPublic())
    bucket_effect = Effect::kNone;
  const Effect user_effect = c.user_policy ? c.user_policy->Evaluate(pr) : Effect::kNone;
  if (bucket_effect == Effect::kDeny || user_effect == Effect::kDeny)
    return MakeError("AccessDenied",
                     fmt::format("Access Denied: an explicit deny in the {} policy "
                                 "refuses {} on {}",
                                 bucket_effect == Effect::kDeny ? "bucket" : "user", action, arn));
  if (owner) return Status::Ok();
  if (bucket_effect == Effect::kAllow || user_effect == Effect::kAllow) return Status::Ok();
  // ACL grants: the bucket's, then (for object reads and object ACLs) the object's.
  const std::string_view id = c.user != nullptr ? std::string_view(c.user->access_key) : "";
  const bool ignore_public = (access->pab & kIgnorePublicAcls) != 0;
  if (uint8_t perm = AclPermFor(action, false); perm != 0) {
    Acl bacl = BucketAclOf(b);
    if (AclAllows(bacl, perm, id, ignore_public)) return Status::Ok();
  }
  if (object_resource && !key.empty()) {
    if (uint8_t perm = AclPermFor(action, true); perm != 0) {
      auto m = engine->HeadObject(b.name, key);
      if (m.ok() && AclAllows(ObjectAclOf(*m, b), perm, id, ignore_public)) return Status::Ok();
    }
  }
  if (c.user == nullptr)
    return MakeError("AccessDenied",
                     "Access Denied: anonymous access is not allowed here; sign the request");
  return MakeError("AccessDenied", fmt::format("Access Denied: no policy or ACL allows {} on {} "
                                               "for user {}",
                                               action, arn, c.user->name));
}

Status Frontend::Impl::Authorize(Ctx& c, bool write) {
  (void)write;  // the operation decides, through its action
  const std::string_view op = c.route_op != nullptr ? std::string_view(c.route_op) : c.op;
  if (c.user != nullptr && c.user->admin) return Status::Ok();
  const std::string action = ActionForOp(op);
  if (c.bucket.empty()) {
    if (c.user == nullptr)
      return MakeError("AccessDenied", "Anonymous access is not allowed; sign the request");
    if (c.user_policy != nullptr) {
      PolicyRequest pr;
      pr.action = action;
      pr.resource = "*";
      pr.anonymous = false;
      pr.user_id = c.user->access_key;
      pr.user_name = c.user->name;
      CtxConditions cond(c, action);
      pr.conditions = &cond;
      if (c.user_policy->Evaluate(pr) == Effect::kDeny)
        return MakeError("AccessDenied",
                         "Access Denied: an explicit deny in the user policy "
                         "refuses " +
                             action);
    }
    return Status::Ok();  // each user lists the buckets it owns
  }
  auto b = RequestBucket(c);
  if (!b.ok()) {
    if (b.error().code() != StatusCode::kNotFound) return b.error();
    // S3 answers NoSuchBucket to everyone, anonymous callers included: a name
    // that does not exist has nothing to protect.
    if (c.user == nullptr) return MakeError("NoSuchBucket", "The specified bucket does not exist");
    return Status::Ok();  // the operation reports NoSuchBucket
  }
  // Multi-object delete is authorized per key (s3:DeleteObject), in the handler.
  if (op == "DeleteObjects") return Status::Ok();
  STRATA_RETURN_IF_ERROR(AuthorizeAction(c, **b, action, c.key, c.has_key));
  return Status::Ok();
}

// A copy reads its source: s3:GetObject on it. A missing source bucket is
// the handler's to report (NoSuchBucket).
Status Frontend::Impl::AuthorizeCopySource(Ctx& c, std::string_view bucket, std::string_view key) {
  if (c.user != nullptr && c.user->admin) return Status::Ok();
  auto src = engine->GetBucket(bucket);
  if (!src.ok()) return src.error().code() == StatusCode::kNotFound ? Status::Ok() : src.error();
  return AuthorizeAction(c, *src, "s3:GetObject", key, true);
}

Status Frontend::Impl::CheckBucket(Ctx& c) {
  auto b = RequestBucket(c);
  if (!b.ok()) return MakeError("NoSuchBucket", "The specified bucket does not exist");
  return Status::Ok();
}

Result<const objstore::BucketInfo*> Frontend::Impl::RequestBucket(Ctx& c) {
  if (!c.bucket_info) {
    STRATA_ASSIGN_OR_RETURN(objstore::BucketInfo b, engine->GetBucket(c.bucket));
    c.bucket_info = std::move(b);
  }
  return &*c.bucket_info;
}

std::string Frontend::Impl::DisplayName(const Ctx& c, std::string_view id) const {
  auto t = c.users ? c.users : users->Snapshot();
  auto it = t->by_key.find(std::string(id));
  return it == t->by_key.end() ? std::string(id) : it->second->user.name;
}

}  // namespace strata::s3
