// ACLs (see acl.h). Canned ACLs and grant semantics from the S3 "Access
// control list (ACL) overview" page.
#include "s3/acl.h"

#include <pugixml.hpp>

#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/xml.h"

namespace strata::s3 {

namespace {

constexpr std::string_view kAllUsersUri = "http://acs.amazonaws.com/groups/global/AllUsers";
constexpr std::string_view kAuthUsersUri =
    "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
constexpr std::string_view kLogDeliveryUri = "http://acs.amazonaws.com/groups/s3/LogDelivery";

struct PermName {
  const char* name;
  uint8_t perm;
};
constexpr PermName kPerms[] = {
    {"READ", kAclRead},
    {"WRITE", kAclWrite},
    {"READ_ACP", kAclReadAcp},
    {"WRITE_ACP", kAclWriteAcp},
    {"FULL_CONTROL", kAclFullControl},
};

const char* PermString(uint8_t p) {
  for (const PermName& n : kPerms)
    if (n.perm == p) return n.name;
  return "READ";
}

Status BadGrantee(std::string_view what) { return MakeError("InvalidArgument", what); }

// A grantee from its type and value ("id", "uri", "emailAddress").
Result<AclGrant> MakeGrantee(std::string_view kind, std::string_view value, uint8_t perm,
                             const UserExists& exists) {
  AclGrant g;
  g.perm = perm;
  if (kind == "id") {
    if (!exists(value))
      return BadGrantee("Invalid id: no user has canonical id \"" + std::string(value) + "\"");
    g.type = GranteeType::kUser;
    g.id = std::string(value);
  } else if (kind == "uri") {
    if (value == kAllUsersUri) {
      g.type = GranteeType::kAllUsers;
    } else if (value == kAuthUsersUri) {
      g.type = GranteeType::kAuthenticatedUsers;
    } else if (value == kLogDeliveryUri) {
      g.type = GranteeType::kLogDelivery;
    } else {
      return BadGrantee("Invalid group uri \"" + std::string(value) + "\"");
    }
  } else if (kind == "emailAddress") {
    return MakeError("UnresolvableGrantByEmailAddress",
                     "The e-mail address you provided does not match any account on record "
                     "(Strata users have no e-mail addresses; grant by id)");
  } else {
    return BadGrantee("Unknown grantee type \"" + std::string(kind) + "\"");
  }
  return g;
}

void AddGrant(Acl& acl, AclGrant g) {
  for (AclGrant& x : acl.grants) {
    if (x.type == g.type && x.id == g.id && x.perm == g.perm) return;
  }
  acl.grants.push_back(std::move(g));
}

}  // namespace

Result<Acl> CannedAcl(std::string_view name, std::string_view owner, std::string_view bucket_owner,
                      bool for_bucket) {
  Acl a;
  a.owner = std::string(owner);
  a.grants.push_back({GranteeType::kUser, std::string(owner), kAclFullControl});
  if (name == "private") {
  } else if (name == "public-read") {
    a.grants.push_back({GranteeType::kAllUsers, "", kAclRead});
  } else if (name == "public-read-write") {
    a.grants.push_back({GranteeType::kAllUsers, "", kAclRead});
    a.grants.push_back({GranteeType::kAllUsers, "", kAclWrite});
  } else if (name == "authenticated-read") {
    a.grants.push_back({GranteeType::kAuthenticatedUsers, "", kAclRead});
  } else if (name == "aws-exec-read") {
    // The grantee is an AWS service; nothing to grant here.
  } else if (name == "bucket-owner-read" && !for_bucket) {
    if (bucket_owner != owner)
      a.grants.push_back({GranteeType::kUser, std::string(bucket_owner), kAclRead});
  } else if (name == "bucket-owner-full-control" && !for_bucket) {
    if (bucket_owner != owner)
      a.grants.push_back({GranteeType::kUser, std::string(bucket_owner), kAclFullControl});
  } else if (name == "log-delivery-write" && for_bucket) {
    a.grants.push_back({GranteeType::kLogDelivery, "", kAclWrite});
    a.grants.push_back({GranteeType::kLogDelivery, "", kAclReadAcp});
  } else if (for_bucket && (name == "bucket-owner-read" || name == "bucket-owner-full-control")) {
    // Accepted on buckets by S3 and equal to private there.
  } else {
    return MakeError("InvalidArgument", "unsupported canned ACL \"" + std::string(name) + "\"");
  }
  return a;
}

Result<std::optional<Acl>> AclFromHeaders(
    const std::function<std::optional<std::string_view>(std::string_view)>& header,
    std::string_view owner, std::string_view bucket_owner, bool for_bucket,
    const UserExists& exists) {
  static constexpr std::pair<const char*, uint8_t> kGrantHeaders[] = {
      {"x-amz-grant-read", kAclRead},
      {"x-amz-grant-write", kAclWrite},
      {"x-amz-grant-read-acp", kAclReadAcp},
      {"x-amz-grant-write-acp", kAclWriteAcp},
      {"x-amz-grant-full-control", kAclFullControl},
  };
  auto canned = header("x-amz-acl");
  bool any_grant = false;
  for (const auto& [h, p] : kGrantHeaders) any_grant |= header(h).has_value();
  if (canned && any_grant)
    return MakeError("InvalidRequest",
                     "Specifying both Canned ACLs and Header Grants is not allowed");
  if (canned) {
    STRATA_ASSIGN_OR_RETURN(Acl a, CannedAcl(Trim(*canned), owner, bucket_owner, for_bucket));
    return std::optional<Acl>(std::move(a));
  }
  if (!any_grant) return std::optional<Acl>();
  Acl a;
  a.owner = std::string(owner);
  for (const auto& [h, perm] : kGrantHeaders) {
    auto v = header(h);
    if (!v) continue;
    // id="a", uri="http://...", emailAddress="x@y"
    for (std::string_view item : Split(*v, ',')) {
      item = Trim(item);
      if (item.empty()) continue;
      size_t eq = item.find('=');
      if (eq == std::string_view::npos)
        return MakeError("InvalidArgument",
                         "grant \"" + std::string(item) + "\" is not type=\"value\"");
      std::string_view kind = Trim(item.substr(0, eq));
      std::string_view val = Trim(item.substr(eq + 1));
      if (val.size() >= 2 && val.front() == '"' && val.back() == '"')
        val = val.substr(1, val.size() - 2);
      STRATA_ASSIGN_OR_RETURN(AclGrant g, MakeGrantee(kind, val, perm, exists));
      AddGrant(a, std::move(g));
    }
  }
  return std::optional<Acl>(std::move(a));
}

namespace {

std::string_view Local(const pugi::xml_node& n) {
  std::string_view s = n.name();
  size_t c = s.find(':');
  return c == std::string_view::npos ? s : s.substr(c + 1);
}

pugi::xml_node ChildNamed(const pugi::xml_node& n, std::string_view name) {
  for (pugi::xml_node c : n.children())
    if (c.type() == pugi::node_element && Local(c) == name) return c;
  return {};
}

}  // namespace

Result<Acl> ParseAclXml(std::string_view xml, std::string_view owner, const UserExists& exists) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size(), pugi::parse_default))
    return MakeError("MalformedACLError", "The XML you provided was not well-formed");
  pugi::xml_node root = doc.document_element();
  if (Local(root) != "AccessControlPolicy")
    return MakeError("MalformedACLError", "expected an AccessControlPolicy document");
  Acl a;
  a.owner = std::string(owner);
  if (pugi::xml_node o = ChildNamed(root, "Owner")) {
    std::string id(Trim(ChildNamed(o, "ID").text().as_string()));
    if (!id.empty() && id != owner)
      return MakeError("AccessDenied", "The ACL's Owner ID is not the resource's owner");
  }
  pugi::xml_node list = ChildNamed(root, "AccessControlList");
  if (!list) return MakeError("MalformedACLError", "missing AccessControlList");
  for (pugi::xml_node g : list.children()) {
    if (g.type() != pugi::node_element || Local(g) != "Grant") continue;
    pugi::xml_node grantee = ChildNamed(g, "Grantee");
    std::string perm_s = ChildNamed(g, "Permission").text().as_string();
    uint8_t perm = 0;
    for (const PermName& n : kPerms)
      if (perm_s == n.name) perm = n.perm;
    if (!grantee || perm == 0)
      return MakeError("MalformedACLError",
                       "each Grant needs a Grantee and a Permission "
                       "(READ, WRITE, READ_ACP, WRITE_ACP, FULL_CONTROL)");
    std::string type;
    for (pugi::xml_attribute at : grantee.attributes()) {
      std::string_view an = at.name();
      if (an == "xsi:type" || (an.size() > 5 && an.substr(an.size() - 5) == ":type") ||
          an == "type")
        type = at.value();
    }
    std::string kind, value;
    if (type == "CanonicalUser" || (type.empty() && ChildNamed(grantee, "ID"))) {
      kind = "id";
      value = ChildNamed(grantee, "ID").text().as_string();
    } else if (type == "Group" || (type.empty() && ChildNamed(grantee, "URI"))) {
      kind = "uri";
      value = ChildNamed(grantee, "URI").text().as_string();
    } else if (type == "AmazonCustomerByEmail") {
      kind = "emailAddress";
    } else {
      return MakeError("MalformedACLError", "unknown Grantee type \"" + type + "\"");
    }
    STRATA_ASSIGN_OR_RETURN(AclGrant gr, MakeGrantee(kind, Trim(value), perm, exists));
    AddGrant(a, std::move(gr));
  }
  return a;
}

