// strata_bench_datapath: the data path to the accelerator, in one run.
//
//   strata_bench_datapath [--store URL] [--shards N] [--shard-mib M] [--compute-ms C]
//       [--epochs E] [--latency-ms L] [--stream-mibps S] [--total-mibps T]
//       [--hit-shards N] [--hit-epochs E]
//       [--ckpt-mib M] [--ckpt-remote URL] [--ckpt-local DIR] [--ckpt-stream-mibps S]
//       [--ckpt-total-mibps T]
//       [--work DIR] [--skip-train] [--skip-hit] [--skip-ckpt]
//
// 1. Training loop: each shard is read, then "computed" for C ms (a sleep: the
//    accelerator). Shards live in URL (default mem://) behind the
//    fault-injecting store: L ms first-byte latency, S MiB/s per stream, T MiB/s
//    in total. Read through: no cache (one GET per shard), an LRU cache of half
//    the data set (parallel block GETs, readahead), and the Warmer (lookahead 3,
//    Belady eviction, same cache size). Each epoch a new shuffle. Prints stall
//    share and utilisation = compute time / wall time.
// 2. Hit ratio: per-epoch shuffled access to N one-block shards, the cache
//    holding half of them, epochs after the first (cold) one: LRU and SIEVE with
//    and without TinyLFU admission, and the Warmer's Belady policy.
// 3. Checkpoint of an M MiB state (random bytes in memory) to URL (default a
//    file:// store under --work behind a fault store at S MiB/s per stream and
//    T MiB/s in total, 20 ms first byte): the time until training may continue
//    with the CheckpointManager (local fsynced copy, upload in the background)
//    versus a direct parallel multipart upload; load times from the local
//    copy, from the remote with one stream, and with 16 parallel ranges.
#include <fmt/format.h>
#include <strata/cache/cached_object_store.h>
#include <strata/cache/checkpoint.h>
#include <strata/cache/warmer.h>
#include <strata/objstore/fault_injection.h>
#include <strata/objstore/object_store.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace strata;  // NOLINT
using cache::CachedObjectStore;
using objstore::ObjectInfo;
using objstore::ObjectStore;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kMiB = 1ull << 20;

int64_t Arg(int argc, char** argv, const char* name, int64_t def) {
  for (int i = 0; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::strtoll(argv[i + 1], nullptr, 10);
  return def;
}
std::string SArg(int argc, char** argv, const char* name, std::string def) {
  for (int i = 0; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return def;
}
bool Flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return true;
  return false;
}

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

template <class T>
T Must(Result<T> r, std::string_view what) {
  if (!r.ok()) {
    fmt::print(stderr, "FATAL {}: {}\n", what, r.error().ToString());
    std::exit(1);
  }
  return std::move(*r);
}
void Must(const Status& st, std::string_view what) {
  if (!st.ok()) {
    fmt::print(stderr, "FATAL {}: {}\n", what, st.ToString());
    std::exit(1);
  }
}

std::string RandomBytes(uint64_t n, uint64_t seed) {
  std::string s(n, '\0');
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(s.data() + i, &v, 8);
  }
  return s;
}

// ---- 1. training loop --------------------------------------------------

struct LoopResult {
  std::string name;
  double wall = 0, compute = 0;
  uint64_t backend_gets = 0;
  std::string note;
};

void Compute(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

uint64_t ReadAll(cache::CachedReader& r) {
  uint64_t n = 0;
  Must(r.Read(0, r.info().size,
              [&](const char*, size_t k) {
                n += k;
                return Status::Ok();
              }),
       "read shard");
  return n;
}

void PrintLoop(const std::vector<LoopResult>& rows, double ideal) {
  fmt::print(
      "| read path | wall s | compute s | stall s | stall share | utilisation | backend GETs | "
      "notes |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---|\n");
  for (const auto& r : rows) {
    const double stall = r.wall - r.compute;
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.1f}% | **{:.1f}%** | {} | {} |\n", r.name,
               r.wall, r.compute, stall, 100 * stall / r.wall, 100 * r.compute / r.wall,
               r.backend_gets, r.note);
  }
  fmt::print("\n(ideal: {:.2f} s of compute)\n\n", ideal);
}

