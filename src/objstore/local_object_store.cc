// ObjectStore over a bucket of a LocalEngine: the engine in-process, no HTTP.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <mutex>

#include <strata/core/checksum.h>
#include <strata/core/etag.h>
#include <strata/core/file_util.h>
#include <strata/core/strings.h>
#include <strata/objstore/object_store.h>

#include "objstore/store_common.h"

namespace strata::objstore {
namespace {

// Hands engine chunks to a ByteSink; file pieces are read with pread.
class SinkAdapter final : public ChunkSink {
 public:
  explicit SinkAdapter(const ByteSink& sink) : sink_(sink) {}
  Status WriteMemory(const char* data, size_t n) override { return sink_(data, n); }
  Status WriteFile(int fd, uint64_t offset, uint64_t n) override {
    if (!buf_) buf_.reset(new char[kBuf]);
    while (n > 0) {
      const size_t m = static_cast<size_t>(std::min<uint64_t>(n, kBuf));
      STRATA_RETURN_IF_ERROR(PreadFull(fd, buf_.get(), m, offset, "object data file"));
      STRATA_RETURN_IF_ERROR(sink_(buf_.get(), m));
      offset += m;
      n -= m;
    }
    return Status::Ok();
  }

 private:
  static constexpr size_t kBuf = 1 << 20;
  const ByteSink& sink_;
  std::unique_ptr<char[]> buf_;
};

class LocalObjectStore final : public ObjectStore {
 public:
  LocalObjectStore(LocalEngine* engine, std::shared_ptr<LocalEngine> keep_alive, std::string bucket,
                   std::string prefix, std::string url)
      : engine_(engine),
        keep_alive_(std::move(keep_alive)),
        bucket_(std::move(bucket)),
        prefix_(std::move(prefix)),
        url_(std::move(url)) {}

  std::string url() const override { return url_; }

  Result<ObjectInfo> Put(std::string_view key, ByteSource& body,
                         const WriteOptions& options) override {
    PutOptions po = ToPutOptions(options);
    po.expected_size = options.size;
    STRATA_ASSIGN_OR_RETURN(ObjectMeta m, engine_->PutObject(bucket_, Full(key), body, std::move(po)));
    return ToInfo(m);
  }

  Status Get(std::string_view key, const ReadOptions& options, const ByteSink& sink,
             ObjectInfo* info) override {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ObjectReader> reader,
                            engine_->OpenObject(bucket_, Full(key)));
    const ObjectMeta& m = reader->meta();
    if (options.if_match && *options.if_match != "*" && UnquoteETag(*options.if_match) != m.etag) {
      return Status::PreconditionFailed("PreconditionFailed: \"" + std::string(key) +
                                        "\" changed: its ETag is " + m.etag + ", not " +
                                        *options.if_match);
    }
    if (info != nullptr) *info = ToInfo(m);
    const uint64_t start = std::min<uint64_t>(options.offset, m.size);
    uint64_t length = m.size - start;
    if (options.length) length = std::min(length, *options.length);
    if (length == 0) return Status::Ok();
    SinkAdapter adapter(sink);
    return reader->Stream(start, length, adapter);
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    STRATA_ASSIGN_OR_RETURN(ObjectMeta m, engine_->HeadObject(bucket_, Full(key)));
    return ToInfo(m);
  }

  Status Delete(std::string_view key) override { return engine_->DeleteObject(bucket_, Full(key)); }

  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, int max_keys) override {
    ListOptions lo;
    lo.prefix = Full(prefix);
    lo.delimiter = std::string(delimiter);
    lo.start_after = std::string(token);
    lo.max_keys = std::clamp(max_keys, 1, 1000);
    STRATA_ASSIGN_OR_RETURN(ListResult r, engine_->ListObjects(bucket_, lo));
    ListPage page;
    page.objects.reserve(r.objects.size());
    for (const ObjectMeta& m : r.objects) page.objects.push_back(ToInfo(m));
    for (std::string& cp : r.common_prefixes) page.common_prefixes.push_back(cp.substr(prefix_.size()));
    if (r.truncated) page.next_token = r.next_marker;
    return page;
  }

