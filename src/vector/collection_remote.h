// Private to the collection layer: collections on an object store (remote.h).
//
// WriterLease is the store's .writer object; ObjectPublisher uploads one
// collection's files and replaces its MANIFEST conditionally;
// DownloadCollection copies a published collection into a local directory
// (for a replica, or a writer whose root lacks it). CollectionManager::Remote
// is the manager's state for either role.
//
// Thread-safety: WriterLease and ObjectPublisher are thread-safe (one mutex
// each). Remote's fields are noted.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <strata/cache/cached_object_store.h>
#include <strata/core/result.h>
#include <strata/core/status.h>
#include <strata/objstore/object_store.h>
#include <strata/vector/collection.h>
#include <strata/vector/remote.h>

namespace strata::vector::internal {

// "writer 3f2a... (vector API 127.0.0.1:6333, host h, pid 12), renewed 1.2 s ago",
// or "no writer" when the store has no lease.
std::string DescribeWriter(objstore::ObjectStore* store);

class WriterLease {
 public:
  // Takes the lease: absent, expired (not renewed within its TTL) or held by
  // `id` itself (a restart). kPreconditionFailed naming the holder otherwise.
  static Result<std::unique_ptr<WriterLease>> Acquire(objstore::ObjectStore* store, std::string id,
                                                      std::string endpoint, int64_t ttl_ms);
  // kPreconditionFailed (naming the new holder) when another writer took it.
  Status Renew();

 private:
  WriterLease(objstore::ObjectStore* store, std::string id, std::string endpoint, int64_t ttl)
      : store_(store), id_(std::move(id)), endpoint_(std::move(endpoint)), ttl_ms_(ttl) {}
  std::string Body() const;
  objstore::ObjectStore* store_;
  const std::string id_, endpoint_;
  const int64_t ttl_ms_;
  std::mutex mu_;
  std::string etag_;  // guarded by mu_
};

class ObjectPublisher final : public ManifestPublisher {
 public:
  // `etag`: the MANIFEST's current ETag in the store ("" when it has none).
  // `remote`: the collection's objects in the store (relative name -> size),
  // so files already there are not uploaded again.
  ObjectPublisher(objstore::ObjectStore* store, std::string collection, std::string etag,
                  const std::map<std::string, uint64_t>& remote, const std::string& dir);
  Status Publish(const std::string& dir, const std::string& manifest) override;
  // config.json or milvus.json changed since they were last uploaded.
  bool RootFilesChanged(const std::string& dir);

 private:
  Status Upload(const std::string& dir, const std::string& rel);  // mu_ held
  Status CollectGarbage(const std::vector<std::string>& live);    // mu_ held
  objstore::ObjectStore* store_;
  const std::string collection_;
  std::mutex mu_;
  std::string etag_;                                          // guarded by mu_
  std::map<std::string, std::pair<uint64_t, int64_t>> sent_;  // rel -> (size, mtime); mu_
  std::map<std::string, int64_t> doomed_;  // rel -> when it stopped being referenced; mu_
};

// Copies collection `name` as published into `dir` (created; must be empty):
// its MANIFEST, config.json, milvus.json and the segment files the manifest
// names, read from `data` (a cache in front of `meta`, or `meta` itself).
// Files of `prev_dir` whose ETag (in *etags, updated) is unchanged are
// hard-linked instead. Returns the MANIFEST's ETag.
Result<std::string> DownloadCollection(objstore::ObjectStore* meta, objstore::ObjectStore* data,
                                       const std::string& name, const std::string& dir,
                                       const std::string& prev_dir,
                                       std::map<std::string, std::string>* etags);

// The collection names in the store (those with a config.json or MANIFEST).
Result<std::vector<std::string>> ListRemoteCollections(objstore::ObjectStore* store);

}  // namespace strata::vector::internal

namespace strata::vector {

struct CollectionManager::Remote {
  VectorStorageOptions opts;
  std::string writer_id;                         // writer
  std::unique_ptr<internal::WriterLease> lease;  // writer
  // Writer: per collection; guarded by the manager's mu_.
  std::map<std::string, std::shared_ptr<internal::ObjectPublisher>> publishers;
  std::string fenced;                               // writer: set once the lease is lost; mu_
  std::unique_ptr<cache::CachedObjectStore> cache;  // replica
  struct Loaded {
    std::string etag;
    uint64_t version = 0;
    std::string dir;
    std::map<std::string, std::string> etags;
  };
  std::map<std::string, Loaded> loaded;  // replica; only the sync (one at a time: sync_mu)
  std::string aliases_etag;              // replica; sync_mu
  std::string read_only;                 // replica: why writes are refused; guarded by mu_
  std::mutex sync_mu;
  std::thread thread;                                 // publishes (writer) or syncs (replica)
  std::thread lease_thread;                           // writer: renews the lease
  std::function<void(const std::string&)> on_fenced;  // writer: the lease was lost
  void LeaseLoop();
  std::mutex loop_mu;
  std::condition_variable loop_cv;
  bool stop = false;  // guarded by loop_mu
};

}  // namespace strata::vector
