// Lifecycle configurations: parsing and validation, the canonical XML, rule
// matching and S3's expiry arithmetic (see lifecycle.h).
#include "s3/lifecycle.h"

#include <algorithm>
#include <set>

#include <pugixml.hpp>

#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/xml.h"

namespace strata::s3 {

namespace {

constexpr size_t kMaxRules = 1000;
constexpr size_t kMaxIdChars = 255;

// The single child of that name: nullptr-node when absent, an error when repeated.
Result<pugi::xml_node> One(const pugi::xml_node& n, std::string_view name) {
  pugi::xml_node found;
  for (pugi::xml_node c : n.children()) {
    if (c.type() != pugi::node_element || LocalName(c) != name) continue;
    if (found) return MalformedXml("<" + std::string(name) + "> may appear only once");
    found = c;
  }
  return found;
}

// A whole decimal number (no sign, no fraction): what xs:int / xs:long accept here.
Result<int64_t> Integer(const pugi::xml_node& n, std::string_view what) {
  std::string_view s = Trim(n.text().get());
  bool neg = !s.empty() && s[0] == '-';
  std::string_view digits = neg ? s.substr(1) : s;
  auto v = ParseUint64(digits);
  if (!v || *v > static_cast<uint64_t>(INT64_MAX))
    return MalformedXml(std::string(what) + " must be an integer");
  return neg ? -static_cast<int64_t>(*v) : static_cast<int64_t>(*v);
}

Result<int64_t> Positive(const pugi::xml_node& n, std::string_view field, std::string_view action) {
  STRATA_ASSIGN_OR_RETURN(int64_t v, Integer(n, field));
  if (v <= 0)
    return MakeError("InvalidArgument", "'" + std::string(field) + "' for " + std::string(action) +
                                            " action must be a positive integer");
  return v;
}

Status ParseTag(const pugi::xml_node& t, LifecycleFilter& f) {
  pugi::xml_node k = Child(t, "Key");
  if (!k) return MalformedXml("a <Tag> needs a <Key>");
  std::string key = k.text().get();
  std::string value = Child(t, "Value").text().get();
  if (key.empty() || key.size() > 128 || value.size() > 256)
    return MakeError("InvalidArgument", "tag keys are 1-128 characters and values up to 256");
  for (const auto& [ek, ev] : f.tags) {
    if (ek == key) return MakeError("InvalidArgument", "Duplicate Tag Keys are not allowed.");
  }
  f.tags.emplace_back(std::move(key), std::move(value));
  return Status::Ok();
}

// One condition element of <Filter> or <And> into f. in_and: inside <And>.
Status ParseCondition(const pugi::xml_node& c, LifecycleFilter& f, bool in_and) {
  std::string_view name = LocalName(c);
  if (name == "Prefix") {
    f.prefix = c.text().get();
    return Status::Ok();
  }
  if (name == "Tag") return ParseTag(c, f);
  if (name == "ObjectSizeGreaterThan" || name == "ObjectSizeLessThan") {
    STRATA_ASSIGN_OR_RETURN(int64_t v, Integer(c, name));
    if (v < 0) return MakeError("InvalidArgument", std::string(name) + " must be non-negative");
    (name == "ObjectSizeGreaterThan" ? f.size_greater : f.size_less) = static_cast<uint64_t>(v);
    return Status::Ok();
  }
  if (name == "And" && !in_and) return Status::Ok();  // handled by the caller
  return MalformedXml("unexpected <" + std::string(name) + "> in a " +
                      (in_and ? "<And>" : "<Filter>"));
}

Status ParseFilter(const pugi::xml_node& filter, LifecycleFilter& f) {
  std::vector<pugi::xml_node> conds;
  for (pugi::xml_node c : filter.children()) {
    if (c.type() == pugi::node_element) conds.push_back(c);
  }
  if (conds.empty()) {
    f.form = LifecycleFilter::Form::kEmpty;
    return Status::Ok();
  }
  if (conds.size() > 1)
    return MalformedXml("a <Filter> holds one condition; combine several with <And>");
  pugi::xml_node c = conds[0];
  std::string_view name = LocalName(c);
  if (name != "And") {
    STRATA_RETURN_IF_ERROR(ParseCondition(c, f, false));
    using F = LifecycleFilter::Form;
    f.form = name == "Prefix"                  ? F::kPrefix
             : name == "Tag"                   ? F::kTag
             : name == "ObjectSizeGreaterThan" ? F::kSizeGreater
                                               : F::kSizeLess;
    return Status::Ok();
  }
  f.form = LifecycleFilter::Form::kAnd;
  int prefixes = 0, greater = 0, less = 0, n = 0;
  for (pugi::xml_node a : c.children()) {
    if (a.type() != pugi::node_element) continue;
    std::string_view an = LocalName(a);
    prefixes += an == "Prefix";
    greater += an == "ObjectSizeGreaterThan";
    less += an == "ObjectSizeLessThan";
    ++n;
    STRATA_RETURN_IF_ERROR(ParseCondition(a, f, true));
  }
  if (prefixes > 1 || greater > 1 || less > 1)
    return MalformedXml("an <And> names each of Prefix and the size bounds at most once");
  if (n == 0) return MalformedXml("an <And> needs its conditions");
  if (f.size_greater && f.size_less && *f.size_greater >= *f.size_less)
    return MakeError("InvalidArgument",
                     "ObjectSizeGreaterThan must be less than ObjectSizeLessThan");
  return Status::Ok();
}

Status ParseExpiration(const pugi::xml_node& e, LifecycleRule& r) {
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node days, One(e, "Days"));
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node date, One(e, "Date"));
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node marker, One(e, "ExpiredObjectDeleteMarker"));
  if ((days ? 1 : 0) + (date ? 1 : 0) + (marker ? 1 : 0) != 1)
    return MalformedXml(
        "an <Expiration> holds exactly one of Days, Date and ExpiredObjectDeleteMarker");
  if (days) {
    STRATA_ASSIGN_OR_RETURN(r.expiration_days, Positive(days, "Days", "Expiration"));
  }
  if (date) {
    auto t = ParseIso8601(Trim(date.text().get()));
    if (!t) return MakeError("InvalidArgument", "Date must be in ISO 8601 format");
    if (*t % kDayNanos != 0) return MakeError("InvalidArgument", "'Date' must be at midnight GMT");
    r.expiration_date_ns = *t;
  }
  if (marker) {
    std::string_view v = Trim(marker.text().get());
    if (v != "true" && v != "false")
      return MalformedXml("ExpiredObjectDeleteMarker must be true or false");
    r.expired_object_delete_marker = v == "true";
  }
  return Status::Ok();
}

