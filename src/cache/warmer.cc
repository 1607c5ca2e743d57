#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include <strata/cache/warmer.h>
#include <strata/core/checksum.h>
#include <strata/core/file_util.h>
#include <strata/core/log.h>
#include <strata/core/strings.h>
#include <strata/core/thread_pool.h>

namespace strata::cache {
namespace {

constexpr log::Logger kLog("cache");
constexpr std::string_view kStateMagic = "strata-warmer-state v1";

std::string ListHash(const std::vector<std::string>& order) {
  auto h = Hasher::Create(ChecksumAlgorithm::kSha256);
  for (const auto& k : order) {
    h->Update(k.data(), k.size());
    h->Update("\n", 1);
  }
  return HexEncode(h->Digest());
}

}  // namespace

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
  std::unique_ptr<ThreadPool> pool;

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
      else
        ++stats.fetched;
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
  impl->pool = std::make_unique<ThreadPool>(static_cast<size_t>(impl->options.concurrency));
  Impl* raw = impl.get();
  impl->scheduler = std::thread([raw] { raw->Schedule(); });
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
  im.pool.reset();  // waits for the shards being fetched
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

WarmerStats Warmer::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

}  // namespace strata::cache
