// Policy parsing and evaluation (see policy.h). The grammar and the meaning of
// each element follow AWS's "IAM JSON policy elements reference" and the
// S3 "Actions, resources, and condition keys" page.
#include "s3/policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include <strata/core/strings.h>

#include "s3/errors.h"

namespace strata::s3 {

namespace {

using nlohmann::json;

enum class Op : uint8_t {
  kStringEquals,
  kStringEqualsIgnoreCase,
  kStringLike,
  kNumericEquals,
  kNumericLessThan,
  kNumericLessThanEquals,
  kNumericGreaterThan,
  kNumericGreaterThanEquals,
  kDateEquals,
  kDateLessThan,
  kDateLessThanEquals,
  kDateGreaterThan,
  kDateGreaterThanEquals,
  kBool,
  kIpAddress,
  kNull,
};

struct OpName {
  const char* name;
  Op op;
  bool negated;
};

// Condition operators, by the name a policy uses.
constexpr OpName kOps[] = {
    {"StringEquals", Op::kStringEquals, false},
    {"StringNotEquals", Op::kStringEquals, true},
    {"StringEqualsIgnoreCase", Op::kStringEqualsIgnoreCase, false},
    {"StringNotEqualsIgnoreCase", Op::kStringEqualsIgnoreCase, true},
    {"StringLike", Op::kStringLike, false},
    {"StringNotLike", Op::kStringLike, true},
    {"NumericEquals", Op::kNumericEquals, false},
    {"NumericNotEquals", Op::kNumericEquals, true},
    {"NumericLessThan", Op::kNumericLessThan, false},
    {"NumericLessThanEquals", Op::kNumericLessThanEquals, false},
    {"NumericGreaterThan", Op::kNumericGreaterThan, false},
    {"NumericGreaterThanEquals", Op::kNumericGreaterThanEquals, false},
    {"DateEquals", Op::kDateEquals, false},
    {"DateNotEquals", Op::kDateEquals, true},
    {"DateLessThan", Op::kDateLessThan, false},
    {"DateLessThanEquals", Op::kDateLessThanEquals, false},
    {"DateGreaterThan", Op::kDateGreaterThan, false},
    {"DateGreaterThanEquals", Op::kDateGreaterThanEquals, false},
    {"Bool", Op::kBool, false},
    {"IpAddress", Op::kIpAddress, false},
    {"NotIpAddress", Op::kIpAddress, true},
    {"Null", Op::kNull, false},
};

// The condition keys Strata fills in for a request (lower-case). A policy
// naming another key is refused: evaluating it as "absent" would quietly turn
// a Deny into nothing.
constexpr const char* kConditionKeys[] = {
    "aws:sourceip",
    "aws:securetransport",
    "aws:username",
    "aws:userid",
    "aws:principaltype",
    "aws:currenttime",
    "aws:epochtime",
    "aws:useragent",
    "aws:referer",
    "s3:prefix",
    "s3:delimiter",
    "s3:max-keys",
    "s3:x-amz-acl",
    "s3:x-amz-content-sha256",
    "s3:x-amz-server-side-encryption",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
    "s3:x-amz-storage-class",
    "s3:x-amz-copy-source",
    "s3:x-amz-metadata-directive",
    "s3:x-amz-grant-read",
    "s3:x-amz-grant-write",
    "s3:x-amz-grant-read-acp",
    "s3:x-amz-grant-write-acp",
    "s3:x-amz-grant-full-control",
    "s3:signatureversion",
    "s3:authtype",
};

enum class SetQualifier : uint8_t { kNone, kForAnyValue, kForAllValues };

struct Condition {
  Op op;
  bool negated = false;
  bool if_exists = false;
  SetQualifier qualifier = SetQualifier::kNone;
  std::string key;  // lower-case
  std::vector<std::string> values;
};

Status Malformed(std::string_view what) { return MakeError("MalformedPolicy", what); }

// A JSON string or list of strings (numbers and booleans become their text,
// as IAM accepts them in Condition values).
Result<std::vector<std::string>> StringList(const json& j, std::string_view element, bool scalars) {
  std::vector<std::string> out;
  auto one = [&](const json& v) -> Status {
    if (v.is_string()) {
      out.push_back(v.get<std::string>());
    } else if (scalars && v.is_boolean()) {
      out.push_back(v.get<bool>() ? "true" : "false");
    } else if (scalars && v.is_number()) {
      out.push_back(v.dump());
    } else {
      return Malformed(std::string(element) + " must be a string or a list of strings");
    }
    return Status::Ok();
  };
  if (j.is_array()) {
    if (j.empty()) return Malformed(std::string(element) + " must not be an empty list");
    for (const json& v : j) STRATA_RETURN_IF_ERROR(one(v));
  } else {
    STRATA_RETURN_IF_ERROR(one(j));
  }
  return out;
}

bool ParseIp(std::string_view s, unsigned char* addr, int* family) {
  char buf[INET6_ADDRSTRLEN + 1];
  if (s.size() >= sizeof(buf)) return false;
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  if (inet_pton(AF_INET, buf, addr) == 1) {
    *family = AF_INET;
    return true;
  }
  if (inet_pton(AF_INET6, buf, addr) == 1) {
    *family = AF_INET6;
    return true;
  }
  return false;
}

bool ValidCidr(std::string_view cidr) {
  size_t slash = cidr.find('/');
  unsigned char a[16];
  int fam = 0;
  if (!ParseIp(cidr.substr(0, slash), a, &fam)) return false;
  if (slash == std::string_view::npos) return true;
  auto bits = ParseUint64(cidr.substr(slash + 1));
  return bits && *bits <= (fam == AF_INET ? 32u : 128u);
}

std::optional<double> ParseNumber(std::string_view s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  std::string t(s);
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || *end != '\0') return std::nullopt;
  return v;
}

// ISO 8601 ("2024-01-02T03:04:05Z") or epoch seconds, as IAM's date operators take.
std::optional<int64_t> ParseDate(std::string_view s) {
  if (auto iso = ParseIso8601(s)) return *iso;
  if (s.size() == 10 && s.find_first_not_of("0123456789-") == std::string_view::npos) {
    if (auto iso = ParseIso8601(std::string(s) + "T00:00:00Z")) return *iso;
  }
  if (auto n = ParseInt64(s)) return *n * 1'000'000'000;
  return std::nullopt;
}

bool MatchOne(Op op, std::string_view policy_value, std::string_view v) {
  switch (op) {
    case Op::kStringEquals:
      return policy_value == v;
    case Op::kStringEqualsIgnoreCase:
      return IEquals(policy_value, v);
    case Op::kStringLike:
      return WildcardMatch(policy_value, v, false);
    case Op::kBool:
      return IEquals(policy_value, v);
    case Op::kIpAddress:
      return IpInCidr(policy_value, v);
    case Op::kNumericEquals:
    case Op::kNumericLessThan:
    case Op::kNumericLessThanEquals:
    case Op::kNumericGreaterThan:
    case Op::kNumericGreaterThanEquals: {
      auto a = ParseNumber(v), b = ParseNumber(policy_value);
      if (!a || !b) return false;
      if (op == Op::kNumericEquals) return *a == *b;
      if (op == Op::kNumericLessThan) return *a < *b;
      if (op == Op::kNumericLessThanEquals) return *a <= *b;
      if (op == Op::kNumericGreaterThan) return *a > *b;
      return *a >= *b;
    }
    case Op::kDateEquals:
    case Op::kDateLessThan:
    case Op::kDateLessThanEquals:
    case Op::kDateGreaterThan:
    case Op::kDateGreaterThanEquals: {
      auto a = ParseDate(v), b = ParseDate(policy_value);
      if (!a || !b) return false;
      if (op == Op::kDateEquals) return *a == *b;
      if (op == Op::kDateLessThan) return *a < *b;
      if (op == Op::kDateLessThanEquals) return *a <= *b;
      if (op == Op::kDateGreaterThan) return *a > *b;
      return *a >= *b;
    }
    case Op::kNull:
      return false;
  }
  return false;
}

// One condition against the request, as IAM evaluates it: a key missing from
// the request fails a positive operator and satisfies a negated one (and any
// ...IfExists); the policy's values are alternatives (OR).
bool ConditionHolds(const Condition& cond, const ConditionValues* values) {
  std::optional<std::string> v = values ? values->Get(cond.key) : std::nullopt;
  if (cond.op == Op::kNull) {
    const bool want_absent = IEquals(cond.values.front(), "true");
    return want_absent == !v.has_value();
  }
  if (!v) {
    if (cond.qualifier == SetQualifier::kForAllValues) return true;
    if (cond.qualifier == SetQualifier::kForAnyValue) return false;
    return cond.if_exists || cond.negated;
  }
  bool any = false;
  for (const std::string& pv : cond.values) {
    if (MatchOne(cond.op, pv, *v)) {
      any = true;
      break;
    }
  }
  return cond.negated ? !any : any;
}

// ${aws:username} and ${aws:userid} in a Resource, replaced per request.
std::string Substitute(std::string_view pattern, const PolicyRequest& r) {
  std::string out;
  size_t i = 0;
  while (i < pattern.size()) {
    if (pattern.compare(i, 2, "${") == 0) {
      size_t end = pattern.find('}', i);
      if (end != std::string_view::npos) {
        std::string var = ToLower(pattern.substr(i + 2, end - i - 2));
        if (var == "aws:username") {
          out += r.user_name;
        } else if (var == "aws:userid") {
          out += r.user_id;
        } else if (var == "*" || var == "?" || var == "$") {
          out += "\x01";  // a literal *, ? or $: never a wildcard, see Match below
          out += var;
        }
        i = end + 1;
        continue;
      }
    }
    out += pattern[i++];
  }
  return out;
}

}  // namespace

