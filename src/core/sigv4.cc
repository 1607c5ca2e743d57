#include <strata/core/sigv4.h>

#include <algorithm>
#include <array>

#include <strata/core/checksum.h>
#include <strata/core/strings.h>

namespace strata::sigv4 {
namespace {

constexpr std::string_view kTerminator = "aws4_request";

// Headers a proxy or the HTTP layer may add, drop or rewrite: signing them
// would make a correct request fail verification.
bool IsUnsignedHeader(std::string_view lower_name) {
  static constexpr std::string_view kSkip[] = {
      "authorization", "connection", "expect",  "keep-alive", "proxy-authorization",
      "te",            "trailer",    "upgrade", "user-agent", "transfer-encoding",
      "x-amzn-trace-id"};
  for (std::string_view s : kSkip) {
    if (lower_name == s) return true;
  }
  return false;
}

void SetHeader(HeaderList& headers, std::string_view name, std::string value) {
  for (auto& [k, v] : headers) {
    if (IEquals(k, name)) {
      v = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::string(name), std::move(value));
}

std::string Scope(std::string_view date, const SigningParams& p) {
  std::string s;
  s.reserve(8 + p.region.size() + p.service.size() + kTerminator.size() + 3);
  s.append(date).push_back('/');
  s.append(p.region).push_back('/');
  s.append(p.service).push_back('/');
  s.append(kTerminator);
  return s;
}

}  // namespace

std::string DeriveSigningKey(std::string_view secret, std::string_view date,
                             std::string_view region, std::string_view service) {
  // A few entries per thread: a process sees few (secret, day, region) triples
  // at once, and this is the costly part of signing and verification (4 HMACs).
  struct Entry {
    std::string id;
    std::string key;
  };
  constexpr size_t kEntries = 8;
  thread_local std::array<Entry, kEntries> cache;
  thread_local size_t next = 0;

  std::string id;
  id.reserve(secret.size() + date.size() + region.size() + service.size() + 3);
  id.append(secret).push_back('\0');
  id.append(date).push_back('\0');
  id.append(region).push_back('\0');
  id.append(service);
  for (const Entry& e : cache) {
    if (!e.key.empty() && e.id == id) return e.key;
  }
  std::string k_secret;
  k_secret.reserve(4 + secret.size());
  k_secret.append("AWS4").append(secret);
  std::string key = HmacSha256(k_secret, date);
  key = HmacSha256(key, region);
  key = HmacSha256(key, service);
  key = HmacSha256(key, kTerminator);
  Entry& slot = cache[next];
  next = (next + 1) % kEntries;
  slot.id = std::move(id);
  slot.key = key;
  return key;
}

std::string SignHex(std::string_view signing_key, std::string_view string_to_sign) {
  return HexEncode(HmacSha256(signing_key, string_to_sign));
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = diff | static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

std::string CanonicalQueryString(std::string_view raw_query, bool drop_signature) {
  if (raw_query.empty()) return std::string();
  std::vector<std::pair<std::string, std::string>> params;
  size_t start = 0;
  while (start <= raw_query.size()) {
    size_t end = raw_query.find('&', start);
    if (end == std::string_view::npos) end = raw_query.size();
    const std::string_view piece = raw_query.substr(start, end - start);
    start = end + 1;
    if (piece.empty()) continue;
    const size_t eq = piece.find('=');
    const std::string_view raw_name = piece.substr(0, eq);
    const std::string_view raw_value =
        eq == std::string_view::npos ? std::string_view() : piece.substr(eq + 1);
    if (drop_signature && raw_name == "X-Amz-Signature") continue;
    // A malformed escape is kept as-is (and then encoded), so it can only fail
    // the signature, never match a different request.
    auto name = UriDecode(raw_name, /*plus_as_space=*/true);
    auto value = UriDecode(raw_value, /*plus_as_space=*/true);
    params.emplace_back(UriEncode(name ? *name : raw_name, false),
                        UriEncode(value ? *value : raw_value, false));
  }
  std::sort(params.begin(), params.end());
  std::string out;
  size_t total = 0;
  for (const auto& [n, v] : params) total += n.size() + v.size() + 2;
  out.reserve(total);
  for (size_t i = 0; i < params.size(); ++i) {
    if (i) out.push_back('&');
    out.append(params[i].first).push_back('=');
    out.append(params[i].second);
  }
  return out;
}

std::string CanonicalHeaderValue(std::string_view value) {
  value = Trim(value);
  std::string out;
  out.reserve(value.size());
  bool in_space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f') {
      if (!in_space) out.push_back(' ');
      in_space = true;
    } else {
      out.push_back(c);
      in_space = false;
    }
  }
  return out;
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  std::string sts;
  sts.reserve(kAlgorithm.size() + amz_date.size() + scope.size() + 64 + 3);
  sts.append(kAlgorithm).push_back('\n');
  sts.append(amz_date).push_back('\n');
  sts.append(scope).push_back('\n');
  sts.append(HexEncode(Sha256(canonical_request)));
  return sts;
}

std::string PayloadSha256Hex(std::string_view payload) { return HexEncode(Sha256(payload)); }

Signature SignRequest(std::string_view method, std::string_view path, std::string_view raw_query,
                      HeaderList& headers, std::string_view payload_hash,
                      const SigningParams& params) {
  Signature out;
  out.amz_date = FormatAmzDate(params.now_ns);
  const std::string date = out.amz_date.substr(0, 8);
  out.scope = Scope(date, params);
  SetHeader(headers, "x-amz-date", out.amz_date);
  SetHeader(headers, "x-amz-content-sha256", std::string(payload_hash));
  if (!params.credentials.session_token.empty()) {
    SetHeader(headers, "x-amz-security-token", params.credentials.session_token);
  }

  // Canonical headers: lower-case names, sorted; repeated names joined by ','.
  std::vector<std::pair<std::string, std::string>> canon;
  canon.reserve(headers.size());
  for (const auto& [k, v] : headers) {
    std::string name = ToLower(k);
    if (IsUnsignedHeader(name)) continue;
    canon.emplace_back(std::move(name), CanonicalHeaderValue(v));
  }
  std::stable_sort(canon.begin(), canon.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string canonical_headers, signed_headers;
  for (size_t i = 0; i < canon.size(); ++i) {
    if (i > 0 && canon[i].first == canon[i - 1].first) {
      canonical_headers.pop_back();  // the '\n'
      canonical_headers.push_back(',');
      canonical_headers.append(canon[i].second).push_back('\n');
      continue;
    }
    canonical_headers.append(canon[i].first).push_back(':');
    canonical_headers.append(canon[i].second).push_back('\n');
    if (!signed_headers.empty()) signed_headers.push_back(';');
    signed_headers.append(canon[i].first);
  }

  std::string cr;
  cr.reserve(128 + path.size() + raw_query.size() + canonical_headers.size());
  cr.append(method).push_back('\n');
  cr.append(path.empty() ? std::string_view("/") : path).push_back('\n');
  cr.append(CanonicalQueryString(raw_query, /*drop_signature=*/false)).push_back('\n');
  cr.append(canonical_headers).push_back('\n');
  cr.append(signed_headers).push_back('\n');
  cr.append(payload_hash);

  const std::string key = DeriveSigningKey(params.credentials.secret_key, date, params.region,
                                           params.service);
  out.signature = SignHex(key, StringToSign(out.amz_date, out.scope, cr));
  std::string auth;
  auth.reserve(160 + signed_headers.size());
  auth.append(kAlgorithm).append(" Credential=").append(params.credentials.access_key);
  auth.push_back('/');
  auth.append(out.scope).append(", SignedHeaders=").append(signed_headers);
  auth.append(", Signature=").append(out.signature);
  SetHeader(headers, "Authorization", std::move(auth));
  return out;
}

std::string PresignQuery(std::string_view method, std::string_view host, std::string_view path,
                         std::string_view raw_query, int64_t expires_sec,
                         const SigningParams& params) {
  const std::string amz_date = FormatAmzDate(params.now_ns);
  const std::string date = amz_date.substr(0, 8);
  const std::string scope = Scope(date, params);
  std::string q(raw_query);
  auto add = [&q](std::string_view name, std::string_view value) {
    if (!q.empty()) q.push_back('&');
    q.append(name).push_back('=');
    q.append(UriEncode(value, /*keep_slash=*/false));
  };
  add("X-Amz-Algorithm", kAlgorithm);
  add("X-Amz-Credential", params.credentials.access_key + "/" + scope);
  add("X-Amz-Date", amz_date);
  add("X-Amz-Expires", std::to_string(std::clamp<int64_t>(expires_sec, 1, 604800)));
  if (!params.credentials.session_token.empty()) {
    add("X-Amz-Security-Token", params.credentials.session_token);
  }
  add("X-Amz-SignedHeaders", "host");

  std::string cr;
  cr.append(method).push_back('\n');
  cr.append(path.empty() ? std::string_view("/") : path).push_back('\n');
  cr.append(CanonicalQueryString(q, /*drop_signature=*/true)).push_back('\n');
  cr.append("host:").append(CanonicalHeaderValue(host)).append("\n\nhost\n");
  cr.append(kUnsignedPayload);
  const std::string key = DeriveSigningKey(params.credentials.secret_key, date, params.region,
                                           params.service);
  add("X-Amz-Signature", SignHex(key, StringToSign(amz_date, scope, cr)));
  return q;
}

}  // namespace strata::sigv4
