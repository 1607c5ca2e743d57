#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/cache/warmer.h>
#include <strata/core/checksum.h>
#include <strata/core/clock.h>
#include <strata/core/file_util.h>
#include <strata/core/log.h>
#include <strata/core/strings.h>
#include <strata/core/thread_pool.h>

namespace strata::cache {
namespace {

constexpr log::Logger kLog("cache");
constexpr std::string_view kStateMagic = "strata-warmer-state v1";
constexpr std::string_view kProgressFormat = "strata-warm-progress-v1";
constexpr double kRateWindowS = 30;

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

std::string ListHash(const std::vector<std::string>& order) {
  auto h = Hasher::Create(ChecksumAlgorithm::kSha256);
  for (const auto& k : order) {
    h->Update(k.data(), k.size());
    h->Update("\n", 1);
  }
  return HexEncode(h->Digest());
}

}  // namespace

std::string WarmProgressJson(const WarmProgress& p) {
  nlohmann::json j = {{"format", kProgressFormat},
                      {"state", p.state},
                      {"label", p.label},
                      {"host", p.host},
                      {"pid", p.pid},
                      {"started_us", p.started_us},
                      {"updated_us", p.updated_us},
                      {"interval_ms", p.interval_ms},
                      {"objects_total", p.objects_total},
                      {"objects_done", p.objects_done},
                      {"objects_ready", p.objects_ready},
                      {"resumed_from", p.resumed_from},
                      {"bytes_done", p.bytes_done},
                      {"bytes_total", p.bytes_total},
                      {"bytes_exact", p.bytes_exact},
                      {"bytes_per_s", p.bytes_per_s},
                      {"objects_per_s", p.objects_per_s},
                      {"eta_s", p.eta_s},
                      {"hits", p.hits},
                      {"fetched", p.fetched},
                      {"uncached", p.uncached},
                      {"failures", p.failures}};
  return j.dump(1) + "\n";
}

Result<WarmProgress> ParseWarmProgress(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const auto format = j.is_object() ? j.find("format") : j.end();
  if (j.is_discarded() || !j.is_object() || format == j.end() || !format->is_string() ||
      format->get<std::string>() != kProgressFormat)
    return Status::Corruption("not a warmer progress file (strata-warm-progress-v1)");
  WarmProgress p;
  try {
    p.state = j.at("state").get<std::string>();
    p.label = j.value("label", "");
    p.host = j.value("host", "");
    p.pid = j.at("pid").get<int64_t>();
    p.started_us = j.at("started_us").get<int64_t>();
    p.updated_us = j.at("updated_us").get<int64_t>();
    p.interval_ms = j.at("interval_ms").get<int64_t>();
    p.objects_total = j.at("objects_total").get<uint64_t>();
    p.objects_done = j.at("objects_done").get<uint64_t>();
    p.objects_ready = j.value("objects_ready", uint64_t{0});
    p.resumed_from = j.value("resumed_from", uint64_t{0});
    p.bytes_done = j.at("bytes_done").get<uint64_t>();
    p.bytes_total = j.at("bytes_total").get<uint64_t>();
    p.bytes_exact = j.at("bytes_exact").get<bool>();
    p.bytes_per_s = j.at("bytes_per_s").get<double>();
    p.objects_per_s = j.at("objects_per_s").get<double>();
    p.eta_s = j.at("eta_s").get<double>();
    p.hits = j.value("hits", uint64_t{0});
    p.fetched = j.value("fetched", uint64_t{0});
    p.uncached = j.value("uncached", uint64_t{0});
    p.failures = j.value("failures", uint64_t{0});
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(std::string("warmer progress file: ") + e.what());
  }
  if (p.state != "running" && p.state != "finished" && p.state != "stopped")
    return Status::Corruption("warmer progress file: unknown state \"" + p.state + "\"");
  return p;
}

std::vector<std::string> EpochOrder(const std::vector<std::string>& keys, int epochs,
                                    uint64_t seed) {
  std::vector<std::string> out;
  out.reserve(keys.size() * static_cast<size_t>(std::max(epochs, 0)));
  for (int e = 0; e < epochs; ++e) {
    std::vector<std::string> perm = keys;
    if (seed != 0) {
      // Fisher-Yates with an explicit generator: the same order on every
      // platform and standard library (std::shuffle's is unspecified).
      std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(e));
      for (size_t i = perm.size(); i > 1; --i) {
        const size_t j = static_cast<size_t>(rng() % i);
        std::swap(perm[i - 1], perm[j]);
      }
    }
    for (auto& k : perm) out.push_back(std::move(k));
  }
  return out;
}

