// The console APIs that reach the services: objects through the S3 frontend
// (re-signed with the user's keys), presigned links, vectors through the
// Qdrant-compatible handler, features from the registry and the feature server.
#include <regex>

#include <nlohmann/json.hpp>

#include <strata/core/clock.h>
#include <strata/core/sigv4.h>
#include <strata/core/strings.h>
#include <strata/features/online_service.h>
#include <strata/features/repo.h>

#include "console/console_internal.h"

namespace strata::console {
namespace {

// Browser headers that mean something to S3 and go on with an object
// request; the rest (Cookie, Origin, the CSRF token, any Authorization or
// x-amz-date/-content-sha256 of the browser's own) stay behind.
bool ForwardsToS3(std::string_view lower) {
  static const char* kKeep[] = {"content-type",
                                "content-length",
                                "content-md5",
                                "content-encoding",
                                "content-disposition",
                                "content-language",
                                "cache-control",
                                "expires",
                                "range",
                                "if-match",
                                "if-none-match",
                                "if-modified-since",
                                "if-unmodified-since",
                                "transfer-encoding"};
  for (const char* k : kKeep)
    if (lower == k) return true;
  return StartsWith(lower, "x-amz-") && lower != "x-amz-date" && lower != "x-amz-content-sha256" &&
         lower != "x-amz-security-token";
}

// "http://127.0.0.1:9000" -> "127.0.0.1:9000"
std::string HostOf(const std::string& endpoint) {
  size_t p = endpoint.find("://");
  std::string h = p == std::string::npos ? endpoint : endpoint.substr(p + 3);
  return h.substr(0, h.find('/'));
}

// Query parameters that would make S3 authenticate by the query instead of
// the console's signature.
bool HasQueryAuth(std::string_view query) {
  for (std::string_view kv : Split(query, '&')) {
    std::string name = ToLower(kv.substr(0, kv.find('=')));
    if (name == "x-amz-signature" || name == "x-amz-credential" || name == "x-amz-algorithm" ||
        name == "awsaccesskeyid" || name == "signature")
      return true;
  }
  return false;
}

// Qdrant calls that only read (POST carries their query); everything else writes.
bool IsVectorRead(std::string_view method, std::string_view path) {
  if (method == "GET" || method == "HEAD") return true;
  if (method != "POST") return false;
  static const std::regex kRead(
      "/collections/[^/]+/points(/search|/search/batch|/scroll|/count|/query|/query/batch|"
      "/recommend|/recommend/batch)?");
  return std::regex_match(path.begin(), path.end(), kRead);
}

nlohmann::json ViewJson(const features::FeatureViewDef& v) {
  nlohmann::json feats = nlohmann::json::array();
  for (const auto& f : v.features) feats.push_back({{"name", f.name}, {"type", f.type.ToString()}});
  nlohmann::json intervals = nlohmann::json::array();
  int64_t last_end = 0;
  for (const auto& i : v.materialization_intervals) {
    intervals.push_back({i.start_us, i.end_us});
    last_end = std::max(last_end, i.end_us);
  }
  return {{"name", v.name},
          {"entities", v.entities},
          {"join_keys", v.join_keys},
          {"ttl_seconds", v.ttl_seconds},
          {"online", v.online},
          {"features", std::move(feats)},
          {"source",
           {{"path", v.source.path},
            {"timestamp_field", v.source.timestamp_field},
            {"created_timestamp_column", v.source.created_timestamp_column}}},
          {"tags", v.tags},
          {"owner", v.owner},
          {"description", v.description},
          {"materialization_intervals", std::move(intervals)},
          {"last_materialized_end_us", last_end}};
}

}  // namespace

void Dispatch(const http::Request& in, ForwardRequest& f, const http::Handler& handler,
              http::ResponseWriter& w) {
  http::Request r = in;  // the connection (and so the body) is the browser's
  std::string target = f.query.empty() ? f.path : f.path + "?" + f.query;
  r.method = f.method;
  r.target = target;
  r.path = f.path;
  r.query = f.query;
  r.headers.clear();
  for (const auto& [k, v] : f.headers) r.headers.push_back({k, v});
  handler(r, w);
}

void Console::Impl::S3(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u,
                       std::string_view rest) {
  if (!opts.s3)
    return SendError(w, 501, "NotImplemented", "the S3 API is switched off on this server");
  if (HasQueryAuth(req.query))
    return SendError(w, 400, "BadRequest",
                     "console object requests cannot carry their own signature");
  ForwardRequest f;
  f.method = std::string(req.method);
  f.path = rest.empty() ? "/" : std::string(rest);
  f.query = std::string(req.query);
  for (const auto& h : req.headers) {
    std::string lower = ToLower(h.name);
    if (ForwardsToS3(lower)) f.headers.emplace_back(lower, std::string(h.value));
  }
  f.headers.emplace_back("host", HostOf(opts.s3_endpoint));
  sigv4::SigningParams sp;
  sp.credentials.access_key = u.access_key;
  sp.credentials.secret_key = u.secret_key;
  sp.region = opts.region;
  sp.now_ns = NowUnixNanos();
  (void)sigv4::SignRequest(f.method, f.path, f.query, f.headers, sigv4::kUnsignedPayload, sp);
  // An object's bytes are served from the console's origin: never as a page
  // that could run script there.
  w.AddHeader("Content-Security-Policy", "sandbox; default-src 'none'");
  w.AddHeader("X-Content-Type-Options", "nosniff");
  w.AddHeader("Cache-Control", "no-store");
  Dispatch(req, f, opts.s3, w);
}

void Console::Impl::Presign(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u) {
  if (req.method != "POST") return SendError(w, 405, "MethodNotAllowed", "presign with POST");
  if (!opts.s3)
    return SendError(w, 501, "NotImplemented", "the S3 API is switched off on this server");
  auto body = req.ReadAllBody(64 * 1024);
  nlohmann::json j;
  if (body) j = nlohmann::json::parse(*body, nullptr, false);
  if (!j.is_object() || !j.contains("bucket") || !j["bucket"].is_string() || !j.contains("key") ||
      !j["key"].is_string() || j["key"].get<std::string>().empty())
    return SendError(w, 400, "BadRequest", "expected {\"bucket\", \"key\", \"expires_s\"?}");
  int64_t expires = 3600;
  if (j.contains("expires_s")) {
    if (!j["expires_s"].is_number_integer())
      return SendError(w, 400, "BadRequest", "expires_s must be a whole number of seconds");
    expires = j["expires_s"];
  }
  if (expires < 1 || expires > 604800)
    return SendError(w, 400, "BadRequest", "expires_s must be 1..604800 (7 days), as S3 allows");
  std::string path = "/" + UriEncode(j["bucket"].get<std::string>(), false) + "/" +
                     UriEncode(j["key"].get<std::string>(), true);
  sigv4::SigningParams sp;
  sp.credentials.access_key = u.access_key;
  sp.credentials.secret_key = u.secret_key;
  sp.region = opts.region;
  sp.now_ns = NowUnixNanos();
  std::string q = sigv4::PresignQuery("GET", HostOf(opts.s3_endpoint), path, "", expires, sp);
  SendJson(
      w, 200,
      nlohmann::json{{"url", opts.s3_endpoint + path + "?" + q}, {"expires_s", expires}}.dump());
}

void Console::Impl::Vector(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u,
                           std::string_view rest) {
  if (!opts.vector)
    return SendError(w, 501, "NotImplemented", "the vector API is switched off on this server");
  if (!u.admin && !IsVectorRead(req.method, rest))
    return SendError(w, 403, "AccessDenied",
                     "changing collections or points needs an admin user (the vector API has one "
                     "key for the whole server, no per-user rights)");
  ForwardRequest f;
  f.method = std::string(req.method);
  f.path = std::string(rest);
  f.query = std::string(req.query);
  for (const auto& h : req.headers) {
    std::string lower = ToLower(h.name);
    if (lower == "content-type" || lower == "content-length" || lower == "transfer-encoding")
      f.headers.emplace_back(lower, std::string(h.value));
  }
  f.headers.emplace_back("host", "console");
  if (!opts.vector_api_key.empty()) f.headers.emplace_back("api-key", opts.vector_api_key);
  Dispatch(req, f, opts.vector, w);
}

void Console::Impl::Features(http::Request& req, http::ResponseWriter& w, std::string_view rest) {
  if (rest == "/online") {
    if (!opts.features)
      return SendError(w, 501, "NotImplemented",
                       "the feature server is switched off on this server");
    if (req.method != "POST")
      return SendError(w, 405, "MethodNotAllowed", "online lookups are POST");
    ForwardRequest f;
    f.method = "POST";
    f.path = "/get-online-features";
    for (const auto& h : req.headers) {
      std::string lower = ToLower(h.name);
      if (lower == "content-type" || lower == "content-length" || lower == "transfer-encoding")
        f.headers.emplace_back(lower, std::string(h.value));
    }
    f.headers.emplace_back("host", "console");
    if (!opts.features_api_key.empty()) f.headers.emplace_back("x-api-key", opts.features_api_key);
    return Dispatch(req, f, opts.features, w);
  }
  if (rest == "/freshness") return FeatureFreshness(req, w);
  if (rest == "/skew") return FeatureSkew(req, w);
  if (!rest.empty()) return SendError(w, 404, "NotFound", "no such features API");
  if (req.method != "GET")
    return SendError(w, 405, "MethodNotAllowed", "the registry is read with GET");
  if (opts.features_repo.empty())
    return SendError(w, 501, "NotImplemented", "this server serves no feature repository");
  auto repo = features::LoadServingRepo(opts.features_repo);
  if (!repo.ok()) return SendError(w, 500, "RegistryUnreadable", repo.error().ToString());
  nlohmann::json ents = nlohmann::json::array(), views = nlohmann::json::array(),
                 services = nlohmann::json::array();
  for (const auto& e : repo->entities)
    ents.push_back({{"name", e.name},
                    {"join_key", e.join_key},
                    {"description", e.description},
                    {"value_type", e.value_type ? e.value_type->ToString() : ""}});
  for (const auto& v : repo->views) views.push_back(ViewJson(v));
  for (const auto& s : repo->services) {
    nlohmann::json proj = nlohmann::json::array();
    for (const auto& p : s.projections)
      proj.push_back({{"view", p.view}, {"features", p.features}});
    services.push_back({{"name", s.name}, {"description", s.description}, {"projections", proj}});
  }
  SendJson(w, 200,
           nlohmann::json{{"project", repo->config.project},
                          {"online_store", repo->config.online_store},
                          {"entities", ents},
                          {"feature_views", views},
                          {"feature_services", services}}
               .dump());
}

}  // namespace strata::console
