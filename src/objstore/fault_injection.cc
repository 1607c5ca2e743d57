#include <strata/objstore/fault_injection.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <strata/core/clock.h>

namespace strata::objstore {
namespace {

constexpr size_t kPiece = 64 * 1024;  // pacing granularity
constexpr uint64_t kUnknownBody = 1 << 20;

void SleepUntil(int64_t t_ns) {
  const int64_t now = MonotonicNanos();
  if (t_ns > now) std::this_thread::sleep_for(std::chrono::nanoseconds(t_ns - now));
}

Status Injected(FaultInjectionObjectStore::Plan::Kind kind, std::string_view what) {
  if (kind == FaultInjectionObjectStore::Plan::kDrop) {
    return Status::IOError("connection reset in the middle of " + std::string(what) +
                           " (injected fault)");
  }
  return Status::Unavailable("SlowDown: " + std::string(what) + " failed (injected fault)");
}

// A body that fails at a chosen byte and is paced on the way.
class CutSource : public ByteSource {
 public:
  using Pacer = std::function<void(int64_t start_ns, uint64_t sent, uint64_t n)>;
  CutSource(ByteSource& inner, std::optional<uint64_t> cut, Status cut_status, Pacer pace)
      : inner_(inner), cut_(cut), cut_status_(std::move(cut_status)), pace_(std::move(pace)) {}

  Result<size_t> Read(char* buf, size_t n) override {
    if (cut_ && read_ >= *cut_) {
      cut_hit = true;
      return cut_status_;
    }
    if (cut_) n = static_cast<size_t>(std::min<uint64_t>(n, *cut_ - read_));
    n = std::min(n, kPiece);
    if (start_ns_ == 0) start_ns_ = MonotonicNanos();
    STRATA_ASSIGN_OR_RETURN(size_t r, inner_.Read(buf, n));
    pace_(start_ns_, read_, r);
    read_ += r;
    return r;
  }
  bool RewindInner() {
    auto* rw = dynamic_cast<RewindableSource*>(&inner_);
    if (rw == nullptr || !rw->Rewind()) return false;
    read_ = 0;
    start_ns_ = 0;
    return true;
  }
  bool cut_hit = false;
  uint64_t bytes() const { return read_; }

 private:
  ByteSource& inner_;
  std::optional<uint64_t> cut_;
  Status cut_status_;
  Pacer pace_;
  uint64_t read_ = 0;
  int64_t start_ns_ = 0;
};

// The same, rewindable when the wrapped source is (so the wrapped store sees
// the same kind of body the caller passed).
class RewindableCutSource final : public RewindableSource {
 public:
  explicit RewindableCutSource(CutSource& cut) : cut_(cut) {}
  Result<size_t> Read(char* buf, size_t n) override { return cut_.Read(buf, n); }
  bool Rewind() override { return cut_.RewindInner(); }

 private:
  CutSource& cut_;
};

}  // namespace

FaultInjectionObjectStore::FaultInjectionObjectStore(ObjectStore* base, FaultOptions options)
    : base_(base), options_(options), rng_(options.seed) {}

FaultInjectionObjectStore::FaultInjectionObjectStore(std::unique_ptr<ObjectStore> base,
                                                     FaultOptions options)
    : owned_(std::move(base)), base_(owned_.get()), options_(options), rng_(options.seed) {}

FaultInjectionObjectStore::~FaultInjectionObjectStore() = default;

void FaultInjectionObjectStore::SetOptions(const FaultOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  if (options.seed != options_.seed) rng_.seed(options.seed);
  options_ = options;
}

FaultOptions FaultInjectionObjectStore::options() const {
  std::lock_guard<std::mutex> lock(mu_);
  return options_;
}

FaultInjectionObjectStore::Stats FaultInjectionObjectStore::stats() const {
  return {requests_.load(), errors_.load(), drops_.load(), bytes_.load()};
}

std::string FaultInjectionObjectStore::url() const { return base_->url(); }

FaultInjectionObjectStore::Plan FaultInjectionObjectStore::Roll(bool has_body) {
  std::lock_guard<std::mutex> lock(mu_);
  Plan p;
  if (options_.error_rate <= 0 && options_.drop_rate <= 0) return p;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double roll = u(rng_);
  p.fraction = u(rng_);
  const bool half = u(rng_) < 0.5;
  if (roll < options_.error_rate) {
    p.kind = has_body && half ? Plan::kErrorMidway : Plan::kErrorBefore;
  } else if (has_body && roll < options_.error_rate + options_.drop_rate) {
    p.kind = Plan::kDrop;
  }
  return p;
}

Status FaultInjectionObjectStore::Before(const Plan& plan, std::string_view what) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  int64_t latency;
  {
    std::lock_guard<std::mutex> lock(mu_);
    latency = options_.first_byte_latency_us;
  }
  if (latency > 0) std::this_thread::sleep_for(std::chrono::microseconds(latency));
  if (plan.kind == Plan::kErrorBefore) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return Injected(plan.kind, what);
  }
  return Status::Ok();
}