std::string AclXml(const Acl& acl,
                   const std::function<std::string(std::string_view)>& display_name) {
  XmlWriter x("AccessControlPolicy");
  x.Open("Owner").Elem("ID", acl.owner).Elem("DisplayName", display_name(acl.owner)).Close("Owner");
  x.Open("AccessControlList");
  for (const AclGrant& g : acl.grants) {
    x.Open("Grant");
    if (g.type == GranteeType::kUser) {
      x.Open(
           "Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
           "xsi:type=\"CanonicalUser\"")
          .Elem("ID", g.id)
          .Elem("DisplayName", display_name(g.id))
          .Close("Grantee");
    } else {
      std::string_view uri = g.type == GranteeType::kAllUsers             ? kAllUsersUri
                             : g.type == GranteeType::kAuthenticatedUsers ? kAuthUsersUri
                                                                          : kLogDeliveryUri;
      x.Open("Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\"")
          .Elem("URI", uri)
          .Close("Grantee");
    }
    x.Elem("Permission", PermString(g.perm)).Close("Grant");
  }
  x.Close("AccessControlList");
  return x.Finish();
}

// "owner\n" then "<type> <perm> <id>\n" per grant; ids never hold spaces or newlines.
std::string EncodeAcl(const Acl& acl) {
  std::string s = acl.owner + "\n";
  for (const AclGrant& g : acl.grants) {
    s += static_cast<char>('0' + static_cast<int>(g.type));
    s += ' ';
    s += std::to_string(g.perm);
    s += ' ';
    s += g.id;
    s += '\n';
  }
  return s;
}

