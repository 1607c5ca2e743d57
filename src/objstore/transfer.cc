#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/file_util.h>
#include <strata/core/log.h>
#include <strata/core/strings.h>
#include <strata/objstore/rate_limit.h>
#include <strata/objstore/s3_client.h>
#include <strata/objstore/transfer.h>

#include "objstore/download_journal.h"

namespace strata::objstore {
namespace {

constexpr log::Logger kLog("transfer");
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kMinPartSize = 5 * kMiB;
constexpr uint64_t kMaxParts = 10'000;

// "s3://bucket/prefix/" + key, without the URL's query (endpoint, ...).
std::string Describe(const ObjectStore& store, std::string_view key) {
  std::string u = store.url();
  if (size_t q = u.find('?'); q != std::string::npos) u.resize(q);
  if (!u.empty() && u.back() != '/') u.push_back('/');
  return u + std::string(key);
}

bool Transient(const Status& s) {
  switch (s.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kIOError:
    case StatusCode::kCorruption:
    case StatusCode::kInternal:
      return true;
    default:
      return false;
  }
}

void Backoff(int attempt) {
  // Full jitter over 50 ms * 2^attempt, at most 2 s: the store already waited
  // through its own retries, so the first extra try comes soon.
  thread_local std::mt19937_64 rng(std::random_device{}());
  const uint64_t cap = std::min<uint64_t>(2000, 50ull << std::min(attempt, 6));
  std::uniform_int_distribution<uint64_t> d(0, cap);
  std::this_thread::sleep_for(std::chrono::milliseconds(d(rng)));
}

// Runs f (returning Status or Result<T>) up to `attempts` times while it fails
// with a transient error. `before_retry` resets state a failed try left.
template <class F>
auto WithRetries(int attempts, F&& f, const std::function<void()>& before_retry = {}) -> decltype(f()) {
  for (int a = 1;; ++a) {
    auto r = f();
    Status s;
    if constexpr (std::is_same_v<decltype(r), Status>) {
      s = r;
    } else {
      s = r.error();
    }
    if (s.ok() || a >= attempts || !Transient(s)) return r;
    kLog.Debug("retrying after: {}", s.ToString());
    Backoff(a);
    if (before_retry) before_retry();
  }
}

Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return Status::Ok();
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::Ok();
    return Status::AlreadyExists("\"" + dir + "\" exists and is not a directory");
  }
  const size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) STRATA_RETURN_IF_ERROR(MakeDirs(dir.substr(0, slash)));
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return Status::FromErrno(errno, "create directory " + dir);
  }
  return Status::Ok();
}

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string DefaultStateDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return std::string(x) + "/strata/uploads";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return std::string(h) + "/.cache/strata/uploads";
  }
  return "/tmp/strata-uploads-" + std::to_string(::getuid());
}

// A full-object CRC as a number, from S3's base64; nullopt for other
// algorithms and for composite checksums ("...==-3").
std::optional<uint64_t> DecodeCrc(ChecksumAlgorithm alg, const std::string& b64) {
  size_t bytes = 0;
  if (alg == ChecksumAlgorithm::kCrc32 || alg == ChecksumAlgorithm::kCrc32c) bytes = 4;
  if (alg == ChecksumAlgorithm::kCrc64Nvme) bytes = 8;
  if (bytes == 0 || b64.empty()) return std::nullopt;
  auto raw = Base64Decode(b64);
  if (!raw || raw->size() != bytes) return std::nullopt;
  uint64_t v = 0;
  for (unsigned char c : *raw) v = (v << 8) | c;
  return v;
}

uint64_t CrcUpdate(ChecksumAlgorithm alg, uint64_t crc, const char* data, size_t n) {
  switch (alg) {
    case ChecksumAlgorithm::kCrc32: return Crc32(static_cast<uint32_t>(crc), data, n);
    case ChecksumAlgorithm::kCrc32c: return Crc32c(static_cast<uint32_t>(crc), data, n);
    case ChecksumAlgorithm::kCrc64Nvme: return Crc64Nvme(crc, data, n);
    default: return 0;
  }
}

// The CRC of bytes [off, off + len) of a local file.
Status LocalCrc(int fd, const std::string& path, ChecksumAlgorithm alg, uint64_t off, uint64_t len,
                uint64_t* crc) {
  std::string buf(std::min<uint64_t>(len, 1 << 20), '\0');
  uint64_t c = 0;
  for (uint64_t done = 0; done < len;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), len - done));
    STRATA_ASSIGN_OR_RETURN(size_t n, PreadUpTo(fd, buf.data(), want, off + done, path));
    if (n == 0) return Status::Corruption(path + " is shorter than its resume record says");
    c = CrcUpdate(alg, c, buf.data(), n);
    done += n;
  }
  *crc = c;
  return Status::Ok();
}

// The resume record of one multipart upload: which upload, with which part
// size, and the parts this process saw stored (ListParts is authoritative; the
// recorded parts only help backends without it).
struct UploadState {
  std::string upload_id;
  uint64_t part_size = 0;
  std::map<int, UploadedPart> parts;
};

std::optional<UploadState> ReadState(const std::string& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::string magic;
  if (!std::getline(in, magic) || magic != "strata-upload-state 1") return std::nullopt;
  UploadState st;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string field;
    ls >> field;
    if (field == "upload_id") {
      ls >> st.upload_id;
    } else if (field == "part_size") {
      ls >> st.part_size;
    } else if (field == "part") {
      UploadedPart p;
      ls >> p.number >> p.size >> p.etag >> p.checksum;
      if (p.checksum == "-") p.checksum.clear();
      if (p.number > 0 && !p.etag.empty()) st.parts[p.number] = p;
    }
  }
  if (st.upload_id.empty() || st.part_size == 0) return std::nullopt;
  return st;
}

}  // namespace

