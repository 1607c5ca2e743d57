// Collection manifest and recovery: the MANIFEST (live sealed segments,
// their delete bitmaps, where WAL replay starts) written and read, and
// Create/Open: config, sealed segments and their indexes loaded (a missing or
// unusable index is rebuilt in the background), debris of interrupted
// rewrites removed, the point map rebuilt, the WAL replayed.
#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <shared_mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/checksum.h>
#include <strata/core/coding.h>
#include <strata/core/file_util.h>
#include <strata/core/log.h>
#include <strata/vector/collection.h>

#include "vector/collection_internal.h"

namespace strata::vector {

using internal::Decoder;
using internal::IdxPath;
using internal::M;
using internal::SegmentFile;
using internal::SegPath;
using internal::ValidateSchema;
using internal::Wal;
namespace fs = std::filesystem;

namespace {

constexpr log::Logger kLog("vector");

constexpr char kManifestMagic[8] = {'S', 'T', 'R', 'M', 'A', 'N', 'I', '1'};

}  // namespace

// ---------------------------------------------------------------------------
// Collection::Impl: MANIFEST

// Built under mu_ (shared is enough).
std::string Collection::Impl::ManifestBytes() const {
  uint64_t wal_start = growing ? growing->wal_first_seq : wal->current_seq();
  for (const auto& s : sealed) {
    if (!s->persisted) wal_start = std::min(wal_start, s->wal_first_seq);
  }
  std::string m(kManifestMagic, 8);
  PutFixed32(&m, 1);
  PutFixed64(&m, wal_start);
  PutFixed64(&m, wal->last_lsn());
  PutFixed64(&m, next_segment_id);
  uint32_t n = 0;
  for (const auto& s : sealed) n += s->persisted;
  PutFixed32(&m, n);
  for (const auto& s : sealed) {
    if (!s->persisted) continue;
    PutFixed64(&m, s->id);
    PutFixed64(&m, s->rows());
    const auto& w = s->deleted.words();
    PutFixed64(&m, w.size());
    m.append(reinterpret_cast<const char*>(w.data()), w.size() * 8);
  }
  PutFixed32(&m, Crc32c(0, m.data(), m.size()));
  return m;
}

uint64_t Collection::Impl::ManifestWalStart(const std::string& m) {
  return DecodeFixed64(m.data() + 12);
}

uint64_t Collection::Impl::ManifestLastLsn(const std::string& m) {
  return DecodeFixed64(m.data() + 20);
}

// manifest_mu_ held. With a publisher, the WAL is trimmed only once the
// manifest is published: until then the WAL is the only copy of what a
// replica (or a writer that lost this disk) cannot see yet.
Status Collection::Impl::WriteManifest(const std::string& bytes) {
  STRATA_RETURN_IF_ERROR(WriteFileAtomic(dir + "/MANIFEST", bytes));
  if (publisher) {
    const uint64_t config = config_version.load();
    Status st = publisher->Publish(dir, bytes);
    if (st.code() == StatusCode::kPreconditionFailed) RefuseWritesNow(st.message());
    if (!st.ok()) return st;
    published_lsn.store(ManifestLastLsn(bytes));
    published_config.store(config);
  }
  wal->RemoveBefore(ManifestWalStart(bytes));
  return Status::Ok();
}

void Collection::Impl::RefuseWritesNow(const std::string& why) {
  std::unique_lock<std::shared_mutex> l(mu_);
  if (refuse_writes.empty()) kLog.Error("collection {}: writes stopped: {}", name, why);
  refuse_writes = why;
}

Result<Collection::Impl::Manifest> Collection::Impl::ReadManifest(const std::string& path) {
  Manifest m;
  std::ifstream in(path, std::ios::binary);
  if (!in) return m;  // a new collection
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < 8 + 4 + 24 + 4 + 4 || std::memcmp(data.data(), kManifestMagic, 8) != 0) {
    return Status::Corruption(fmt::format("{} is damaged (bad header)", path));
  }
  const uint32_t crc = DecodeFixed32(data.data() + data.size() - 4);
  if (Crc32c(0, data.data(), data.size() - 4) != crc) {
    return Status::Corruption(fmt::format("{} is damaged (checksum mismatch)", path));
  }
  Decoder d{std::string_view(data).substr(8, data.size() - 12)};
  uint32_t version = d.Get<uint32_t>();
  if (version != 1) return Status::Corruption(fmt::format("{}: unknown version {}", path, version));
  m.wal_start = d.Get<uint64_t>();
  m.last_lsn = d.Get<uint64_t>();
  m.next_segment_id = d.Get<uint64_t>();
  uint32_t n = d.Get<uint32_t>();
  for (uint32_t i = 0; i < n && d.ok; ++i) {
    Manifest::Seg s;
    s.id = d.Get<uint64_t>();
    s.rows = d.Get<uint64_t>();
    uint64_t words = d.Get<uint64_t>();
    if (!d.Need(words * 8)) break;
    s.deleted.resize(words);
    std::memcpy(s.deleted.data(), d.Bytes(words * 8).data(), words * 8);
    m.segments.push_back(std::move(s));
  }
  if (!d.ok) return Status::Corruption(fmt::format("{} is truncated", path));
  return m;
}