std::optional<Acl> DecodeAcl(std::string_view s) {
  auto lines = Split(s, '\n');
  if (lines.empty()) return std::nullopt;
  Acl a;
  a.owner = std::string(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    if (l.empty()) continue;
    if (l.size() < 4 || l[1] != ' ' || l[0] < '0' || l[0] > '3') return std::nullopt;
    size_t sp = l.find(' ', 2);
    if (sp == std::string_view::npos) return std::nullopt;
    auto perm = ParseUint64(l.substr(2, sp - 2));
    if (!perm || *perm == 0 || *perm > 15) return std::nullopt;
    a.grants.push_back({static_cast<GranteeType>(l[0] - '0'), std::string(l.substr(sp + 1)),
                        static_cast<uint8_t>(*perm)});
  }
  return a;
}

bool AclAllows(const Acl& acl, uint8_t perm, std::string_view id, bool ignore_public) {
  for (const AclGrant& g : acl.grants) {
    if ((g.perm & perm) != perm) continue;
    switch (g.type) {
      case GranteeType::kUser:
        if (!id.empty() && g.id == id) return true;
        break;
      case GranteeType::kAllUsers:
        if (!ignore_public) return true;
        break;
      case GranteeType::kAuthenticatedUsers:
        if (!ignore_public && !id.empty()) return true;
        break;
      case GranteeType::kLogDelivery:
        break;
    }
  }
  return false;
}

bool AclIsPublic(const Acl& acl) {
  for (const AclGrant& g : acl.grants)
    if (g.type == GranteeType::kAllUsers || g.type == GranteeType::kAuthenticatedUsers) return true;
  return false;
}

}  // namespace strata::s3