uint64_t EffectivePartSize(uint64_t size, uint64_t preferred) {
  uint64_t part = std::max(preferred, kMinPartSize);
  if ((size + part - 1) / part > kMaxParts) {
    part = (size + kMaxParts - 1) / kMaxParts;
    part = (part + kMiB - 1) / kMiB * kMiB;
  }
  return part;
}

// ---------------------------------------------------------------------------
// The pool. Two queues: leaf tasks (one request: a part, never waits on other
// tasks) and object tasks (may submit parts and wait for them). A thread that
// waits for its parts runs queued leaf tasks meanwhile, so waiting never idles
// a worker and never deadlocks: leaf tasks always finish, and every waiter can
// run them. Workers prefer leaf tasks, finishing objects in flight before
// starting new ones.

namespace {
thread_local const void* tls_pool = nullptr;  // the pool whose worker this thread is
}

class TransferManager::Pool {
 public:
  explicit Pool(int threads) {
    threads = std::max(1, threads);
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { WorkerLoop(); });
  }
  ~Pool() {
    {
      std::lock_guard l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // A set of tasks someone waits for.
  struct Group {
    int pending = 0;  // guarded by Pool::mu_
  };

  void Submit(Group& g, std::function<void()> fn, bool leaf) {
    std::unique_lock l(mu_);
    if (!leaf && tls_pool != this) {
      // Backpressure for submitters outside the pool (never block a worker).
      while (other_.size() >= kMaxQueuedObjects && !stop_) {
        cv_.wait_for(l, std::chrono::milliseconds(20));
      }
    }
    ++g.pending;
    auto task = [this, &g, fn = std::move(fn)]() {
      fn();
      std::lock_guard l2(mu_);
      if (--g.pending == 0) cv_.notify_all();
    };
    (leaf ? leaf_ : other_).push_back(std::move(task));
    l.unlock();
    cv_.notify_all();
  }

  // Returns when g has no pending task, running queued leaf tasks meanwhile.
  void Wait(Group& g) {
    std::unique_lock l(mu_);
    while (g.pending > 0) {
      if (!leaf_.empty()) {
        auto t = std::move(leaf_.front());
        leaf_.pop_front();
        l.unlock();
        t();
        l.lock();
        continue;
      }
      cv_.wait(l);
    }
  }

 private:
  static constexpr size_t kMaxQueuedObjects = 4096;

  void WorkerLoop() {
    tls_pool = this;
    std::unique_lock l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return stop_ || !leaf_.empty() || !other_.empty(); });
      if (leaf_.empty() && other_.empty()) return;  // stop_
      std::function<void()> t;
      if (!leaf_.empty()) {
        t = std::move(leaf_.front());
        leaf_.pop_front();
      } else {
        t = std::move(other_.front());
        other_.pop_front();
      }
      l.unlock();
      t();
      l.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> leaf_;   // guarded by mu_
  std::deque<std::function<void()>> other_;  // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
  std::vector<std::thread> threads_;
};

struct TransferManager::Impl {
  TransferOptions options;
  mode_t umask_bits = 022;
  std::unique_ptr<Pool> pool;
  Pool::Group top;  // tasks submitted with Run

  std::atomic<uint64_t> bytes_done{0}, bytes_total{0}, objects_done{0}, objects_total{0},
      objects_failed{0};
  std::mutex cb_mu;
  ProgressCallback cb;                                // guarded by cb_mu
  std::chrono::steady_clock::time_point last_cb{};  // guarded by cb_mu
  std::atomic<bool> has_cb{false};
  std::mutex temps_mu;
  std::set<std::string> temps;  // downloads' temporary files; guarded by temps_mu

  TransferProgress Snapshot() const {
    TransferProgress p;
    p.bytes_done = bytes_done.load(std::memory_order_relaxed);
    p.bytes_total = bytes_total.load(std::memory_order_relaxed);
    p.objects_done = objects_done.load(std::memory_order_relaxed);
    p.objects_total = objects_total.load(std::memory_order_relaxed);
    p.objects_failed = objects_failed.load(std::memory_order_relaxed);
    return p;
  }

  void Notify(bool force) {
    if (!has_cb.load(std::memory_order_acquire)) return;
    std::unique_lock l(cb_mu, std::defer_lock);
    if (force) {
      l.lock();
    } else if (!l.try_lock()) {
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_cb < std::chrono::milliseconds(100)) return;
    last_cb = now;
    if (cb) cb(Snapshot());
  }

  void AddBytes(int64_t n) {
    bytes_done.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    Notify(false);
  }
  void ObjectDone() {
    objects_done.fetch_add(1, std::memory_order_relaxed);
    Notify(true);
  }

  Result<ObjectInfo> UploadMultipart(int fd, const std::string& path, uint64_t size, int64_t mtime_ns,
                                     ObjectStore& store, std::string_view key,
                                     const std::string& state_file);
  Result<ObjectInfo> DownloadRanges(ObjectStore& store, std::string_view key, int fd,
                                    const std::string& path, const ObjectInfo& info,
                                    DownloadJournal* journal);
};