struct Warmer::Impl {
  CachedObjectStore* cache = nullptr;
  std::vector<std::string> order;
  std::vector<uint64_t> next_use;  // next position with the same key
  WarmerOptions options;
  std::string list_hash;

  struct Slot {
    bool done = false;
    Status status;
    objstore::ObjectInfo info;
    bool was_cached = false;
  };

  mutable std::mutex mu;
  std::condition_variable cv;           // with mu: a slot finished, the window moved, stop
  std::map<uint64_t, Slot> slots;       // guarded by mu; scheduled, not yet handed out
  uint64_t position = 0;                // guarded by mu; next to hand out
  uint64_t scheduled = 0;               // guarded by mu; positions below were scheduled
  int inflight = 0;                     // guarded by mu
  std::optional<uint64_t> current;      // guarded by mu; handed out, being consumed
  bool stop = false;                    // guarded by mu
  WarmerStats stats;                    // guarded by mu
  std::thread scheduler;
  std::thread reporter;  // rewrites the progress file
  std::unique_ptr<ThreadPool> pool;

  // Byte accounting for the progress file, all guarded by mu. Positions map
  // to distinct keys; a key's size is known once Warm() HEADed it.
  std::vector<uint32_t> key_id;               // per position
  std::vector<uint64_t> occurrences;          // per key: positions in the order
  std::vector<uint64_t> occurrences_done;     // per key: of those, finished
  std::vector<int64_t> key_size;              // per key: -1 until known
  uint64_t known_count = 0, known_bytes = 0;  // positions whose key size is known
  uint64_t done_count = 0, done_known_count = 0, done_known_bytes = 0;
  uint64_t resumed_from = 0;
  int64_t started_us = 0;
  std::deque<std::tuple<std::chrono::steady_clock::time_point, double, uint64_t>> samples;
  bool progress_error_logged = false;

  // Distinct keys and their counts, the resumed prefix counted as done.
  void IndexKeys() {
    std::unordered_map<std::string_view, uint32_t> ids;
    key_id.resize(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      auto [it, inserted] = ids.try_emplace(order[i], static_cast<uint32_t>(occurrences.size()));
      if (inserted) occurrences.push_back(0);
      key_id[i] = it->second;
      ++occurrences[it->second];
    }
    occurrences_done.assign(occurrences.size(), 0);
    key_size.assign(occurrences.size(), -1);
    resumed_from = position;
    for (uint64_t i = 0; i < position; ++i) MarkDone(i);
    started_us = NowUnixNanos() / 1000;
  }

  void MarkDone(uint64_t i) {  // with mu held
    const uint32_t k = key_id[i];
    ++occurrences_done[k];
    ++done_count;
    if (key_size[k] >= 0) {
      ++done_known_count;
      done_known_bytes += static_cast<uint64_t>(key_size[k]);
    }
  }

  void SetSize(uint64_t i, uint64_t size) {  // with mu held
    const uint32_t k = key_id[i];
    if (key_size[k] >= 0) return;
    key_size[k] = static_cast<int64_t>(size);
    known_count += occurrences[k];
    known_bytes += size * occurrences[k];
    done_known_count += occurrences_done[k];
    done_known_bytes += size * occurrences_done[k];
  }

  WarmProgress Progress(bool final_write, bool sample) {  // with mu held
    WarmProgress p;
    const uint64_t n = order.size();
    p.state = final_write ? (done_count >= n ? "finished" : "stopped") : "running";
    p.label = options.label;
    p.host = HostName();
    p.pid = ::getpid();
    p.started_us = started_us;
    p.updated_us = NowUnixNanos() / 1000;
    p.interval_ms = options.progress_interval_ms;
    p.objects_total = n;
    p.objects_done = done_count;
    for (const auto& [pos, slot] : slots) p.objects_ready += slot.done && slot.status.ok();
    p.resumed_from = resumed_from;
    const double mean =
        known_count ? static_cast<double>(known_bytes) / static_cast<double>(known_count) : 0;
    p.bytes_exact = known_count == n;
    p.bytes_total =
        known_bytes + static_cast<uint64_t>(mean * static_cast<double>(n - known_count));
    p.bytes_done = done_known_bytes +
                   static_cast<uint64_t>(mean * static_cast<double>(done_count - done_known_count));
    // The rate over the samples of the last 30 s (the first: since the start).
    const auto now = std::chrono::steady_clock::now();
    if (sample) samples.emplace_back(now, static_cast<double>(p.bytes_done), p.objects_done);
    while (samples.size() > 2 &&
           std::chrono::duration<double>(now - std::get<0>(samples[1])).count() >= kRateWindowS)
      samples.pop_front();
    if (samples.size() >= 2) {
      const auto& [t0, b0, o0] = samples.front();
      const auto& [t1, b1, o1] = samples.back();
      const double dt = std::chrono::duration<double>(t1 - t0).count();
      if (dt > 0) {
        p.bytes_per_s = std::max(0.0, (b1 - b0) / dt);
        p.objects_per_s = static_cast<double>(o1 - o0) / dt;
      }
    }
    if (p.objects_done >= n)
      p.eta_s = 0;
    else if (p.bytes_per_s > 0 && p.bytes_total > p.bytes_done)
      p.eta_s = static_cast<double>(p.bytes_total - p.bytes_done) / p.bytes_per_s;
    else if (p.objects_per_s > 0)
      p.eta_s = static_cast<double>(n - p.objects_done) / p.objects_per_s;
    p.hits = stats.hits;
    p.fetched = stats.fetched;
    p.uncached = stats.uncached;
    p.failures = stats.failures;
    return p;
  }

