// LocalEngine::Open: options, the RocksDB metadata store and its column
// families, recovery (files named by garbage/intent records and leftovers in
// tmp/ are removed at open), the buckets loaded; and the garbage collection of
// data files that commits replaced.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>

#include <strata/core/clock.h>
#include <strata/core/fault_injection.h>
#include <strata/core/file_util.h>

#include "objstore/crash_tracking_env.h"
#include "objstore/local_engine_impl.h"

namespace strata::objstore::engine_detail {

LocalEngineImpl::LocalEngineImpl(const EngineOptions& o) : options_(o) {
  root_ = o.data_dir;
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  data_root_ = root_ + "/data";
  tmp_root_ = root_ + "/tmp";
  stripes_.reset(new Stripe[kStripes]);
  dirs_ready_.reset(new std::atomic<uint8_t>[65536]);
  for (size_t i = 0; i < 65536; ++i) dirs_ready_[i].store(0, std::memory_order_relaxed);
  // Tiny bodies cost little in a listing and save GETs a second lookup.
  embed_max_ = std::min<uint64_t>(o.inline_threshold, kEmbedMax);
  body_epoch_ = static_cast<uint64_t>(NowUnixNanos());
  last_order_.store(body_epoch_, std::memory_order_relaxed);
  commit_wo_.sync = o.sync;
  lazy_wo_.sync = false;
}

LocalEngineImpl::~LocalEngineImpl() {
  if (db_) {
    for (rocksdb::ColumnFamilyHandle* h : cf_handles_) {
      rocksdb::Status s = db_->DestroyColumnFamilyHandle(h);
      if (!s.ok()) kLog.Warn("closing a column family: {}", s.ToString());
    }
    rocksdb::Status s = db_->Close();
    if (!s.ok()) kLog.Warn("closing the metadata store: {}", s.ToString());
  }
}

Status LocalEngineImpl::Init() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& d : {root_, data_root_, tmp_root_}) {
    fs::create_directories(d, ec);
    if (ec) return Status::IOError("cannot create directory " + d + ": " + ec.message());
  }

  rocksdb::Options o;
  // RocksDB's files go through the file-fault seam: power-loss tests see what
  // they have synced, sync-fault tests can fail their fsyncs.
  o.env = internal::CrashTrackingEnv();
  o.create_if_missing = true;
  o.max_background_jobs = 4;
  o.bytes_per_sync = 1 << 20;
  o.compression = rocksdb::kLZ4Compression;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = rocksdb::NewLRUCache(options_.rocksdb_block_cache_bytes);
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  o.create_missing_column_families = true;
  rocksdb::ColumnFamilyOptions bodies(o);
  bodies.compression = rocksdb::kNoCompression;  // object bytes: mostly incompressible
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(o)}, {"inline", bodies}};
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      rocksdb::DB::Open(rocksdb::DBOptions(o), root_ + "/meta", cfs, &cf_handles_, &raw);
  if (!s.ok()) return FromRocks(s, "open " + root_ + "/meta");
  db_.reset(raw);
  inline_cf_ = cf_handles_[1];

  // Files named by garbage/intent records: uncommitted writes and replaced objects.
  std::set<std::string> garbage_names;
  rocksdb::WriteBatch batch;
  uint64_t removed = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    const std::string prefix(1, kGarbagePrefix);
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      rocksdb::Slice k = it->key();
      if (k.size() == 17) {
        FileId id;
        std::memcpy(id.bytes.data(), k.data() + 1, 16);
        std::string path = DataPath(id);
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
          return Status::FromErrno(errno, "remove orphaned data file " + path);
        }
        garbage_names.insert(id.Hex());
      }
      batch.Delete(k);
      ++removed;
    }
    STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "scan garbage records"));
  }
  std::vector<fs::path> leftovers;
  for (fs::directory_iterator d(tmp_root_, ec), end; !ec && d != end; d.increment(ec)) {
    leftovers.push_back(d->path());
  }
  if (ec) return Status::IOError("cannot list " + tmp_root_ + ": " + ec.message());
  for (const fs::path& p : leftovers) {
    fs::remove_all(p, ec);
    if (ec) return Status::IOError("cannot remove " + p.string() + ": " + ec.message());
    if (!garbage_names.count(p.filename().string())) ++removed;
  }
  if (batch.Count() > 0) STRATA_RETURN_IF_ERROR(Write(batch));
  orphans_removed_at_open_ = removed;
  if (removed) kLog.Info("removed {} orphaned data files at open of {}", removed, root_);

  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix(1, kBucketPrefix);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    BucketRecord r;
    STRATA_RETURN_IF_ERROR(DecodeBucket(it->value().ToStringView(), &r));
    BucketInfo info;
    info.name = it->key().ToString().substr(1);
    info.created_ns = r.created_ns;
    info.owner = std::move(r.owner);
    info.public_read = r.public_read;
    if (!r.configs.empty())
      info.configs = std::make_shared<const std::map<std::string, std::string>>(std::move(r.configs));
    std::string name = info.name;
    buckets_.emplace(std::move(name), std::move(info));
  }
  return FromRocks(it->status(), "load buckets");
}

