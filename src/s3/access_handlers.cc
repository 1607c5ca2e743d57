// The access-control operations: bucket policies (Put/Get/DeleteBucketPolicy,
// GetBucketPolicyStatus), PublicAccessBlock (Put/Get/Delete), and ACLs
// (Get/PutBucketAcl, Get/PutObjectAcl, and the ACL a new bucket or object
// gets from x-amz-acl / x-amz-grant-*). Who may call each is decided before
// the handler runs (auth.cc); the handlers check documents and store them.
#include <string>

#include <pugixml.hpp>

#include <strata/core/strings.h>

#include "s3/acl.h"
#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/policy.h"
#include "s3/public_access.h"
#include "s3/xml.h"

namespace strata::s3 {

using objstore::BucketInfo;
using objstore::ObjectMeta;

uint8_t DecodePublicAccessBlock(std::string_view stored) {
  auto v = ParseUint64(stored);
  return v && *v <= 15 ? static_cast<uint8_t>(*v) : 15;  // unreadable: block everything
}

Result<uint8_t> ParsePublicAccessBlockXml(std::string_view xml) {
  pugi::xml_document doc;
  if (xml.empty() || !doc.load_buffer(xml.data(), xml.size(), pugi::parse_default))
    return MakeError("MalformedXML",
                     "The XML you provided was not well-formed or did not "
                     "validate against our published schema");
  pugi::xml_node root = doc.document_element();
  std::string_view rn = root.name();
  if (rn.substr(rn.find(':') == std::string_view::npos ? 0 : rn.find(':') + 1) !=
      "PublicAccessBlockConfiguration")
    return MakeError("MalformedXML", "expected a PublicAccessBlockConfiguration document");
  static constexpr std::pair<const char*, uint8_t> kFlags[] = {
      {"BlockPublicAcls", kBlockPublicAcls},
      {"IgnorePublicAcls", kIgnorePublicAcls},
      {"BlockPublicPolicy", kBlockPublicPolicy},
      {"RestrictPublicBuckets", kRestrictPublicBuckets},
  };
  uint8_t flags = 0;
  for (pugi::xml_node n : root.children()) {
    if (n.type() != pugi::node_element) continue;
    std::string_view name = n.name();
    if (size_t c = name.find(':'); c != std::string_view::npos) name = name.substr(c + 1);
    bool known = false;
    for (const auto& [fname, bit] : kFlags) {
      if (name != fname) continue;
      known = true;
      std::string_view v = Trim(n.text().as_string());
      if (v == "true") {
        flags |= bit;
      } else if (v != "false") {
        return MakeError("MalformedXML", std::string(fname) + " must be true or false");
      }
    }
    if (!known) return MakeError("MalformedXML", "unknown element " + std::string(name));
  }
  return flags;
}

Acl BucketAclOf(const BucketInfo& b) {
  if (const std::string* s = b.Config(kAclConfig)) {
    if (auto a = DecodeAcl(*s)) return *a;
  }
  Acl a;
  a.owner = b.owner;
  a.grants.push_back({GranteeType::kUser, b.owner, kAclFullControl});
  if (b.public_read) a.grants.push_back({GranteeType::kAllUsers, "", kAclRead});
  return a;
}

Acl ObjectAclOf(const ObjectMeta& m, const BucketInfo& b) {
  if (auto it = m.internal.find(kAclConfig); it != m.internal.end()) {
    if (auto a = DecodeAcl(it->second)) return *a;
  }
  Acl a;
  a.owner = m.owner.empty() ? b.owner : m.owner;
  a.grants.push_back({GranteeType::kUser, a.owner, kAclFullControl});
  return a;
}

namespace {

Status BlockedAcl() {
  return MakeError("AccessDenied",
                   "Access Denied: the bucket's PublicAccessBlock (BlockPublicAcls) refuses "
                   "public ACLs");
}

}  // namespace

// ---- Bucket policy ----

Status Frontend::Impl::PutBucketPolicy(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(BucketInfo b, engine->GetBucket(c.bucket));
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  if (Trim(body).empty())
    return MakeError("MalformedPolicy",
                     "Policies must be valid JSON and the first byte must be '{'");
  STRATA_ASSIGN_OR_RETURN(auto policy, Policy::Parse(body, PolicyKind::kBucket, c.bucket));
  auto access = AccessOf(b);
  if ((access->pab & kBlockPublicPolicy) && policy->IsPublic())
    return MakeError("AccessDenied",
                     "Access Denied: the bucket's PublicAccessBlock (BlockPublicPolicy) refuses "
                     "a public policy");
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, "policy", std::move(body)));
  c.w.SetStatus(204);
  return Status::Ok();
}

