// LocalEngine's read path: HeadObject, OpenObject (a reader over verified
// spans: inline bytes, body records, cached open data files) and ListObjects
// (one RocksDB seek per page, one per common prefix skipped).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include <strata/core/clock.h>

#include "objstore/local_engine_impl.h"

namespace strata::objstore::engine_detail {

// Data files are cached open (see file_cache_ in local_engine_impl.h).
std::shared_ptr<VerifiedFile> LocalEngineImpl::OpenDataFile(const FileId& id, uint64_t length,
                                                            uint32_t block_size) {
  std::string k(id.Raw());
  int64_t now = MonotonicNanos();
  {
    std::lock_guard<std::mutex> lock(file_cache_mu_);
    auto it = file_cache_.find(k);
    if (it != file_cache_.end()) {
      if (now - it->second.opened_ns < kFileCacheTtlNs && it->second.file->length() == length &&
          it->second.file->block_size() == block_size) {
        file_lru_.splice(file_lru_.begin(), file_lru_, it->second.lru);
        return it->second.file;
      }
      file_lru_.erase(it->second.lru);
      file_cache_.erase(it);
    }
  }
  std::string path = DataPath(id);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  auto f = std::make_shared<VerifiedFile>(fd, length, block_size);
  std::lock_guard<std::mutex> lock(file_cache_mu_);
  if (file_cache_.count(k) == 0) {
    file_lru_.push_front(k);
    file_cache_[k] = CachedFile{f, now, file_lru_.begin()};
    while (file_cache_.size() > kFileCacheCapacity) {
      file_cache_.erase(file_lru_.back());
      file_lru_.pop_back();
    }
  }
  return f;
}

Result<ObjectMeta> LocalEngineImpl::HeadObject(std::string_view bucket, std::string_view key) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  rocksdb::PinnableSlice v;
  bool found = false;
  STRATA_RETURN_IF_ERROR(Get(ObjectKey(bucket, key), &v, &found));
  if (!found) return NoObject(bucket, key);
  ObjectMeta meta;
  STRATA_RETURN_IF_ERROR(DecodeObject(v.ToStringView(), &meta, nullptr));
  meta.key = std::string(key);
  return meta;
}

Result<std::unique_ptr<LocalObjectReader>> LocalEngineImpl::OpenReader(
    std::string_view bucket, std::string_view key, const DataKeyFn* data_key,
    std::string_view version_id) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  std::string dbkey;
  STRATA_RETURN_IF_ERROR(ResolveVersion(bucket, key, version_id, &dbkey));
  auto missing_version = [&] {
    if (version_id.empty()) return NoObject(bucket, key);
    return Status::NotFound("version " + Q(version_id) + " of object " + Q(key) +
                            " does not exist in bucket " + Q(bucket));
  };
  if (dbkey.empty()) return missing_version();
  auto r = std::make_unique<LocalObjectReader>();
  r->bucket_ = std::string(bucket);
  std::string missing;
  for (int attempt = 0; attempt < kOpenRetries; ++attempt) {
    bool found = false;
    STRATA_RETURN_IF_ERROR(Get(dbkey, &r->value_, &found));
    if (!found) return missing_version();
    std::vector<Piece> pieces;
    r->meta_ = ObjectMeta();
    STRATA_RETURN_IF_ERROR(DecodeObject(r->value_.ToStringView(), &r->meta_, &pieces));
    if (r->meta_.delete_marker) return missing_version();
    r->meta_.key = std::string(key);
    r->spans_.clear();
    r->files_.clear();
    r->bodies_.clear();
    r->plain_.clear();
    r->data_key_.clear();
    if (data_key != nullptr && *data_key) {
      STRATA_ASSIGN_OR_RETURN(r->data_key_, (*data_key)(r->meta_));
    }
    const bool any_sealed =
        std::any_of(pieces.begin(), pieces.end(), [](const Piece& p) { return p.sealed; });
    if (any_sealed && r->data_key_.size() != kDataKeyBytes) {
      return Status::PermissionDenied("object " + Q(key) + " in bucket " + Q(bucket) +
                                      " is sealed at rest; opening it takes its data key");
    }
    // Opens a small sealed piece into memory the reader owns.
    auto open_small = [&](std::string_view sealed, const Piece& p) -> Result<std::string_view> {
      auto plain = std::make_unique<std::string>(p.length, '\0');
      Status st = OpenBlock(r->data_key_, p.nonce, 0, sealed.data(), sealed.size(), plain->data());
      if (!st.ok())
        return Status(st.code(),
                      "object " + Q(key) + " in bucket " + Q(bucket) + ": " + st.message());
      r->plain_.push_back(std::move(plain));
      return std::string_view(*r->plain_.back());
    };
    bool has_inline = false;
    bool raced = false;
    uint64_t offset = 0;
    for (const Piece& p : pieces) {
      if (p.length == 0) continue;
      LocalObjectReader::Span s;
      s.offset = offset;
      s.length = p.length;
      if (p.kind == Piece::kInline && p.sealed) {
        STRATA_ASSIGN_OR_RETURN(s.data, open_small(p.data, p));
      } else if (p.kind == Piece::kInline) {
        s.data = p.data;
        has_inline = true;
      } else if (p.kind == Piece::kBlob) {
        auto body = std::make_unique<rocksdb::PinnableSlice>();
        bool body_found = false;
        STRATA_RETURN_IF_ERROR(GetBody(p.file, body.get(), &body_found));
        const uint64_t stored = p.sealed ? p.length + kSealTagBytes : p.length;
        if (!body_found || body->size() != stored) {
          // Most likely overwritten since our Get: read the record again.
          raced = true;
          missing = "body record " + p.file.Hex();
          break;
        }
        if (p.sealed) {
          STRATA_ASSIGN_OR_RETURN(s.data, open_small(body->ToStringView(), p));
        } else {
          s.data = body->ToStringView();
          r->bodies_.push_back(std::move(body));
        }
      } else {
        std::string path = DataPath(p.file);
        std::shared_ptr<VerifiedFile> vf =
            p.sealed ? OpenDataFile(p.file, SealedLength(p.length, p.block_size),
                                    p.block_size + kSealTagBytes)
                     : OpenDataFile(p.file, p.length, p.block_size);
        if (vf == nullptr) {
          if (errno == ENOENT) {
            // Most likely overwritten and collected since our Get: read the record again.
            raced = true;
            missing = "data file " + path;
            break;
          }
          return Status::FromErrno(errno, "open data file of object " + Q(key) + ": " + path);
        }
        r->files_.push_back(std::move(vf));
        s.file = r->files_.back().get();
        s.id = p.file;
        s.sealed = p.sealed;
        s.nonce = p.nonce;
        s.plain_block = p.block_size;
      }
      r->spans_.push_back(s);
      offset += p.length;
    }
    if (raced) continue;
    if (offset != r->meta_.size) {
      return Status::Corruption("object " + Q(key) + " in bucket " + Q(bucket) + " has " +
                                std::to_string(offset) + " bytes of data but its size is " +
                                std::to_string(r->meta_.size));
    }
    if (!has_inline) r->value_.Reset();
    return r;
  }
  return Status::Corruption("object " + Q(key) + " in bucket " + Q(bucket) + ": " + missing +
                            " is missing");
}