struct PolicyPrincipal {
  bool any = false;
  std::vector<std::string> ids;  // canonical ids (access keys), user names or user ARNs
};

struct PolicyStatement {
  bool allow = false;
  bool has_principal = false;
  bool not_principal = false;
  PolicyPrincipal principal;
  bool not_action = false;
  std::vector<std::string> actions;
  bool not_resource = false;
  std::vector<std::string> resources;
  std::vector<Condition> conditions;
};

namespace {

bool PrincipalMatches(const PolicyPrincipal& p, const PolicyRequest& r) {
  if (p.any) return true;
  if (r.anonymous) return false;
  for (const std::string& id : p.ids) {
    if (id == r.user_id) return true;
    // arn:aws:iam::ACCOUNT:user/NAME (any account: one server is one account).
    if (StartsWith(id, "arn:aws:iam::")) {
      size_t u = id.find(":user/");
      if (u != std::string::npos && id.substr(u + 6) == r.user_name) return true;
    }
  }
  return false;
}

bool ResourceMatches(const std::string& pattern, const PolicyRequest& r) {
  if (pattern.find("${") == std::string::npos) return WildcardMatch(pattern, r.resource, false);
  return WildcardMatch(Substitute(pattern, r), r.resource, false);
}

bool StatementApplies(const PolicyStatement& s, const PolicyRequest& r) {
  if (s.has_principal && PrincipalMatches(s.principal, r) == s.not_principal) return false;
  bool action = false;
  for (const std::string& a : s.actions) {
    if (WildcardMatch(a, r.action, true)) {
      action = true;
      break;
    }
  }
  if (action == s.not_action) return false;
  bool resource = false;
  for (const std::string& res : s.resources) {
    if (ResourceMatches(res, r)) {
      resource = true;
      break;
    }
  }
  if (resource == s.not_resource) return false;
  for (const Condition& c : s.conditions) {
    if (!ConditionHolds(c, r.conditions)) return false;
  }
  return true;
}

}  // namespace