TransferManager::TransferManager(TransferOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (impl_->options.concurrency < 1) impl_->options.concurrency = 1;
  if (impl_->options.attempts < 1) impl_->options.attempts = 1;
  impl_->options.part_size = std::max(impl_->options.part_size, kMinPartSize);
  if (impl_->options.state_dir.empty()) impl_->options.state_dir = DefaultStateDir();
  // The umask decides a downloaded file's mode (mkstemp creates 0600).
  const mode_t m = ::umask(022);
  ::umask(m);
  impl_->umask_bits = m;
  // The caller waiting in Wait() runs leaf tasks too, so concurrency - 1
  // workers keep `concurrency` requests in flight in the common case.
  impl_->pool = std::make_unique<Pool>(impl_->options.concurrency);
}

TransferManager::~TransferManager() { Wait(); }

const TransferOptions& TransferManager::options() const { return impl_->options; }

void TransferManager::Run(std::function<void()> fn) {
  impl_->pool->Submit(impl_->top, std::move(fn), /*leaf=*/false);
}

void TransferManager::Wait() { impl_->pool->Wait(impl_->top); }

void TransferManager::AddTotal(uint64_t bytes, uint64_t objects) {
  impl_->bytes_total.fetch_add(bytes, std::memory_order_relaxed);
  impl_->objects_total.fetch_add(objects, std::memory_order_relaxed);
  impl_->Notify(false);
}

TransferProgress TransferManager::progress() const { return impl_->Snapshot(); }

void TransferManager::set_progress_callback(ProgressCallback cb) {
  std::lock_guard l(impl_->cb_mu);
  impl_->cb = std::move(cb);
  impl_->has_cb.store(static_cast<bool>(impl_->cb), std::memory_order_release);
}

void TransferManager::CountFailure() {
  impl_->objects_failed.fetch_add(1, std::memory_order_relaxed);
  impl_->Notify(true);
}

void TransferManager::RemoveTemporaryFiles() {
  std::lock_guard l(impl_->temps_mu);
  for (const std::string& t : impl_->temps) ::unlink(t.c_str());
}

std::string TransferManager::StateFilePath(const std::string& path, const ObjectStore& store,
                                           std::string_view key, uint64_t size,
                                           int64_t mtime_ns) const {
  std::string abs = path;
  if (char buf[PATH_MAX]; ::realpath(path.c_str(), buf) != nullptr) abs = buf;
  std::string u = store.url();
  const std::string id = abs + '\n' + u + '\n' + std::string(key) + '\n' + std::to_string(size) +
                         '\n' + std::to_string(mtime_ns);
  return impl_->options.state_dir + "/" + HexEncode(Sha256(id)).substr(0, 32) + ".upload";
}

// ---------------------------------------------------------------------------
// Upload

