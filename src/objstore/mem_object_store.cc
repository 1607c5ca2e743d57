// The in-memory ObjectStore: S3 semantics (conditional writes, multipart rules,
// listing with delimiters and tokens) over a sorted map, for tests.

#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>

#include <strata/core/checksum.h>
#include <strata/core/etag.h>
#include <strata/core/strings.h>
#include <strata/objstore/object_store.h>

#include "objstore/store_common.h"

namespace strata::objstore {
namespace {

constexpr uint64_t kMinPartSize = 5ull << 20;

struct MemObject {
  std::shared_ptr<const std::string> data;
  ObjectInfo info;  // info.key is the full key
};

struct MemPart {
  std::shared_ptr<const std::string> data;
  std::string etag;
  std::string checksum;
};

struct MemUpload {
  std::string key;
  WriteOptions options;
  std::map<int, MemPart> parts;
};

// Shared by every store opened on one mem:// name.
struct MemState {
  std::shared_mutex mu;
  std::map<std::string, MemObject> objects;  // guarded by mu
  std::map<std::string, MemUpload> uploads;  // guarded by mu
  uint64_t next_upload = 1;                  // guarded by mu
};

Result<std::string> ReadAllSource(ByteSource& body, std::optional<uint64_t> size) {
  std::string data;
  if (size) data.reserve(*size);
  char buf[65536];
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(size_t n, body.Read(buf, sizeof(buf)));
    if (n == 0) break;
    data.append(buf, n);
    if (size && data.size() > *size) {
      return Status::InvalidArgument("body is longer than the " + std::to_string(*size) +
                                     " bytes promised");
    }
  }
  if (size && data.size() != *size) {
    return Status::InvalidArgument("IncompleteBody: body has " + std::to_string(data.size()) +
                                   " bytes, " + std::to_string(*size) + " were promised");
  }
  return data;
}

// User metadata names are case-insensitive (HTTP headers): stored lower-case, as S3 does.
std::map<std::string, std::string> LowerKeys(const std::map<std::string, std::string>& m) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : m) out[ToLower(k)] = v;
  return out;
}

std::string Checksum(ChecksumAlgorithm alg, std::string_view data) {
  if (alg == ChecksumAlgorithm::kNone) return "";
  auto h = Hasher::Create(alg);
  h->Update(data.data(), data.size());
  return Base64Encode(h->Digest());
}

class MemObjectStore final : public ObjectStore {
 public:
  MemObjectStore(std::shared_ptr<MemState> state, std::string name, std::string prefix)
      : state_(std::move(state)), name_(std::move(name)), prefix_(std::move(prefix)) {}

  std::string url() const override { return "mem://" + name_ + (prefix_.empty() ? "" : "/" + prefix_); }

  Result<ObjectInfo> Put(std::string_view key, ByteSource& body,
                         const WriteOptions& options) override {
    STRATA_RETURN_IF_ERROR(CheckKey(key));
    STRATA_ASSIGN_OR_RETURN(std::string data, ReadAllSource(body, options.size));
    MemObject obj;
    obj.info.size = data.size();
    obj.info.etag = HexEncode(Md5(data));
    obj.info.content_type = options.content_type;
    obj.info.user_meta = LowerKeys(options.user_meta);
    obj.info.checksum_algorithm = options.checksum;
    obj.info.checksum = Checksum(options.checksum, data);
    obj.data = std::make_shared<const std::string>(std::move(data));
    return Commit(Full(key), std::move(obj), options);
  }

