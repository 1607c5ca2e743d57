// What the ObjectStore implementations share, private to objstore (defined in
// object_store.cc, except OpenS3Url in s3_url.cc): store URL parsing, and the
// multipart CRC combination and ETag of stores that compute them themselves.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/result.h>
#include <strata/objstore/object_store.h>

namespace strata::objstore {

// s3://bucket/prefix?... (see OpenObjectStore and s3_client.h).
Result<std::unique_ptr<ObjectStore>> OpenS3Url(std::string_view url);

// A store URL split up: SCHEME://HOST/PATH?k=v&... (values percent-decoded).
struct StoreUrl {
  std::string scheme;  // lower-case
  std::string host;    // bucket, mem name ("" for file://)
  std::string path;    // prefix, or the directory for file:// (decoded)
  std::map<std::string, std::string> params;
};
Result<StoreUrl> ParseStoreUrl(std::string_view url);

// "a/b" -> "a/b/", "" stays "": a URL's prefix names a directory.
std::string NormalizePrefix(std::string prefix);

// Parses "true/false/1/0/yes/no".
std::optional<bool> ParseBool(std::string_view s);


// S3's multipart ETag: hex MD5 of the concatenated raw part MD5s, "-N".
std::optional<std::string> MultipartEtag(const std::vector<std::string>& part_etags);

}  // namespace strata::objstore