class PolicyParser {
 public:
  static Result<std::shared_ptr<const Policy>> Parse(std::string_view text, PolicyKind kind,
                                                     std::string_view bucket) {
    if (text.size() > 20 * 1024)
      return MakeError("PolicyTooLarge", "Policies must be no larger than 20 KB");
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Malformed("This policy is not valid JSON");
    if (!j.is_object()) return Malformed("A policy is a JSON object");
    auto p = std::make_shared<Policy>();
    bool has_statement = false;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      if (k == "Version") {
        if (!it->is_string() ||
            (it->get<std::string>() != "2012-10-17" && it->get<std::string>() != "2008-10-17"))
          return Malformed("Version must be \"2012-10-17\" or \"2008-10-17\"");
      } else if (k == "Id") {
        if (!it->is_string()) return Malformed("Id must be a string");
      } else if (k == "Statement") {
        has_statement = true;
        if (it->is_object()) {
          STRATA_RETURN_IF_ERROR(ParseStatement(*it, kind, bucket, *p));
        } else if (it->is_array() && !it->empty()) {
          for (const json& s : *it) {
            if (!s.is_object()) return Malformed("each Statement is a JSON object");
            STRATA_RETURN_IF_ERROR(ParseStatement(s, kind, bucket, *p));
          }
        } else {
          return Malformed("Statement must be an object or a non-empty list of objects");
        }
      } else {
        return Malformed("Unknown policy element \"" + k + "\"");
      }
    }
    if (!has_statement) return Malformed("Missing required field Statement");
    return std::shared_ptr<const Policy>(std::move(p));
  }

 private:
  static Status ParseStatement(const json& s, PolicyKind kind, std::string_view bucket, Policy& p) {
    PolicyStatement st;
    bool effect = false, action = false, resource = false;
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (k == "Sid") {
        if (!it->is_string()) return Malformed("Sid must be a string");
      } else if (k == "Effect") {
        if (!it->is_string()) return Malformed("Effect must be \"Allow\" or \"Deny\"");
        std::string e = it->get<std::string>();
        if (e != "Allow" && e != "Deny") return Malformed("Effect must be \"Allow\" or \"Deny\"");
        st.allow = e == "Allow";
        effect = true;
      } else if (k == "Principal" || k == "NotPrincipal") {
        if (kind == PolicyKind::kIdentity)
          return Malformed("A user policy must not name a Principal: it applies to its user");
        if (st.has_principal) return Malformed("Principal and NotPrincipal are exclusive");
        st.has_principal = true;
        st.not_principal = k == "NotPrincipal";
        STRATA_RETURN_IF_ERROR(ParsePrincipal(*it, st.principal));
      } else if (k == "Action" || k == "NotAction") {
        if (action) return Malformed("Action and NotAction are exclusive");
        action = true;
        st.not_action = k == "NotAction";
        STRATA_ASSIGN_OR_RETURN(st.actions, StringList(*it, k, false));
        for (const std::string& a : st.actions) {
          if (a == "*") continue;
          if (!StartsWith(ToLower(a), "s3:") || a.size() == 3 ||
              a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ*?", 3) !=
                  std::string::npos)
            return Malformed("Policy has invalid action \"" + a + "\" (expected \"s3:Name\")");
        }
      } else if (k == "Resource" || k == "NotResource") {
        if (resource) return Malformed("Resource and NotResource are exclusive");
        resource = true;
        st.not_resource = k == "NotResource";
        STRATA_ASSIGN_OR_RETURN(st.resources, StringList(*it, k, false));
        for (const std::string& r : st.resources)
          STRATA_RETURN_IF_ERROR(CheckResource(r, kind, bucket));
      } else if (k == "Condition") {
        STRATA_RETURN_IF_ERROR(ParseConditions(*it, st.conditions));
      } else {
        return Malformed("Unknown statement element \"" + k + "\"");
      }
    }
    if (!effect) return Malformed("Missing required field Effect");
    if (!action) return Malformed("Missing required field Action");
    if (!resource) return Malformed("Missing required field Resource");
    if (kind == PolicyKind::kBucket && !st.has_principal)
      return Malformed("Missing required field Principal");
    p.statements_.push_back(std::move(st));
    return Status::Ok();
  }

  static Status ParsePrincipal(const json& j, PolicyPrincipal& out) {
    if (j.is_string()) {
      if (j.get<std::string>() != "*") return Malformed("Principal must be \"*\" or an object");
      out.any = true;
      return Status::Ok();
    }
    if (!j.is_object() || j.empty()) return Malformed("Principal must be \"*\" or an object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() != "AWS" && it.key() != "CanonicalUser")
        return Malformed("Principal type \"" + it.key() +
                         "\" is not supported (Strata knows \"AWS\" and \"CanonicalUser\")");
      STRATA_ASSIGN_OR_RETURN(auto ids, StringList(*it, "Principal", false));
      for (std::string& id : ids) {
        if (id == "*") {
          out.any = true;
        } else if (id.empty() || id.find_first_of("*?") != std::string::npos) {
          return Malformed("Invalid principal in policy: \"" + id + "\"");
        } else {
          out.ids.push_back(std::move(id));
        }
      }
    }
    return Status::Ok();
  }

  static Status CheckResource(const std::string& r, PolicyKind kind, std::string_view bucket) {
    if (r == "*" && kind == PolicyKind::kIdentity) return Status::Ok();
    constexpr std::string_view kArn = "arn:aws:s3:::";
    if (!StartsWith(r, kArn) || r.size() == kArn.size())
      return Malformed("Policy has invalid resource \"" + r +
                       "\" (expected arn:aws:s3:::bucket[/key])");
    if (kind == PolicyKind::kBucket && !bucket.empty()) {
      std::string_view rest = std::string_view(r).substr(kArn.size());
      std::string_view b = rest.substr(0, rest.find('/'));
      // S3 refuses a bucket policy naming resources outside its bucket.
      if (!WildcardMatch(b, bucket, false) && b != "*")
        return Malformed("Policy has invalid resource \"" + r + "\": it is not in bucket \"" +
                         std::string(bucket) + "\"");
    }
    for (size_t i = r.find("${"); i != std::string::npos; i = r.find("${", i + 2)) {
      size_t end = r.find('}', i);
      std::string var = end == std::string::npos ? "" : ToLower(r.substr(i + 2, end - i - 2));
      if (var != "aws:username" && var != "aws:userid" && var != "*" && var != "?" && var != "$")
        return Malformed("Policy variable in \"" + r +
                         "\" is not supported (Strata substitutes ${aws:username}, ${aws:userid})");
    }
    return Status::Ok();
  }

  static Status ParseConditions(const json& j, std::vector<Condition>& out) {
    if (!j.is_object()) return Malformed("Condition must be an object of operators");
    for (auto op_it = j.begin(); op_it != j.end(); ++op_it) {
      std::string name = op_it.key();
      Condition base;
      if (StartsWith(name, "ForAnyValue:")) {
        base.qualifier = SetQualifier::kForAnyValue;
        name = name.substr(12);
      } else if (StartsWith(name, "ForAllValues:")) {
        base.qualifier = SetQualifier::kForAllValues;
        name = name.substr(13);
      }
      if (name.size() > 8 && name.compare(name.size() - 8, 8, "IfExists") == 0) {
        base.if_exists = true;
        name.resize(name.size() - 8);
      }
      const OpName* found = nullptr;
      for (const OpName& o : kOps)
        if (name == o.name) found = &o;
      if (found == nullptr || (found->op == Op::kNull && base.if_exists))
        return Malformed("Invalid Condition operator \"" + op_it.key() + "\"");
      base.op = found->op;
      base.negated = found->negated;
      if (!op_it->is_object() || op_it->empty())
        return Malformed("Condition operator \"" + op_it.key() + "\" needs an object of keys");
      for (auto k = op_it->begin(); k != op_it->end(); ++k) {
        Condition c = base;
        c.key = ToLower(k.key());
        if (std::find_if(std::begin(kConditionKeys), std::end(kConditionKeys),
                         [&](const char* s) { return c.key == s; }) == std::end(kConditionKeys))
          return Malformed("Policy has an invalid condition key \"" + k.key() +
                           "\" (not one Strata evaluates)");
        STRATA_ASSIGN_OR_RETURN(c.values, StringList(*k, "Condition values", true));
        for (const std::string& v : c.values) {
          bool ok = true;
          switch (c.op) {
            case Op::kIpAddress:
              ok = ValidCidr(v);
              break;
            case Op::kBool:
            case Op::kNull:
              ok = IEquals(v, "true") || IEquals(v, "false");
              break;
            case Op::kNumericEquals:
            case Op::kNumericLessThan:
            case Op::kNumericLessThanEquals:
            case Op::kNumericGreaterThan:
            case Op::kNumericGreaterThanEquals:
              ok = ParseNumber(v).has_value();
              break;
            case Op::kDateEquals:
            case Op::kDateLessThan:
            case Op::kDateLessThanEquals:
            case Op::kDateGreaterThan:
            case Op::kDateGreaterThanEquals:
              ok = ParseDate(v).has_value();
              break;
            default:
              break;
          }
          if (!ok)
            return Malformed("Invalid value \"" + v + "\" for condition " + op_it.key() + " " +
                             k.key());
        }
        out.push_back(std::move(c));
      }
    }
    return Status::Ok();
  }
};