// ---------------------------------------------------------------------------
// Collection::Impl: recovery

Status Collection::Impl::LoadSealedSegments(const Manifest& man, std::set<std::string>* referenced,
                                            std::vector<uint64_t>* needs_build) {
  const auto keys = IndexedKeys();
  for (auto& ms : man.segments) {
    const std::string path = SegPath(dir, ms.id);
    referenced->insert(fs::path(path).filename().string());
    auto file = SegmentFile::Open(path);
    if (!file) return file.error().WithContext(fmt::format("collection {}", name));
    auto seg = std::make_unique<Segment>();
    seg->id = ms.id;
    seg->persisted = true;
    seg->file = std::move(*file);
    if (seg->file->rows() != ms.rows || seg->file->fields().size() != schema.vectors.size()) {
      return Status::Corruption(fmt::format("segment {} does not match the MANIFEST", path));
    }
    seg->ids = std::move(seg->file->ids);
    seg->versions = std::move(seg->file->versions);
    seg->payloads = std::move(seg->file->payloads);
    seg->deleted.Reset(seg->rows(), false);
    seg->deleted.SetWords(ms.deleted);
    seg->live = seg->rows() - seg->deleted.Count();
    seg->sparse.resize(schema.sparse.size());
    for (auto& [sname, col] : seg->file->sparse) {
      for (size_t f = 0; f < schema.sparse.size(); ++f) {
        if (schema.sparse[f].name == sname) seg->sparse[f] = std::move(col);
      }
    }
    seg->file->sparse.clear();
    seg->fields.resize(schema.vectors.size());
    for (size_t f = 0; f < schema.vectors.size(); ++f) {
      const auto& fl = seg->file->fields()[f];
      if (fl.dim != schema.vectors[f].index.dim) {
        return Status::Corruption(
            fmt::format("segment {}: field {} has dimension {}, the schema {}", path, f, fl.dim,
                        schema.vectors[f].index.dim));
      }
      size_t present = 0;
      for (uint64_t w = 0; w < (seg->rows() + 63) / 64; ++w)
        present += std::popcount(fl.present[w]);
      if (present == 0) continue;
      const IndexParams& p = schema.vectors[f].index;
      const std::string idx_path = IdxPath(dir, seg->id, f);
      if (p.type != IndexType::kFlat && fs::exists(idx_path)) {
        referenced->insert(fs::path(idx_path).filename().string());
        auto idx = Index::Load(idx_path);
        if (idx && (*idx)->Size() == present && (*idx)->dim() == p.dim) {
          seg->fields[f].index = std::move(*idx);
          seg->fields[f].built = true;
          continue;
        }
        kLog.Warn("collection {}: index {} is unusable ({}); rebuilding it", name, idx_path,
                  idx ? "size mismatch" : idx.error().ToString());
      }
      // FLAT, or a stand-in until the background rebuilds the index.
      STRATA_RETURN_IF_ERROR(seg->file->VerifyField(f));
      std::vector<float> data;
      std::vector<uint64_t> rows;
      std::vector<float> buf(fl.dim);
      for (uint32_t r = 0; r < seg->rows(); ++r) {
        if (seg->GetVector(f, r, buf.data())) {
          data.insert(data.end(), buf.begin(), buf.end());
          rows.push_back(r);
        }
      }
      IndexParams fp;
      fp.type = IndexType::kFlat;
      fp.dim = p.dim;
      fp.metric = p.metric;
      STRATA_ASSIGN_OR_RETURN(seg->fields[f].index, CreateIndex(fp));
      STRATA_RETURN_IF_ERROR(seg->fields[f].index->Add(rows.size(), data.data(), rows.data()));
      seg->fields[f].built = p.type == IndexType::kFlat;
      if (!seg->fields[f].built) needs_build->push_back(seg->id);
    }
    BuildPayloadIndexes(seg.get(), keys);
    sealed.push_back(std::move(seg));
  }
  return Status::Ok();
}

