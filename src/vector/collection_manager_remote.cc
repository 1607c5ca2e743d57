// CollectionManager over an object store (remote.h): the writer (lease,
// publishers, the periodic publication of unpublished writes, fetching
// published collections its root lacks) and the replica (the poller that
// copies new manifests' files through the cache and swaps collections in).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/aead.h>
#include <strata/core/clock.h>
#include <strata/core/file_util.h>
#include <strata/core/log.h>
#include <strata/vector/collection.h>
#include <strata/vector/remote.h>

#include "vector/collection_internal.h"
#include "vector/collection_remote.h"

namespace strata::vector {

using json = nlohmann::json;
using internal::OptionsFromJson;
namespace fs = std::filesystem;

namespace {

constexpr log::Logger kLog("vector");

std::string HexId() {
  const std::string raw = crypto::RandomString(8);
  std::string out;
  for (unsigned char c : raw) out += fmt::format("{:02x}", c);
  return out;
}

Result<std::string> WriterId(const std::string& root) {
  const std::string path = root + "/.writer-id";
  if (auto text = ReadFileToString(path); text && !text->empty()) return *text;
  std::string id = HexId();
  STRATA_RETURN_IF_ERROR(WriteFileAtomic(path, id));
  return id;
}

// The stored options of the collection in dir, with the process's sync and
// background settings.
CollectionOptions OptionsIn(const std::string& dir, const CollectionOptions& defaults) {
  CollectionOptions opts;
  std::ifstream cin(dir + "/config.json");
  json cfg = json::parse(cin, nullptr, false);
  if (cfg.is_object()) opts = OptionsFromJson(cfg.value("options", json::object()), opts);
  opts.sync = opts.sync && defaults.sync;
  opts.background = defaults.background;
  return opts;
}

uint64_t LastLsnOf(const std::string& manifest_bytes) {
  return manifest_bytes.size() >= 28 ? Collection::Impl::ManifestLastLsn(manifest_bytes) : 0;
}

}  // namespace

CollectionManager::CollectionManager(std::string root, CollectionOptions defaults)
    : root_(std::move(root)), defaults_(defaults) {}

Result<std::unique_ptr<CollectionManager>> CollectionManager::Open(
    const std::string& root, const CollectionOptions& defaults,
    const VectorStorageOptions& storage) {
  if (!storage.store) return Status::InvalidArgument("vector storage needs an object store");
  std::error_code ec;
  if (storage.role == VectorStorageOptions::Role::kReplica) {
    fs::remove_all(root, ec);  // a replica's root is a copy of the store, made again
  }
  fs::create_directories(root, ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", root, ec.message()));
  std::unique_ptr<CollectionManager> m(new CollectionManager(root, defaults));
  m->remote_ = std::make_unique<Remote>();
  m->remote_->opts = storage;
  STRATA_RETURN_IF_ERROR(m->StartRemote());
  return m;
}

Status CollectionManager::StartRemote() {
  Remote& r = *remote_;
  objstore::ObjectStore* store = r.opts.store.get();
  if (r.opts.role == VectorStorageOptions::Role::kReplica) {
    STRATA_ASSIGN_OR_RETURN(r.cache, cache::CachedObjectStore::Open(store, r.opts.cache));
    r.read_only = fmt::format("this server is a read-only replica of {}; send writes to {}",
                              store->url(), internal::DescribeWriter(store));
    STRATA_RETURN_IF_ERROR(SyncReplica());
  } else {
    STRATA_ASSIGN_OR_RETURN(r.writer_id, WriterId(root_));
    STRATA_ASSIGN_OR_RETURN(r.lease, internal::WriterLease::Acquire(
                                         store, r.writer_id, r.opts.endpoint, r.opts.lease_ttl_ms));
    STRATA_ASSIGN_OR_RETURN(auto names, internal::ListRemoteCollections(store));
    std::error_code ec;
    for (const auto& name : names) {
      const std::string dir = root_ + "/" + name;
      if (fs::exists(dir + "/config.json", ec)) {
        // A local copy older than what is published (another writer ran
        // since) is set aside, not published over the newer one.
        auto local = ReadFileToString(dir + "/MANIFEST");
        auto published = r.opts.store->GetBytes(name + "/MANIFEST");
        if (!published || LastLsnOf(local ? *local : "") >= LastLsnOf(*published)) continue;
        const std::string aside = fmt::format("{}/.{}.stale-{}", root_, name, NowUnixNanos());
        kLog.Error("collection {}: the local copy is older than the published one; moved to {}",
                   name, aside);
        fs::rename(dir, aside, ec);
      }
      std::map<std::string, std::string> etags;
      const std::string tmp = fmt::format("{}/.{}.fetching", root_, name);
      fs::remove_all(tmp, ec);
      auto got = internal::DownloadCollection(store, store, name, tmp, "", &etags);
      if (!got) {
        kLog.Error("collection {} cannot be fetched from {}: {}", name, store->url(),
                   got.error().ToString());
        continue;
      }
      fs::rename(tmp, dir, ec);
      if (ec) return Status::IOError(fmt::format("cannot rename {}: {}", tmp, ec.message()));
    }
    if (auto al = r.opts.store->GetBytes(".aliases.json"); al)
      STRATA_RETURN_IF_ERROR(WriteFileAtomic(root_ + "/.aliases.json", *al));
    STRATA_RETURN_IF_ERROR(OpenLocal());
    // What the last run wrote locally but did not publish (a crash between
    // the two), and collections created before the store was used.
    for (const auto& name : List()) {
      auto c = Get(name);
      if (!c) continue;
      if (Status st = (*c)->Publish(/*force=*/true); !st.ok())
        kLog.Error("collection {}: not published: {}", name, st.ToString());
    }
  }
  r.thread = std::thread([this] { RemoteLoop(); });
  if (r.lease) {
    r.on_fenced = [this](const std::string& why) {
      std::vector<std::shared_ptr<Collection>> all;
      {
        std::lock_guard<std::mutex> ml(mu_);
        remote_->fenced = why;
        for (auto& [n, c] : collections_) all.push_back(c);
      }
      for (auto& c : all) c->RefuseWrites(why);
    };
    r.lease_thread = std::thread([&r] { r.LeaseLoop(); });
  }
  return Status::Ok();
}

void CollectionManager::StopRemote() {
  if (!remote_ || !remote_->thread.joinable()) return;
  {
    std::lock_guard<std::mutex> l(remote_->loop_mu);
    remote_->stop = true;
  }
  remote_->loop_cv.notify_all();
  remote_->thread.join();
  if (remote_->lease_thread.joinable()) remote_->lease_thread.join();
}

CollectionRole CollectionManager::RoleFor(const std::string& name) {
  CollectionRole role;
  if (!remote_) return role;
  Remote& r = *remote_;
  if (r.opts.role == VectorStorageOptions::Role::kReplica) {
    role.read_only = r.read_only;
    return role;
  }
  if (!r.fenced.empty()) role.read_only = r.fenced;
  auto it = r.publishers.find(name);
  if (it == r.publishers.end()) {
    std::string etag;
    if (auto h = r.opts.store->Head(name + "/MANIFEST"); h) etag = h->etag;
    std::map<std::string, uint64_t> remote;
    Status st = r.opts.store->ListAll(name + "/", [&](const objstore::ObjectInfo& o) {
      remote[o.key.substr(name.size() + 1)] = o.size;
      return Status::Ok();
    });
    if (!st.ok()) kLog.Warn("collection {}: listing its objects: {}", name, st.ToString());
    it = r.publishers
             .emplace(name, std::make_shared<internal::ObjectPublisher>(
                                r.opts.store.get(), name, etag, remote, root_ + "/" + name))
             .first;
  }
  role.publisher = it->second;
  return role;
}

Status CollectionManager::CheckChangesAllowed() const {
  if (!remote_) return Status::Ok();
  std::lock_guard<std::mutex> l(mu_);
  if (!remote_->read_only.empty()) return Status::PermissionDenied(remote_->read_only);
  if (!remote_->fenced.empty()) return Status::PermissionDenied(remote_->fenced);
  return Status::Ok();
}

std::string CollectionManager::ReadOnlyReason() const {
  if (!remote_) return "";
  std::lock_guard<std::mutex> l(mu_);
  return remote_->read_only.empty() ? remote_->fenced : remote_->read_only;
}

// mu_ held. A new collection is in the store (config.json and an empty
// MANIFEST) before Create returns, so a replica sees it.
Status CollectionManager::PublishCreated(const std::string& name, Collection* c) {
  if (!remote_) return Status::Ok();
  if (auto h = remote_->opts.store->Head(name + "/MANIFEST"); h) {
    return Status::AlreadyExists(
        fmt::format("collection \"{}\" already exists in {} (published by another writer)", name,
                    remote_->opts.store->url()));
  }
  Status st = c->Publish(/*force=*/true);
  if (!st.ok()) remote_->publishers.erase(name);
  return st;
}

void CollectionManager::DropRemote(const std::string& name) {
  if (!remote_) return;
  objstore::ObjectStore* store = remote_->opts.store.get();
  {
    std::lock_guard<std::mutex> l(mu_);
    remote_->publishers.erase(name);
  }
  // The MANIFEST first: without it replicas drop the collection at once.
  Status st = store->Delete(name + "/MANIFEST");
  std::vector<std::string> keys;
  if (st.ok()) {
    st = store->ListAll(name + "/", [&](const objstore::ObjectInfo& o) {
      keys.push_back(o.key);
      return Status::Ok();
    });
  }
  for (size_t i = 0; st.ok() && i < keys.size(); i += 1000) {
    std::vector<std::string> part(keys.begin() + i, keys.begin() + std::min(keys.size(), i + 1000));
    st = store->DeleteMany(part).status();
  }
  if (!st.ok())
    kLog.Warn("collection {}: its objects in {}: {}", name, store->url(), st.ToString());
}

void CollectionManager::PublishAliases() const {
  if (!remote_) return;
  auto text = ReadFileToString(root_ + "/.aliases.json");
  if (!text) return;
  auto put = remote_->opts.store->PutBytes(".aliases.json", *text);
  if (!put) kLog.Warn("aliases not published: {}", put.error().ToString());
}

Status CollectionManager::SyncNow() {
  if (!remote_) return Status::Ok();
  if (remote_->opts.role == VectorStorageOptions::Role::kReplica) return SyncReplica();
  Status first;
  for (const auto& name : List()) {
    auto c = Get(name);
    if (!c) continue;
    std::shared_ptr<internal::ObjectPublisher> pub;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = remote_->publishers.find(name);
      if (it != remote_->publishers.end()) pub = it->second;
    }
    const bool root_changed = pub && pub->RootFilesChanged((*c)->dir());
    if (!(*c)->HasUnpublished() && !root_changed) continue;
    Status st = (*c)->Publish(root_changed);
    if (!st.ok() && st.code() != StatusCode::kPermissionDenied) {
      kLog.Warn("collection {}: publishing: {}", name, st.ToString());
      if (first.ok()) first = st;
    }
  }
  return first;
}

void CollectionManager::RemoteLoop() {
  Remote& r = *remote_;
  const bool replica = r.opts.role == VectorStorageOptions::Role::kReplica;
  const int64_t interval = replica ? r.opts.poll_interval_ms : r.opts.publish_interval_ms;
  std::unique_lock<std::mutex> l(r.loop_mu);
  while (!r.stop) {
    r.loop_cv.wait_for(l, std::chrono::milliseconds(interval));
    if (r.stop) break;
    l.unlock();
    bool fenced;
    {
      std::lock_guard<std::mutex> ml(mu_);
      fenced = !r.fenced.empty();
    }
    Status st = fenced ? Status::Ok() : SyncNow();
    if (!st.ok() && replica) kLog.Warn("replica sync: {}", st.ToString());
    l.lock();
  }
}

// The lease has its own thread: a publication can wait on index builds for
// longer than the lease's TTL.
void CollectionManager::Remote::LeaseLoop() {
  const int64_t interval = std::max<int64_t>(opts.lease_ttl_ms / 3, 1);
  std::unique_lock<std::mutex> l(loop_mu);
  while (!stop) {
    loop_cv.wait_for(l, std::chrono::milliseconds(interval));
    if (stop) break;
    l.unlock();
    Status st = lease->Renew();
    if (st.code() == StatusCode::kPreconditionFailed) {
      kLog.Error("{}", st.message());
      on_fenced(st.message());
      l.lock();
      break;
    }
    if (!st.ok()) kLog.Warn("writer lease not renewed: {}", st.ToString());
    l.lock();
  }
}

// Replica: one pass over the store. A collection whose MANIFEST changed is
// copied (unchanged files hard-linked from the previous copy) and opened
// read-only, then swapped in; one that is gone from the store is dropped.
Status CollectionManager::SyncReplica() {
  Remote& r = *remote_;
  std::lock_guard<std::mutex> sl(r.sync_mu);
  objstore::ObjectStore* store = r.opts.store.get();
  STRATA_ASSIGN_OR_RETURN(auto names, internal::ListRemoteCollections(store));
  Status first;
  std::set<std::string> present;
  for (const auto& name : names) {
    auto h = store->Head(name + "/MANIFEST");
    if (!h) continue;  // being created or dropped
    present.insert(name);
    auto it = r.loaded.find(name);
    if (it != r.loaded.end() && it->second.etag == h->etag) continue;
    Status st = LoadReplica(name);
    if (!st.ok()) {
      kLog.Warn("replica: collection {} not loaded: {}", name, st.ToString());
      if (first.ok()) first = st;
    }
  }
  for (auto it = r.loaded.begin(); it != r.loaded.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    std::shared_ptr<Collection> gone;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto c = collections_.find(it->first);
      if (c != collections_.end()) {
        gone = c->second;
        collections_.erase(c);
      }
    }
    gone.reset();  // closed when the last request holding it is done
    std::error_code ec;
    fs::remove_all(root_ + "/" + it->first, ec);
    kLog.Info("replica: collection {} was dropped by the writer", it->first);
    it = r.loaded.erase(it);
  }
  // Aliases, and who the writer is now (for the error writes get).
  auto h = store->Head(".aliases.json");
  if (h && h->etag != r.aliases_etag) {
    auto text = store->GetBytes(".aliases.json");
    json j = text ? json::parse(*text, nullptr, false) : json();
    if (j.is_object()) {
      std::lock_guard<std::mutex> l(mu_);
      aliases_.clear();
      for (auto a = j.begin(); a != j.end(); ++a) {
        if (a.value().is_string()) aliases_[a.key()] = a.value().get<std::string>();
      }
      r.aliases_etag = h->etag;
    }
  }
  const std::string why = fmt::format("this server is a read-only replica of {}; send writes to {}",
                                      store->url(), internal::DescribeWriter(store));
  std::lock_guard<std::mutex> l(mu_);
  r.read_only = why;
  return first;
}