void TrainingLoop(ObjectStore* data, const std::vector<std::string>& keys, uint64_t shard_bytes,
                  int64_t compute_ms, int epochs, const objstore::FaultOptions& fo) {
  const auto order = cache::EpochOrder(keys, epochs, 42);
  const uint64_t half = keys.size() * shard_bytes / 2;
  const double ideal = order.size() * compute_ms / 1000.0;
  std::vector<LoopResult> rows;

  {  // no cache: one GET per shard through the slow store
    objstore::FaultInjectionObjectStore slow(data, fo);
    const auto t0 = Clock::now();
    double compute = 0;
    for (const auto& k : order) {
      uint64_t n = 0;
      Must(slow.Get(k, {},
                    [&](const char*, size_t m) {
                      n += m;
                      return Status::Ok();
                    }),
           "get");
      if (n != shard_bytes) Must(Status::Corruption("short shard"), k);
      const auto c0 = Clock::now();
      Compute(compute_ms);
      compute += Since(c0);
    }
    rows.push_back({"no cache (one GET per shard)", Since(t0), compute, slow.stats().requests, ""});
  }

  for (auto policy : {cache::EvictionPolicy::kLru, cache::EvictionPolicy::kSieve}) {
    objstore::FaultInjectionObjectStore slow(data, fo);
    cache::CacheOptions co;
    co.ram_capacity_bytes = half;
    co.policy = policy;
    co.metadata_ttl_ms = 60000;  // no HEAD per shard (Mountpoint's default TTL)
    auto c = Must(CachedObjectStore::Open(&slow, co), "cache");
    const auto t0 = Clock::now();
    double compute = 0;
    for (const auto& k : order) {
      auto r = Must(c->OpenReader(k), "open");
      if (ReadAll(*r) != shard_bytes) Must(Status::Corruption("short shard"), k);
      const auto c0 = Clock::now();
      Compute(compute_ms);
      compute += Since(c0);
    }
    const auto st = c->stats();
    rows.push_back(
        {fmt::format("{} cache, half the data set", cache::EvictionPolicyName(policy)), Since(t0),
         compute, st.backend_gets,
         fmt::format("block hits {}/{}", st.tiers[0].hits, st.tiers[0].hits + st.tiers[0].misses)});
  }

  {  // the Warmer: lookahead 3, Belady eviction, same cache size
    objstore::FaultInjectionObjectStore slow(data, fo);
    cache::CacheOptions co;
    co.ram_capacity_bytes = half;
    co.policy = cache::EvictionPolicy::kPriority;
    co.metadata_ttl_ms = 60000;
    auto c = Must(CachedObjectStore::Open(&slow, co), "cache");
    cache::WarmerOptions wo;
    wo.lookahead = 3;
    wo.concurrency = 2;
    const auto t0 = Clock::now();
    auto w = Must(cache::Warmer::Start(c.get(), order, wo), "warmer");
    double compute = 0;
    while (true) {
      auto s = Must(w->Next(), "next");
      if (!s) break;
      if (ReadAll(*s->reader) != shard_bytes) Must(Status::Corruption("short shard"), s->info.key);
      const auto c0 = Clock::now();
      Compute(compute_ms);
      compute += Since(c0);
    }
    const double wall = Since(t0);
    const auto ws = w->stats();
    rows.push_back({"Warmer (lookahead 3, Belady), half the data set", wall, compute,
                    c->stats().backend_gets,
                    fmt::format("shards already warm {}/{}", ws.hits, ws.handed_out)});
  }
  PrintLoop(rows, ideal);
}

// ---- 2. hit ratio ----------------------------------------------------------

struct HitRow {
  std::string name;
  uint64_t hits = 0, total = 0;
};

