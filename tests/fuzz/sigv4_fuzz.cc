// Fuzzes SigV4 verification of the S3 frontend: the Authorization header
// (AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...), the
// presigned query parameters (X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date,
// X-Amz-Expires, X-Amz-SignedHeaders, X-Amz-Signature), x-amz-date and
// x-amz-content-sha256, and the canonical request built from them.
// Input: "METHOD\nPATH\nQUERY\nname: value\n..." (one header per line), the
// clock fixed at 2013-05-24T00:00:00Z, the date of AWS's examples, so dated
// inputs get past the skew check.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "s3/sigv4.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view lines[3];
  for (auto& l : lines) {
    const size_t nl = in.find('\n');
    l = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  }
  strata::s3::SigV4Request req;
  req.method = lines[0];
  req.path = lines[1];
  req.query = lines[2];
  req.now_ns = 1369353600LL * 1'000'000'000;
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    std::string_view h = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view v = h.substr(colon + 1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    req.headers.emplace_back(h.substr(0, colon), v);
  }
  auto lookup = [](std::string_view ak) -> std::optional<std::string> {
    if (ak == "AKIAIOSFODNN7EXAMPLE")
      return std::string("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    return std::nullopt;
  };
  auto r = strata::s3::VerifySigV4(req, lookup);
  if (r.has_value()) {
    // Only a request with no authentication at all, or one whose signature
    // was computed with the secret, can pass.
    if (r->payload_mode != strata::s3::PayloadMode::kAnonymous &&
        r->access_key != "AKIAIOSFODNN7EXAMPLE")
      __builtin_trap();
  } else if (r.error().ok()) {
    __builtin_trap();
  }
  return 0;
}