Result<ObjectInfo> TransferManager::UploadFile(const std::string& path, ObjectStore& store,
                                               std::string_view key) {
  Impl& I = *impl_;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Status::FromErrno(errno, "open " + path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument("\"" + path + "\" is not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const int64_t mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  WriteOptions w = I.options.write;
  w.if_none_match_star = false;
  w.if_match.reset();

  Result<ObjectInfo> r = Status::Internal("unreachable");
  if (size <= I.options.multipart_threshold) {
    w.size = size;
    r = WithRetries(I.options.attempts, [&]() -> Result<ObjectInfo> {
      FileSource file(fd.get(), 0, size);
      RateLimitedSource src(file, I.options.upload_limit.get());
      return store.Put(key, src, w);
    });
    if (r.ok()) I.AddBytes(static_cast<int64_t>(size));
  } else {
    r = I.UploadMultipart(fd.get(), path, size, mtime_ns, store, key,
                          StateFilePath(path, store, key, size, mtime_ns));
  }
  if (!r.ok()) {
    return r.error().WithContext("upload of " + path + " to " + Describe(store, key));
  }
  I.ObjectDone();
  return r;
}

Result<ObjectInfo> TransferManager::Impl::UploadMultipart(int fd, const std::string& path,
                                                          uint64_t size, int64_t mtime_ns,
                                                          ObjectStore& store, std::string_view key,
                                                          const std::string& state_file) {
  const int attempts = options.attempts;
  uint64_t part_size = EffectivePartSize(size, options.part_size);
  std::string upload_id;
  std::map<int, UploadedPart> done;  // parts already stored

  // Resume: an upload of this very file (path, size, mtime) to this key.
  if (options.resume) {
    if (auto st = ReadState(state_file); st && EffectivePartSize(size, st->part_size) == st->part_size) {
      auto listed = WithRetries(attempts, [&] { return store.ListParts(key, st->upload_id); });
      std::vector<UploadedPart> parts;
      bool usable = true;
      if (listed.ok()) {
        parts = std::move(*listed);
      } else if (listed.error().code() == StatusCode::kNotSupported) {
        for (auto& [n, p] : st->parts) parts.push_back(p);
      } else {
        usable = false;
        kLog.Info("cannot resume upload {} of {} ({}); starting over", st->upload_id, path,
                  listed.error().ToString());
        if (listed.error().code() != StatusCode::kNotFound) {
          (void)store.AbortMultipart(key, st->upload_id);
        }
      }
      if (usable) {
        upload_id = st->upload_id;
        part_size = st->part_size;
        const uint64_t nparts = (size + part_size - 1) / part_size;
        for (const UploadedPart& p : parts) {
          if (p.number < 1 || static_cast<uint64_t>(p.number) > nparts) continue;
          const uint64_t off = static_cast<uint64_t>(p.number - 1) * part_size;
          // A part of the wrong size is sent again (the new one replaces it).
          if (p.size == std::min(part_size, size - off)) done[p.number] = p;
        }
        kLog.Info("resuming upload of {}: {} of {} parts already stored", path, done.size(), nparts);
      }
    }
  }

  const uint64_t nparts = (size + part_size - 1) / part_size;
  if (upload_id.empty()) {
    WriteOptions w = options.write;
    w.if_none_match_star = false;
    w.if_match.reset();
    w.size.reset();
    STRATA_ASSIGN_OR_RETURN(upload_id,
                            WithRetries(attempts, [&] { return store.CreateMultipart(key, w); }));
    if (options.resume) {
      Status ms = MakeDirs(options.state_dir);
      std::ofstream out(state_file, std::ios::trunc);
      if (ms.ok() && out) {
        out << "strata-upload-state 1\n"
            << "source " << path << "\n"
            << "dest " << Describe(store, key) << "\n"
            << "size " << size << "\nmtime_ns " << mtime_ns << "\n"
            << "part_size " << part_size << "\n"
            << "upload_id " << upload_id << "\n";
      } else {
        kLog.Warn("cannot write upload state file {} ({}); this upload will not be resumable",
                  state_file, ms.ok() ? std::string(std::strerror(errno)) : ms.ToString());
      }
    }
  }

  // Already-stored bytes count as done.
  for (auto& [n, p] : done) AddBytes(static_cast<int64_t>(p.size));

  std::mutex mu;
  Status first_error;  // guarded by mu
  std::atomic<bool> failed{false};
  Pool::Group g;
  for (uint64_t i = 0; i < nparts; ++i) {
    const int number = static_cast<int>(i + 1);
    if (done.count(number) != 0) continue;
    const uint64_t off = i * part_size;
    const uint64_t len = std::min(part_size, size - off);
    pool->Submit(
        g,
        [&, number, off, len] {
          if (failed.load(std::memory_order_relaxed)) return;
          auto r = WithRetries(attempts, [&] {
            FileSource file(fd, off, len);
            RateLimitedSource src(file, options.upload_limit.get());
            return store.UploadPart(key, upload_id, number, src, len);
          });
          std::lock_guard l(mu);
          if (!r.ok()) {
            if (first_error.ok()) first_error = r.error().WithContext("part " + std::to_string(number));
            failed.store(true, std::memory_order_relaxed);
            return;
          }
          UploadedPart p = std::move(*r);
          p.number = number;
          if (p.size == 0) p.size = len;
          if (options.resume) {
            std::ofstream out(state_file, std::ios::app);
            if (out) {
              out << "part " << number << " " << p.size << " " << p.etag << " "
                  << (p.checksum.empty() ? "-" : p.checksum) << "\n";
            }
          }
          done[number] = std::move(p);
          AddBytes(static_cast<int64_t>(len));
        },
        /*leaf=*/true);
  }
  pool->Wait(g);

  if (!first_error.ok()) {
    if (!options.resume) {
      (void)store.AbortMultipart(key, upload_id);
      return first_error;
    }
    return first_error.WithContext(fmt::format(
        "{} of {} parts stored (upload {} kept: run the same command again to resume)", done.size(),
        nparts, upload_id));
  }

  std::vector<UploadedPart> parts;
  parts.reserve(done.size());
  for (auto& [n, p] : done) parts.push_back(p);
  bool retried = false;
  auto r = WithRetries(
      attempts, [&] { return store.CompleteMultipart(key, upload_id, parts); },
      [&] { retried = true; });
  if (!r.ok() && retried && r.error().code() == StatusCode::kNotFound) {
    // A Complete whose answer was lost may have committed: the upload is gone
    // and the object carries the ETag of exactly these parts.
    std::vector<std::string> etags;
    for (const UploadedPart& p : parts) etags.push_back(p.etag);
    auto h = store.Head(key);
    std::string md5s;
    for (const std::string& e : etags) {
      auto raw = HexDecode(e);
      if (raw) md5s += *raw;
    }
    const std::string want = HexEncode(Md5(md5s)) + "-" + std::to_string(parts.size());
    if (h.ok() && h->etag == want) r = std::move(*h);
  }
  if (!r.ok()) {
    if (!options.resume) (void)store.AbortMultipart(key, upload_id);
    return r.error().WithContext("completing the multipart upload");
  }
  if (options.resume) ::unlink(state_file.c_str());
  return r;
}

// ---------------------------------------------------------------------------
// Download

Result<ObjectInfo> TransferManager::DownloadFile(ObjectStore& store, std::string_view key,
                                                 const std::string& path, const ObjectInfo* known) {
  Impl& I = *impl_;
  const std::string what = Describe(store, key);
  auto fail = [&](const Status& s) { return s.WithContext("download of " + what + " to " + path); };

  // A listing's (or the caller's HEAD's) ETag pins the ranged GETs; without
  // one, this HEAD's does.
  ObjectInfo info;
  const bool trust_known =
      known != nullptr && (known->size <= I.options.multipart_threshold || !known->etag.empty());
  if (trust_known) {
    info = *known;
  } else {
    auto h = WithRetries(I.options.attempts, [&] { return store.Head(key); });
    if (!h.ok()) return fail(h.error());
    info = std::move(*h);
  }

  const std::string dir = DirName(path);
  if (Status s = MakeDirs(dir); !s.ok()) return fail(s);
  // Ranged downloads are resumable: their bytes go to DST.strata-partial,
  // which a failure keeps (download_journal.h). Single GETs are short enough
  // to start over, into a temporary file of their own.
  std::unique_ptr<DownloadJournal> journal;
  if (info.size > I.options.multipart_threshold && I.options.resume) {
    auto j = DownloadJournal::Open(path, I.options.fsync);
    if (!j.ok()) return fail(j.error());
    journal = std::move(*j);  // nullptr: another process downloads there now
  }
  std::string tmpl = path + ".strata-tmp-XXXXXX";
  UniqueFd fd(journal ? ::fcntl(journal->fd(), F_DUPFD_CLOEXEC, 0)
                      : ::mkostemp(tmpl.data(), O_CLOEXEC));
  if (fd.get() < 0) return fail(Status::FromErrno(errno, "create a temporary file next to " + path));
  const std::string tmp = journal ? journal->data_path() : tmpl;
  // A resumable partial file outlives failures and Ctrl-C, on purpose.
  bool keep_tmp = journal != nullptr;
  if (!journal) {
    std::lock_guard l(I.temps_mu);
    I.temps.insert(tmp);
  }
  struct Cleanup {
    Impl& impl;
    const std::string& p;
    bool& keep;
    ~Cleanup() {
      if (!keep) ::unlink(p.c_str());
      std::lock_guard l(impl.temps_mu);
      impl.temps.erase(p);
    }
  } cleanup{I, tmp, keep_tmp};

  Result<ObjectInfo> r = Status::Internal("unreachable");
  if (info.size <= I.options.multipart_threshold) {
    // One whole-object GET: the store verifies it (stored checksum, MD5 ETag).
    int64_t written = 0;
    RateLimiter* down = I.options.download_limit.get();
    r = WithRetries(
        I.options.attempts,
        [&]() -> Result<ObjectInfo> {
          ObjectInfo got;
          Status s = store.Get(
              key, ReadOptions{},
              [&](const char* data, size_t n) {
                if (down != nullptr) down->Acquire(n);
                STRATA_RETURN_IF_ERROR(PwriteAll(fd.get(), data, n, static_cast<uint64_t>(written), tmp));
                written += static_cast<int64_t>(n);
                I.AddBytes(static_cast<int64_t>(n));
                return Status::Ok();
              },
              &got);
          if (!s.ok()) return s;
          if (static_cast<uint64_t>(written) != got.size) {
            return Status::IOError(fmt::format("got {} bytes of a {}-byte object", written, got.size));
          }
          return got;
        },
        [&] {
          I.AddBytes(-written);
          written = 0;
          if (::ftruncate(fd.get(), 0) != 0) {
            kLog.Warn("ftruncate {}: {}", tmp, std::strerror(errno));
          }
        });
    if (!r.ok()) {
      I.AddBytes(-written);
      return fail(r.error());
    }
  } else {
    r = I.DownloadRanges(store, key, fd.get(), tmp, info, journal.get());
    if (!r.ok() && r.error().code() == StatusCode::kPreconditionFailed && trust_known) {
      // The object may have changed before we started (a listing is not a
      // snapshot): pin the current version and try once more.
      auto h = WithRetries(I.options.attempts, [&] { return store.Head(key); });
      if (h.ok() && h->etag != info.etag) {
        info = std::move(*h);
        r = I.DownloadRanges(store, key, fd.get(), tmp, info, journal.get());
      }
    }
    if (!r.ok() && journal) {
      const StatusCode code = r.error().code();
      // Nothing a rerun could build on (and no need to keep a preallocated
      // file of the object's size when not one part of it arrived).
      if (code == StatusCode::kPreconditionFailed || code == StatusCode::kCorruption ||
          journal->parts_on_disk() == 0) {
        journal->Discard();
      } else {
        return fail(r.error().WithContext("the bytes so far stay in " + tmp +
                                          ": run the same command again to resume"));
      }
    }
    if (!r.ok()) return fail(r.error());
  }
  const ObjectInfo& got = *r;

  // The final file's mode: the old file's, else 0666 & ~umask.
  mode_t mode = 0666 & ~I.umask_bits;
  if (struct stat old; ::stat(path.c_str(), &old) == 0) {
    if (S_ISDIR(old.st_mode)) return fail(Status::AlreadyExists("\"" + path + "\" is a directory"));
    mode = old.st_mode & 07777;
  }
  if (::fchmod(fd.get(), mode) != 0) return fail(Status::FromErrno(errno, "chmod " + tmp));
  if (I.options.preserve_mtime && got.mtime_ns > 0) {
    struct timespec ts[2];
    ts[0].tv_sec = ts[1].tv_sec = got.mtime_ns / 1'000'000'000;
    ts[0].tv_nsec = ts[1].tv_nsec = got.mtime_ns % 1'000'000'000;
    if (::futimens(fd.get(), ts) != 0) return fail(Status::FromErrno(errno, "set mtime of " + tmp));
  }
  if (I.options.fsync && ::fsync(fd.get()) != 0) return fail(Status::FromErrno(errno, "fsync " + tmp));
  if (::close(fd.Release()) != 0) return fail(Status::FromErrno(errno, "close " + tmp));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return fail(Status::FromErrno(errno, "rename " + tmp + " to " + path));
  }
  keep_tmp = true;  // it is the destination now
  if (journal) journal->Finished();
  I.ObjectDone();
  return r;
}

Result<ObjectInfo> TransferManager::Impl::DownloadRanges(ObjectStore& store, std::string_view key,
                                                         int fd, const std::string& tmp,
                                                         const ObjectInfo& info,
                                                         DownloadJournal* journal) {
  const uint64_t size = info.size;
  const uint64_t part = EffectivePartSize(size, options.part_size);
  const uint64_t nparts = (size + part - 1) / part;
  // Reserve the whole file up front: a full disk fails now, not after
  // gigabytes, and ranges landing in any order get contiguous extents.
  // (fallocate(2), not posix_fallocate: no zero-writing emulation on
  // filesystems without it; those just get a sparse file.)
  // (The file may hold an earlier attempt's bytes of another version: cut
  // it to this size first.)
  // (A journal keeps the parts a killed run of this very version wrote, and
  // empties the file otherwise.)
  std::vector<bool> have(nparts, false);
  if (journal != nullptr) {
    STRATA_ASSIGN_OR_RETURN(have, journal->Begin(info, part));
  }
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) return Status::FromErrno(errno, "size " + tmp);
  if (::fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0) {
    if (errno == ENOSPC) {
      return Status::ResourceExhausted("no space left on the device for " + tmp + " (" +
                                       std::to_string(size) + " bytes)");
    }
  }
  RateLimiter* down = options.download_limit.get();
  const ChecksumAlgorithm alg = info.checksum_algorithm;
  const std::optional<uint64_t> want_crc = DecodeCrc(alg, info.checksum);
  std::vector<uint64_t> crcs(nparts, 0);
  std::atomic<int64_t> added{0};  // bytes counted as done by this call (undone on failure)

  std::mutex mu;
  Status first_error;  // guarded by mu
  std::atomic<bool> failed{false};
  Pool::Group g;
  for (uint64_t i = 0; i < nparts; ++i) {
    const uint64_t off = i * part;
    const uint64_t len = std::min(part, size - off);
    pool->Submit(
        g,
        [&, i, off, len] {
          if (failed.load(std::memory_order_relaxed)) return;
          if (have[i]) {
            // Already on disk from an earlier run: its CRC, when the object
            // has one, comes from the local bytes (so they are checked too).
            Status s = want_crc ? LocalCrc(fd, tmp, alg, off, len, &crcs[i]) : Status::Ok();
            if (!s.ok()) {
              std::lock_guard l(mu);
              if (first_error.ok()) first_error = s;
              failed.store(true, std::memory_order_relaxed);
              return;
            }
            added.fetch_add(static_cast<int64_t>(len), std::memory_order_relaxed);
            AddBytes(static_cast<int64_t>(len));
            return;
          }
          uint64_t got = 0;
          uint64_t crc = 0;
          Status s = WithRetries(
              options.attempts,
              [&]() -> Status {
                ReadOptions ro;
                ro.offset = off;
                ro.length = len;
                ro.if_match = info.etag;
                STRATA_RETURN_IF_ERROR(store.Get(key, ro, [&](const char* data, size_t n) {
                  if (got + n > len) return Status::IOError("the server sent more bytes than the range asked for");
                  if (down != nullptr) down->Acquire(n);
                  STRATA_RETURN_IF_ERROR(PwriteAll(fd, data, n, off + got, tmp));
                  if (want_crc) crc = CrcUpdate(alg, crc, data, n);
                  got += n;
                  added.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
                  AddBytes(static_cast<int64_t>(n));
                  return Status::Ok();
                }));
                if (got != len) {
                  return Status::IOError(fmt::format("range at {} ended after {} of {} bytes", off, got, len));
                }
                return Status::Ok();
              },
              [&] {
                AddBytes(-static_cast<int64_t>(got));
                added.fetch_sub(static_cast<int64_t>(got), std::memory_order_relaxed);
                got = 0;
                crc = 0;
              });
          if (!s.ok()) {
            std::lock_guard l(mu);
            if (first_error.ok() || first_error.code() != StatusCode::kPreconditionFailed) {
              first_error = s;
            }
            failed.store(true, std::memory_order_relaxed);
            return;
          }
          crcs[i] = crc;
          if (journal != nullptr) {
            if (Status js = journal->MarkDone(i); !js.ok()) {
              kLog.Warn("{}; this part will be fetched again if the download is resumed",
                        js.ToString());
            }
          }
          if (options.fsync) {
            // Start writing this range to disk now, so the fsync before the
            // rename waits for the last ranges only (disk and network overlap).
            // (Without fsync this does not pay: measured on loopback, it makes
            // 4 GiB downloads no faster and sometimes slower.)
            (void)::sync_file_range(fd, static_cast<off_t>(off), static_cast<off_t>(len),
                                    SYNC_FILE_RANGE_WRITE);
          }
        },
        /*leaf=*/true);
  }
  pool->Wait(g);
  if (!first_error.ok()) {
    AddBytes(-added.load());
    if (first_error.code() == StatusCode::kPreconditionFailed) {
      return Status::PreconditionFailed(
          "source changed during download: " + Describe(store, key) +
          " was replaced after the download started (it had ETag " + info.etag +
          "); the destination was not touched, run the command again to get the new version");
    }
    return first_error;
  }
  if (want_crc) {
    uint64_t crc = crcs[0];
    for (uint64_t i = 1; i < nparts; ++i) {
      crc = CrcCombine(alg, crc, crcs[i], std::min(part, size - i * part));
    }
    if (crc != *want_crc) {
      AddBytes(-added.load());
      return Status::Corruption(fmt::format(
          "the downloaded bytes do not match the object's {} checksum {}; the destination was not "
          "touched",
          ChecksumAlgorithmName(alg), info.checksum));
    }
  }
  return info;
}

