// Vector collections on an object store: one fenced writer, read-only replicas.
//
// Layout under the store's prefix (docs/scale-out.md):
//   .writer                         the writer's lease (JSON: id, endpoint, host, pid,
//                                   renewed_ms, ttl_ms), renewed with If-Match
//   .aliases.json                   the collection aliases
//   <collection>/config.json        schema and options (and milvus.json, when the
//                                   collection was made through the Milvus API)
//   <collection>/MANIFEST           the live sealed segments and their delete bitmaps;
//                                   replaced only with a conditional PUT (If-Match on
//                                   the ETag the writer last wrote, If-None-Match: *
//                                   for the first), so two writers can never both commit
//   <collection>/segments/<id>.dat  sealed segments and their indexes (.f<k>.idx),
//                                   uploaded before the manifest that names them
//
// The writer keeps each collection in its local directory as before (the WAL
// stays there until the rows are sealed into a published segment) and
// publishes every manifest it writes; it also publishes the growing segment
// every publish_interval_ms when it has unpublished writes. At start it takes
// the lease: a lease held by another writer that renewed it within its TTL
// refuses the start (the error names that writer); the same writer (its id is
// kept in the local root, .writer-id) takes its own lease back after a crash.
// A writer whose lease or manifest was taken over stops writing: each write
// gets kPermissionDenied naming the writer that holds the store now.
//
// A replica lists the collections, reads each MANIFEST (a HEAD every
// poll_interval_ms tells it when one changed), loads the files it names
// through a CachedObjectStore (RAM and disk tiers; a restart with a warm
// disk tier reads nothing from the store) into a local directory per
// version, opens the collection read-only and swaps it in. Writes and
// collection changes on a replica fail with kPermissionDenied naming the
// writer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <strata/cache/cached_object_store.h>
#include <strata/objstore/object_store.h>

namespace strata::vector {

struct VectorStorageOptions {
  enum class Role { kWriter, kReplica };
  Role role = Role::kWriter;
  // The store (opened on the URL the user gave; keys relative to its prefix).
  std::shared_ptr<objstore::ObjectStore> store;
  // Shown to other processes in the lease and in refused writes: where this
  // writer's APIs listen ("vector API 127.0.0.1:6333, Milvus 127.0.0.1:19530").
  std::string endpoint;
  // A writer that has not renewed its lease for this long can be replaced.
  int64_t lease_ttl_ms = 10'000;
  // Writer: unpublished writes are sealed and published after at most this.
  int64_t publish_interval_ms = 1'000;
  // Replica: how often the manifests are checked.
  int64_t poll_interval_ms = 200;
  // Replica: the tiered cache segments are read through (set disk_tiers to
  // keep fetched blocks across restarts).
  cache::CacheOptions cache;
};

}  // namespace strata::vector
