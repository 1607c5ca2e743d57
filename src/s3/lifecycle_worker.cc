// The lifecycle worker (strata/s3/lifecycle.h): passes over every bucket with
// a lifecycle configuration, a page of keys at a time.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <strata/core/clock.h>
#include <strata/core/log.h>
#include <strata/core/strings.h>
#include <strata/s3/lifecycle.h>

#include "s3/lifecycle.h"
#include "s3/object_lock.h"

namespace strata::s3 {

namespace {

constexpr log::Logger kLifeLog("s3.lifecycle");

class EngineLifecycleStore final : public LifecycleStore {
 public:
  explicit EngineLifecycleStore(objstore::LocalEngine* e) : engine_(e) {}

  Result<std::vector<objstore::BucketInfo>> ListBuckets() override {
    return engine_->ListBuckets();
  }
  Result<LifecyclePage> ListCurrent(std::string_view bucket, std::string_view start_after,
                                    int max_keys) override {
    STRATA_ASSIGN_OR_RETURN(objstore::BucketInfo info, engine_->GetBucket(bucket));
    if (info.Config(kVersioningConfig) != nullptr)
      return ListCurrentVersions(bucket, start_after, max_keys);
    objstore::ListOptions lo;
    lo.start_after = std::string(start_after);
    lo.max_keys = max_keys;
    STRATA_ASSIGN_OR_RETURN(objstore::ListResult r, engine_->ListObjects(bucket, lo));
    LifecyclePage page;
    page.truncated = r.truncated;
    page.next_marker = r.next_marker;
    page.entries.reserve(r.objects.size());
    for (objstore::ObjectMeta& m : r.objects) page.entries.push_back({std::move(m), false, ""});
    if (page.truncated && page.next_marker.empty() && !page.entries.empty())
      page.next_marker = page.entries.back().meta.key;
    return page;
  }
  Result<objstore::ObjectMeta> Head(std::string_view bucket, std::string_view key) override {
    return engine_->HeadObject(bucket, key);
  }
  Status ExpireCurrent(std::string_view bucket, const objstore::ObjectMeta& seen) override {
    return engine_->DeleteObjectIfUnchanged(bucket, seen.key, seen.etag, seen.mtime_ns);
  }
  // Newest first; each version's noncurrent_since is the mtime of the version
  // (or delete marker) that replaced it. Pages of the version listing, so a key
  // with many versions costs bounded reads per page.
  Result<std::vector<NoncurrentVersion>> NoncurrentVersions(std::string_view bucket,
                                                            std::string_view key,
                                                            bool with_tags) override {
    std::vector<NoncurrentVersion> out;
    objstore::VersionListOptions vo;
    vo.prefix = std::string(key);
    vo.max_keys = 1000;
    int64_t newer_mtime = -1;  // mtime of the next newer version; -1 before the current one
    for (;;) {
      STRATA_ASSIGN_OR_RETURN(objstore::VersionListResult r,
                              engine_->ListObjectVersions(bucket, vo));
      for (const objstore::ObjectMeta& v : r.versions) {
        if (v.key != key) return out;  // past the key (the prefix also matches longer keys)
        if (newer_mtime >= 0 && !v.delete_marker) {
          NoncurrentVersion nv{v.version_id, newer_mtime, v.size, {}};
          if (with_tags) {
            auto full = engine_->HeadVersion(bucket, key, v.version_id);
            if (full.ok()) nv.tags = std::move(full->tags);
          }
          out.push_back(std::move(nv));
        }
        newer_mtime = v.mtime_ns;
      }
      if (!r.truncated || r.versions.empty()) return out;
      vo.key_marker = r.versions.back().key;
      vo.version_id_marker = r.versions.back().version_id;
    }
  }
  Status DeleteVersion(std::string_view bucket, std::string_view key, std::string_view version_id,
                       int64_t now_ns) override {
    // No bypass: a rule never removes what Object Lock retains.
    return engine_
        ->DeleteVersionIf(bucket, key, version_id,
                          [now_ns](const objstore::ObjectMeta& m) {
                            Status st = CheckVersionDeletable(m, now_ns, false);
                            return st.ok() ? st : Status::PermissionDenied(st.message());
                          })
        .status();
  }
  Result<std::vector<objstore::MultipartUpload>> ListUploads(std::string_view bucket) override {
    return engine_->ListMultipartUploads(bucket, "");
  }
  Status AbortUpload(std::string_view bucket, std::string_view key,
                     std::string_view upload_id) override {
    return engine_->AbortMultipartUpload(bucket, key, upload_id);
  }

