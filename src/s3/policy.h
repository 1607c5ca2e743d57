// Access policies in AWS's JSON policy language, parsed once and evaluated per
// request without HTTP: bucket policies (resource-based, with Principal) and
// user policies (identity-based, without). Supported: Version, Id, Statement
// (one or a list) with Sid, Effect, Principal/NotPrincipal ("*", {"AWS": ...},
// {"CanonicalUser": ...}), Action/NotAction and Resource/NotResource with the
// wildcards * and ?, and Condition with the string, numeric, Bool, IpAddress,
// Null and date operators, the ...IfExists suffix and the ForAnyValue:/
// ForAllValues: qualifiers, on the condition keys listed in policy.cc. A
// document using anything else is refused (MalformedPolicy) rather than
// evaluated as if the unknown part were absent.
//
// Also the S3 operation -> IAM action table ("GetObject" -> "s3:GetObject")
// and the combination of bucket policy, user policy and ACL into one decision
// in the order AWS documents (explicit deny, then allow, else implicit deny).
//
// Thread-safety: a parsed Policy is immutable and may be shared by threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>

namespace strata::s3 {

enum class PolicyKind : uint8_t {
  kBucket,    // resource-based: every statement names a Principal
  kIdentity,  // attached to a user: no Principal
};

// Values of condition keys for one request (aws:SourceIp, s3:prefix, ...),
// looked up only when a statement has a Condition. Keys are lower-case.
class ConditionValues {
 public:
  virtual ~ConditionValues() = default;
  // nullopt: the key is not present in this request.
  virtual std::optional<std::string> Get(std::string_view lower_key) const = 0;
};

// Who asks for what.
struct PolicyRequest {
  std::string_view action;    // "s3:GetObject"
  std::string_view resource;  // "arn:aws:s3:::bucket" or "arn:aws:s3:::bucket/key"
  bool anonymous = true;
  std::string_view user_id;    // the caller's canonical id (its access key), "" anonymous
  std::string_view user_name;  // "alice"
  const ConditionValues* conditions = nullptr;  // nullptr: no key is present
};

enum class Effect : uint8_t { kNone, kAllow, kDeny };

struct PolicyStatement;

class Policy {
 public:
  // Parses and checks a document. For kBucket, `bucket` is the bucket it is
  // attached to: each Resource must be that bucket or objects in it, as S3
  // requires. Errors are MalformedPolicy statuses saying what is wrong.
  static Result<std::shared_ptr<const Policy>> Parse(std::string_view json, PolicyKind kind,
                                                     std::string_view bucket = {});
  ~Policy();

  // kDeny if any matching statement denies, else kAllow if one allows, else kNone.
  Effect Evaluate(const PolicyRequest& r) const;
  // AWS's "public": some Allow statement grants everyone ("*" principal)
  // without a condition that pins the caller (aws:SourceIp to a range that is
  // not everything, aws:userid, aws:username).
  bool IsPublic() const;

  Policy();

 private:
  std::vector<PolicyStatement> statements_;
  friend class PolicyParser;
};

// The IAM action an S3 operation needs ("ListObjectsV2" -> "s3:ListBucket").
// Operations not in the table map to "s3:" + op.
std::string ActionForOp(std::string_view op);

// Glob with * (any run) and ? (one character), as IAM matches Action and Resource.
bool WildcardMatch(std::string_view pattern, std::string_view text, bool ignore_case);

// "1.2.3.4", "10.0.0.0/8", "2001:db8::/32" against an address without port.
bool IpInCidr(std::string_view cidr, std::string_view ip);

}  // namespace strata::s3