  Status Get(std::string_view key, const ReadOptions& options, const ByteSink& sink,
             ObjectInfo* info) override {
    MemObject obj;
    {
      std::shared_lock lock(state_->mu);
      auto it = state_->objects.find(Full(key));
      if (it == state_->objects.end()) return NoKey(key);
      obj = it->second;
    }
    if (options.if_match && *options.if_match != "*" && UnquoteETag(*options.if_match) != obj.info.etag) {
      return Status::PreconditionFailed("PreconditionFailed: \"" + std::string(key) +
                                        "\" changed: its ETag is " + obj.info.etag + ", not " +
                                        *options.if_match);
    }
    if (info != nullptr) *info = Relative(obj.info);
    const std::string& d = *obj.data;
    uint64_t start = std::min<uint64_t>(options.offset, d.size());
    uint64_t end = options.length ? std::min<uint64_t>(d.size(), start + *options.length) : d.size();
    for (uint64_t off = start; off < end;) {
      const uint64_t n = std::min<uint64_t>(end - off, 1 << 20);
      STRATA_RETURN_IF_ERROR(sink(d.data() + off, n));
      off += n;
    }
    return Status::Ok();
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    std::shared_lock lock(state_->mu);
    auto it = state_->objects.find(Full(key));
    if (it == state_->objects.end()) return NoKey(key);
    return Relative(it->second.info);
  }