 private:
  // A versioned bucket's current entries: the newest version of each key, a
  // delete marker too (ExpiredObjectDeleteMarker needs those).
  Result<LifecyclePage> ListCurrentVersions(std::string_view bucket, std::string_view start_after,
                                            int max_keys) {
    objstore::VersionListOptions vo;
    vo.key_marker = std::string(start_after);
    vo.max_keys = max_keys;
    STRATA_ASSIGN_OR_RETURN(objstore::VersionListResult r, engine_->ListObjectVersions(bucket, vo));
    LifecyclePage page;
    for (objstore::ObjectMeta& v : r.versions) {
      if (!v.is_latest) continue;
      const bool marker = v.delete_marker;
      std::string id = marker ? v.version_id : "";
      page.entries.push_back({std::move(v), marker, std::move(id)});
    }
    page.truncated = r.truncated;
    // The rest of the last key's versions are noncurrent: the next page starts after it.
    if (r.truncated && !r.versions.empty()) page.next_marker = r.versions.back().key;
    return page;
  }

  objstore::LocalEngine* engine_;
};

// Whether any enabled rule needs the object's tags to decide (by prefix and size).
bool NeedsTags(const LifecycleConfig& c, const LifecycleObject& o) {
  for (const LifecycleRule& r : c.rules) {
    if (!r.enabled || !r.has_expiration() || !r.filter.has_tags()) continue;
    LifecycleFilter untagged = r.filter;
    untagged.tags.clear();
    if (FilterMatches(untagged, o)) return true;
  }
  return false;
}

bool AnyRule(const LifecycleConfig& c, bool (*pred)(const LifecycleRule&)) {
  return std::any_of(c.rules.begin(), c.rules.end(),
                     [pred](const LifecycleRule& r) { return r.enabled && pred(r); });
}

}  // namespace

WallClock FileClock(std::string path) {
  return [path = std::move(path)]() -> int64_t {
    std::ifstream in(path);
    std::string s;
    if (in && std::getline(in, s)) {
      double secs = 0;
      std::string_view t = Trim(s);
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), secs);
      if (ec == std::errc() && p == t.data() + t.size()) return static_cast<int64_t>(secs * 1e9);
    }
    return NowUnixNanos();
  };
}

std::unique_ptr<LifecycleStore> NewEngineLifecycleStore(objstore::LocalEngine* engine) {
  return std::make_unique<EngineLifecycleStore>(engine);
}

struct LifecycleWorker::Impl {
  LifecycleStore* store;
  LifecycleOptions opts;
  std::mutex pass_mu;  // one pass at a time
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;  // guarded by mu
  std::thread thread;
  int64_t next_action_ns = 0;  // monotonic; guarded by pass_mu

  std::mutex stats_mu;
  LifecycleStats stats;             // guarded by stats_mu
  LifecycleStats pass_start_stats;  // stats when the last pass ended; guarded by stats_mu

  int64_t Now() const { return opts.clock ? opts.clock() : NowUnixNanos(); }
  void Count(uint64_t LifecycleStats::*field, uint64_t n = 1) {
    std::lock_guard lk(stats_mu);
    stats.*field += n;
  }
  // Waits ns (monotonic) unless stopped; false when stopped.
  bool SleepNs(int64_t ns) {
    std::unique_lock lk(mu);
    if (ns > 0) cv.wait_for(lk, std::chrono::nanoseconds(ns), [this] { return stop; });
    return !stop;
  }
  bool Sleep(int64_t ms) { return SleepNs(ms * 1'000'000); }
  bool Stopped() {
    std::lock_guard lk(mu);
    return stop;
  }
  // Spaces deletes and aborts to max_actions_per_sec; false when stopped.
  bool Pace() {
    if (opts.max_actions_per_sec <= 0) return !Stopped();
    const int64_t gap = static_cast<int64_t>(1e9 / opts.max_actions_per_sec);
    const int64_t now = MonotonicNanos();
    if (next_action_ns > now && !SleepNs(next_action_ns - now)) return false;
    next_action_ns = std::max(now, next_action_ns) + gap;
    return !Stopped();
  }
  void Failed(std::string_view what, std::string_view bucket, std::string_view key,
              const Status& st) {
    Count(&LifecycleStats::errors);
    kLifeLog.Warn("{} {}/{}: {}", what, bucket, key, st.ToString());
  }

  Status Bucket(const objstore::BucketInfo& b);
  Status Objects(const std::string& bucket, const LifecycleConfig& c);
  void Entry(const std::string& bucket, const LifecycleConfig& c, LifecycleEntry& e);
  void Noncurrent(const std::string& bucket, const LifecycleConfig& c, const LifecycleEntry& e);
  Status Uploads(const std::string& bucket, const LifecycleConfig& c);
  Status Pass();
  void Loop();
};