void FaultInjectionObjectStore::Pace(int64_t stream_start_ns, uint64_t stream_bytes, uint64_t n) {
  bytes_.fetch_add(n, std::memory_order_relaxed);
  uint64_t stream_bw, total_bw;
  int64_t until = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stream_bw = options_.stream_bytes_per_sec;
    total_bw = options_.total_bytes_per_sec;
    if (total_bw > 0) {
      const int64_t start = std::max(MonotonicNanos(), link_free_ns_);
      link_free_ns_ = start + static_cast<int64_t>(static_cast<double>(n) * 1e9 / total_bw);
      until = link_free_ns_;
    }
  }
  if (stream_bw > 0) {
    until = std::max(until, stream_start_ns + static_cast<int64_t>(
                                                  static_cast<double>(stream_bytes + n) * 1e9 /
                                                  stream_bw));
  }
  if (until > 0) SleepUntil(until);
}

Result<ObjectInfo> FaultInjectionObjectStore::PutLike(
    std::string_view what, ByteSource& body, std::optional<uint64_t> size,
    const std::function<Result<ObjectInfo>(ByteSource&)>& put) {
  const Plan plan = Roll(true);
  STRATA_RETURN_IF_ERROR(Before(plan, what));
  std::optional<uint64_t> cut;
  Status cut_status;
  if (plan.kind == Plan::kErrorMidway || plan.kind == Plan::kDrop) {
    cut = static_cast<uint64_t>(plan.fraction * static_cast<double>(size.value_or(kUnknownBody)));
    cut_status = Injected(plan.kind, what);
  }
  CutSource src(body, cut, cut_status,
                [this](int64_t start, uint64_t sent, uint64_t n) { Pace(start, sent, n); });
  Result<ObjectInfo> r = Status::Internal("unset");
  if (dynamic_cast<RewindableSource*>(&body) != nullptr) {
    RewindableCutSource rw(src);
    r = put(rw);
  } else {
    r = put(src);
  }
  if (src.cut_hit) {
    (plan.kind == Plan::kDrop ? drops_ : errors_).fetch_add(1, std::memory_order_relaxed);
    return cut_status;
  }
  return r;
}

Result<ObjectInfo> FaultInjectionObjectStore::Put(std::string_view key, ByteSource& body,
                                                  const WriteOptions& options) {
  return PutLike("PUT " + std::string(key), body, options.size,
                 [&](ByteSource& b) { return base_->Put(key, b, options); });
}

Status FaultInjectionObjectStore::Get(std::string_view key, const ReadOptions& options,
                                      const ByteSink& sink, ObjectInfo* info) {
  const Plan plan = Roll(true);
  const std::string what = "GET " + std::string(key);
  STRATA_RETURN_IF_ERROR(Before(plan, what));
  ObjectInfo local;
  bool started = false, cut_hit = false;
  std::optional<uint64_t> cut;
  uint64_t sent = 0;
  int64_t start_ns = 0;
  const Status cut_status = Injected(plan.kind, what);
  Status s = base_->Get(
      key, options,
      [&](const char* data, size_t n) -> Status {
        if (!started) {
          started = true;
          start_ns = MonotonicNanos();
          if (info != nullptr) *info = local;
          if (plan.kind == Plan::kErrorMidway || plan.kind == Plan::kDrop) {
            uint64_t len = local.size > options.offset ? local.size - options.offset : 0;
            if (options.length) len = std::min(len, *options.length);
            cut = static_cast<uint64_t>(plan.fraction * static_cast<double>(len));
          }
        }
        while (n > 0) {
          if (cut && sent >= *cut) {
            cut_hit = true;
            return cut_status;
          }
          size_t k = std::min(n, kPiece);
          if (cut) k = static_cast<size_t>(std::min<uint64_t>(k, *cut - sent));
          Pace(start_ns, sent, k);
          STRATA_RETURN_IF_ERROR(sink(data, k));
          sent += k;
          data += k;
          n -= k;
        }
        return Status::Ok();
      },
      &local);
  if (!started && info != nullptr && s.ok()) *info = local;
  if (cut_hit) {
    (plan.kind == Plan::kDrop ? drops_ : errors_).fetch_add(1, std::memory_order_relaxed);
    return cut_status;
  }
  return s;
}