Policy::Policy() = default;
Policy::~Policy() = default;

Result<std::shared_ptr<const Policy>> Policy::Parse(std::string_view json, PolicyKind kind,
                                                    std::string_view bucket) {
  return PolicyParser::Parse(json, kind, bucket);
}

Effect Policy::Evaluate(const PolicyRequest& r) const {
  Effect e = Effect::kNone;
  for (const PolicyStatement& s : statements_) {
    if (!StatementApplies(s, r)) continue;
    if (!s.allow) return Effect::kDeny;
    e = Effect::kAllow;
  }
  return e;
}

bool Policy::IsPublic() const {
  for (const PolicyStatement& s : statements_) {
    if (!s.allow) continue;
    if (s.has_principal && !s.not_principal && !s.principal.any) continue;
    bool pinned = false;
    for (const Condition& c : s.conditions) {
      if (c.negated) continue;
      if (c.key == "aws:sourceip" && c.op == Op::kIpAddress) {
        bool everything = false;
        for (const std::string& v : c.values) {
          size_t slash = v.find('/');
          if (slash != std::string::npos && v.substr(slash) == "/0") everything = true;
        }
        if (!everything) pinned = true;
      }
      if ((c.key == "aws:userid" || c.key == "aws:username") &&
          (c.op == Op::kStringEquals || c.op == Op::kStringEqualsIgnoreCase))
        pinned = true;
    }
    if (!pinned) return true;
  }
  return false;
}

