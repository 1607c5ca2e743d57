#include <strata/core/etag.h>

#include <strata/core/strings.h>

namespace strata {
namespace {

std::string_view Bare(std::string_view etag) {
  etag = Trim(etag);
  if (StartsWith(etag, "W/")) etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return etag;
}

}  // namespace

std::string UnquoteETag(std::string_view etag) { return std::string(Bare(etag)); }

std::string QuoteETag(std::string_view etag) {
  const std::string_view bare = Bare(etag);
  std::string out;
  out.reserve(bare.size() + 2);
  out.push_back('"');
  out.append(bare);
  out.push_back('"');
  return out;
}

bool ETagListMatches(std::string_view header, std::string_view etag) {
  for (std::string_view part : Split(header, ',')) {
    const std::string_view t = Bare(part);
    if (t == "*" || t == etag) return true;
  }
  return false;
}

}  // namespace strata
