#include "signer.h"

#include <strata/core/checksum.h>
#include <strata/core/strings.h>

#include "s3/sigv4.h"

namespace strata::bench {

std::string_view RequestBuilder::Build(std::string_view method, std::string_view path,
                                       std::string_view query, uint64_t body_len) {
  const bool has_body = method == "PUT" || method == "POST";
  head_.clear();
  head_.append(method).push_back(' ');
  head_.append(path);
  if (!query.empty()) head_.append("?").append(query);
  head_.append(" HTTP/1.1\r\nHost: ").append(host_).append("\r\n");
  if (has_body) head_.append("Content-Length: ").append(std::to_string(body_len)).append("\r\n");
  if (signing()) {
    // Formatting the date is part of a client's cost, but only once a second.
    const int64_t now = NowUnixNanos();
    if (now / 1'000'000'000 != date_cache_sec_) {
      date_cache_sec_ = now / 1'000'000'000;
      date_cache_ = FormatAmzDate(now);
    }
    const std::string_view amz_date = date_cache_;
    const std::string_view date = amz_date.substr(0, 8);
    const std::string_view payload = has_body ? std::string_view("UNSIGNED-PAYLOAD") : s3::kEmptySha256Hex;
    constexpr std::string_view kSigned = "host;x-amz-content-sha256;x-amz-date";

    canonical_.clear();
    canonical_.append(method).push_back('\n');
    canonical_.append(path).push_back('\n');
    if (!query.empty()) canonical_.append(s3::CanonicalQueryString(query, false));
    canonical_.push_back('\n');
    canonical_.append("host:").append(host_).push_back('\n');
    canonical_.append("x-amz-content-sha256:").append(payload).push_back('\n');
    canonical_.append("x-amz-date:").append(amz_date).push_back('\n');
    canonical_.push_back('\n');
    canonical_.append(kSigned).push_back('\n');
    canonical_.append(payload);

    std::string scope;
    scope.reserve(64);
    scope.append(date).append("/").append(cfg_.region).append("/s3/aws4_request");
    sts_.clear();
    sts_.append("AWS4-HMAC-SHA256\n").append(amz_date).push_back('\n');
    sts_.append(scope).push_back('\n');
    sts_.append(HexEncode(Sha256(canonical_)));
    const std::string key = s3::DeriveSigningKey(cfg_.secret_key, date, cfg_.region, "s3");
    const std::string sig = s3::SignHex(key, sts_);

    head_.append("x-amz-date: ").append(amz_date).append("\r\n");
    head_.append("x-amz-content-sha256: ").append(payload).append("\r\n");
    head_.append("Authorization: AWS4-HMAC-SHA256 Credential=").append(cfg_.access_key);
    head_.append("/").append(scope).append(", SignedHeaders=").append(kSigned);
    head_.append(", Signature=").append(sig).append("\r\n");
  }
  head_.append("\r\n");
  return head_;
}

}  // namespace strata::bench
