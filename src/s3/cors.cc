// CORS configurations: parsing and checking (PutBucketCors), the stored and
// returned document, and the matching of cross-origin requests (see cors.h).
#include "s3/cors.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <pugixml.hpp>

#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/xml.h"

namespace strata::s3 {

namespace {

constexpr const char* kCorsMethods[] = {"GET", "PUT", "POST", "DELETE", "HEAD"};
constexpr size_t kMaxRuleIdChars = 255;

size_t Stars(std::string_view s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '*'));
}

// Checks one value of a rule (the element's name says which list it joins).
Status CheckRuleValue(std::string_view name, const std::string& v) {
  if (name == "AllowedMethod") {
    for (const char* m : kCorsMethods)
      if (v == m) return Status::Ok();
    return MakeError("InvalidRequest",
                     fmt::format("Found unsupported HTTP method in CORS config. Unsupported "
                                 "method is {}",
                                 v));
  }
  if ((name == "AllowedOrigin" || name == "AllowedHeader") && Stars(v) > 1)
    return MakeError("InvalidRequest",
                     fmt::format("{} \"{}\" can not have more than one wildcard.", name, v));
  if (name == "ExposeHeader" && Stars(v) > 0)
    return MakeError("InvalidRequest",
                     fmt::format("ExposeHeader \"{}\" contains wildcard. We currently do not "
                                 "support wildcard for ExposeHeader.",
                                 v));
  return Status::Ok();
}

Result<CorsRule> ParseRule(const pugi::xml_node& node) {
  CorsRule rule;
  bool has_id = false;
  for (pugi::xml_node n : node.children()) {
    if (n.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(n);
    std::string v(Trim(n.text().as_string()));
    if (name == "ID") {
      if (has_id) return MalformedXml("a CORSRule has more than one ID");
      if (v.size() > kMaxRuleIdChars)
        return MakeError("InvalidRequest", "The ID of a CORSRule can be up to 255 characters");
      rule.id = std::move(v);
      has_id = true;
      continue;
    }
    if (name == "MaxAgeSeconds") {
      auto age = ParseInt64(v);
      if (!age || *age < 0 || rule.max_age_seconds)
        return MalformedXml("MaxAgeSeconds must appear once, as a non-negative integer");
      rule.max_age_seconds = *age;
      continue;
    }
    std::vector<std::string>* list = name == "AllowedOrigin"   ? &rule.origins
                                     : name == "AllowedMethod" ? &rule.methods
                                     : name == "AllowedHeader" ? &rule.allowed_headers
                                     : name == "ExposeHeader"  ? &rule.expose_headers
                                                               : nullptr;
    if (list == nullptr) return MalformedXml(fmt::format("unknown element {} in CORSRule", name));
    if (v.empty()) return MalformedXml(fmt::format("an empty {}", name));
    STRATA_RETURN_IF_ERROR(CheckRuleValue(name, v));
    list->push_back(std::move(v));
  }
  if (rule.origins.empty()) return MalformedXml("a CORSRule must have an AllowedOrigin");
  if (rule.methods.empty()) return MalformedXml("a CORSRule must have an AllowedMethod");
  return rule;
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool Equal(std::string_view a, std::string_view b, bool ignore_case) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ignore_case ? Lower(a[i]) != Lower(b[i]) : a[i] != b[i]) return false;
  }
  return true;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

}  // namespace

Result<CorsConfig> ParseCorsConfig(std::string_view xml) {
  if (xml.size() > kMaxCorsBytes) return MalformedXml("a CORS configuration can be at most 64 KB");
  pugi::xml_document doc;
  if (Trim(xml).empty() || !doc.load_buffer(xml.data(), xml.size(), pugi::parse_default))
    return MalformedXml("the document does not parse");
  pugi::xml_node root = doc.document_element();
  if (LocalName(root) != "CORSConfiguration")
    return MalformedXml("expected a CORSConfiguration document");
  CorsConfig config;
  for (pugi::xml_node n : root.children()) {
    if (n.type() != pugi::node_element) continue;
    if (LocalName(n) != "CORSRule")
      return MalformedXml(fmt::format("unknown element {} in CORSConfiguration", LocalName(n)));
    if (config.rules.size() == kMaxCorsRules)
      return MalformedXml("a CORS configuration can have at most 100 rules");
    STRATA_ASSIGN_OR_RETURN(CorsRule rule, ParseRule(n));
    config.rules.push_back(std::move(rule));
  }
  if (config.rules.empty()) return MalformedXml("a CORSConfiguration needs at least one CORSRule");
  return config;
}

