// KvMeta's backend transaction (Txn) and this client's entry cache.
//
// Every transaction goes through Txn, which counts it (Transactions(),
// strata_fsmeta_txn_seconds{kind}) and, when its body writes an attribute
// (A) or a directory entry (D) key, bumps two counters in the same
// transaction, both blind increments (no Redis WATCH, so no conflicts):
//   Kchanges          every client's changes to the volume
//   Kchanges.<sid>    the changes of session sid alone
// Kchanges minus one's own Kchanges.<sid> counts the changes of everybody
// else, read in one transaction: if it is what it was at the previous
// check, no other client changed anything since.
//
// The cache (EnableCache) holds raw A and D values this client read or
// wrote (an absent D value is a name known not to exist). Lookup and GetAttr
// run their usual bodies against it (CacheServe) while the counters were
// checked less than check_interval ago; any key the cache lacks (or an
// absent inode, which may mean a stale name; or an absent name, see
// FindLocked) falls back to a real transaction. Keeping it right against this client's own concurrent
// operations: every real transaction, at its end, stores what it read and
// wrote if no other write of this client was applied to the cache since it
// began (`epoch` unchanged), and otherwise forgets those keys; every applied
// write and every clear moves the epoch.
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <strata/core/clock.h>
#include <strata/core/coding.h>
#include <strata/core/metrics.h>

#include "fsmeta/codec.h"
#include "fsmeta/kv.h"
#include "fsmeta/kv_meta.h"

namespace strata::fsmeta {

namespace {

const std::string kChanges = "Kchanges";
std::string SessionChangesKey(uint64_t sid) { return kChanges + "." + std::to_string(sid); }

// Attribute and entry keys: what the cache holds and what bumps the counters.
bool IsAttrKey(const std::string& k) { return k.size() == 9 && k[0] == 'A'; }
bool IsDentKey(const std::string& k) { return k.size() > 9 && k[0] == 'D'; }
bool CachedKey(const std::string& k) { return IsAttrKey(k) || IsDentKey(k); }

int64_t CounterValue(const std::optional<std::string>& v) {
  if (!v || v->empty()) return 0;
  return std::strtoll(v->c_str(), nullptr, 10);
}

// What one run of a transaction body read and wrote of the cached keys.
struct TxnRecord {
  bool record_reads = false;
  bool mutated = false;  // wrote an attribute or an entry
  std::map<std::string, std::optional<std::string>> reads, writes;
  std::set<std::string> unknown;  // changed by Append/IncrBy: value not known here
  void Clear() {
    mutated = false;
    reads.clear();
    writes.clear();
    unknown.clear();
  }
};

// Forwards to the backend's transaction and notes the cached keys.
class RecordingTxn final : public KvTxn {
 public:
  RecordingTxn(KvTxn& t, TxnRecord* r) : t_(t), r_(r) {}
  std::optional<std::string> Get(const std::string& key) override {
    auto v = t_.Get(key);
    Read(key, v);
    return v;
  }
  std::vector<std::optional<std::string>> MultiGet(const std::vector<std::string>& keys) override {
    auto v = t_.MultiGet(keys);
    for (size_t i = 0; i < keys.size() && i < v.size(); ++i) Read(keys[i], v[i]);
    return v;
  }
  void Set(const std::string& key, const std::string& value) override {
    t_.Set(key, value);
    Wrote(key, value, false);
  }
  void Delete(const std::string& key) override {
    t_.Delete(key);
    Wrote(key, std::nullopt, false);
  }
  void Append(const std::string& key, const std::string& value) override {
    t_.Append(key, value);
    Wrote(key, std::nullopt, true);
  }
  void IncrBy(const std::string& key, int64_t delta) override {
    t_.IncrBy(key, delta);
    Wrote(key, std::nullopt, true);
  }
  void Scan(const std::string& prefix, const std::string& after, size_t limit, bool keys_only,
            const ScanFn& fn) override {
    t_.Scan(prefix, after, limit, keys_only, fn);
  }

 private:
  void Read(const std::string& key, const std::optional<std::string>& v) {
    if (!r_->record_reads || !CachedKey(key)) return;
    if (r_->writes.count(key) || r_->unknown.count(key)) return;  // our own value
    r_->reads[key] = v;
  }
  void Wrote(const std::string& key, const std::optional<std::string>& v, bool unknown) {
    if (!CachedKey(key)) return;
    r_->mutated = true;
    if (!r_->record_reads) return;
    r_->reads.erase(key);
    if (unknown) {
      r_->writes.erase(key);
      r_->unknown.insert(key);
    } else if (!r_->unknown.count(key)) {
      r_->writes[key] = v;
    }
  }
  KvTxn& t_;
  TxnRecord* r_;
};

struct CacheMiss {};

constexpr size_t kMaxCachedKeys = 500000;  // then everything is dropped

}  // namespace

struct KvMeta::Cache {
  int64_t interval_ns = 0;
  std::mutex check_mu;  // one counter read at a time