// ---------------------------------------------------------------------------
// Server-side copy

Result<ObjectInfo> TransferManager::CopyS3Object(S3Client& client, std::string_view src_bucket,
                                                 std::string_view src_key,
                                                 std::string_view dst_bucket,
                                                 std::string_view dst_key, const ObjectInfo* known) {
  Impl& I = *impl_;
  const std::string what = fmt::format("copy of s3://{}/{} to s3://{}/{}", src_bucket, src_key,
                                       dst_bucket, dst_key);
  auto src = client.OpenBucket(std::string(src_bucket));
  ObjectInfo info;
  if (known != nullptr && known->size <= I.options.multipart_threshold) {
    info = *known;
  } else {
    auto h = WithRetries(I.options.attempts, [&] { return src->Head(src_key); });
    if (!h.ok()) return h.error().WithContext(what);
    info = std::move(*h);
  }

  // Metadata given (TransferOptions::write) replaces the source's, as
  // x-amz-metadata-directive REPLACE does: the copy gets only what was given.
  const WriteOptions& given = I.options.write;
  using Directive = TransferOptions::MetadataDirective;
  const bool any_given = !given.content_type.empty() || !given.user_meta.empty() ||
                         !given.cache_control.empty() || !given.content_encoding.empty() ||
                         !given.content_disposition.empty() || !given.expires.empty();
  const bool replace = I.options.metadata_directive == Directive::kReplace ||
                       (I.options.metadata_directive == Directive::kAuto && any_given);
  if (info.size <= I.options.multipart_threshold) {
    CopyOptions co;
    co.storage_class = given.storage_class;
    co.acl = given.acl;
    co.sse = given.sse;
    co.sse_kms_key_id = given.sse_kms_key_id;
    if (replace) {
      co.new_metadata = given;
      co.new_metadata->if_none_match_star = false;
      co.new_metadata->if_match.reset();
      co.new_metadata->size.reset();
    }
    auto r = WithRetries(I.options.attempts, [&] {
      return client.CopyObject(src_bucket, src_key, dst_bucket, dst_key, co);
    });
    if (!r.ok()) return r.error().WithContext(what);
    I.AddBytes(static_cast<int64_t>(info.size));
    I.ObjectDone();
    return r;
  }

  // UploadPartCopy in parallel, every part pinned to the source's ETag.
  auto dst = client.OpenBucket(std::string(dst_bucket));
  WriteOptions w = replace ? given : MetadataOf(info);
  w.storage_class = given.storage_class;
  w.acl = given.acl;
  w.sse = given.sse;
  w.sse_kms_key_id = given.sse_kms_key_id;
  w.if_none_match_star = false;
  w.if_match.reset();
  w.size.reset();
  w.checksum = ChecksumAlgorithm::kNone;  // part copies carry no client checksum
  auto id = WithRetries(I.options.attempts, [&] { return dst->CreateMultipart(dst_key, w); });
  if (!id.ok()) return id.error().WithContext(what);
  const uint64_t size = info.size;
  const uint64_t part = EffectivePartSize(size, I.options.part_size);
  const uint64_t nparts = (size + part - 1) / part;
  std::vector<UploadedPart> parts(nparts);
  std::mutex mu;
  Status first_error;  // guarded by mu
  std::atomic<bool> failed{false};
  Pool::Group g;
  for (uint64_t i = 0; i < nparts; ++i) {
    const uint64_t off = i * part;
    const uint64_t len = std::min(part, size - off);
    I.pool->Submit(
        g,
        [&, i, off, len] {
          if (failed.load(std::memory_order_relaxed)) return;
          auto r = WithRetries(I.options.attempts, [&] {
            return client.UploadPartCopy(dst_bucket, dst_key, *id, static_cast<int>(i + 1), src_bucket,
                                         src_key, std::make_pair(off, len), info.etag);
          });
          if (!r.ok()) {
            std::lock_guard l(mu);
            if (first_error.ok()) first_error = r.error().WithContext("part " + std::to_string(i + 1));
            failed.store(true, std::memory_order_relaxed);
            return;
          }
          parts[i] = std::move(*r);
          parts[i].number = static_cast<int>(i + 1);
          if (parts[i].size == 0) parts[i].size = len;
          I.AddBytes(static_cast<int64_t>(len));
        },
        /*leaf=*/true);
  }
  I.pool->Wait(g);
  if (!first_error.ok()) {
    (void)dst->AbortMultipart(dst_key, *id);
    if (first_error.code() == StatusCode::kPreconditionFailed) {
      return Status::PreconditionFailed("source changed during copy: s3://" + std::string(src_bucket) +
                                        "/" + std::string(src_key) +
                                        " was replaced while it was being copied; run the command again");
    }
    return first_error.WithContext(what);
  }
  auto r = WithRetries(I.options.attempts, [&] { return dst->CompleteMultipart(dst_key, *id, parts); });
  if (!r.ok()) {
    (void)dst->AbortMultipart(dst_key, *id);
    return r.error().WithContext(what);
  }
  I.ObjectDone();
  return r;
}