  Result<std::string> CreateMultipart(std::string_view key, const WriteOptions& options) override {
    PutOptions po = ToPutOptions(options);
    po.meta.checksum_composite = false;
    STRATA_ASSIGN_OR_RETURN(std::string id,
                            engine_->CreateMultipartUpload(bucket_, Full(key), std::move(po)));
    if (options.if_none_match_star || options.if_match) {
      std::lock_guard<std::mutex> lock(mu_);
      conditions_[id] = options;
    }
    return id;
  }

  Result<UploadedPart> UploadPart(std::string_view key, std::string_view upload_id,
                                  int part_number, ByteSource& body, uint64_t size) override {
    PutOptions po;
    po.expected_size = size;
    STRATA_ASSIGN_OR_RETURN(PartInfo p, engine_->UploadPart(bucket_, Full(key), upload_id,
                                                            part_number, body, std::move(po)));
    return UploadedPart{p.number, p.etag, p.size, p.checksum};
  }

  Result<ObjectInfo> CompleteMultipart(std::string_view key, std::string_view upload_id,
                                       const std::vector<UploadedPart>& parts) override {
    std::vector<CompletePart> cps;
    cps.reserve(parts.size());
    for (const UploadedPart& p : parts) cps.push_back({p.number, UnquoteETag(p.etag), p.checksum});
    CompleteOptions co;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = conditions_.find(std::string(upload_id)); it != conditions_.end()) {
        co.if_none_match_star = it->second.if_none_match_star;
        co.if_match = it->second.if_match;
      }
    }
    // CRC uploads get a full-object CRC (as the S3 frontend does for FULL_OBJECT).
    co.before_commit = [](ObjectMeta& meta) -> Status {
      std::vector<std::pair<std::string, uint64_t>> crcs;
      for (const PartSummary& p : meta.parts) crcs.emplace_back(p.checksum, p.size);
      if (auto c = CombinePartCrcs(meta.checksum_algorithm, crcs)) {
        meta.checksum = *c;
        meta.checksum_composite = false;
      }
      return Status::Ok();
    };
    STRATA_ASSIGN_OR_RETURN(ObjectMeta m, engine_->CompleteMultipartUpload(bucket_, Full(key),
                                                                           upload_id, cps, co));
    std::lock_guard<std::mutex> lock(mu_);
    conditions_.erase(std::string(upload_id));
    return ToInfo(m);
  }

  Status AbortMultipart(std::string_view key, std::string_view upload_id) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      conditions_.erase(std::string(upload_id));
    }
    return engine_->AbortMultipartUpload(bucket_, Full(key), upload_id);
  }

  Result<std::vector<UploadedPart>> ListParts(std::string_view key,
                                              std::string_view upload_id) override {
    STRATA_ASSIGN_OR_RETURN(std::vector<PartInfo> ps,
                            engine_->ListParts(bucket_, Full(key), upload_id));
    std::vector<UploadedPart> out;
    out.reserve(ps.size());
    for (const PartInfo& p : ps) out.push_back({p.number, p.etag, p.size, p.checksum});
    return out;
  }

  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key) override {
    PutOptions po;
    po.before_commit = [](const WriteDigest& d, ObjectMeta& meta) {
      // The copy is one part: drop the source's part list and composite checksum.
      if (meta.checksum_algorithm != ChecksumAlgorithm::kNone && !d.checksum.empty()) {
        meta.checksum = Base64Encode(d.checksum);
      } else {
        meta.checksum_algorithm = ChecksumAlgorithm::kNone;
        meta.checksum.clear();
      }
      meta.checksum_composite = false;
      meta.parts.clear();
      return Status::Ok();
    };
    STRATA_ASSIGN_OR_RETURN(ObjectMeta m, engine_->CopyObject(bucket_, Full(src_key), bucket_,
                                                              Full(dst_key), std::nullopt,
                                                              std::move(po)));
    return ToInfo(m);
  }

  Status Rename(std::string_view src_key, std::string_view dst_key) override {
    return engine_->RenameObject(bucket_, Full(src_key), Full(dst_key), PutOptions{}).status();
  }

 private:
  std::string Full(std::string_view key) const { return prefix_ + std::string(key); }

  PutOptions ToPutOptions(const WriteOptions& o) const {
    PutOptions po;
    po.meta.content_type = o.content_type;
    for (const auto& [k, v] : o.user_meta) po.meta.user_meta[ToLower(k)] = v;
    po.checksum_algorithm = o.checksum;
    po.if_none_match_star = o.if_none_match_star;
    if (o.if_match) po.if_match = UnquoteETag(*o.if_match);
    return po;
  }

  ObjectInfo ToInfo(const ObjectMeta& m) const {
    ObjectInfo i;
    i.key = m.key.substr(std::min(prefix_.size(), m.key.size()));
    i.size = m.size;
    i.etag = m.etag;
    i.mtime_ns = m.mtime_ns;
    i.content_type = m.content_type;
    i.user_meta = m.user_meta;
    i.checksum_algorithm = m.checksum.empty() ? ChecksumAlgorithm::kNone : m.checksum_algorithm;
    i.checksum = m.checksum;
    if (m.checksum_composite && !m.checksum.empty()) {
      i.checksum += "-" + std::to_string(m.parts.size());
    }
    return i;
  }

  LocalEngine* engine_;
  std::shared_ptr<LocalEngine> keep_alive_;  // set when the store opened the engine
  const std::string bucket_;
  const std::string prefix_;
  const std::string url_;
  std::mutex mu_;
  std::map<std::string, WriteOptions> conditions_;  // upload id -> conditions; guarded by mu_
};

}  // namespace