Status ParseActions(const pugi::xml_node& rule, LifecycleRule& r) {
  for (const char* t : {"Transition", "NoncurrentVersionTransition"}) {
    if (Child(rule, t))
      return MakeError("NotImplemented", std::string(t) +
                                             " (storage classes) is not implemented by Strata; "
                                             "nothing was changed.");
  }
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node exp, One(rule, "Expiration"));
  if (exp) STRATA_RETURN_IF_ERROR(ParseExpiration(exp, r));
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node nve, One(rule, "NoncurrentVersionExpiration"));
  if (nve) {
    STRATA_ASSIGN_OR_RETURN(pugi::xml_node d, One(nve, "NoncurrentDays"));
    if (!d) return MalformedXml("a <NoncurrentVersionExpiration> needs <NoncurrentDays>");
    STRATA_ASSIGN_OR_RETURN(r.noncurrent_days,
                            Positive(d, "NoncurrentDays", "NoncurrentVersionExpiration"));
    STRATA_ASSIGN_OR_RETURN(pugi::xml_node k, One(nve, "NewerNoncurrentVersions"));
    if (k) {
      STRATA_ASSIGN_OR_RETURN(r.newer_noncurrent_versions, Positive(k, "NewerNoncurrentVersions",
                                                                    "NoncurrentVersionExpiration"));
      if (*r.newer_noncurrent_versions > 100)
        return MakeError("InvalidArgument", "NewerNoncurrentVersions must be at most 100");
    }
  }
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node abort, One(rule, "AbortIncompleteMultipartUpload"));
  if (abort) {
    STRATA_ASSIGN_OR_RETURN(pugi::xml_node d, One(abort, "DaysAfterInitiation"));
    if (!d) return MalformedXml("an <AbortIncompleteMultipartUpload> needs <DaysAfterInitiation>");
    STRATA_ASSIGN_OR_RETURN(r.abort_days,
                            Positive(d, "DaysAfterInitiation", "AbortIncompleteMultipartUpload"));
  }
  if (!exp && !nve && !abort)
    return MakeError("InvalidRequest", "At least one action needs to be specified in a rule");
  const bool size_filter = r.filter.size_greater || r.filter.size_less;
  if (r.abort_days && (r.filter.has_tags() || size_filter))
    return MakeError("InvalidRequest",
                     "AbortIncompleteMultipartUpload cannot be specified with Tags or object "
                     "size filters.");
  if (r.expired_object_delete_marker && (r.filter.has_tags() || size_filter))
    return MakeError("InvalidRequest",
                     "ExpiredObjectDeleteMarker cannot be specified with Tags or object size "
                     "filters.");
  return Status::Ok();
}