void LifecycleWorker::Impl::Entry(const std::string& bucket, const LifecycleConfig& c,
                                  LifecycleEntry& e) {
  Count(&LifecycleStats::objects_scanned);
  if (!e.delete_marker && AnyRule(c, [](const LifecycleRule& r) { return r.has_expiration(); })) {
    LifecycleObject o{e.meta.key, e.meta.size, e.meta.mtime_ns, nullptr};
    if (NeedsTags(c, o)) {
      auto full = store->Head(bucket, e.meta.key);
      if (!full.ok()) {
        if (full.error().code() != StatusCode::kNotFound)
          Failed("reading the tags of", bucket, e.meta.key, full.error());
        return;
      }
      if (full->etag != e.meta.etag || full->mtime_ns != e.meta.mtime_ns) return;  // rewritten
      e.meta.tags = std::move(full->tags);
      o.tags = &e.meta.tags;
    }
    auto match = EarliestExpiry(c, o);
    if (match && Now() >= match->at_ns) {
      if (!Pace()) return;
      Status st = store->ExpireCurrent(bucket, e.meta);
      if (st.ok()) {
        Count(&LifecycleStats::objects_expired);
        kLifeLog.Debug("expired {}/{} (rule \"{}\")", bucket, e.meta.key, match->rule->id);
        return;
      }
      if (st.code() != StatusCode::kPreconditionFailed) Failed("expiring", bucket, e.meta.key, st);
      return;
    }
  }
  Noncurrent(bucket, c, e);
}

// The key's noncurrent versions under NoncurrentVersionExpiration, then a
// delete marker left with none under ExpiredObjectDeleteMarker.
void LifecycleWorker::Impl::Noncurrent(const std::string& bucket, const LifecycleConfig& c,
                                       const LifecycleEntry& e) {
  const bool marker_rule = e.delete_marker && AnyRule(c, [](const LifecycleRule& r) {
                             return r.expired_object_delete_marker.value_or(false);
                           });
  if (!AnyRule(c, [](const LifecycleRule& r) { return r.has_noncurrent(); }) && !marker_rule)
    return;
  const bool with_tags =
      AnyRule(c, [](const LifecycleRule& r) { return r.has_noncurrent() && r.filter.has_tags(); });
  auto versions = store->NoncurrentVersions(bucket, e.meta.key, with_tags);
  if (!versions.ok())
    return Failed("listing the versions of", bucket, e.meta.key, versions.error());
  std::vector<NoncurrentView> views;
  views.reserve(versions->size());
  for (const NoncurrentVersion& v : *versions)
    views.push_back({v.noncurrent_since_ns, {e.meta.key, v.size, v.noncurrent_since_ns, &v.tags}});
  size_t removed = 0;
  for (size_t i : NoncurrentToExpire(c, e.meta.key, views, Now())) {
    if (!Pace()) return;
    Status st = store->DeleteVersion(bucket, e.meta.key, (*versions)[i].version_id, Now());
    if (st.code() == StatusCode::kPermissionDenied) {
      Count(&LifecycleStats::versions_locked);
      continue;
    }
    if (!st.ok()) {
      Failed("expiring a noncurrent version of", bucket, e.meta.key, st);
      continue;
    }
    ++removed;
    Count(&LifecycleStats::noncurrent_expired);
  }
  if (!marker_rule || removed != versions->size()) return;
  for (const LifecycleRule& r : c.rules) {
    LifecycleObject o{e.meta.key, 0, e.meta.mtime_ns, nullptr};
    if (!r.enabled || !r.expired_object_delete_marker.value_or(false) ||
        !FilterMatches(r.filter, o))
      continue;
    if (!Pace()) return;
    Status st = store->DeleteVersion(bucket, e.meta.key, e.version_id, Now());
    if (!st.ok()) return Failed("removing the expired delete marker of", bucket, e.meta.key, st);
    Count(&LifecycleStats::noncurrent_expired);
    return;
  }
}

Status LifecycleWorker::Impl::Objects(const std::string& bucket, const LifecycleConfig& c) {
  if (!AnyRule(c, [](const LifecycleRule& r) { return r.has_expiration() || r.uses_versioning(); }))
    return Status::Ok();
  std::string after;
  const int page_keys = std::clamp(opts.page_keys, 1, 1000);
  for (;;) {
    if (Stopped()) return Status::Ok();
    STRATA_ASSIGN_OR_RETURN(LifecyclePage page, store->ListCurrent(bucket, after, page_keys));
    for (LifecycleEntry& e : page.entries) {
      if (Stopped()) return Status::Ok();
      Entry(bucket, c, e);
    }
    if (!page.truncated || page.next_marker.empty()) return Status::Ok();
    after = page.next_marker;
    if (!Sleep(opts.page_pause_ms)) return Status::Ok();
  }
}