namespace {

struct OpAction {
  const char* op;
  const char* action;
};

// S3 operation -> the IAM action that authorizes it, from the "Actions,
// resources, and condition keys for Amazon S3" reference.
constexpr OpAction kOpActions[] = {
    {"ListBuckets", "s3:ListAllMyBuckets"},
    {"ListDirectoryBuckets", "s3express:ListAllMyDirectoryBuckets"},
    {"CreateSession", "s3express:CreateSession"},
    {"CreateBucket", "s3:CreateBucket"},
    {"DeleteBucket", "s3:DeleteBucket"},
    {"HeadBucket", "s3:ListBucket"},
    {"ListObjects", "s3:ListBucket"},
    {"ListObjectsV2", "s3:ListBucket"},
    {"ListObjectVersions", "s3:ListBucketVersions"},
    {"ListMultipartUploads", "s3:ListBucketMultipartUploads"},
    {"GetBucketLocation", "s3:GetBucketLocation"},
    {"GetBucketVersioning", "s3:GetBucketVersioning"},
    {"PutBucketVersioning", "s3:PutBucketVersioning"},
    {"GetBucketAcl", "s3:GetBucketAcl"},
    {"PutBucketAcl", "s3:PutBucketAcl"},
    {"GetBucketPolicy", "s3:GetBucketPolicy"},
    {"PutBucketPolicy", "s3:PutBucketPolicy"},
    {"DeleteBucketPolicy", "s3:DeleteBucketPolicy"},
    {"GetBucketPolicyStatus", "s3:GetBucketPolicyStatus"},
    {"GetPublicAccessBlock", "s3:GetBucketPublicAccessBlock"},
    {"PutPublicAccessBlock", "s3:PutBucketPublicAccessBlock"},
    {"DeletePublicAccessBlock", "s3:PutBucketPublicAccessBlock"},
    {"GetBucketCors", "s3:GetBucketCORS"},
    {"PutBucketCors", "s3:PutBucketCORS"},
    {"DeleteBucketCors", "s3:PutBucketCORS"},
    {"GetBucketLifecycle", "s3:GetLifecycleConfiguration"},
    {"GetBucketLifecycleConfiguration", "s3:GetLifecycleConfiguration"},
    {"PutBucketLifecycle", "s3:PutLifecycleConfiguration"},
    {"PutBucketLifecycleConfiguration", "s3:PutLifecycleConfiguration"},
    {"DeleteBucketLifecycle", "s3:PutLifecycleConfiguration"},
    {"GetBucketTagging", "s3:GetBucketTagging"},
    {"PutBucketTagging", "s3:PutBucketTagging"},
    {"DeleteBucketTagging", "s3:PutBucketTagging"},
    {"GetBucketEncryption", "s3:GetEncryptionConfiguration"},
    {"PutBucketEncryption", "s3:PutEncryptionConfiguration"},
    {"DeleteBucketEncryption", "s3:PutEncryptionConfiguration"},
    {"GetObjectLockConfiguration", "s3:GetBucketObjectLockConfiguration"},
    {"PutObjectLockConfiguration", "s3:PutBucketObjectLockConfiguration"},
    {"GetBucketWebsite", "s3:GetBucketWebsite"},
    {"PutBucketWebsite", "s3:PutBucketWebsite"},
    {"DeleteBucketWebsite", "s3:DeleteBucketWebsite"},
    {"GetBucketLogging", "s3:GetBucketLogging"},
    {"PutBucketLogging", "s3:PutBucketLogging"},
    {"GetBucketNotification", "s3:GetBucketNotification"},
    {"GetBucketNotificationConfiguration", "s3:GetBucketNotification"},
    {"PutBucketNotification", "s3:PutBucketNotification"},
    {"PutBucketNotificationConfiguration", "s3:PutBucketNotification"},
    {"GetBucketReplication", "s3:GetReplicationConfiguration"},
    {"PutBucketReplication", "s3:PutReplicationConfiguration"},
    {"DeleteBucketReplication", "s3:PutReplicationConfiguration"},
    {"GetBucketRequestPayment", "s3:GetBucketRequestPayment"},
    {"PutBucketRequestPayment", "s3:PutBucketRequestPayment"},
    {"GetBucketAccelerateConfiguration", "s3:GetAccelerateConfiguration"},
    {"PutBucketAccelerateConfiguration", "s3:PutAccelerateConfiguration"},
    {"GetBucketOwnershipControls", "s3:GetBucketOwnershipControls"},
    {"PutBucketOwnershipControls", "s3:PutBucketOwnershipControls"},
    {"DeleteBucketOwnershipControls", "s3:PutBucketOwnershipControls"},
    {"DeleteObjects", "s3:DeleteObject"},
    {"GetObject", "s3:GetObject"},
    {"HeadObject", "s3:GetObject"},
    {"GetObjectAttributes", "s3:GetObjectAttributes"},
    {"PutObject", "s3:PutObject"},
    {"PostObject", "s3:PutObject"},
    {"CopyObject", "s3:PutObject"},
    {"RenameObject", "s3:PutObject"},
    {"DeleteObject", "s3:DeleteObject"},
    {"GetObjectAcl", "s3:GetObjectAcl"},
    {"PutObjectAcl", "s3:PutObjectAcl"},
    {"GetObjectTagging", "s3:GetObjectTagging"},
    {"PutObjectTagging", "s3:PutObjectTagging"},
    {"DeleteObjectTagging", "s3:DeleteObjectTagging"},
    {"GetObjectRetention", "s3:GetObjectRetention"},
    {"PutObjectRetention", "s3:PutObjectRetention"},
    {"GetObjectLegalHold", "s3:GetObjectLegalHold"},
    {"PutObjectLegalHold", "s3:PutObjectLegalHold"},
    {"RestoreObject", "s3:RestoreObject"},
    {"SelectObjectContent", "s3:GetObject"},
    {"CreateMultipartUpload", "s3:PutObject"},
    {"UploadPart", "s3:PutObject"},
    {"UploadPartCopy", "s3:PutObject"},
    {"CompleteMultipartUpload", "s3:PutObject"},
    {"AbortMultipartUpload", "s3:AbortMultipartUpload"},
    {"ListParts", "s3:ListMultipartUploadParts"},
};

}  // namespace