void HitRatio(int n_shards, int epochs) {
  const uint64_t block = 256 * 1024;
  auto base = objstore::NewMemObjectStore("hits");
  std::vector<std::string> keys;
  const std::string body = RandomBytes(block, 7);
  for (int i = 0; i < n_shards; ++i) {
    keys.push_back(fmt::format("shard-{:05d}", i));
    Must(base->PutBytes(keys.back(), body), "put");
  }
  const auto order = cache::EpochOrder(keys, epochs, 1234);
  const uint64_t cap = n_shards / 2 * block;
  std::vector<HitRow> rows;

  struct Cfg {
    const char* name;
    cache::EvictionPolicy p;
    cache::AdmissionPolicy a;
  };
  for (const Cfg& cfg : {Cfg{"LRU", cache::EvictionPolicy::kLru, cache::AdmissionPolicy::kAll},
                         Cfg{"LRU + TinyLFU admission", cache::EvictionPolicy::kLru,
                             cache::AdmissionPolicy::kTinyLfu},
                         Cfg{"SIEVE", cache::EvictionPolicy::kSieve, cache::AdmissionPolicy::kAll},
                         Cfg{"SIEVE + TinyLFU admission (the cache's default)",
                             cache::EvictionPolicy::kSieve, cache::AdmissionPolicy::kTinyLfu}}) {
    cache::CacheOptions co;
    co.block_size = block;
    co.ram_capacity_bytes = cap;
    co.policy = cfg.p;
    co.admission = cfg.a;
    co.readahead = false;
    co.staging_bytes = 0;
    auto c = Must(CachedObjectStore::Open(base.get(), co), "cache");
    HitRow row{cfg.name};
    for (size_t i = 0; i < order.size(); ++i) {
      const auto before = c->stats().tiers[0].hits;
      Must(c->Get(order[i], {}, [](const char*, size_t) { return Status::Ok(); }), "get");
      if (i >= keys.size()) {  // epochs after the first
        row.total++;
        row.hits += c->stats().tiers[0].hits - before;
      }
    }
    rows.push_back(row);
  }
  {
    cache::CacheOptions co;
    co.block_size = block;
    co.ram_capacity_bytes = cap;
    co.policy = cache::EvictionPolicy::kPriority;
    co.readahead = false;
    co.staging_bytes = 0;
    auto c = Must(CachedObjectStore::Open(base.get(), co), "cache");
    cache::WarmerOptions wo;
    wo.lookahead = 3;
    auto w = Must(cache::Warmer::Start(c.get(), order, wo), "warmer");
    HitRow row{"Warmer (Belady: consumed first, then furthest next use)"};
    for (size_t i = 0;; ++i) {
      auto s = Must(w->Next(), "next");
      if (!s) break;
      if (i >= keys.size()) {
        row.total++;
        row.hits += s->was_cached ? 1 : 0;
      }
    }
    rows.push_back(row);
  }
  fmt::print("| policy | hits | accesses | hit ratio |\n|---|---:|---:|---:|\n");
  for (const auto& r : rows)
    fmt::print("| {} | {} | {} | **{:.1f}%** |\n", r.name, r.hits, r.total,
               r.total ? 100.0 * r.hits / r.total : 0.0);
  fmt::print("\n");
}

// ---- 3. checkpoints ---------------------------------------------------------

// A direct upload as a training loop without the manager would do it: the
// state goes straight to the store in parallel multipart parts; training waits
// for all of it.
double DirectUpload(ObjectStore* store, const std::string& key, const std::string& data,
                    uint64_t part, int concurrency) {
  const auto t0 = Clock::now();
  const std::string id = Must(store->CreateMultipart(key), "create multipart");
  const int parts = static_cast<int>((data.size() + part - 1) / part);
  std::vector<objstore::UploadedPart> done(parts);
  std::atomic<int> next{0};
  std::mutex mu;
  Status first;
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t)
    threads.emplace_back([&] {
      for (int i = next++; i < parts; i = next++) {
        const uint64_t off = i * part, n = std::min<uint64_t>(part, data.size() - off);
        objstore::StringSource src(std::string_view(data).substr(off, n));
        auto r = store->UploadPart(key, id, i + 1, src, n);
        std::lock_guard<std::mutex> l(mu);
        if (r.ok())
          done[i] = *r;
        else if (first.ok())
          first = r.error();
      }
    });
  for (auto& t : threads) t.join();
  Must(first, "upload part");
  Must(store->CompleteMultipart(key, id, done), "complete");
  return Since(t0);
}