  Status Delete(std::string_view key) override {
    std::unique_lock lock(state_->mu);
    state_->objects.erase(Full(key));
    return Status::Ok();
  }

  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, int max_keys) override {
    max_keys = std::clamp(max_keys, 1, 1000);
    const std::string full_prefix = Full(prefix);
    ListPage page;
    std::shared_lock lock(state_->mu);
    auto it = token.empty() ? state_->objects.lower_bound(full_prefix)
                            : state_->objects.upper_bound(std::string(token));
    std::string last;
    int count = 0;
    for (; it != state_->objects.end(); ++it) {
      const std::string& k = it->first;
      if (k.compare(0, full_prefix.size(), full_prefix) != 0) break;
      // Resuming after a common prefix: skip what it rolled up.
      if (!delimiter.empty() && !token.empty() && token.size() >= delimiter.size() &&
          token.substr(token.size() - delimiter.size()) == delimiter && StartsWith(k, token)) {
        continue;
      }
      if (count == max_keys) {
        page.next_token = last;
        return page;
      }
      if (!delimiter.empty()) {
        size_t d = k.find(delimiter, full_prefix.size());
        if (d != std::string::npos) {
          std::string cp = k.substr(0, d + delimiter.size());
          page.common_prefixes.push_back(cp.substr(prefix_.size()));
          last = cp;
          ++count;
          // Skip the rest of this common prefix.
          auto next = state_->objects.lower_bound(cp);
          while (next != state_->objects.end() && StartsWith(next->first, cp)) ++next;
          it = std::prev(next);
          continue;
        }
      }
      page.objects.push_back(Relative(it->second.info));
      last = k;
      ++count;
    }
    return page;
  }

  Result<std::string> CreateMultipart(std::string_view key, const WriteOptions& options) override {
    STRATA_RETURN_IF_ERROR(CheckKey(key));
    std::unique_lock lock(state_->mu);
    std::string id = "mem-upload-" + std::to_string(state_->next_upload++);
    MemUpload& u = state_->uploads[id];
    u.key = Full(key);
    u.options = options;
    return id;
  }

  Result<UploadedPart> UploadPart(std::string_view key, std::string_view upload_id,
                                  int part_number, ByteSource& body, uint64_t size) override {
    if (part_number < 1 || part_number > 10000) {
      return Status::InvalidArgument("InvalidArgument: part number must be in 1..10000");
    }
    ChecksumAlgorithm alg;
    {
      std::shared_lock lock(state_->mu);
      STRATA_ASSIGN_OR_RETURN(const MemUpload* u, FindUpload(key, upload_id));
      alg = u->options.checksum;
    }
    STRATA_ASSIGN_OR_RETURN(std::string data, ReadAllSource(body, size));
    MemPart p;
    p.etag = HexEncode(Md5(data));
    p.checksum = Checksum(alg, data);
    p.data = std::make_shared<const std::string>(std::move(data));
    UploadedPart out{part_number, p.etag, size, p.checksum};
    std::unique_lock lock(state_->mu);
    auto it = state_->uploads.find(std::string(upload_id));
    if (it == state_->uploads.end()) return NoUpload(upload_id);
    it->second.parts[part_number] = std::move(p);
    return out;
  }

  Result<ObjectInfo> CompleteMultipart(std::string_view key, std::string_view upload_id,
                                       const std::vector<UploadedPart>& parts) override {
    if (parts.empty()) {
      return Status::InvalidArgument("MalformedXML: CompleteMultipart needs at least one part");
    }
    std::unique_lock lock(state_->mu);
    auto it = state_->uploads.find(std::string(upload_id));
    if (it == state_->uploads.end() || it->second.key != Full(key)) return NoUpload(upload_id);
    MemUpload& u = it->second;
    std::string data;
    std::vector<std::string> etags;
    std::vector<std::pair<std::string, uint64_t>> crcs;
    int prev = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const UploadedPart& cp = parts[i];
      if (cp.number <= prev) {
        return Status::InvalidArgument("InvalidPartOrder: parts must be in ascending order");
      }
      prev = cp.number;
      auto p = u.parts.find(cp.number);
      if (p == u.parts.end() || UnquoteETag(cp.etag) != p->second.etag) {
        return Status::InvalidArgument("InvalidPart: part " + std::to_string(cp.number) +
                                       " was not uploaded or its ETag differs");
      }
      if (i + 1 < parts.size() && p->second.data->size() < kMinPartSize) {
        return Status::InvalidArgument("EntityTooSmall: part " + std::to_string(cp.number) +
                                       " is smaller than 5 MiB and not the last");
      }
      data += *p->second.data;
      etags.push_back(p->second.etag);
      crcs.emplace_back(p->second.checksum, p->second.data->size());
    }
    MemObject obj;
    obj.info.size = data.size();
    obj.info.etag = MultipartEtag(etags).value_or("");
    obj.info.content_type = u.options.content_type;
    obj.info.user_meta = LowerKeys(u.options.user_meta);
    if (auto c = CombinePartCrcs(u.options.checksum, crcs)) {
      obj.info.checksum_algorithm = u.options.checksum;
      obj.info.checksum = *c;
    }
    obj.data = std::make_shared<const std::string>(std::move(data));
    const WriteOptions conditions = u.options;
    STRATA_ASSIGN_OR_RETURN(ObjectInfo info, CommitLocked(Full(key), std::move(obj), conditions));
    state_->uploads.erase(it);
    return info;
  }

  Status AbortMultipart(std::string_view key, std::string_view upload_id) override {
    std::unique_lock lock(state_->mu);
    auto it = state_->uploads.find(std::string(upload_id));
    if (it == state_->uploads.end() || it->second.key != Full(key)) return NoUpload(upload_id);
    state_->uploads.erase(it);
    return Status::Ok();
  }

  Result<std::vector<UploadedPart>> ListParts(std::string_view key,
                                              std::string_view upload_id) override {
    std::shared_lock lock(state_->mu);
    STRATA_ASSIGN_OR_RETURN(const MemUpload* u, FindUpload(key, upload_id));
    std::vector<UploadedPart> out;
    for (const auto& [n, p] : u->parts) out.push_back({n, p.etag, p.data->size(), p.checksum});
    return out;
  }

  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key) override {
    STRATA_RETURN_IF_ERROR(CheckKey(dst_key));
    std::unique_lock lock(state_->mu);
    auto it = state_->objects.find(Full(src_key));
    if (it == state_->objects.end()) return NoKey(src_key);
    MemObject copy = it->second;
    copy.info.key = Full(dst_key);
    copy.info.mtime_ns = NowUnixNanos();
    // A copy is one part: its ETag is the MD5 of the bytes.
    copy.info.etag = HexEncode(Md5(*copy.data));
    state_->objects[copy.info.key] = copy;
    return Relative(copy.info);
  }

  Status Rename(std::string_view src_key, std::string_view dst_key) override {
    STRATA_RETURN_IF_ERROR(CheckKey(dst_key));
    std::unique_lock lock(state_->mu);
    auto it = state_->objects.find(Full(src_key));
    if (it == state_->objects.end()) return NoKey(src_key);
    if (src_key == dst_key) return Status::Ok();
    MemObject obj = std::move(it->second);
    state_->objects.erase(it);
    obj.info.key = Full(dst_key);
    state_->objects[obj.info.key] = std::move(obj);
    return Status::Ok();
  }

 private:
  std::string Full(std::string_view key) const { return prefix_ + std::string(key); }

  ObjectInfo Relative(ObjectInfo info) const {
    info.key = info.key.substr(std::min(prefix_.size(), info.key.size()));
    return info;
  }

  Status CheckKey(std::string_view key) const {
    if (key.empty() && prefix_.empty()) return Status::InvalidArgument("object keys cannot be empty");
    if (Full(key).size() > 1024) {
      return Status::InvalidArgument("KeyTooLongError: keys are at most 1024 bytes");
    }
    return Status::Ok();
  }

  Status NoKey(std::string_view key) const {
    return Status::NotFound("NoSuchKey: key \"" + std::string(key) + "\" does not exist in " + url());
  }
  Status NoUpload(std::string_view id) const {
    return Status::NotFound("NoSuchUpload: upload \"" + std::string(id) + "\" does not exist in " +
                            url());
  }

  // Requires state_->mu (shared or exclusive).
  Result<const MemUpload*> FindUpload(std::string_view key, std::string_view id) const {
    auto it = state_->uploads.find(std::string(id));
    if (it == state_->uploads.end() || it->second.key != Full(key)) return NoUpload(id);
    return &it->second;
  }

  Result<ObjectInfo> Commit(const std::string& full, MemObject obj, const WriteOptions& options) {
    std::unique_lock lock(state_->mu);
    return CommitLocked(full, std::move(obj), options);
  }

  // Requires state_->mu exclusively.
  Result<ObjectInfo> CommitLocked(const std::string& full, MemObject obj,
                                  const WriteOptions& options) {
    auto it = state_->objects.find(full);
    const bool exists = it != state_->objects.end();
    if (options.if_none_match_star && exists) {
      return Status::PreconditionFailed("PreconditionFailed: \"" + full.substr(prefix_.size()) +
                                        "\" already exists");
    }
    if (options.if_match) {
      const std::string want = UnquoteETag(*options.if_match);
      if (!exists || (want != "*" && it->second.info.etag != want)) {
        return Status::PreconditionFailed("PreconditionFailed: \"" + full.substr(prefix_.size()) +
                                          "\" does not have ETag " + want);
      }
    }
    obj.info.key = full;
    obj.info.mtime_ns = NowUnixNanos();
    ObjectInfo out = Relative(obj.info);
    state_->objects[full] = std::move(obj);
    return out;
  }

  std::shared_ptr<MemState> state_;
  std::string name_;
  std::string prefix_;
};

}  // namespace

std::unique_ptr<ObjectStore> NewMemObjectStore(std::string name) {
  return std::make_unique<MemObjectStore>(std::make_shared<MemState>(), std::move(name), "");
}

Result<std::unique_ptr<ObjectStore>> OpenMemUrl(std::string_view url) {
  STRATA_ASSIGN_OR_RETURN(StoreUrl u, ParseStoreUrl(url));
  if (u.host.empty()) {
    return Status::InvalidArgument("mem:// URL \"" + std::string(url) + "\" needs a name: mem://NAME");
  }
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<MemState>> registry;  // guarded by mu
  std::shared_ptr<MemState> state;
  {
    std::lock_guard<std::mutex> lock(mu);
    state = registry[u.host].lock();
    if (!state) {
      state = std::make_shared<MemState>();
      registry[u.host] = state;
    }
  }
  return std::unique_ptr<ObjectStore>(
      std::make_unique<MemObjectStore>(std::move(state), u.host, NormalizePrefix(u.path)));
}

}  // namespace strata::objstore
