// Collection maintenance: sealing the growing segment, building segment
// indexes (with a FLAT fallback), rewriting segments (persisting a sealed
// one, compaction of deleted rows, merging small ones) and the policy that
// picks them, the background queue that runs it all, and snapshots.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <shared_mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/file_util.h>
#include <strata/core/log.h>
#include <strata/vector/collection.h>

#include "vector/collection_internal.h"

namespace strata::vector {

using json = nlohmann::json;
using internal::IdxPath;
using internal::M;
using internal::PayloadFieldIndex;
using internal::SegmentFile;
using internal::SegPath;
namespace fs = std::filesystem;

namespace {

constexpr log::Logger kLog("vector");

bool UsesDisk(const IndexParams& p) {
  return p.type == IndexType::kDiskAnn ||
         (p.type == IndexType::kIvfPq && p.ivfpq_rerank == RerankStorage::kDisk);
}

}  // namespace

// ---------------------------------------------------------------------------
// Collection::Impl: sealing, index builds, rewrites

// Seals the growing segment (mu_ held exclusively). Returns the sealed id.
Result<uint64_t> Collection::Impl::SealLocked() {
  if (!growing || growing->rows() == 0) return uint64_t(0);
  STRATA_ASSIGN_OR_RETURN(uint64_t seq, wal->Rotate());
  uint64_t id = growing->id;
  sealed.push_back(std::move(growing));
  growing = NewSegment(seq);
  M().sealed.Inc();
  return id;
}

// Builds the index of one field from n vectors (rows given); falls back to
// FLAT when the configured index cannot be built.
Status Collection::Impl::BuildFieldIndex(Segment* seg, size_t f, const std::vector<float>& data,
                                         const std::vector<uint64_t>& rows, bool save) {
  auto& sf = seg->fields[f];
  sf.index.reset();
  sf.built = false;
  if (rows.empty()) return Status::Ok();
  IndexParams p;
  {
    // Reconfigure may change the parameters while this thread builds.
    std::shared_lock<std::shared_mutex> l(mu_);
    p = schema.vectors[f].index;
    p.num_threads = opts.index_threads;
  }
  const std::string idx_path = IdxPath(dir, seg->id, f);
  Status st;
  if (p.type != IndexType::kFlat) {
    auto t0 = std::chrono::steady_clock::now();
    if (UsesDisk(p)) p.disk_path = idx_path + ".build";
    auto built = [&]() -> Result<std::unique_ptr<Index>> {
      STRATA_ASSIGN_OR_RETURN(auto idx, CreateIndex(p));
      if (!idx->IsTrained()) STRATA_RETURN_IF_ERROR(idx->Train(rows.size(), data.data()));
      STRATA_RETURN_IF_ERROR(idx->Add(rows.size(), data.data(), rows.data()));
      if (!save) return idx;
      STRATA_RETURN_IF_ERROR(idx->Save(idx_path));
      idx.reset();
      return Index::Load(idx_path);
    }();
    if (!p.disk_path.empty()) ::unlink(p.disk_path.c_str());
    if (built) {
      sf.index = std::move(*built);
      sf.built = true;
      M().index_builds.Inc();
      kLog.Info(
          "collection {}: segment {} field \"{}\": {} index over {} vectors built in {:.2f} s",
          name, seg->id, schema.vectors[f].name, IndexTypeName(p.type), rows.size(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      return Status::Ok();
    }
    st = built.error();
    M().index_build_failures.Inc();
    seg->index_failed = true;
    kLog.Warn(
        "collection {}: segment {} field \"{}\": {} index not built ({}); searching it exactly",
        name, seg->id, schema.vectors[f].name, IndexTypeName(p.type), st.ToString());
  }
  IndexParams fp;
  fp.type = IndexType::kFlat;
  fp.dim = p.dim;
  fp.metric = p.metric;
  fp.num_threads = opts.index_threads;
  STRATA_ASSIGN_OR_RETURN(sf.index, CreateIndex(fp));
  STRATA_RETURN_IF_ERROR(sf.index->Add(rows.size(), data.data(), rows.data()));
  sf.built = p.type == IndexType::kFlat;
  return Status::Ok();
}

void Collection::Impl::BuildPayloadIndexes(Segment* seg,
                                           const std::vector<PayloadFieldSchema>& keys) {
  seg->payload_indexes.clear();
  for (const auto& f : keys)
    seg->payload_indexes[f.name] = PayloadFieldIndex::Create(f.name, f.type);
  if (keys.empty()) return;
  for (uint32_t r = 0; r < seg->rows(); ++r) {
    if (seg->payloads[r].empty()) continue;
    json pj = json::parse(seg->payloads[r], nullptr, false);
    if (!pj.is_object()) continue;
    for (auto& [k, idx] : seg->payload_indexes) idx->Add(r, pj);
  }
}

// Rewrites the given sealed segments as one persisted segment of their
// live rows, with indexes built; then swaps it in and writes the manifest.
Status Collection::Impl::Rewrite(const std::vector<uint64_t>& source_ids, bool is_compaction) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Segment*> sources;
  std::vector<std::pair<uint32_t, uint32_t>> origin;  // (source index, row)
  std::vector<RowSet> snap_deleted;
  auto out = std::make_unique<Segment>();
  std::vector<PayloadFieldSchema> keys;
  {
    std::unique_lock<std::shared_mutex> l(mu_);
    if (closed) return Status::Unavailable("closed");
    for (uint64_t id : source_ids) {
      for (const auto& s : sealed) {
        if (s->id == id) sources.push_back(s.get());
      }
    }
    if (sources.size() != source_ids.size()) return Status::Ok();  // already rewritten
    out->id = next_segment_id++;
    out->persisted = true;
    out->fields.resize(schema.vectors.size());
    out->sparse.resize(schema.sparse.size());
    keys = IndexedKeys();
    for (uint32_t si = 0; si < sources.size(); ++si) {
      const Segment& s = *sources[si];
      snap_deleted.push_back(s.deleted);
      for (uint32_t r = 0; r < s.rows(); ++r) {
        if (s.deleted.Test(r)) continue;
        for (size_t f = 0; f < out->sparse.size() && f < s.sparse.size(); ++f) {
          if (!s.sparse[f].Has(r)) continue;
          SparseVector v = s.sparse[f].Row(r);
          out->sparse[f].Append(uint32_t(origin.size()), v.indices.data(), v.values.data(),
                                v.indices.size());
        }
        origin.emplace_back(si, r);
        out->ids.push_back(s.ids[r]);
        out->versions.push_back(s.versions[r]);
        out->payloads.push_back(s.payloads[r]);
      }
    }
  }
  // Source rows, vectors and files are immutable from here on; only their
  // delete bitmaps change, and only under mu_.
  const size_t n = out->rows();
  out->deleted.Reset(n, false);
  out->live = n;
  std::vector<std::vector<float>> data(schema.vectors.size());
  std::vector<std::vector<uint64_t>> rows(schema.vectors.size());
  for (size_t f = 0; f < schema.vectors.size(); ++f) {
    const uint32_t dim = schema.vectors[f].index.dim;
    std::vector<float> buf(dim);
    for (uint32_t r = 0; r < n; ++r) {
      const auto& [si, sr] = origin[r];
      if (sources[si]->GetVector(f, sr, buf.data())) {
        data[f].insert(data[f].end(), buf.begin(), buf.end());
        rows[f].push_back(r);
      }
    }
  }
  const std::string path = SegPath(dir, out->id);
  if (n > 0) {
    std::vector<size_t> cursor(schema.vectors.size(), 0);
    STRATA_RETURN_IF_ERROR(
        internal::WriteSegmentFile(path, *out, schema, [&](size_t f, uint32_t r, float* o) {
          size_t& c = cursor[f];
          if (c >= rows[f].size() || rows[f][c] != r) return false;
          const uint32_t dim = schema.vectors[f].index.dim;
          std::memcpy(o, data[f].data() + c * dim, size_t(dim) * 4);
          ++c;
          return true;
        }));
    auto file = SegmentFile::Open(path);
    if (!file) return file.error();
    out->file = std::move(*file);
    out->file->ids.clear();
    out->file->ids.shrink_to_fit();
    out->file->versions.clear();
    out->file->versions.shrink_to_fit();
    out->file->payloads.clear();
    out->file->payloads.shrink_to_fit();
    out->file->sparse.clear();
    for (size_t f = 0; f < schema.vectors.size(); ++f) {
      STRATA_RETURN_IF_ERROR(BuildFieldIndex(out.get(), f, data[f], rows[f], /*save=*/true));
      std::vector<float>().swap(data[f]);
    }
    BuildPayloadIndexes(out.get(), keys);
  }

  // Swap in.
  std::vector<std::unique_ptr<Segment>> retired;
  std::string manifest;
  std::lock_guard<std::mutex> ml(manifest_mu_);
  {
    std::unique_lock<std::shared_mutex> l(mu_);
    if (closed) {
      ::unlink(path.c_str());
      return Status::Unavailable("closed");
    }
    // Deletes (and overwrites) that happened while we were building.
    for (uint32_t r = 0; r < n; ++r) {
      const auto& [si, sr] = origin[r];
      if (sources[si]->deleted.Test(sr) && !snap_deleted[si].Test(sr)) {
        out->Delete(r);
      } else {
        auto it = points.find(out->ids[r]);
        if (it != points.end() && it->second.seg == sources[si] && it->second.row == sr) {
          it->second = PointLoc{out.get(), r};
        }
      }
    }
    // Payload indexes created meanwhile.
    for (const auto& f : IndexedKeys()) {
      auto it = out->payload_indexes.find(f.name);
      if (it == out->payload_indexes.end() || it->second->type() != f.type) {
        out->payload_indexes[f.name] = PayloadFieldIndex::Create(f.name, f.type);
        for (uint32_t r = 0; r < n; ++r) {
          if (out->payloads[r].empty()) continue;
          json pj = json::parse(out->payloads[r], nullptr, false);
          if (pj.is_object()) out->payload_indexes[f.name]->Add(r, pj);
        }
      }
    }
    for (auto it = sealed.begin(); it != sealed.end();) {
      if (std::find(sources.begin(), sources.end(), it->get()) != sources.end()) {
        retired.push_back(std::move(*it));
        it = sealed.erase(it);
      } else {
        ++it;
      }
    }
    if (n > 0) sealed.push_back(std::move(out));
    manifest = ManifestBytes();
  }
  Status st = WriteManifest(manifest);
  if (!st.ok()) {
    kLog.Error("collection {}: cannot write MANIFEST: {}", name, st.ToString());
    return st;
  }
  for (const auto& s : retired) {
    if (!s->persisted) continue;
    ::unlink(SegPath(dir, s->id).c_str());
    for (size_t f = 0; f < schema.vectors.size(); ++f) ::unlink(IdxPath(dir, s->id, f).c_str());
  }
  if (is_compaction) M().compactions.Inc();
  M().build_seconds.Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return Status::Ok();
}

// Builds the real index of a persisted segment that runs on a FLAT stand-in.
Status Collection::Impl::BuildIndexOf(uint64_t seg_id, bool rebuild) {
  Segment* seg = nullptr;
  {
    std::shared_lock<std::shared_mutex> l(mu_);
    for (const auto& s : sealed) {
      if (s->id == seg_id) seg = s.get();
    }
    if (seg == nullptr || !seg->persisted) return Status::Ok();
  }
  for (size_t f = 0; f < schema.vectors.size(); ++f) {
    if (!seg->fields[f].index || (seg->fields[f].built && !rebuild)) continue;
    std::vector<float> data;
    std::vector<uint64_t> rows;
    STRATA_RETURN_IF_ERROR(seg->file->VerifyField(f));
    const uint32_t dim = schema.vectors[f].index.dim;
    std::vector<float> buf(dim);
    for (uint32_t r = 0; r < seg->rows(); ++r) {
      if (seg->GetVector(f, r, buf.data())) {
        data.insert(data.end(), buf.begin(), buf.end());
        rows.push_back(r);
      }
    }
    Segment tmp;
    tmp.id = seg->id;
    tmp.fields.resize(schema.vectors.size());
    STRATA_RETURN_IF_ERROR(BuildFieldIndex(&tmp, f, data, rows, /*save=*/true));
    std::unique_lock<std::shared_mutex> l(mu_);
    seg->fields[f] = std::move(tmp.fields[f]);
    seg->index_failed |= tmp.index_failed;
  }
  return Status::Ok();
}

// Compaction and merging policy.
Status Collection::Impl::Maintain(bool force) {
  std::vector<std::vector<uint64_t>> jobs;
  {
    std::shared_lock<std::shared_mutex> l(mu_);
    std::vector<std::pair<size_t, uint64_t>> small;  // (live, id)
    for (const auto& s : sealed) {
      if (!s->persisted) continue;
      const size_t del = s->rows() - s->live;
      const bool dirty = s->live == 0 || (force && del > 0) ||
                         (opts.compact_deleted_ratio > 0 &&
                          double(del) > opts.compact_deleted_ratio * double(s->rows()));
      if (opts.merge_small_rows > 0 && s->live < opts.merge_small_rows) {
        small.emplace_back(s->live, s->id);
      } else if (dirty) {
        jobs.push_back({s->id});
      }
    }
    std::sort(small.begin(), small.end());
    std::vector<uint64_t> group;
    size_t total = 0;
    auto flush = [&] {
      if (group.size() >= 2) {
        jobs.push_back(group);
      } else if (group.size() == 1) {
        // A lone small segment: only worth rewriting for its deletes.
        for (const auto& s : sealed) {
          if (s->id == group[0] &&
              (s->live == 0 || (s->rows() > s->live &&
                                (force || double(s->rows() - s->live) >
                                              opts.compact_deleted_ratio * double(s->rows())))))
            jobs.push_back(group);
        }
      }
      group.clear();
      total = 0;
    };
    for (const auto& [live, id] : small) {
      if (!group.empty() && total + live > opts.merge_max_rows) flush();
      group.push_back(id);
      total += live;
    }
    flush();
  }
  for (const auto& j : jobs) STRATA_RETURN_IF_ERROR(Rewrite(j, /*is_compaction=*/true));
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Collection::Impl: background queue

void Collection::Impl::Enqueue(Task t) {
  {
    std::lock_guard<std::mutex> l(bg_mu_);
    if (t.kind == TaskKind::kMaintain) {
      if (maintain_queued && !t.force) return;
      maintain_queued = true;
    }
    tasks.push_back(t);
  }
  bg_cv_.notify_one();
}

Status Collection::Impl::RunTask(const Task& t) {
  switch (t.kind) {
    case TaskKind::kPersist: {
      Status st = Rewrite({t.segment}, false);
      if (st.ok()) Enqueue(Task{TaskKind::kMaintain});
      return st;
    }
    case TaskKind::kBuildIndex:
      return BuildIndexOf(t.segment, t.force);
    case TaskKind::kMaintain: {
      {
        std::lock_guard<std::mutex> l(bg_mu_);
        maintain_queued = false;
      }
      return Maintain(t.force);
    }
  }
  return Status::Ok();
}

void Collection::Impl::BackgroundLoop() {
  std::unique_lock<std::mutex> l(bg_mu_);
  while (true) {
    bg_cv_.wait(l, [&] { return bg_stop || !tasks.empty(); });
    if (bg_stop) break;
    Task t = tasks.front();
    tasks.pop_front();
    bg_busy = true;
    l.unlock();
    Status st = RunTask(t);
    if (!st.ok() && st.code() != StatusCode::kUnavailable) {
      kLog.Error("collection {}: background task failed: {}", name, st.ToString());
    }
    l.lock();
    bg_busy = false;
    if (tasks.empty()) idle_cv_.notify_all();
  }
  bg_busy = false;
  idle_cv_.notify_all();
}

// background=false: runs queued tasks in the calling thread.
Status Collection::Impl::RunInline() {
  if (opts.background) return Status::Ok();
  std::lock_guard<std::mutex> il(inline_mu_);
  Status first;
  while (true) {
    Task t;
    {
      std::lock_guard<std::mutex> l(bg_mu_);
      if (tasks.empty()) break;
      t = tasks.front();
      tasks.pop_front();
    }
    Status st = RunTask(t);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

void Collection::Impl::StartBackground() {
  if (opts.background) bg_thread = std::thread([this] { BackgroundLoop(); });
}

void Collection::Impl::StopBackground() {
  {
    std::lock_guard<std::mutex> l(bg_mu_);
    bg_stop = true;
    tasks.clear();
  }
  bg_cv_.notify_all();
  if (bg_thread.joinable()) bg_thread.join();
}

// ---------------------------------------------------------------------------
// Collection: Compact, WaitIdle, Snapshot

Status Collection::Compact(bool seal_growing) {
  Impl& im = *impl_;
  {
    std::shared_lock<std::shared_mutex> l(im.mu_);
    STRATA_RETURN_IF_ERROR(im.CheckWritable());
  }
  if (seal_growing) {
    uint64_t sid = 0;
    {
      std::unique_lock<std::shared_mutex> l(im.mu_);
      if (im.closed)
        return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
      STRATA_RETURN_IF_ERROR(im.CheckWritable());
      STRATA_ASSIGN_OR_RETURN(sid, im.SealLocked());
    }
    if (sid) im.Enqueue(Impl::Task{Impl::TaskKind::kPersist, sid});
  }
  im.Enqueue(Impl::Task{Impl::TaskKind::kMaintain, 0, true});
  STRATA_RETURN_IF_ERROR(im.RunInline());
  return WaitIdle();
}

Status Collection::WaitIdle() const {
  const Impl& im = *impl_;
  if (!im.opts.background) return Status::Ok();
  std::unique_lock<std::mutex> l(im.bg_mu_);
  im.idle_cv_.wait(l, [&] { return im.bg_stop || (im.tasks.empty() && !im.bg_busy); });
  return Status::Ok();
}

Status Collection::Snapshot(const std::string& dest) const {
  const Impl& im = *impl_;
  std::error_code ec;
  if (fs::exists(dest, ec))
    return Status::AlreadyExists(fmt::format("snapshot directory {} already exists", dest));
  std::lock_guard<std::mutex> ml(im.manifest_mu_);
  std::string manifest;
  std::vector<std::pair<std::string, uint64_t>> wal_files;
  std::vector<std::string> seg_files;
  {
    std::unique_lock<std::shared_mutex> l(im.mu_);
    if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
    STRATA_RETURN_IF_ERROR(im.wal->Sync(im.wal->last_lsn()));
    manifest = im.ManifestBytes();
    wal_files = im.wal->Files(Impl::ManifestWalStart(manifest));
    for (const auto& s : im.sealed) {
      if (!s->persisted) continue;
      seg_files.push_back(SegPath(im.dir, s->id));
      for (size_t f = 0; f < im.schema.vectors.size(); ++f) {
        std::string p = IdxPath(im.dir, s->id, f);
        if (fs::exists(p, ec)) seg_files.push_back(p);
      }
    }
  }
  // Segment files are immutable and cannot be removed while manifest_mu_ is
  // held; WAL files only grow, so copying each up to its recorded size is a
  // consistent cut.
  const std::string tmp = dest + ".partial";
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp + "/segments", ec);
  fs::create_directories(tmp + "/wal", ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", tmp, ec.message()));
  auto fail = [&](Status st) {
    fs::remove_all(tmp, ec);
    return st;
  };
  fs::copy_file(im.dir + "/config.json", tmp + "/config.json", ec);
  if (ec) return fail(Status::IOError("cannot copy config.json: " + ec.message()));
  for (const auto& p : seg_files) {
    std::string to = tmp + "/segments/" + fs::path(p).filename().string();
    fs::create_hard_link(p, to, ec);
    if (ec) {
      ec.clear();
      fs::copy_file(p, to, ec);
      if (ec) return fail(Status::IOError(fmt::format("cannot copy {}: {}", p, ec.message())));
    }
  }
  for (const auto& [p, size] : wal_files) {
    std::ifstream in(p, std::ios::binary);
    std::ofstream out(tmp + "/wal/" + fs::path(p).filename().string(), std::ios::binary);
    std::vector<char> buf(1 << 20);
    uint64_t left = size;
    while (left > 0 && in) {
      in.read(buf.data(), std::streamsize(std::min<uint64_t>(left, buf.size())));
      out.write(buf.data(), in.gcount());
      left -= uint64_t(in.gcount());
    }
    if (left != 0 || !out) return fail(Status::IOError(fmt::format("cannot copy {}", p)));
  }
  Status st = WriteFileAtomic(tmp + "/MANIFEST", manifest);
  if (!st.ok()) return fail(st);
  fs::rename(tmp, dest, ec);
  if (ec) return fail(Status::IOError(fmt::format("cannot rename {}: {}", tmp, ec.message())));
  return FsyncDir(fs::path(dest).parent_path().string());
}

}  // namespace strata::vector