Status Frontend::Impl::GetBucketPolicy(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(BucketInfo b, engine->GetBucket(c.bucket));
  const std::string* p = b.Config("policy");
  if (p == nullptr) return MakeError("NoSuchBucketPolicy", "The bucket policy does not exist");
  c.w.SetStatus(200);
  c.w.AddHeader("Content-Type", "application/json");
  return c.w.Send(*p);
}

Status Frontend::Impl::DeleteBucketPolicy(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, "policy", std::nullopt));
  c.w.SetStatus(204);
  return Status::Ok();
}

Status Frontend::Impl::GetBucketPolicyStatus(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(BucketInfo b, engine->GetBucket(c.bucket));
  if (b.Config("policy") == nullptr)
    return MakeError("NoSuchBucketPolicy", "The bucket policy does not exist");
  auto access = AccessOf(b);
  XmlWriter x("PolicyStatus");
  x.Elem("IsPublic", access->policy != nullptr && access->policy->IsPublic());
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

// ---- PublicAccessBlock ----

Status Frontend::Impl::PutPublicAccessBlock(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(uint8_t flags, ParsePublicAccessBlockXml(body));
  STRATA_RETURN_IF_ERROR(
      engine->SetBucketConfig(c.bucket, kPublicAccessBlockConfig, std::to_string(flags)));
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::GetPublicAccessBlock(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(BucketInfo b, engine->GetBucket(c.bucket));
  const std::string* p = b.Config(kPublicAccessBlockConfig);
  if (p == nullptr)
    return MakeError("NoSuchPublicAccessBlockConfiguration",
                     "The public access block configuration was not found");
  const uint8_t f = DecodePublicAccessBlock(*p);
  XmlWriter x("PublicAccessBlockConfiguration");
  x.Elem("BlockPublicAcls", (f & kBlockPublicAcls) != 0)
      .Elem("IgnorePublicAcls", (f & kIgnorePublicAcls) != 0)
      .Elem("BlockPublicPolicy", (f & kBlockPublicPolicy) != 0)
      .Elem("RestrictPublicBuckets", (f & kRestrictPublicBuckets) != 0);
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::DeletePublicAccessBlock(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, kPublicAccessBlockConfig, std::nullopt));
  c.w.SetStatus(204);
  return Status::Ok();
}

// ---- ACLs ----

namespace {

UserExists ExistsIn(const Ctx& c) {
  return [&c](std::string_view id) {
    return c.users != nullptr && c.users->by_key.count(std::string(id)) > 0;
  };
}

auto HeaderOf(const Ctx& c) {
  return [&c](std::string_view name) { return c.H(name); };
}

}  // namespace

// The ACL a PUT ?acl names: headers (canned or grants) or an AccessControlPolicy body.
static Result<Acl> AclOfPut(Frontend::Impl& im, Ctx& c, std::string_view owner,
                            std::string_view bucket_owner, bool for_bucket) {
  STRATA_ASSIGN_OR_RETURN(
      auto from_headers, AclFromHeaders(HeaderOf(c), owner, bucket_owner, for_bucket, ExistsIn(c)));
  STRATA_ASSIGN_OR_RETURN(std::string body, im.ReadXmlBody(c));
  if (from_headers) {
    if (!Trim(body).empty())
      return MakeError("UnexpectedContent",
                       "This request does not support content: an ACL comes from headers or the "
                       "body, not both");
    return std::move(*from_headers);
  }
  if (Trim(body).empty())
    return MakeError("MissingSecurityHeader",
                     "Your request was missing a required header: x-amz-acl, x-amz-grant-* or an "
                     "AccessControlPolicy body");
  return ParseAclXml(body, owner, ExistsIn(c));
}

Status Frontend::Impl::GetBucketAcl(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(BucketInfo b, engine->GetBucket(c.bucket));
  SendXml(c, 200, AclXml(BucketAclOf(b), [&](std::string_view id) { return DisplayName(c, id); }));
  return Status::Ok();
}

Status Frontend::Impl::PutBucketAcl(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(BucketInfo b, engine->GetBucket(c.bucket));
  STRATA_ASSIGN_OR_RETURN(Acl acl, AclOfPut(*this, c, b.owner, b.owner, true));
  if ((AccessOf(b)->pab & kBlockPublicAcls) && AclIsPublic(acl)) return BlockedAcl();
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, kAclConfig, EncodeAcl(acl)));
  // The legacy flag follows the ACL, for readers of BucketInfo::public_read.
  STRATA_RETURN_IF_ERROR(
      engine->SetBucketPublicRead(c.bucket, AclAllows(acl, kAclRead, "", false)));
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::GetObjectAcl(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(BucketInfo b, engine->GetBucket(c.bucket));
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m, HeadForSubresource(c));
  SendXml(c, 200,
          AclXml(ObjectAclOf(m, b), [&](std::string_view id) { return DisplayName(c, id); }));
  return Status::Ok();
}