  std::mutex mu;
  uint64_t epoch = 0;          // guarded by mu
  int64_t valid_until_ns = 0;  // guarded by mu: answers allowed before (monotonic)
  int64_t foreign = -1;        // guarded by mu: other clients' changes at the last check
  uint64_t sid = 0;            // guarded by mu: the session the counters were read for
  std::unordered_map<std::string, std::optional<std::string>> kv;  // guarded by mu

  void EraseLocked(const std::string& k) {
    kv.erase(k);
  }
  void ClearLocked() {
    kv.clear();
    ++epoch;
  }
  // The cached value of `k`, or false when the cache cannot answer. Absence
  // is never an answer: an inode known absent may come from a stale name, and
  // a name known absent may have been created since by a writer this client
  // cannot see before its next check: another mount, or a command without a
  // session (`strata fs clone`, `rmr`, `load`), so a lookup of a missing name
  // always asks the engine (JuiceFS's negative entry cache is off by default
  // for the same reason).
  bool FindLocked(const std::string& k, std::optional<std::string>* out) const {
    if (!CachedKey(k)) return false;
    auto it = kv.find(k);
    if (it == kv.end() || !it->second) return false;
    *out = it->second;
    return true;
  }
};

namespace {

// Serves a read-only body from the cache (the caller holds Cache::mu);
// anything it cannot answer throws CacheMiss.
class CachedTxn final : public KvTxn {
 public:
  explicit CachedTxn(const KvMeta::Cache& c) : c_(c) {}
  std::optional<std::string> Get(const std::string& key) override {
    std::optional<std::string> v;
    if (!c_.FindLocked(key, &v)) throw CacheMiss{};
    return v;
  }
  std::vector<std::optional<std::string>> MultiGet(const std::vector<std::string>& keys) override {
    std::vector<std::optional<std::string>> out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.push_back(Get(k));
    return out;
  }
  void Set(const std::string&, const std::string&) override { throw CacheMiss{}; }
  void Delete(const std::string&) override { throw CacheMiss{}; }
  void Append(const std::string&, const std::string&) override { throw CacheMiss{}; }
  void IncrBy(const std::string&, int64_t) override { throw CacheMiss{}; }
  void Scan(const std::string&, const std::string&, size_t, bool, const ScanFn&) override {
    throw CacheMiss{};
  }