void LocalEngineImpl::CollectGarbage(const std::vector<FileId>& files) {
  if (files.empty()) return;
  rocksdb::WriteBatch b;
  for (const FileId& id : files) {
    ForgetDataFile(id);
    std::string path = DataPath(id);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      // Keep the G record: the next Open retries.
      kLog.Warn("cannot remove replaced data file {}: {}", path, std::strerror(errno));
      continue;
    }
    b.Delete(GarbageKey(id));
  }
  // Unsynced: a lost delete only makes the next Open retry an unlink.
  rocksdb::Status s = db_->Write(lazy_wo_, &b);
  if (!s.ok()) kLog.Warn("cannot delete garbage records: {}", s.ToString());
}

void LocalEngineImpl::DiscardFile(const FileId& id) {
  std::string hex = id.Hex();
  ForgetDataFile(id);
  ::unlink((tmp_root_ + "/" + hex).c_str());
  ::unlink(DataPath(id).c_str());
  rocksdb::Status s = db_->Delete(lazy_wo_, GarbageKey(id));
  if (!s.ok()) kLog.Warn("cannot delete garbage record of {}: {}", hex, s.ToString());
}

Status LocalEngineImpl::EnsureDataDir(const FileId& id) {
  size_t idx = static_cast<size_t>(id.bytes[0]) << 8 | id.bytes[1];
  if (dirs_ready_[idx].load(std::memory_order_acquire)) return Status::Ok();
  std::string hex = id.Hex();
  std::string d1 = data_root_ + "/" + hex.substr(0, 2);
  std::string d2 = d1 + "/" + hex.substr(2, 2);
  bool created = false;
  for (const std::string& d : {d1, d2}) {
    if (::mkdir(d.c_str(), 0755) == 0) {
      created = true;
    } else if (errno != EEXIST) {
      return Status::FromErrno(errno, "mkdir " + d);
    }
  }
  if (created && options_.sync) {
    STRATA_RETURN_IF_ERROR(FsyncDir(data_root_));
    STRATA_RETURN_IF_ERROR(FsyncDir(d1));
  }
  dirs_ready_[idx].store(1, std::memory_order_release);
  return Status::Ok();
}

}  // namespace strata::objstore::engine_detail

namespace strata::objstore {

using engine_detail::LocalEngineImpl;

Result<std::unique_ptr<LocalEngine>> LocalEngine::Open(const EngineOptions& options) {
  if (options.data_dir.empty()) {
    return Status::InvalidArgument("EngineOptions::data_dir is empty; give the data directory");
  }
  if (options.block_size == 0 || options.block_size > (1u << 30)) {
    return Status::InvalidArgument("EngineOptions::block_size must be 1 byte to 1 GiB (got " +
                                   std::to_string(options.block_size) + ")");
  }
  if (options.inline_threshold > (16u << 20)) {
    // Small bodies are buffered whole in memory and stored as RocksDB values.
    return Status::InvalidArgument("EngineOptions::inline_threshold must be at most 16 MiB (got " +
                                   std::to_string(options.inline_threshold) + ")");
  }
  auto engine = std::make_unique<LocalEngineImpl>(options);
  STRATA_RETURN_IF_ERROR(engine->Init());
  return std::unique_ptr<LocalEngine>(std::move(engine));
}

}  // namespace strata::objstore