Result<ObjectInfo> FaultInjectionObjectStore::Head(std::string_view key) {
  STRATA_RETURN_IF_ERROR(Before(Roll(false), "HEAD " + std::string(key)));
  return base_->Head(key);
}

Status FaultInjectionObjectStore::Delete(std::string_view key) {
  STRATA_RETURN_IF_ERROR(Before(Roll(false), "DELETE " + std::string(key)));
  return base_->Delete(key);
}

Result<std::vector<Status>> FaultInjectionObjectStore::DeleteMany(
    const std::vector<std::string>& keys) {
  STRATA_RETURN_IF_ERROR(Before(Roll(false), "DeleteObjects"));
  return base_->DeleteMany(keys);
}

Result<ListPage> FaultInjectionObjectStore::List(std::string_view prefix,
                                                 std::string_view delimiter,
                                                 std::string_view token, int max_keys) {
  STRATA_RETURN_IF_ERROR(Before(Roll(false), "LIST " + std::string(prefix)));
  return base_->List(prefix, delimiter, token, max_keys);
}

Result<std::string> FaultInjectionObjectStore::CreateMultipart(std::string_view key,
                                                               const WriteOptions& options) {
  STRATA_RETURN_IF_ERROR(Before(Roll(false), "CreateMultipartUpload " + std::string(key)));
  return base_->CreateMultipart(key, options);
}

Result<UploadedPart> FaultInjectionObjectStore::UploadPart(std::string_view key,
                                                           std::string_view upload_id,
                                                           int part_number, ByteSource& body,
                                                           uint64_t size) {
  UploadedPart part;
  auto r = PutLike("UploadPart " + std::string(key) + " #" + std::to_string(part_number), body,
                   size, [&](ByteSource& b) -> Result<ObjectInfo> {
                     STRATA_ASSIGN_OR_RETURN(part,
                                             base_->UploadPart(key, upload_id, part_number, b, size));
                     return ObjectInfo{};
                   });
  if (!r.ok()) return r.error();
  return part;
}

Result<ObjectInfo> FaultInjectionObjectStore::CompleteMultipart(
    std::string_view key, std::string_view upload_id, const std::vector<UploadedPart>& parts) {
  STRATA_RETURN_IF_ERROR(Before(Roll(false), "CompleteMultipartUpload " + std::string(key)));
  return base_->CompleteMultipart(key, upload_id, parts);
}

Status FaultInjectionObjectStore::AbortMultipart(std::string_view key,
                                                 std::string_view upload_id) {
  STRATA_RETURN_IF_ERROR(Before(Roll(false), "AbortMultipartUpload " + std::string(key)));
  return base_->AbortMultipart(key, upload_id);
}

Result<std::vector<UploadedPart>> FaultInjectionObjectStore::ListParts(
    std::string_view key, std::string_view upload_id) {
  STRATA_RETURN_IF_ERROR(Before(Roll(false), "ListParts " + std::string(key)));
  return base_->ListParts(key, upload_id);
}

Result<ObjectInfo> FaultInjectionObjectStore::Copy(std::string_view src_key,
                                                   std::string_view dst_key) {
  STRATA_RETURN_IF_ERROR(Before(Roll(false), "COPY " + std::string(src_key)));
  return base_->Copy(src_key, dst_key);
}

Status FaultInjectionObjectStore::Rename(std::string_view src_key, std::string_view dst_key) {
  STRATA_RETURN_IF_ERROR(Before(Roll(false), "RENAME " + std::string(src_key)));
  return base_->Rename(src_key, dst_key);
}

}  // namespace strata::objstore