std::string ActionForOp(std::string_view op) {
  // Looked up on every authorized request: a hash map built once, not a scan.
  static const auto* const kByOp = [] {
    auto* m = new std::unordered_map<std::string_view, std::string_view>();
    for (const OpAction& oa : kOpActions) m->emplace(oa.op, oa.action);
    return m;
  }();
  auto it = kByOp->find(op);
  if (it != kByOp->end()) return std::string(it->second);
  return "s3:" + std::string(op);
}

bool WildcardMatch(std::string_view p, std::string_view t, bool ignore_case) {
  auto eq = [ignore_case](char a, char b) {
    if (!ignore_case) return a == b;
    return (a >= 'A' && a <= 'Z' ? a + 32 : a) == (b >= 'A' && b <= 'Z' ? b + 32 : b);
  };
  // Iterative glob with one backtrack point: linear in practice, no recursion.
  size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && p[pi] == '\x01' && pi + 1 < p.size()) {  // literal from ${*}
      if (eq(p[pi + 1], t[ti])) {
        pi += 2;
        ++ti;
        continue;
      }
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
      continue;
    } else if (pi < p.size() && (p[pi] == '?' || eq(p[pi], t[ti]))) {
      ++pi;
      ++ti;
      continue;
    }
    if (star == std::string_view::npos) return false;
    pi = star + 1;
    ti = ++mark;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