 private:
  const KvMeta::Cache& c_;
};

}  // namespace

KvMeta::KvMeta(std::unique_ptr<TxnKV> kv) : kv_(std::move(kv)) {}
KvMeta::~KvMeta() = default;

void KvMeta::EnableCache(double check_interval_s) {
  if (check_interval_s <= 0) {
    cache_.reset();
    return;
  }
  auto c = std::make_unique<Cache>();
  c->interval_ns = static_cast<int64_t>(check_interval_s * 1e9);
  cache_ = std::move(c);
  // The first reading of the counters is the baseline (it clears the cache):
  // taken now, so what this client does from here on is kept.
  (void)CacheFresh();
}

void KvMeta::DropCaches() {
  if (!cache_) return;
  std::lock_guard<std::mutex> lk(cache_->mu);
  cache_->ClearLocked();
  cache_->valid_until_ns = 0;  // and read the counters again before answering
}

MetaEngine::TxnCounts KvMeta::Transactions() const {
  TxnCounts c;
  c.read = n_read_.load();
  c.write = n_write_.load();
  c.cached = n_cached_.load();
  c.commits = kv_->Commits();
  if (c.commits == 0) c.commits = c.write;
  return c;
}

uint64_t KvMeta::CacheEpoch() {
  if (!cache_) return 0;
  std::lock_guard<std::mutex> lk(cache_->mu);
  return cache_->epoch;
}

bool KvMeta::CacheFresh() {
  Cache& c = *cache_;
  {
    std::lock_guard<std::mutex> lk(c.mu);
    if (MonotonicNanos() < c.valid_until_ns) return true;
  }
  std::lock_guard<std::mutex> check(c.check_mu);
  const int64_t t0 = MonotonicNanos();
  {
    std::lock_guard<std::mutex> lk(c.mu);
    if (t0 < c.valid_until_ns) return true;  // another thread just read them
  }
  const uint64_t sid = sid_.load();
  int64_t total = 0, mine = 0;
  Status st = kv_->Txn(
      [&](KvTxn& t) {
        auto v = t.MultiGet({kChanges, SessionChangesKey(sid)});
        total = CounterValue(v[0]);
        mine = CounterValue(v[1]);
        return Status::Ok();
      },
      true);
  n_read_.fetch_add(1);
  if (!st.ok()) return false;
  std::lock_guard<std::mutex> lk(c.mu);
  if (total - mine != c.foreign || sid != c.sid) {
    c.ClearLocked();
    c.foreign = total - mine;
    c.sid = sid;
  }
  c.valid_until_ns = t0 + c.interval_ns;
  return true;
}

std::optional<Status> KvMeta::CacheServe(const std::function<Status(KvTxn&)>& body) {
  if (!CacheFresh()) return std::nullopt;
  std::lock_guard<std::mutex> lk(cache_->mu);
  CachedTxn t(*cache_);
  try {
    return body(t);
  } catch (const CacheMiss&) {
    return std::nullopt;
  } catch (const KvError&) {
    return std::nullopt;
  }
}

Status KvMeta::Txn(const std::function<Status(KvTxn&)>& body, bool read_only, bool cacheable) {
  // strata_fsmeta_txn_seconds{kind}; its _count is the number of transactions.
  struct TxnMetrics {
    metrics::Histogram* latency[2];
    metrics::Counter* failures[2];
    metrics::Counter* cached;
    TxnMetrics() {
      auto& r = metrics::Registry::Global();
      for (int i = 0; i < 2; ++i) {
        const std::string l = i ? "kind=\"read\"" : "kind=\"write\"";
        latency[i] = &r.GetHistogram("strata_fsmeta_txn_seconds",
                                     "Metadata transactions, retries included", l);
        failures[i] = &r.GetCounter(
            "strata_fsmeta_txn_failures_total",
            "Metadata transactions that failed for other than a filesystem error (I/O, "
            "connection, corruption)",
            l);
      }
      cached = &r.GetCounter("strata_fsmeta_cached_total",
                             "Lookups and attribute reads answered from the mount's entry cache");
    }
  };
  static TxnMetrics m;
  if (cacheable && read_only && cache_) {
    if (auto st = CacheServe(body)) {
      n_cached_.fetch_add(1);
      m.cached->Inc();
      return *st;
    }
  }
  const uint64_t epoch0 = CacheEpoch();
  const uint64_t sid = sid_.load();
  TxnRecord rec;
  rec.record_reads = cache_ != nullptr;
  auto wrapped = [&](KvTxn& t) -> Status {
    rec.Clear();
    RecordingTxn r(t, &rec);
    Status s = body(r);
    if (s.ok() && !read_only && rec.mutated) {
      t.IncrBy(kChanges, 1);
      t.IncrBy(SessionChangesKey(sid), 1);
    }
    return s;
  };
  const auto t0 = std::chrono::steady_clock::now();
  Status st = kv_->Txn(wrapped, read_only);
  const int i = read_only ? 1 : 0;
  (read_only ? n_read_ : n_write_).fetch_add(1);
  m.latency[i]->Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  const bool backend_failure =
      st.code() == StatusCode::kIOError || st.code() == StatusCode::kUnavailable ||
      st.code() == StatusCode::kCorruption || st.code() == StatusCode::kInternal;
  if (backend_failure) m.failures[i]->Inc();
  if (!cache_) return st;
  std::lock_guard<std::mutex> lk(cache_->mu);
  Cache& c = *cache_;
  const bool same = c.epoch == epoch0;
  // A failed body wrote nothing; a backend failure may or may not have
  // committed: either way the written keys are forgotten.
  for (const auto& [k, v] : rec.writes) {
    if (same && st.ok()) {
      c.kv[k] = v;
    } else {
      c.EraseLocked(k);
    }
  }
  for (const auto& k : rec.unknown) c.EraseLocked(k);
  for (const auto& [k, v] : rec.reads) {
    if (same && !backend_failure) {
      c.kv[k] = v;
    } else {
      c.EraseLocked(k);
    }
  }
  if (rec.mutated) ++c.epoch;
  if (c.kv.size() > kMaxCachedKeys) c.ClearLocked();
  return st;
}

}  // namespace strata::fsmeta