// Replica, sync_mu held.
Status CollectionManager::LoadReplica(const std::string& name) {
  Remote& r = *remote_;
  Remote::Loaded next;
  auto prev = r.loaded.find(name);
  if (prev != r.loaded.end()) {
    next.version = prev->second.version + 1;
    next.etags = prev->second.etags;
  }
  next.dir = fmt::format("{}/{}/v{}", root_, name, next.version);
  std::error_code ec;
  fs::remove_all(next.dir, ec);
  auto etag =
      internal::DownloadCollection(r.opts.store.get(), r.cache.get(), name, next.dir,
                                   prev != r.loaded.end() ? prev->second.dir : "", &next.etags);
  if (!etag) {
    fs::remove_all(next.dir, ec);
    return etag.error();
  }
  next.etag = *etag;
  std::string why;
  {
    std::lock_guard<std::mutex> l(mu_);
    why = r.read_only;
  }
  CollectionRole role;
  role.read_only = why;
  auto c = Collection::Open(next.dir, OptionsIn(next.dir, defaults_), role);
  if (!c) {
    fs::remove_all(next.dir, ec);
    return c.error();
  }
  std::shared_ptr<Collection> old;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto& slot = collections_[name];
    old = std::move(slot);
    slot = std::shared_ptr<Collection>(std::move(*c));
  }
  // Requests holding the old copy finish on it; it closes when the last one
  // releases it (its files stay mapped after the directory is gone).
  old.reset();
  if (prev != r.loaded.end()) fs::remove_all(prev->second.dir, ec);
  kLog.Info("replica: collection {} at manifest {}", name, next.etag);
  r.loaded[name] = std::move(next);
  return Status::Ok();
}

}  // namespace strata::vector