bool IpInCidr(std::string_view cidr, std::string_view ip) {
  size_t slash = cidr.find('/');
  unsigned char net[16], addr[16];
  int nf = 0, af = 0;
  if (!ParseIp(cidr.substr(0, slash), net, &nf) || !ParseIp(ip, addr, &af)) return false;
  // An IPv4 client on a dual-stack socket arrives as ::ffff:a.b.c.d.
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (af == AF_INET6 && nf == AF_INET && std::memcmp(addr, kMapped, 12) == 0) {
    std::memmove(addr, addr + 12, 4);
    af = AF_INET;
  }
  if (nf != af) return false;
  const unsigned max_bits = nf == AF_INET ? 32 : 128;
  unsigned bits = max_bits;
  if (slash != std::string_view::npos) {
    auto b = ParseUint64(cidr.substr(slash + 1));
    if (!b || *b > max_bits) return false;
    bits = static_cast<unsigned>(*b);
  }
  for (unsigned i = 0; i < bits / 8; ++i)
    if (net[i] != addr[i]) return false;
  if (bits % 8 != 0) {
    const unsigned char mask = static_cast<unsigned char>(0xff << (8 - bits % 8));
    if ((net[bits / 8] & mask) != (addr[bits / 8] & mask)) return false;
  }
  return true;
}

}  // namespace strata::s3