  // Writes the progress file (errors logged once: progress is advisory and
  // must not stop the training job's reads).
  void PublishProgress(bool final_write) {
    if (options.progress_file.empty()) return;
    std::string json;
    {
      std::lock_guard<std::mutex> lock(mu);
      json = WarmProgressJson(Progress(final_write, !final_write));
    }
    Status st = WriteFileAtomic(options.progress_file, json,
                                AtomicWriteOptions{.sync = final_write, .sync_dir = false});
    if (!st.ok() && !progress_error_logged) {
      progress_error_logged = true;
      kLog.Warn("warmer: cannot write the progress file: {}", st.ToString());
    }
  }

  void Report() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      lock.unlock();
      PublishProgress(false);
      lock.lock();
      cv.wait_for(lock, std::chrono::milliseconds(std::max(50, options.progress_interval_ms)),
                  [this] { return stop; });
    }
  }

  void Schedule() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      const uint64_t limit = std::min<uint64_t>(order.size(), position + options.lookahead);
      if (scheduled < position) scheduled = position;
      if (scheduled < limit && inflight < options.concurrency) {
        const uint64_t i = scheduled++;
        ++inflight;
        slots[i];  // creates slot i, not ready until Warm(i) finishes
        lock.unlock();
        cache->Pin(order[i]);
        pool->Submit([this, i] { Warm(i); });
        lock.lock();
        continue;
      }
      cv.wait(lock);
    }
  }

  void Warm(uint64_t i) {
    Slot s;
    auto info = cache->Head(order[i]);
    if (!info.ok()) {
      s.status = info.error().WithContext("shard " + std::to_string(i) + " \"" + order[i] + "\"");
    } else {
      s.info = std::move(*info);
      s.info.key = order[i];
      s.was_cached = cache->IsResident(s.info);
      if (!s.was_cached) {
        auto r = cache->Prefetch(s.info);
        if (!r.ok()) {
          s.status = r.error().WithContext("warming shard " + std::to_string(i) + " \"" +
                                           order[i] + "\"");
        }
      }
    }
    s.done = true;
    std::lock_guard<std::mutex> lock(mu);
    if (s.status.ok()) {
      if (s.was_cached) ++stats.hits;
      else ++stats.fetched;
      SetSize(i, s.info.size);
    }
    slots[i] = std::move(s);
    --inflight;
    cv.notify_all();
  }

  Status Persist(uint64_t pos) {
    if (options.state_file.empty()) return Status::Ok();
    // The file is fsynced, the directory not: a lost rename only replays a little.
    return WriteFileAtomic(options.state_file,
                           fmt::format("{}\nlist {}\nsize {}\nposition {}\n", kStateMagic,
                                       list_hash, order.size(), pos),
                           AtomicWriteOptions{.sync_dir = false})
        .WithContext("warmer state");
  }

  Result<uint64_t> LoadPosition() {
    if (options.state_file.empty()) return uint64_t{0};
    const int fd = ::open(options.state_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return uint64_t{0};
      return Status::FromErrno(errno, "read warmer state " + options.state_file);
    }
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
    ::close(fd);
    std::string hash;
    std::optional<uint64_t> pos, size;
    bool magic = false;
    for (std::string_view line : Split(text, '\n')) {
      if (line == kStateMagic) magic = true;
      else if (StartsWith(line, "list ")) hash = std::string(line.substr(5));
      else if (StartsWith(line, "size ")) size = ParseUint64(line.substr(5));
      else if (StartsWith(line, "position ")) pos = ParseUint64(line.substr(9));
    }
    if (!magic || !pos || !size) {
      return Status::Corruption("warmer state " + options.state_file +
                                " is not a warmer state file; remove it to start over");
    }
    if (hash != list_hash || *size != order.size()) {
      return Status::InvalidArgument("warmer state " + options.state_file +
                                     " belongs to another shard list; remove it to start over");
    }
    return std::min<uint64_t>(*pos, order.size());
  }
};

