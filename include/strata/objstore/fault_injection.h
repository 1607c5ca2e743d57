// FaultInjectionObjectStore: wraps any ObjectStore and makes it slow and
// unreliable on purpose, the way a remote object store is: a first-byte
// latency per request, a bandwidth cap (per stream and/or in total), and
// failures — kUnavailable before a request starts or in the middle of its
// transfer (error_rate), a GET stream that stops mid-body with kIOError or a
// PUT that fails after consuming part of its body (drop_rate). A failed write
// never leaves an object behind (the body is cut before the wrapped store
// commits it).
//
// Decisions come from one seeded generator, drawn in call order: a
// single-threaded test sees the same faults on every run. Used by tests (do
// callers retry and verify?) and benchmarks (does the transfer layer hide
// 20 ms of latency?).
//
// Thread-safety: thread-safe; options may be changed while requests run
// (SetOptions), which is how a test turns faults off to verify the result.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>

#include <strata/objstore/object_store.h>

namespace strata::objstore {

struct FaultOptions {
  int64_t first_byte_latency_us = 0;      // added before every request's first byte
  uint64_t stream_bytes_per_sec = 0;      // cap of each GET/PUT body stream; 0 = none
  uint64_t total_bytes_per_sec = 0;       // cap of all streams together; 0 = none
  double error_rate = 0;                  // per request: kUnavailable (before, or mid-body)
  double drop_rate = 0;                   // per body transfer: cut mid-body (kIOError)
  uint64_t seed = 1;
};

class FaultInjectionObjectStore final : public ObjectStore {
 public:
  // `base` is not owned and must outlive this store.
  FaultInjectionObjectStore(ObjectStore* base, FaultOptions options);
  // Owns `base`.
  FaultInjectionObjectStore(std::unique_ptr<ObjectStore> base, FaultOptions options);
  ~FaultInjectionObjectStore() override;

  void SetOptions(const FaultOptions& options);
  FaultOptions options() const;

  struct Stats {
    uint64_t requests = 0;
    uint64_t errors = 0;  // kUnavailable injected
    uint64_t drops = 0;   // bodies cut
    uint64_t bytes = 0;   // body bytes that went through
  };
  Stats stats() const;

  std::string url() const override;
  Result<ObjectInfo> Put(std::string_view key, ByteSource& body,
                         const WriteOptions& options = {}) override;
  Status Get(std::string_view key, const ReadOptions& options, const ByteSink& sink,
             ObjectInfo* info = nullptr) override;
  Result<ObjectInfo> Head(std::string_view key) override;
  Status Delete(std::string_view key) override;
  Result<std::vector<Status>> DeleteMany(const std::vector<std::string>& keys) override;
  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, int max_keys = 1000) override;
  Result<std::string> CreateMultipart(std::string_view key, const WriteOptions& options = {}) override;
  Result<UploadedPart> UploadPart(std::string_view key, std::string_view upload_id,
                                  int part_number, ByteSource& body, uint64_t size) override;
  Result<ObjectInfo> CompleteMultipart(std::string_view key, std::string_view upload_id,
                                       const std::vector<UploadedPart>& parts) override;
  Status AbortMultipart(std::string_view key, std::string_view upload_id) override;
  Result<std::vector<UploadedPart>> ListParts(std::string_view key,
                                              std::string_view upload_id) override;
  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key) override;
  Status Rename(std::string_view src_key, std::string_view dst_key) override;

  // What one request will suffer (public for the implementation's helpers).
  struct Plan {
    enum Kind { kNone, kErrorBefore, kErrorMidway, kDrop } kind = kNone;
    double fraction = 0;  // where in the body a mid-body fault strikes
  };

 private:
  Plan Roll(bool has_body);
  Status Before(const Plan& plan, std::string_view what);
  // Sleeps so that n more bytes respect the caps; stream_start_ns is the
  // stream's first byte, stream_bytes what it sent before these n.
  void Pace(int64_t stream_start_ns, uint64_t stream_bytes, uint64_t n);
  Result<ObjectInfo> PutLike(std::string_view what, ByteSource& body, std::optional<uint64_t> size,
                             const std::function<Result<ObjectInfo>(ByteSource&)>& put);

  std::unique_ptr<ObjectStore> owned_;
  ObjectStore* base_;
  mutable std::mutex mu_;
  FaultOptions options_;        // guarded by mu_
  std::mt19937_64 rng_;         // guarded by mu_
  int64_t link_free_ns_ = 0;    // total cap: when the shared link is next free; guarded by mu_
  std::atomic<uint64_t> requests_{0}, errors_{0}, drops_{0}, bytes_{0};
};

}  // namespace strata::objstore