std::unique_ptr<ObjectStore> NewLocalObjectStore(LocalEngine* engine, std::string bucket,
                                                 std::string prefix) {
  std::string url = "local:" + bucket + (prefix.empty() ? "" : "/" + prefix);
  return std::make_unique<LocalObjectStore>(engine, nullptr, std::move(bucket), std::move(prefix),
                                            std::move(url));
}

Result<std::unique_ptr<ObjectStore>> OpenFileUrl(std::string_view url) {
  STRATA_ASSIGN_OR_RETURN(StoreUrl u, ParseStoreUrl(url));
  if (u.path.empty() || u.path[0] != '/') {
    return Status::InvalidArgument("file:// URL \"" + std::string(url) +
                                   "\" needs an absolute directory: file:///DIR?bucket=NAME");
  }
  std::string dir = u.path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::string bucket = u.params.count("bucket") ? u.params["bucket"] : "default";
  if (bucket.empty()) return Status::InvalidArgument("file:// URL has an empty bucket= parameter");
  const std::string prefix = NormalizePrefix(u.params.count("prefix") ? u.params["prefix"] : "");
  bool sync = true;
  if (auto it = u.params.find("sync"); it != u.params.end()) {
    auto b = ParseBool(it->second);
    if (!b) return Status::InvalidArgument("sync= must be true or false in \"" + std::string(url) + "\"");
    sync = *b;
  }
  for (const auto& [k, v] : u.params) {
    if (k != "bucket" && k != "prefix" && k != "sync") {
      return Status::InvalidArgument("unknown parameter \"" + k + "\" in \"" + std::string(url) +
                                     "\" (file:// takes bucket, prefix, sync)");
    }
  }

  // One engine per directory per process: RocksDB locks its directory, and
  // stores on the same directory must see each other's writes.
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<LocalEngine>> engines;  // guarded by mu
  std::shared_ptr<LocalEngine> engine;
  {
    std::lock_guard<std::mutex> lock(mu);
    engine = engines[dir].lock();
    if (!engine) {
      EngineOptions eo;
      eo.data_dir = dir;
      eo.sync = sync;
      auto opened = LocalEngine::Open(eo);
      if (!opened.ok()) return opened.error().WithContext("opening " + std::string(url));
      engine = std::shared_ptr<LocalEngine>(std::move(*opened));
      engines[dir] = engine;
    }
  }
  Status s = engine->CreateBucket(bucket, "");
  if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
  std::string clean = "file://" + dir + "?bucket=" + UriEncode(bucket, false) +
                      (prefix.empty() ? "" : "&prefix=" + UriEncode(prefix, false));
  LocalEngine* raw = engine.get();
  return std::unique_ptr<ObjectStore>(std::make_unique<LocalObjectStore>(
      raw, std::move(engine), std::move(bucket), prefix, std::move(clean)));
}

}  // namespace strata::objstore