void Collection::Impl::IndexLivePoints() {
  for (const auto& s : sealed) {
    for (uint32_t r = 0; r < s->rows(); ++r) {
      if (s->deleted.Test(r)) continue;
      auto [it, inserted] = points.emplace(s->ids[r], PointLoc{s.get(), r});
      if (!inserted) {
        PointLoc& old = it->second;
        if (old.seg->versions[old.row] < s->versions[r]) {
          old.seg->Delete(old.row);
          old = PointLoc{s.get(), r};
        } else {
          s->Delete(r);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Collection: Create and Open

Result<std::unique_ptr<Collection>> Collection::Create(const std::string& dir, std::string name,
                                                       const CollectionSchema& schema,
                                                       const CollectionOptions& options,
                                                       const CollectionRole& role) {
  STRATA_RETURN_IF_ERROR(ValidateSchema(schema));
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
    return Status::AlreadyExists(fmt::format("directory {} already exists and is not empty", dir));
  }
  fs::create_directories(dir + "/segments", ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", dir, ec.message()));
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->name = std::move(name);
  impl->schema = schema;
  impl->opts = options;
  for (auto& v : impl->schema.vectors) v.index.num_threads = 0;
  STRATA_RETURN_IF_ERROR(impl->WriteConfig());
  STRATA_RETURN_IF_ERROR(FsyncDir(fs::path(dir).parent_path().string()));
  return Open(dir, options, role);
}

Result<std::unique_ptr<Collection>> Collection::Open(
    const std::string& dir, const std::optional<CollectionOptions>& options,
    const CollectionRole& role) {
  auto impl = std::make_unique<Impl>();
  Impl& im = *impl;
  im.dir = dir;
  im.publisher = role.publisher;
  im.refuse_writes = role.read_only;
  STRATA_RETURN_IF_ERROR(im.LoadConfig(options));

  STRATA_ASSIGN_OR_RETURN(Impl::Manifest man, Impl::ReadManifest(dir + "/MANIFEST"));
  im.next_segment_id = std::max<uint64_t>(man.next_segment_id, 1);
  std::set<std::string> referenced;
  std::vector<uint64_t> needs_build;
  STRATA_RETURN_IF_ERROR(im.LoadSealedSegments(man, &referenced, &needs_build));
  // Files of interrupted rewrites.
  std::error_code ec;
  fs::create_directories(dir + "/segments", ec);
  for (const auto& e : fs::directory_iterator(dir + "/segments", ec)) {
    std::string fname = e.path().filename().string();
    if (!referenced.count(fname)) fs::remove(e.path(), ec);
  }
  // Live points; an id live in two segments (a crash between a rewrite and
  // the WAL trim) keeps its newest version.
  im.IndexLivePoints();
  im.growing = im.NewSegment(man.wal_start);
  auto wal = Wal::Open(dir + "/wal", man.wal_start, man.last_lsn + 1, im.opts.sync,
                       [&](uint64_t lsn, uint8_t type, std::string_view body) {
                         return im.ReplayRecord(lsn, type, body);
                       });
  if (!wal) return wal.error().WithContext(fmt::format("collection {}", im.name));
  im.wal = std::move(*wal);
  M().points.Add(int64_t(im.points.size()));
  M().collections.Add(1);

  std::unique_ptr<Collection> c(new Collection(std::move(impl)));
  Impl& ci = *c->impl_;
  ci.published_lsn.store(man.last_lsn);
  ci.StartBackground();
  if (ci.read_only()) {  // a replica: what the writer published, as it is
    kLog.Info("collection {} opened read-only: {} points, {} sealed segments", ci.name,
              ci.points.size(), ci.sealed.size());
    return c;
  }
  {
    std::unique_lock<std::shared_mutex> l(ci.mu_);
    if (ci.growing->rows() >= ci.opts.segment_rows) {
      STRATA_ASSIGN_OR_RETURN(uint64_t sid, ci.SealLocked());
      if (sid) ci.Enqueue(Impl::Task{Impl::TaskKind::kPersist, sid});
    }
  }
  std::sort(needs_build.begin(), needs_build.end());
  needs_build.erase(std::unique(needs_build.begin(), needs_build.end()), needs_build.end());
  for (uint64_t id : needs_build) ci.Enqueue(Impl::Task{Impl::TaskKind::kBuildIndex, id});
  ci.Enqueue(Impl::Task{Impl::TaskKind::kMaintain});
  Status st = ci.RunInline();
  if (!st.ok()) kLog.Warn("collection {}: {}", ci.name, st.ToString());
  kLog.Info("collection {} opened: {} points, {} sealed segments, growing {} rows", ci.name,
            ci.points.size(), ci.sealed.size(), ci.growing->rows());
  return c;
}

}  // namespace strata::vector

namespace strata::vector {

Status Collection::Publish(bool force) {
  Impl& im = *impl_;
  if (!im.publisher) return Status::InvalidArgument("this collection has nowhere to publish to");
  uint64_t sid = 0;
  {
    std::unique_lock<std::shared_mutex> l(im.mu_);
    if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
    STRATA_RETURN_IF_ERROR(im.CheckWritable());
    if (im.growing->rows() > 0) {
      STRATA_ASSIGN_OR_RETURN(sid, im.SealLocked());
    }
  }
  if (sid) {
    // The persist task writes (and publishes) the manifest.
    im.Enqueue(Impl::Task{Impl::TaskKind::kPersist, sid});
    STRATA_RETURN_IF_ERROR(im.RunInline());
    STRATA_RETURN_IF_ERROR(WaitIdle());
    std::shared_lock<std::shared_mutex> l(im.mu_);
    // The persist task's publication lost the race to another writer.
    if (!im.refuse_writes.empty()) return Status::PreconditionFailed(im.refuse_writes);
    if (im.published_lsn.load() >= im.wal->last_lsn()) return Status::Ok();
  }
  if (!force && !HasUnpublished()) return Status::Ok();
  std::lock_guard<std::mutex> ml(im.manifest_mu_);
  std::string manifest;
  {
    std::shared_lock<std::shared_mutex> l(im.mu_);
    if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
    manifest = im.ManifestBytes();
  }
  return im.WriteManifest(manifest);
}

bool Collection::HasUnpublished() const {
  const Impl& im = *impl_;
  std::shared_lock<std::shared_mutex> l(im.mu_);
  if (im.closed || !im.publisher || !im.refuse_writes.empty()) return false;
  return im.published_lsn.load() < im.wal->last_lsn() ||
         im.published_config.load() < im.config_version.load() || im.growing->rows() > 0;
}

void Collection::RefuseWrites(const std::string& why) { impl_->RefuseWritesNow(why); }

}  // namespace strata::vector