Warmer::Warmer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Warmer>> Warmer::Start(CachedObjectStore* cache,
                                              std::vector<std::string> order,
                                              WarmerOptions options) {
  if (cache == nullptr) return Status::InvalidArgument("the warmer needs a cache");
  if (options.lookahead < 1) options.lookahead = 1;
  if (options.concurrency < 1) options.concurrency = 1;
  auto impl = std::make_unique<Impl>();
  impl->cache = cache;
  impl->order = std::move(order);
  impl->options = std::move(options);
  impl->list_hash = ListHash(impl->order);
  const size_t n = impl->order.size();
  impl->next_use.assign(n, CachedObjectStore::kNoFurtherUse);
  {
    std::unordered_map<std::string_view, uint64_t> later;
    for (size_t i = n; i-- > 0;) {
      auto [it, inserted] = later.try_emplace(impl->order[i], i);
      if (!inserted) {
        impl->next_use[i] = it->second;
        it->second = i;
      }
    }
  }
  STRATA_ASSIGN_OR_RETURN(impl->position, impl->LoadPosition());
  impl->scheduled = impl->position;
  if (impl->position > 0) {
    kLog.Info("warmer: resuming at shard {} of {} ({})", impl->position, n,
              impl->options.state_file);
  }
  // Every key's first use from here on, for Belady eviction.
  {
    std::unordered_map<std::string_view, bool> seen;
    for (size_t i = impl->position; i < n; ++i) {
      if (seen.emplace(impl->order[i], true).second) cache->SetKeyPriority(impl->order[i], i);
    }
  }
  impl->IndexKeys();
  impl->pool = std::make_unique<ThreadPool>(static_cast<size_t>(impl->options.concurrency));
  Impl* raw = impl.get();
  impl->scheduler = std::thread([raw] { raw->Schedule(); });
  if (!impl->options.progress_file.empty()) impl->reporter = std::thread([raw] { raw->Report(); });
  return std::unique_ptr<Warmer>(new Warmer(std::move(impl)));
}

Warmer::~Warmer() {
  Impl& im = *impl_;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    im.stop = true;
  }
  im.cv.notify_all();
  if (im.scheduler.joinable()) im.scheduler.join();
  if (im.reporter.joinable()) im.reporter.join();
  im.pool.reset();  // waits for the shards being fetched
  im.PublishProgress(true);
  std::lock_guard<std::mutex> lock(im.mu);
  for (uint64_t i = im.position; i < im.scheduled; ++i) im.cache->Unpin(im.order[i]);
  if (im.current) im.cache->Unpin(im.order[*im.current]);
}

Result<std::optional<WarmShard>> Warmer::Next() {
  Impl& im = *impl_;
  std::unique_lock<std::mutex> lock(im.mu);
  if (im.current) {
    // The consumer is done with it: unpin, and tell the cache when it is
    // needed again (never: it goes first).
    const uint64_t c = *im.current;
    im.MarkDone(c);
    im.cache->Unpin(im.order[c]);
    im.cache->SetKeyPriority(im.order[c], im.next_use[c]);
    im.current.reset();
  }
  STRATA_RETURN_IF_ERROR(im.Persist(im.position));
  if (im.position >= im.order.size()) return std::optional<WarmShard>();
  const auto start = std::chrono::steady_clock::now();
  im.cv.wait(lock, [&] {
    auto it = im.slots.find(im.position);
    return im.stop || (it != im.slots.end() && it->second.done);
  });
  if (im.stop) return Status::Unavailable("the warmer is shutting down");
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Impl::Slot slot = std::move(im.slots[im.position]);
  im.slots.erase(im.position);
  const uint64_t i = im.position++;
  im.current = i;
  im.stats.wait_seconds += waited;
  im.cv.notify_all();  // the window moved
  if (!slot.status.ok()) ++im.stats.failures;
  lock.unlock();
  if (!slot.status.ok()) return slot.status;
  WarmShard out;
  out.position = i;
  out.info = std::move(slot.info);
  out.was_cached = slot.was_cached;
  out.cached = im.cache->IsResident(out.info);
  out.wait_seconds = waited;
  out.reader = im.cache->OpenReader(out.info);
  lock.lock();
  ++im.stats.handed_out;
  if (!out.cached) ++im.stats.uncached;
  return std::optional<WarmShard>(std::move(out));
}

uint64_t Warmer::position() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->current ? *impl_->current : impl_->position;
}

size_t Warmer::size() const { return impl_->order.size(); }

WarmProgress Warmer::progress() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Progress(false, false);
}

WarmerStats Warmer::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

}  // namespace strata::cache