std::string CorsConfigXml(const CorsConfig& config) {
  XmlWriter x("CORSConfiguration");
  for (const CorsRule& r : config.rules) {
    x.Open("CORSRule");
    if (!r.id.empty()) x.Elem("ID", r.id);
    for (const std::string& h : r.allowed_headers) x.Elem("AllowedHeader", h);
    for (const std::string& m : r.methods) x.Elem("AllowedMethod", m);
    for (const std::string& o : r.origins) x.Elem("AllowedOrigin", o);
    for (const std::string& h : r.expose_headers) x.Elem("ExposeHeader", h);
    if (r.max_age_seconds) x.Elem("MaxAgeSeconds", static_cast<uint64_t>(*r.max_age_seconds));
    x.Close("CORSRule");
  }
  return x.Finish();
}

bool CorsPatternMatch(std::string_view pattern, std::string_view value, bool ignore_case) {
  const size_t star = pattern.find('*');
  if (star == std::string_view::npos) return Equal(pattern, value, ignore_case);
  const std::string_view head = pattern.substr(0, star);
  const std::string_view tail = pattern.substr(star + 1);
  if (value.size() < head.size() + tail.size()) return false;
  return Equal(head, value.substr(0, head.size()), ignore_case) &&
         Equal(tail, value.substr(value.size() - tail.size()), ignore_case);
}

std::vector<std::string> SplitHeaderList(std::string_view list) {
  std::vector<std::string> out;
  for (std::string_view item : Split(list, ',')) {
    item = Trim(item);
    if (!item.empty()) out.push_back(ToLower(item));
  }
  return out;
}

const CorsRule* MatchCorsRule(const CorsConfig& config, std::string_view origin,
                              std::string_view method,
                              const std::vector<std::string>* request_headers) {
  for (const CorsRule& r : config.rules) {
    if (std::find(r.methods.begin(), r.methods.end(), method) == r.methods.end()) continue;
    bool origin_ok = false;
    for (const std::string& o : r.origins)
      origin_ok = origin_ok || CorsPatternMatch(o, origin, false);
    if (!origin_ok) continue;
    bool headers_ok = true;
    if (request_headers != nullptr) {
      for (const std::string& h : *request_headers) {
        bool allowed = false;
        for (const std::string& p : r.allowed_headers)
          allowed = allowed || CorsPatternMatch(p, h, true);
        if (!allowed) {
          headers_ok = false;
          break;
        }
      }
    }
    if (headers_ok) return &r;
  }
  return nullptr;
}

HeaderList CorsResponseHeaders(const CorsRule& rule, std::string_view origin,
                               const std::vector<std::string>* request_headers) {
  HeaderList h;
  // "*" answers "*" only when it is the origin that let the request in;
  // a specific origin is echoed and may carry credentials.
  bool exact = false;
  for (const std::string& o : rule.origins)
    exact = exact || (o != "*" && CorsPatternMatch(o, origin, false));
  const bool wildcard = !exact;
  h.emplace_back("Access-Control-Allow-Origin", wildcard ? std::string("*") : std::string(origin));
  h.emplace_back("Access-Control-Allow-Methods", Join(rule.methods));
  if (request_headers != nullptr && !request_headers->empty())
    h.emplace_back("Access-Control-Allow-Headers", Join(*request_headers));
  if (!rule.expose_headers.empty())
    h.emplace_back("Access-Control-Expose-Headers", Join(rule.expose_headers));
  if (rule.max_age_seconds)
    h.emplace_back("Access-Control-Max-Age", std::to_string(*rule.max_age_seconds));
  if (!wildcard) h.emplace_back("Access-Control-Allow-Credentials", "true");
  h.emplace_back("Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method");
  return h;
}

}  // namespace strata::s3