// ---------------------------------------------------------------------------
// Copy between two services (streamed through this process)

Result<ObjectInfo> TransferManager::CopyBetweenStores(ObjectStore& src, std::string_view src_key,
                                                      ObjectStore& dst, std::string_view dst_key) {
  Impl& I = *impl_;
  const std::string what = "copy of " + Describe(src, src_key) + " to " + Describe(dst, dst_key);
  // A HEAD for the metadata a copy keeps (listings do not carry it) and the
  // ETag every range is pinned to.
  auto h = WithRetries(I.options.attempts, [&] { return src.Head(src_key); });
  if (!h.ok()) return h.error().WithContext(what);
  const ObjectInfo info = std::move(*h);
  using Directive = TransferOptions::MetadataDirective;
  const WriteOptions& given = I.options.write;
  const bool any_given = !given.content_type.empty() || !given.user_meta.empty() ||
                         !given.cache_control.empty() || !given.content_encoding.empty() ||
                         !given.content_disposition.empty() || !given.expires.empty();
  const bool replace = I.options.metadata_directive == Directive::kReplace ||
                       (I.options.metadata_directive == Directive::kAuto && any_given);
  WriteOptions w = replace ? given : MetadataOf(info);
  w.storage_class = given.storage_class;
  w.acl = given.acl;
  w.sse = given.sse;
  w.sse_kms_key_id = given.sse_kms_key_id;
  w.checksum = given.checksum;
  w.if_none_match_star = false;
  w.if_match.reset();
  w.size.reset();
  auto changed = [&](const Status& s) {
    if (s.code() != StatusCode::kPreconditionFailed) return s.WithContext(what);
    return Status::PreconditionFailed("source changed during copy: " + Describe(src, src_key) +
                                      " was replaced while it was being copied; run the command "
                                      "again");
  };
  // One limit for both directions counts each byte once, on the read.
  RateLimiter* down = I.options.download_limit.get();
  RateLimiter* up = I.options.upload_limit.get();
  if (up == down) up = nullptr;
  auto read_range = [&](uint64_t off, uint64_t len, std::string* buf) -> Status {
    buf->clear();
    ReadOptions ro;
    ro.offset = off;
    ro.length = len;
    ro.if_match = info.etag;
    STRATA_RETURN_IF_ERROR(src.Get(src_key, ro, [&](const char* d, size_t n) {
      if (down != nullptr) down->Acquire(n);
      buf->append(d, n);
      return Status::Ok();
    }));
    if (buf->size() != len) {
      return Status::IOError(
          fmt::format("range at {} ended after {} of {} bytes", off, buf->size(), len));
    }
    return Status::Ok();
  };
  if (info.size <= I.options.multipart_threshold) {
    auto r = WithRetries(I.options.attempts, [&]() -> Result<ObjectInfo> {
      std::string buf;
      STRATA_RETURN_IF_ERROR(read_range(0, info.size, &buf));
      if (up == nullptr) return dst.PutBytes(dst_key, buf, w);
      StringSource bytes(buf);
      RateLimitedSource body(bytes, up);
      WriteOptions sized = w;
      sized.size = buf.size();
      return dst.Put(dst_key, body, sized);
    });
    if (!r.ok()) return changed(r.error());
    I.AddBytes(static_cast<int64_t>(info.size));
    I.ObjectDone();
    return r;
  }
  // Parts in parallel: each a ranged GET (pinned to the ETag) into memory,
  // then an UploadPart of it; at most `concurrency` parts in memory at once.
  auto id = WithRetries(I.options.attempts, [&] { return dst.CreateMultipart(dst_key, w); });
  if (!id.ok()) return id.error().WithContext(what);
  const uint64_t part = EffectivePartSize(info.size, I.options.part_size);
  const uint64_t nparts = (info.size + part - 1) / part;
  std::vector<UploadedPart> parts(nparts);
  std::mutex mu;
  Status first_error;  // guarded by mu
  std::atomic<bool> failed{false};
  Pool::Group g;
  for (uint64_t i = 0; i < nparts; ++i) {
    const uint64_t off = i * part;
    const uint64_t len = std::min(part, info.size - off);
    I.pool->Submit(
        g,
        [&, i, off, len] {
          if (failed.load(std::memory_order_relaxed)) return;
          auto r = WithRetries(I.options.attempts, [&]() -> Result<UploadedPart> {
            std::string buf;
            STRATA_RETURN_IF_ERROR(read_range(off, len, &buf));
            StringSource bytes(buf);
            RateLimitedSource body(bytes, up);
            return dst.UploadPart(dst_key, *id, static_cast<int>(i + 1), body, len);
          });
          if (!r.ok()) {
            std::lock_guard l(mu);
            if (first_error.ok())
              first_error = r.error().WithContext("part " + std::to_string(i + 1));
            failed.store(true, std::memory_order_relaxed);
            return;
          }
          parts[i] = std::move(*r);
          parts[i].number = static_cast<int>(i + 1);
          if (parts[i].size == 0) parts[i].size = len;
          I.AddBytes(static_cast<int64_t>(len));
        },
        /*leaf=*/true);
  }
  I.pool->Wait(g);
  if (!first_error.ok()) {
    (void)dst.AbortMultipart(dst_key, *id);
    return changed(first_error);
  }
  auto r =
      WithRetries(I.options.attempts, [&] { return dst.CompleteMultipart(dst_key, *id, parts); });
  if (!r.ok()) {
    (void)dst.AbortMultipart(dst_key, *id);
    return r.error().WithContext(what);
  }
  I.ObjectDone();
  return r;
}

}  // namespace strata::objstore