Result<LifecycleRule> ParseRule(const pugi::xml_node& rule) {
  LifecycleRule r;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node id, One(rule, "ID"));
  if (id) r.id = id.text().get();
  if (r.id.size() > kMaxIdChars)
    return MakeError("InvalidArgument", "ID length should not exceed allowed limit of 255");
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node status, One(rule, "Status"));
  std::string_view st = status ? Trim(status.text().get()) : std::string_view();
  if (st != "Enabled" && st != "Disabled")
    return MalformedXml("Status must be Enabled or Disabled");
  r.enabled = st == "Enabled";
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node prefix, One(rule, "Prefix"));
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node filter, One(rule, "Filter"));
  if (prefix && filter) return MalformedXml("a <Rule> has either <Filter> or <Prefix>, not both");
  if (!prefix && !filter) return MalformedXml("a <Rule> needs a <Filter> (or the legacy <Prefix>)");
  if (prefix) {
    r.filter.form = LifecycleFilter::Form::kLegacyPrefix;
    r.filter.prefix = prefix.text().get();
  } else {
    STRATA_RETURN_IF_ERROR(ParseFilter(filter, r.filter));
  }
  if (r.filter.prefix.size() > 1024)
    return MakeError("InvalidArgument", "The prefix is longer than 1024 bytes");
  STRATA_RETURN_IF_ERROR(ParseActions(rule, r));
  return r;
}

// IDs S3 assigns to rules sent without one: unique, stable across a GET.
std::string GeneratedId(size_t index, const std::set<std::string>& taken) {
  for (size_t n = index;; ++n) {
    std::string id = "rule-" + std::to_string(n + 1);
    if (!taken.count(id)) return id;
  }
}

void WriteFilter(XmlWriter& x, const LifecycleFilter& f) {
  using F = LifecycleFilter::Form;
  if (f.form == F::kLegacyPrefix) {
    x.Elem("Prefix", f.prefix);
    return;
  }
  x.Open("Filter");
  const bool in_and = f.form == F::kAnd;
  if (in_and) x.Open("And");
  if (f.form == F::kPrefix || (in_and && !f.prefix.empty())) x.Elem("Prefix", f.prefix);
  for (const auto& [k, v] : f.tags) x.Open("Tag").Elem("Key", k).Elem("Value", v).Close("Tag");
  if (f.size_greater) x.Elem("ObjectSizeGreaterThan", *f.size_greater);
  if (f.size_less) x.Elem("ObjectSizeLessThan", *f.size_less);
  if (in_and) x.Close("And");
  x.Close("Filter");
}

}  // namespace

Result<LifecycleConfig> ParseLifecycle(std::string_view xml) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size()))
    return MalformedXml("the document is not well-formed XML");
  pugi::xml_node root = doc.document_element();
  if (LocalName(root) != "LifecycleConfiguration")
    return MalformedXml("expected a <LifecycleConfiguration> document");
  LifecycleConfig c;
  std::vector<bool> had_id;
  for (pugi::xml_node n : root.children()) {
    if (n.type() != pugi::node_element) continue;
    if (LocalName(n) != "Rule")
      return MalformedXml("unexpected <" + std::string(LocalName(n)) + ">");
    if (c.rules.size() == kMaxRules)
      return MalformedXml("a lifecycle configuration holds at most 1000 rules");
    STRATA_ASSIGN_OR_RETURN(LifecycleRule r, ParseRule(n));
    had_id.push_back(!r.id.empty());
    c.rules.push_back(std::move(r));
  }
  if (c.rules.empty()) return MalformedXml("a lifecycle configuration needs at least one <Rule>");
  std::set<std::string> ids;
  for (const LifecycleRule& r : c.rules) {
    if (r.id.empty()) continue;
    if (!ids.insert(r.id).second)
      return MakeError("InvalidArgument",
                       "Rule ID must be unique. Found same ID for more than one rule");
  }
  for (size_t i = 0; i < c.rules.size(); ++i) {
    if (had_id[i]) continue;
    c.rules[i].id = GeneratedId(i, ids);
    ids.insert(c.rules[i].id);
  }
  return c;
}