void Checkpoints(const std::string& work, const std::string& local, uint64_t bytes,
                 const std::string& remote_url, const objstore::FaultOptions& fo) {
  namespace fs = std::filesystem;
  const std::string data = RandomBytes(bytes, 99);
  std::string url = remote_url;
  if (url.empty()) url = "file://" + work + "/remote?bucket=ckpt&sync=false";
  auto remote = Must(objstore::OpenObjectStore(url), "open remote");
  objstore::FaultInjectionObjectStore slow(remote.get(), fo);

  cache::CheckpointOptions co;
  co.local_dir = local + "/ckpt";
  co.store = &slow;
  co.prefix = "bench/";
  co.keep_local = 0;
  auto m = Must(cache::CheckpointManager::Open(co), "open manager");
  std::vector<cache::CheckpointItem> items = {cache::CheckpointItem::Blob("state.bin", data)};
  auto t0 = Clock::now();
  Must(m->Save(1, items), "save");
  const double save_s = Since(t0);
  Must(m->Wait(), "wait");
  const double published_s = Since(t0);

  double nofsync_s = 0;
  {
    cache::CheckpointOptions o = co;
    o.local_dir = local + "/ckpt-nofsync";
    o.prefix = "bench-nofsync/";
    o.fsync = false;
    auto m2 = Must(cache::CheckpointManager::Open(o), "open manager");
    const auto t = Clock::now();
    Must(m2->Save(1, items), "save");
    nofsync_s = Since(t);
    Must(m2->Wait(), "wait");
    Must(m2->Remove(1, true, true), "remove");
  }

  const double direct_s = DirectUpload(&slow, "direct/state.bin", data, 16 * kMiB, 16);

  cache::LoadOptions lo;
  lo.source = cache::LoadOptions::Source::kLocal;
  t0 = Clock::now();
  auto l1 = Must(m->Load(1, lo), "load local");
  const double load_local_s = Since(t0);

  auto load_remote = [&](int concurrency, const std::string& dir) {
    cache::CheckpointOptions o2 = co;
    o2.local_dir = dir;
    auto m2 = Must(cache::CheckpointManager::Open(o2), "open manager 2");
    cache::LoadOptions l;
    l.source = cache::LoadOptions::Source::kRemote;
    l.download_concurrency = concurrency;
    const auto t = Clock::now();
    auto r = Must(m2->Load(1, l), "load remote");
    const double s = Since(t);
    if (!r.from_remote) Must(Status::Internal("expected a remote load"), "load");
    m2.reset();
    fs::remove_all(dir);
    return s;
  };
  const double single_s = load_remote(1, local + "/load1");
  const double parallel_s = load_remote(16, local + "/load16");

  const double gib = static_cast<double>(bytes) / (1ull << 30);
  fmt::print("| checkpoint of {:.2f} GiB | seconds | GiB/s |\n|---|---:|---:|\n", gib);
  auto row = [&](const char* what, double s) {
    fmt::print("| {} | {:.2f} | {:.2f} |\n", what, s, gib / s);
  };
  row("**save: training may continue** (local write + fsync, manager)", save_s);
  row("save: published remotely (manifest written, background upload done)", published_s);
  row("save without fsync (page cache; durable once uploaded)", nofsync_s);
  row("**direct upload: training may continue** (16 parallel parts, no local copy)", direct_s);
  row("load: local copy (every CRC32C checked)", load_local_s);
  row("load: remote, single stream", single_s);
  row("load: remote, 16 parallel ranges", parallel_s);
  fmt::print("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string work = SArg(argc, argv, "--work", "/tmp/strata-bench-datapath");
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(work);

  if (!Flag(argc, argv, "--skip-train")) {
    const int shards = static_cast<int>(Arg(argc, argv, "--shards", 24));
    const uint64_t shard_bytes = Arg(argc, argv, "--shard-mib", 8) * kMiB;
    const int64_t compute_ms = Arg(argc, argv, "--compute-ms", 60);
    const int epochs = static_cast<int>(Arg(argc, argv, "--epochs", 2));
    objstore::FaultOptions fo;
    fo.first_byte_latency_us = Arg(argc, argv, "--latency-ms", 20) * 1000;
    fo.stream_bytes_per_sec = Arg(argc, argv, "--stream-mibps", 128) * kMiB;
    fo.total_bytes_per_sec = Arg(argc, argv, "--total-mibps", 512) * kMiB;
    const std::string url = SArg(argc, argv, "--store", "mem://bench-datapath");
    auto data = Must(objstore::OpenObjectStore(url), "open store");
    std::vector<std::string> keys;
    for (int i = 0; i < shards; ++i) {
      keys.push_back(fmt::format("train/shard-{:05d}", i));
      Must(data->PutBytes(keys.back(), RandomBytes(shard_bytes, i)), "put shard");
    }
    fmt::print(
        "## 1. Training loop: {} shards x {} MiB, {} epochs (reshuffled), {} ms compute per "
        "shard; store {} behind {} ms first byte, {} MiB/s per stream, {} MiB/s total\n\n",
        shards, shard_bytes / kMiB, epochs, compute_ms, url, fo.first_byte_latency_us / 1000,
        fo.stream_bytes_per_sec / kMiB, fo.total_bytes_per_sec / kMiB);
    TrainingLoop(data.get(), keys, shard_bytes, compute_ms, epochs, fo);
    for (const auto& k : keys) (void)data->Delete(k);
  }
  if (!Flag(argc, argv, "--skip-hit")) {
    const int n = static_cast<int>(Arg(argc, argv, "--hit-shards", 1000));
    const int e = static_cast<int>(Arg(argc, argv, "--hit-epochs", 5));
    fmt::print(
        "## 2. Hit ratio: {} one-block shards, cache of {} ({}%), {} epochs each a new "
        "shuffle, counted over epochs 2..{}\n\n",
        n, n / 2, 50, e, e);
    HitRatio(n, e);
  }
  if (!Flag(argc, argv, "--skip-ckpt")) {
    const uint64_t bytes = Arg(argc, argv, "--ckpt-mib", 2048) * kMiB;
    objstore::FaultOptions fo;
    fo.first_byte_latency_us = Arg(argc, argv, "--latency-ms", 20) * 1000;
    fo.stream_bytes_per_sec = Arg(argc, argv, "--ckpt-stream-mibps", 100) * kMiB;
    fo.total_bytes_per_sec = Arg(argc, argv, "--ckpt-total-mibps", 500) * kMiB;
    const std::string remote = SArg(argc, argv, "--ckpt-remote", "");
    const std::string local = SArg(argc, argv, "--ckpt-local", work + "/local");
    std::string shown = remote;  // the URL without its secret
    for (const char* secret : {"secret_key=", "session_token="}) {
      const size_t at = shown.find(secret);
      if (at == std::string::npos) continue;
      const size_t from = at + std::strlen(secret), to = shown.find('&', from);
      shown.replace(from, (to == std::string::npos ? shown.size() : to) - from, "***");
    }
    std::filesystem::create_directories(local);
    fmt::print(
        "## 3. Checkpoint: {} MiB state; remote {} behind {} ms first byte, {} MiB/s per "
        "stream, {} MiB/s total; local checkpoint dir {}\n\n",
        bytes / kMiB, remote.empty() ? "file:// store under " + work : shown,
        fo.first_byte_latency_us / 1000, fo.stream_bytes_per_sec / kMiB,
        fo.total_bytes_per_sec / kMiB, local);
    Checkpoints(work, local, bytes, remote, fo);
    if (local != work + "/local") {
      std::filesystem::remove_all(local + "/ckpt");
      std::filesystem::remove_all(local + "/ckpt-nofsync");
      std::error_code ec;
      std::filesystem::remove(local, ec);  // only if empty: it may be the caller's
    }
  }
  std::filesystem::remove_all(work);
  return 0;
}