Status LifecycleWorker::Impl::Uploads(const std::string& bucket, const LifecycleConfig& c) {
  if (!AnyRule(c, [](const LifecycleRule& r) { return r.abort_days.has_value(); }))
    return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(std::vector<objstore::MultipartUpload> uploads,
                          store->ListUploads(bucket));
  for (const objstore::MultipartUpload& u : uploads) {
    for (const LifecycleRule& r : c.rules) {
      if (!r.enabled || !r.abort_days) continue;
      if (std::string_view(u.key).substr(0, r.filter.prefix.size()) != r.filter.prefix) continue;
      if (Now() < ExpiryAfterDays(u.initiated_ns, *r.abort_days)) continue;
      if (!Pace()) return Status::Ok();
      Status st = store->AbortUpload(bucket, u.key, u.upload_id);
      if (st.ok()) {
        Count(&LifecycleStats::uploads_aborted);
        kLifeLog.Debug("aborted upload {} of {}/{} (rule \"{}\")", u.upload_id, bucket, u.key,
                       r.id);
      } else if (st.code() != StatusCode::kNotFound) {
        Failed("aborting an upload of", bucket, u.key, st);
      }
      break;
    }
  }
  return Status::Ok();
}

Status LifecycleWorker::Impl::Bucket(const objstore::BucketInfo& b) {
  const std::string* doc = b.Config(kLifecycleConfig);
  if (doc == nullptr) return Status::Ok();
  auto config = ParseLifecycle(*doc);
  if (!config.ok()) return config.error().WithContext("lifecycle configuration of " + b.name);
  STRATA_RETURN_IF_ERROR(Objects(b.name, *config));
  return Uploads(b.name, *config);
}

Status LifecycleWorker::Impl::Pass() {
  Impl& im = *this;
  std::lock_guard pass(im.pass_mu);
  const int64_t start = MonotonicNanos();
  STRATA_ASSIGN_OR_RETURN(std::vector<objstore::BucketInfo> buckets, im.store->ListBuckets());
  Status first;
  for (const objstore::BucketInfo& b : buckets) {
    if (im.Stopped()) break;
    Status st = im.Bucket(b);
    if (!st.ok() && st.code() != StatusCode::kNotFound) {  // NotFound: deleted meanwhile
      im.Failed("lifecycle pass over", b.name, "", st);
      if (first.ok()) first = st;
    }
  }
  LifecycleStats before, now;
  {
    std::lock_guard lk(im.stats_mu);
    before = im.pass_start_stats;
    ++im.stats.passes;
    im.stats.last_pass_unix_ns = im.Now();
    im.stats.last_pass_duration_ns = MonotonicNanos() - start;
    im.pass_start_stats = now = im.stats;
  }
  if (now.objects_expired + now.noncurrent_expired + now.uploads_aborted >
      before.objects_expired + before.noncurrent_expired + before.uploads_aborted)
    kLifeLog.Info(
        "lifecycle pass: {} objects expired, {} versions removed, {} uploads aborted in "
        "{} ms",
        now.objects_expired - before.objects_expired,
        now.noncurrent_expired - before.noncurrent_expired,
        now.uploads_aborted - before.uploads_aborted, now.last_pass_duration_ns / 1'000'000);
  return first;
}

Status LifecycleWorker::RunPass() { return impl_->Pass(); }

void LifecycleWorker::Impl::Loop() {
  for (;;) {
    const int64_t start = MonotonicNanos();
    (void)Pass();
    const int64_t spent_ms = (MonotonicNanos() - start) / 1'000'000;
    if (!Sleep(std::max<int64_t>(opts.interval_ms - spent_ms, 1))) return;
  }
}

LifecycleWorker::LifecycleWorker(LifecycleStore* store, LifecycleOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->store = store;
  impl_->opts = std::move(options);
}

LifecycleWorker::~LifecycleWorker() { Stop(); }

void LifecycleWorker::Start() {
  if (impl_->thread.joinable()) return;
  {
    std::lock_guard lk(impl_->mu);
    impl_->stop = false;
  }
  Impl* im = impl_.get();
  impl_->thread = std::thread([im] { im->Loop(); });
}

void LifecycleWorker::Stop() {
  {
    std::lock_guard lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

LifecycleStats LifecycleWorker::stats() const {
  std::lock_guard lk(impl_->stats_mu);
  return impl_->stats;
}

}  // namespace strata::s3