Result<ListResult> LocalEngineImpl::ListObjects(std::string_view bucket,
                                                const ListOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  const int max_keys = std::clamp(options.max_keys, 0, 1000);
  const std::string base = ObjectKeyPrefix(bucket);
  const std::string lower = base + options.prefix;
  const std::string upper = PrefixSuccessor(lower);
  const std::string_view prefix = options.prefix;
  const std::string_view delim = options.delimiter;
  const std::string_view after = options.start_after;
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  uint64_t steps = 1;
  it->Seek(after > prefix ? base + std::string(after) : lower);

  ListResult res;
  int count = 0;
  while (it->Valid()) {
    const rocksdb::Slice k = it->key();
    const std::string_view key(k.data() + base.size(), k.size() - base.size());
    if (!delim.empty()) {
      size_t pos = key.find(delim, prefix.size());
      if (pos != std::string_view::npos) {
        std::string_view cp = key.substr(0, pos + delim.size());
        if (cp > after) {
          if (count == max_keys) {
            res.truncated = true;
            break;
          }
          res.common_prefixes.emplace_back(cp);
          ++count;
        }
        // Skip every key under this common prefix with one seek.
        std::string next = PrefixSuccessor(std::string_view(k.data(), base.size() + cp.size()));
        if (next.empty()) break;
        it->Seek(next);
        ++steps;
        continue;
      }
    }
    if (key > after) {
      if (count == max_keys) {
        res.truncated = true;
        break;
      }
      ObjectMeta m;
      Status st = DecodeObjectSummary(it->value().ToStringView(), &m);
      if (!st.ok()) return st.WithContext("object " + Q(key) + " in bucket " + Q(bucket));
      m.key = std::string(key);
      res.objects.push_back(std::move(m));
      ++count;
    }
    it->Next();
    ++steps;
  }
  list_steps_.fetch_add(steps, std::memory_order_relaxed);
  STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "list"));
  if (res.truncated) {
    // The last entry returned, whichever kind (both lists are in key order).
    const std::string* last_key = res.objects.empty() ? nullptr : &res.objects.back().key;
    const std::string* last_cp =
        res.common_prefixes.empty() ? nullptr : &res.common_prefixes.back();
    if (last_key && last_cp) {
      res.next_marker = std::max(*last_key, *last_cp);
    } else if (last_key || last_cp) {
      res.next_marker = last_key ? *last_key : *last_cp;
    }
  }
  return res;
}

}  // namespace strata::objstore::engine_detail