std::string SerializeLifecycle(const LifecycleConfig& config) {
  XmlWriter x("LifecycleConfiguration");
  for (const LifecycleRule& r : config.rules) {
    x.Open("Rule").Elem("ID", r.id);
    WriteFilter(x, r.filter);
    x.Elem("Status", r.enabled ? "Enabled" : "Disabled");
    if (r.has_expiration() || r.expired_object_delete_marker) {
      x.Open("Expiration");
      if (r.expiration_days) x.Elem("Days", static_cast<uint64_t>(*r.expiration_days));
      if (r.expiration_date_ns) x.Elem("Date", FormatIso8601(*r.expiration_date_ns));
      if (r.expired_object_delete_marker)
        x.Elem("ExpiredObjectDeleteMarker", *r.expired_object_delete_marker);
      x.Close("Expiration");
    }
    if (r.noncurrent_days) {
      x.Open("NoncurrentVersionExpiration")
          .Elem("NoncurrentDays", static_cast<uint64_t>(*r.noncurrent_days));
      if (r.newer_noncurrent_versions)
        x.Elem("NewerNoncurrentVersions", static_cast<uint64_t>(*r.newer_noncurrent_versions));
      x.Close("NoncurrentVersionExpiration");
    }
    if (r.abort_days) {
      x.Open("AbortIncompleteMultipartUpload")
          .Elem("DaysAfterInitiation", static_cast<uint64_t>(*r.abort_days))
          .Close("AbortIncompleteMultipartUpload");
    }
    x.Close("Rule");
  }
  return x.Finish();
}

bool FilterMatches(const LifecycleFilter& f, const LifecycleObject& o) {
  if (o.key.substr(0, f.prefix.size()) != f.prefix) return false;
  if (f.size_greater && !(o.size > *f.size_greater)) return false;
  if (f.size_less && !(o.size < *f.size_less)) return false;
  for (const auto& [k, v] : f.tags) {
    if (o.tags == nullptr) return false;
    auto it = o.tags->find(k);
    if (it == o.tags->end() || it->second != v) return false;
  }
  return true;
}

int64_t ExpiryAfterDays(int64_t since_ns, int64_t days) {
  int64_t t = since_ns + (days + 1) * kDayNanos;
  int64_t floor = t / kDayNanos * kDayNanos;
  if (floor > t) floor -= kDayNanos;  // before 1970
  return floor;
}

std::optional<int64_t> RuleExpiry(const LifecycleRule& r, const LifecycleObject& o) {
  if (!r.enabled || !r.has_expiration() || !FilterMatches(r.filter, o)) return std::nullopt;
  if (r.expiration_days) return ExpiryAfterDays(o.mtime_ns, *r.expiration_days);
  return *r.expiration_date_ns;
}

std::optional<ExpiryMatch> EarliestExpiry(const LifecycleConfig& c, const LifecycleObject& o) {
  std::optional<ExpiryMatch> best;
  for (const LifecycleRule& r : c.rules) {
    auto at = RuleExpiry(r, o);
    if (at && (!best || *at < best->at_ns)) best = ExpiryMatch{*at, &r};
  }
  return best;
}

std::vector<size_t> NoncurrentToExpire(const LifecycleConfig& c, std::string_view key,
                                       const std::vector<NoncurrentView>& versions,
                                       int64_t now_ns) {
  std::vector<bool> expire(versions.size(), false);
  for (const LifecycleRule& r : c.rules) {
    if (!r.enabled || !r.noncurrent_days) continue;
    if (key.substr(0, r.filter.prefix.size()) != r.filter.prefix) continue;
    int64_t newer = 0;  // matching noncurrent versions newer than this one
    for (size_t i = 0; i < versions.size(); ++i) {
      LifecycleObject o = versions[i].object;
      o.key = key;
      if (!FilterMatches(r.filter, o)) continue;
      const bool kept = r.newer_noncurrent_versions && newer < *r.newer_noncurrent_versions;
      ++newer;
      if (kept) continue;
      if (now_ns >= ExpiryAfterDays(versions[i].noncurrent_since_ns, *r.noncurrent_days))
        expire[i] = true;
    }
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < expire.size(); ++i) {
    if (expire[i]) out.push_back(i);
  }
  return out;
}

}  // namespace strata::s3