Status Frontend::Impl::PutObjectAcl(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(BucketInfo b, engine->GetBucket(c.bucket));
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m, HeadForSubresource(c));
  const std::string owner = m.owner.empty() ? b.owner : m.owner;
  STRATA_ASSIGN_OR_RETURN(Acl acl, AclOfPut(*this, c, owner, b.owner, false));
  if ((AccessOf(b)->pab & kBlockPublicAcls) && AclIsPublic(acl)) return BlockedAcl();
  const std::string enc = EncodeAcl(acl);
  STRATA_RETURN_IF_ERROR(
      engine->UpdateVersionMeta(c.bucket, c.key, c.Q("versionId"), [&](ObjectMeta& meta) {
        meta.internal[kAclConfig] = enc;
        return Status::Ok();
      }));
  c.w.SetStatus(200);
  return c.w.Send("");
}

Result<std::optional<Acl>> Frontend::Impl::NewBucketAcl(Ctx& c) {
  const std::string owner = c.user != nullptr ? c.user->access_key : std::string();
  // Creating a bucket needs no Allow (every user may own buckets), but an
  // explicit Deny of s3:CreateBucket in the user's policy refuses it.
  if (c.user != nullptr && c.user_policy != nullptr) {
    const std::string arn = "arn:aws:s3:::" + c.bucket;
    PolicyRequest pr;
    pr.action = "s3:CreateBucket";
    pr.resource = arn;
    pr.anonymous = false;
    pr.user_id = c.user->access_key;
    pr.user_name = c.user->name;
    if (c.user_policy->Evaluate(pr) == Effect::kDeny)
      return MakeError(
          "AccessDenied",
          "Access Denied: an explicit deny in the user policy refuses s3:CreateBucket on " + arn);
  }
  return AclFromHeaders(HeaderOf(c), owner, owner, true, ExistsIn(c));
}

Status Frontend::Impl::StoreNewBucketAcl(Ctx& c, const std::optional<Acl>& acl) {
  if (!acl) return Status::Ok();
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, kAclConfig, EncodeAcl(*acl)));
  if (AclAllows(*acl, kAclRead, "", false))
    STRATA_RETURN_IF_ERROR(engine->SetBucketPublicRead(c.bucket, true));
  return Status::Ok();
}

Status Frontend::Impl::ObjectAclFromHeaders(Ctx& c, ObjectMeta& meta) {
  if (!c.H("x-amz-acl") && !c.H("x-amz-grant-read") && !c.H("x-amz-grant-write") &&
      !c.H("x-amz-grant-read-acp") && !c.H("x-amz-grant-write-acp") &&
      !c.H("x-amz-grant-full-control"))
    return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(BucketInfo b, engine->GetBucket(c.bucket));
  const std::string owner = c.user != nullptr ? c.user->access_key : b.owner;
  STRATA_ASSIGN_OR_RETURN(auto acl,
                          AclFromHeaders(HeaderOf(c), owner, b.owner, false, ExistsIn(c)));
  if (!acl) return Status::Ok();
  if ((AccessOf(b)->pab & kBlockPublicAcls) && AclIsPublic(*acl)) return BlockedAcl();
  meta.internal[kAclConfig] = EncodeAcl(*acl);
  return Status::Ok();
}

}  // namespace strata::s3
