#include <strata/objstore/object_store.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <strata/core/checksum.h>
#include <strata/core/file_util.h>
#include <strata/core/strings.h>

#include "objstore/store_common.h"

namespace strata::objstore {

// Defined next to their stores.
Result<std::unique_ptr<ObjectStore>> OpenFileUrl(std::string_view url);
Result<std::unique_ptr<ObjectStore>> OpenMemUrl(std::string_view url);

Result<size_t> StringSource::Read(char* buf, size_t n) {
  const size_t k = std::min(n, data_.size() - pos_);
  std::memcpy(buf, data_.data() + pos_, k);
  pos_ += k;
  return k;
}

Result<size_t> FileSource::Read(char* buf, size_t n) {
  const uint64_t want = std::min<uint64_t>(n, length_ - pos_);
  if (want == 0) return size_t{0};
  STRATA_ASSIGN_OR_RETURN(size_t r, PreadUpTo(fd_, buf, static_cast<size_t>(want),
                                              offset_ + pos_, "upload source"));
  if (r == 0) {
    return Status::IOError("file ended " + std::to_string(length_ - pos_) +
                           " bytes before the range being uploaded (was it truncated?)");
  }
  pos_ += r;
  return r;
}

WriteOptions MetadataOf(const ObjectInfo& info) {
  WriteOptions w;
  w.content_type = info.content_type;
  w.user_meta = info.user_meta;
  w.cache_control = info.cache_control;
  w.content_encoding = info.content_encoding;
  w.content_disposition = info.content_disposition;
  w.expires = info.expires;
  return w;
}

Result<ObjectInfo> ObjectStore::PutBytes(std::string_view key, std::string_view data,
                                         const WriteOptions& options) {
  StringSource src(data);
  WriteOptions o = options;
  o.size = data.size();
  return Put(key, src, o);
}

Result<std::string> ObjectStore::GetBytes(std::string_view key, const ReadOptions& options) {
  std::string out;
  ObjectInfo info;
  bool reserved = false;
  Status s = Get(
      key, options,
      [&](const char* data, size_t n) {
        if (!reserved) {
          reserved = true;
          uint64_t want = info.size > options.offset ? info.size - options.offset : 0;
          if (options.length) want = std::min(want, *options.length);
          out.reserve(static_cast<size_t>(std::min<uint64_t>(want, 1ull << 32)));
        }
        out.append(data, n);
        return Status::Ok();
      },
      &info);
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<Status>> ObjectStore::DeleteMany(const std::vector<std::string>& keys) {
  std::vector<Status> out;
  out.reserve(keys.size());
  for (const std::string& k : keys) out.push_back(Delete(k));
  return out;
}

Status ObjectStore::ListAll(std::string_view prefix,
                            const std::function<Status(const ObjectInfo&)>& fn) {
  std::string token;
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(ListPage page, List(prefix, "", token, 1000));
    for (const ObjectInfo& o : page.objects) STRATA_RETURN_IF_ERROR(fn(o));
    if (page.next_token.empty()) return Status::Ok();
    if (page.next_token == token) {
      return Status::Internal("listing of \"" + std::string(prefix) +
                              "\" did not advance (the backend returned the same token)");
    }
    token = std::move(page.next_token);
  }
}

Status ObjectStore::Rename(std::string_view src_key, std::string_view dst_key) {
  return Status::NotSupported("atomic rename is not supported by " + url() +
                              "; copy and delete instead");
}

Result<StoreUrl> ParseStoreUrl(std::string_view url) {
  StoreUrl u;
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos) {
    return Status::InvalidArgument("\"" + std::string(url) + "\" is not a store URL");
  }
  u.scheme = ToLower(url.substr(0, sep));
  std::string_view rest = url.substr(sep + 3);
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  auto decode = [&](std::string_view s) -> Result<std::string> {
    auto d = UriDecode(s, false);
    if (!d) return Status::InvalidArgument("bad percent-encoding in \"" + std::string(url) + "\"");
    return std::move(*d);
  };
  if (u.scheme == "file") {
    STRATA_ASSIGN_OR_RETURN(u.path, decode(rest));
  } else {
    const size_t slash = rest.find('/');
    STRATA_ASSIGN_OR_RETURN(u.host, decode(rest.substr(0, slash)));
    if (slash != std::string_view::npos) {
      STRATA_ASSIGN_OR_RETURN(u.path, decode(rest.substr(slash + 1)));
    }
  }
  for (std::string_view kv : Split(query, '&')) {
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    auto k = UriDecode(kv.substr(0, eq), true);
    auto v = eq == std::string_view::npos ? std::optional<std::string>("")
                                          : UriDecode(kv.substr(eq + 1), true);
    if (!k || !v) {
      return Status::InvalidArgument("bad query parameter \"" + std::string(kv) + "\" in \"" +
                                     std::string(url) + "\"");
    }
    u.params[*k] = *v;
  }
  return u;
}

std::string NormalizePrefix(std::string prefix) {
  while (!prefix.empty() && prefix.front() == '/') prefix.erase(0, 1);
  if (!prefix.empty() && prefix.back() != '/') prefix.push_back('/');
  return prefix;
}

std::optional<bool> ParseBool(std::string_view s) {
  const std::string v = ToLower(Trim(s));
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  return std::nullopt;
}

std::optional<std::string> MultipartEtag(const std::vector<std::string>& part_etags) {
  std::string md5s;
  md5s.reserve(part_etags.size() * 16);
  for (const std::string& e : part_etags) {
    auto raw = HexDecode(e);
    if (!raw || raw->size() != 16) return std::nullopt;
    md5s += *raw;
  }
  return HexEncode(Md5(md5s)) + "-" + std::to_string(part_etags.size());
}

Result<std::unique_ptr<ObjectStore>> OpenObjectStore(std::string_view url) {
  const size_t sep = url.find("://");
  const std::string scheme = sep == std::string_view::npos ? "" : ToLower(url.substr(0, sep));
  if (scheme == "file") return OpenFileUrl(url);
  if (scheme == "s3") return OpenS3Url(url);
  if (scheme == "mem") return OpenMemUrl(url);
  return Status::InvalidArgument("cannot open object store \"" + std::string(url) +
                                 "\": expected a file://, s3:// or mem:// URL");
}

}  // namespace strata::objstore
