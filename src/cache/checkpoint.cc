#include <strata/cache/checkpoint.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/checksum.h>
#include <strata/core/file_util.h>
#include <strata/core/log.h>
#include <strata/core/strings.h>
#include <strata/core/thread_pool.h>
#include <strata/objstore/transfer.h>

namespace strata::cache {

using objstore::ObjectInfo;
using objstore::ObjectStore;
using objstore::TransferManager;
using objstore::TransferOptions;

namespace {

constexpr log::Logger kLog("ckpt");
constexpr std::string_view kManifest = "MANIFEST.json";
constexpr std::string_view kUploadMarker = ".upload";
constexpr std::string_view kFormat = "strata-checkpoint-v1";
constexpr uint64_t kChunk = 64ull << 20;  // unit of parallel local writes and checks

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A source file that ends early changed under us: an I/O error, not damage.
Status PreadAll(int fd, char* p, size_t n, uint64_t off, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(size_t got, PreadUpTo(fd, p, n, off, path));
  if (got < n) return Status::IOError(path + " is shorter than expected (did it change?)");
  return Status::Ok();
}

Status WriteSmallFile(const std::string& path, std::string_view data, bool fsync) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return Status::FromErrno(errno, "create " + path);
  STRATA_RETURN_IF_ERROR(WriteAll(fd.get(), data.data(), data.size(), path));
  if (fsync && ::fsync(fd.get()) != 0) return Status::FromErrno(errno, "fsync " + path);
  return Status::Ok();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string Crc32cBase64(uint32_t crc) {
  const char be[4] = {static_cast<char>(crc >> 24), static_cast<char>(crc >> 16),
                      static_cast<char>(crc >> 8), static_cast<char>(crc)};
  return Base64Encode(std::string_view(be, 4));
}

// "step-000000000042" -> 42
std::optional<uint64_t> ParseStepName(std::string_view name) {
  if (!StartsWith(name, "step-") || name.size() != 17) return std::nullopt;
  return ParseUint64(name.substr(5));
}

Status CheckItemName(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.back() == '/') {
    return Status::InvalidArgument("checkpoint item name \"" + std::string(name) +
                                   "\" must be a relative path like \"model.pt\"");
  }
  for (std::string_view part : Split(name, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return Status::InvalidArgument("checkpoint item name \"" + std::string(name) +
                                     "\" has an empty, \".\" or \"..\" component");
    }
  }
  if (name == kManifest || name == kUploadMarker) {
    return Status::InvalidArgument("\"" + std::string(name) + "\" is reserved in a checkpoint");
  }
  return Status::Ok();
}

std::string ManifestJson(uint64_t step, const std::vector<CheckpointFile>& files, bool remote) {
  nlohmann::json j;
  j["format"] = kFormat;
  j["step"] = step;
  j["created"] = FormatIso8601(NowUnixNanos());
  uint64_t total = 0;
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& f : files) {
    nlohmann::json e;
    e["name"] = f.name;
    e["size"] = f.size;
    e["crc32c"] = fmt::format("{:08x}", f.crc32c);
    if (remote) {
      if (!f.sha256.empty()) e["sha256"] = f.sha256;
      e["etag"] = f.etag;
    }
    arr.push_back(std::move(e));
    total += f.size;
  }
  j["bytes"] = total;
  j["files"] = std::move(arr);
  return j.dump(1);
}

Result<std::vector<CheckpointFile>> ParseManifest(std::string_view text, uint64_t want_step,
                                                  const std::string& where) {
  auto bad = [&](const std::string& why) {
    return Status::Corruption("checkpoint manifest " + where + " is damaged: " + why);
  };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not JSON");
  if (j.value("format", "") != kFormat) return bad("unknown format");
  if (!j.contains("step") || !j["step"].is_number_unsigned() || j["step"].get<uint64_t>() != want_step) {
    return bad("it is not step " + std::to_string(want_step) + "'s");
  }
  if (!j.contains("files") || !j["files"].is_array()) return bad("no file list");
  std::vector<CheckpointFile> files;
  for (const auto& e : j["files"]) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("size") ||
        !e["size"].is_number_unsigned() || !e.contains("crc32c") || !e["crc32c"].is_string()) {
      return bad("a file entry lacks name, size or crc32c");
    }
    CheckpointFile f;
    f.name = e["name"].get<std::string>();
    if (!CheckItemName(f.name).ok()) return bad("bad file name \"" + f.name + "\"");
    f.size = e["size"].get<uint64_t>();
    const std::string crc = e["crc32c"].get<std::string>();
    auto raw = HexDecode(crc);
    if (!raw || raw->size() != 4) return bad("bad crc32c \"" + crc + "\"");
    f.crc32c = (static_cast<uint32_t>(static_cast<uint8_t>((*raw)[0])) << 24) |
               (static_cast<uint32_t>(static_cast<uint8_t>((*raw)[1])) << 16) |
               (static_cast<uint32_t>(static_cast<uint8_t>((*raw)[2])) << 8) |
               static_cast<uint32_t>(static_cast<uint8_t>((*raw)[3]));
    f.sha256 = e.value("sha256", "");
    f.etag = e.value("etag", "");
    files.push_back(std::move(f));
  }
  return files;
}

uint64_t TotalBytes(const std::vector<CheckpointFile>& files) {
  uint64_t t = 0;
  for (const auto& f : files) t += f.size;
  return t;
}

}  // namespace

std::string CheckpointManager::StepName(uint64_t step) { return fmt::format("step-{:012d}", step); }

struct CheckpointManager::Impl {
  CheckpointOptions options;
  std::vector<std::string> report;
  std::unique_ptr<ThreadPool> io_pool;          // local writes and checks
  std::unique_ptr<TransferManager> uploader;    // used by the upload thread only

  std::mutex mu;
  std::mutex clean_mu;  // one CleanLocal at a time (save and upload threads both call it)
  std::condition_variable cv;          // with mu: queue/busy changed, stop
  std::deque<uint64_t> queue;          // guarded by mu; steps to upload
  std::optional<uint64_t> busy;        // guarded by mu; step being uploaded
  Status first_error;                  // guarded by mu; since the last Wait
  bool stop = false;                   // guarded by mu
  CheckpointStats stats;               // guarded by mu
  std::map<uint64_t, Clock::time_point> saved_at;  // guarded by mu
  std::thread upload_thread;

  std::string LocalPath(uint64_t step) const { return options.local_dir + "/" + StepName(step); }
  std::string RemoteKey(uint64_t step, std::string_view name) const {
    return options.prefix + StepName(step) + "/" + std::string(name);
  }

  // ---- local writing ------------------------------------------------------

  // Writes one item to path in kChunk pieces on the io pool (pwrite, CRC32C
  // per piece, combined in order); returns its size and CRC.
  Result<CheckpointFile> WriteItem(const CheckpointItem& item, const std::string& path) {
    CheckpointFile f;
    f.name = item.name;
    UniqueFd src(item.is_file ? ::open(item.path.c_str(), O_RDONLY | O_CLOEXEC) : -1);
    if (item.is_file) {
      if (src.get() < 0) return Status::FromErrno(errno, "open checkpoint input " + item.path);
      struct stat st;
      if (::fstat(src.get(), &st) != 0) return Status::FromErrno(errno, "stat " + item.path);
      if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(item.path + " is not a regular file");
      f.size = static_cast<uint64_t>(st.st_size);
    } else {
      f.size = item.data.size();
    }
    const std::string parent = path.substr(0, path.rfind('/'));
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) return Status::IOError("create " + parent + ": " + ec.message());
    UniqueFd dst(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (dst.get() < 0) return Status::FromErrno(errno, "create " + path);
    const uint64_t nchunks = std::max<uint64_t>(1, (f.size + kChunk - 1) / kChunk);
    std::vector<uint32_t> crcs(nchunks, 0);
    TaskGroup group(io_pool.get());
    for (uint64_t c = 0; c < nchunks; ++c) {
      group.Submit([&, c]() -> Status {
        const uint64_t off = c * kChunk;
        const uint64_t len = std::min(kChunk, f.size - std::min(f.size, off));
        if (len == 0) return Status::Ok();
        if (item.is_file) {
          std::string buf(len, '\0');
          STRATA_RETURN_IF_ERROR(PreadAll(src.get(), buf.data(), len, off, item.path));
          crcs[c] = Crc32c(0, buf.data(), len);
          return PwriteAll(dst.get(), buf.data(), len, off, path);
        }
        crcs[c] = Crc32c(0, item.data.data() + off, len);
        return PwriteAll(dst.get(), item.data.data() + off, len, off, path);
      });
    }
    STRATA_RETURN_IF_ERROR(group.Wait());
    uint32_t crc = 0;
    for (uint64_t c = 0; c < nchunks; ++c) {
      const uint64_t off = c * kChunk;
      const uint64_t len = std::min(kChunk, f.size - std::min(f.size, off));
      crc = c == 0 ? crcs[0] : Crc32cCombine(crc, crcs[c], len);
    }
    f.crc32c = crc;
    if (options.fsync && ::fsync(dst.get()) != 0) return Status::FromErrno(errno, "fsync " + path);
    return f;
  }

  // CRC32C of a local file, in kChunk pieces on the io pool.
  Result<uint32_t> FileCrc(const std::string& path, uint64_t size) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return Status::FromErrno(errno, "open " + path);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
    if (static_cast<uint64_t>(st.st_size) != size) {
      return Status::Corruption(fmt::format("{} is {} bytes, its manifest says {}", path,
                                            st.st_size, size));
    }
    const uint64_t nchunks = std::max<uint64_t>(1, (size + kChunk - 1) / kChunk);
    std::vector<uint32_t> crcs(nchunks, 0);
    TaskGroup group(io_pool.get());
    for (uint64_t c = 0; c < nchunks; ++c) {
      group.Submit([&, c]() -> Status {
        const uint64_t off = c * kChunk;
        const uint64_t len = std::min(kChunk, size - std::min(size, off));
        if (len == 0) return Status::Ok();
        std::string buf(std::min<uint64_t>(len, 8ull << 20), '\0');
        uint32_t crc = 0;
        for (uint64_t done = 0; done < len;) {
          const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), len - done));
          STRATA_RETURN_IF_ERROR(PreadAll(fd.get(), buf.data(), n, off + done, path));
          crc = Crc32c(crc, buf.data(), n);
          done += n;
        }
        crcs[c] = crc;
        return Status::Ok();
      });
    }
    STRATA_RETURN_IF_ERROR(group.Wait());
    uint32_t crc = 0;
    for (uint64_t c = 0; c < nchunks; ++c) {
      const uint64_t off = c * kChunk;
      const uint64_t len = std::min(kChunk, size - std::min(size, off));
      crc = c == 0 ? crcs[0] : Crc32cCombine(crc, crcs[c], len);
    }
    return crc;
  }

  Status VerifyLocal(const std::string& dir, const std::vector<CheckpointFile>& files) {
    for (const auto& f : files) {
      STRATA_ASSIGN_OR_RETURN(uint32_t crc, FileCrc(dir + "/" + f.name, f.size));
      if (crc != f.crc32c) {
        return Status::Corruption(fmt::format("{}/{}: CRC32C {:08x}, its manifest says {:08x}", dir,
                                              f.name, crc, f.crc32c));
      }
    }
    return Status::Ok();
  }

  Result<std::vector<CheckpointFile>> LocalManifest(uint64_t step) {
    const std::string path = LocalPath(step) + "/" + std::string(kManifest);
    STRATA_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
    return ParseManifest(text, step, path);
  }

  // Complete local checkpoints (with a manifest), ascending.
  std::vector<uint64_t> LocalSteps() {
    std::vector<uint64_t> steps;
    DIR* d = ::opendir(options.local_dir.c_str());
    if (d == nullptr) return steps;
    while (struct dirent* de = ::readdir(d)) {
      auto step = ParseStepName(de->d_name);
      if (step && Exists(LocalPath(*step) + "/" + std::string(kManifest))) steps.push_back(*step);
    }
    ::closedir(d);
    std::sort(steps.begin(), steps.end());
    return steps;
  }

  bool UploadPending(uint64_t step) {
    return Exists(LocalPath(step) + "/" + std::string(kUploadMarker));
  }

  // Keeps the newest keep_local complete local checkpoints; one still
  // uploading is never deleted (it may be the only copy).
  void CleanLocal() {
    if (options.keep_local <= 0) return;
    std::lock_guard<std::mutex> clean_lock(clean_mu);
    std::vector<uint64_t> steps = LocalSteps();
    size_t count = steps.size();
    for (uint64_t s : steps) {
      if (count <= static_cast<size_t>(options.keep_local)) break;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (busy == s || std::find(queue.begin(), queue.end(), s) != queue.end()) continue;
      }
      if (UploadPending(s)) continue;
      std::error_code ec;
      std::filesystem::remove_all(LocalPath(s), ec);
      if (ec) {
        kLog.Warn("cannot remove old checkpoint {}: {}", LocalPath(s), ec.message());
        continue;
      }
      --count;
    }
  }

  // ---- remote ---------------------------------------------------------------

  // Steps with anything stored under PREFIX/step-N/, ascending.
  Result<std::vector<uint64_t>> RemoteStepDirs() {
    std::vector<uint64_t> steps;
    std::string token;
    do {
      STRATA_ASSIGN_OR_RETURN(auto page, options.store->List(options.prefix, "/", token));
      for (const auto& p : page.common_prefixes) {
        std::string_view name = p;
        if (StartsWith(name, options.prefix)) name.remove_prefix(options.prefix.size());
        if (!name.empty() && name.back() == '/') name.remove_suffix(1);
        if (auto s = ParseStepName(name)) steps.push_back(*s);
      }
      token = page.next_token;
    } while (!token.empty());
    std::sort(steps.begin(), steps.end());
    return steps;
  }

  Result<std::vector<CheckpointFile>> RemoteManifest(uint64_t step) {
    const std::string key = RemoteKey(step, kManifest);
    auto text = options.store->GetBytes(key);
    if (!text.ok()) return text.error();
    return ParseManifest(*text, step, options.store->url() + " " + key);
  }

  Status DeleteRemote(uint64_t step) {
    // The manifest first: from this moment the checkpoint is not visible.
    STRATA_RETURN_IF_ERROR(options.store->Delete(RemoteKey(step, kManifest)));
    std::vector<std::string> keys;
    STRATA_RETURN_IF_ERROR(options.store->ListAll(
        options.prefix + StepName(step) + "/", [&](const ObjectInfo& o) {
          keys.push_back(o.key);
          return Status::Ok();
        }));
    for (size_t i = 0; i < keys.size(); i += 1000) {
      std::vector<std::string> batch(keys.begin() + i, keys.begin() + std::min(keys.size(), i + 1000));
      STRATA_ASSIGN_OR_RETURN(auto results, options.store->DeleteMany(batch));
      for (const auto& st : results) STRATA_RETURN_IF_ERROR(st);
    }
    return Status::Ok();
  }

  void CleanRemote() {
    if (options.keep_remote <= 0 || options.store == nullptr) return;
    auto dirs = RemoteStepDirs();
    if (!dirs.ok()) {
      kLog.Warn("keep_remote: cannot list {}: {}", options.store->url(), dirs.error().ToString());
      return;
    }
    std::vector<uint64_t> published;
    for (uint64_t s : *dirs) {
      if (options.store->Head(RemoteKey(s, kManifest)).ok()) published.push_back(s);
    }
    while (published.size() > static_cast<size_t>(options.keep_remote)) {
      const uint64_t s = published.front();
      published.erase(published.begin());
      if (Status st = DeleteRemote(s); !st.ok()) {
        kLog.Warn("keep_remote: cannot delete step {}: {}", s, st.ToString());
      }
    }
  }

  // ---- upload -------------------------------------------------------------

  Status Upload(uint64_t step) {
    const std::string dir = LocalPath(step);
    STRATA_ASSIGN_OR_RETURN(std::vector<CheckpointFile> files, LocalManifest(step));
    std::vector<Status> results(files.size());
    std::vector<std::string> sha(files.size());
    std::atomic<uint64_t> bytes{0};
    for (size_t i = 0; i < files.size(); ++i) {
      uploader->Run([&, i] {
        auto r = uploader->UploadFile(dir + "/" + files[i].name, *options.store,
                                      RemoteKey(step, files[i].name));
        if (!r.ok()) {
          results[i] = r.error();
          return;
        }
        if (r->size != files[i].size) {
          results[i] = Status::Corruption(fmt::format("uploaded {} has {} bytes, not {}",
                                                      files[i].name, r->size, files[i].size));
          return;
        }
        files[i].etag = r->etag;
        bytes += r->size;
      });
      if (options.sha256) {
        // SHA-256 is CPU work; it overlaps the (I/O-bound) part uploads.
        uploader->Run([&, i] {
          auto h = Hasher::Create(ChecksumAlgorithm::kSha256);
          UniqueFd fd(::open((dir + "/" + files[i].name).c_str(), O_RDONLY | O_CLOEXEC));
          if (fd.get() < 0) return;
          std::string buf(8 << 20, '\0');
          for (;;) {
            ssize_t n = ::read(fd.get(), buf.data(), buf.size());
            if (n <= 0) break;
            h->Update(buf.data(), static_cast<size_t>(n));
          }
          sha[i] = HexEncode(h->Digest());
        });
      }
    }
    uploader->Wait();
    for (size_t i = 0; i < files.size(); ++i) {
      if (!results[i].ok()) {
        return results[i].WithContext("upload of checkpoint step " + std::to_string(step));
      }
      files[i].sha256 = sha[i];
    }
    // Every file is stored: publish. This PUT is what makes the checkpoint exist.
    objstore::WriteOptions wo;
    wo.content_type = "application/json";
    STRATA_RETURN_IF_ERROR(
        options.store->PutBytes(RemoteKey(step, kManifest), ManifestJson(step, files, true), wo)
            .status()
            .WithContext("publishing checkpoint step " + std::to_string(step)));
    const std::string marker = dir + "/" + std::string(kUploadMarker);
    if (::unlink(marker.c_str()) != 0 && errno != ENOENT) {
      return Status::FromErrno(errno, "remove " + marker);
    }
    if (options.fsync) (void)FsyncDir(dir);
    std::lock_guard<std::mutex> lock(mu);
    stats.bytes_uploaded += bytes.load();
    return Status::Ok();
  }

  void UploadLoop() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;  // stop, nothing left
      const uint64_t step = queue.front();
      queue.pop_front();
      busy = step;
      lock.unlock();
      const auto start = Clock::now();
      Status st = Upload(step);
      if (st.ok()) {
        CleanRemote();
        CleanLocal();
        kLog.Info("checkpoint step {} published ({:.2f} s)", step, Since(start));
      } else {
        kLog.Warn("checkpoint step {} not published: {}", step, st.ToString());
      }
      lock.lock();
      busy.reset();
      if (st.ok()) {
        ++stats.uploads;
        auto it = saved_at.find(step);
        if (it != saved_at.end()) {
          stats.last_upload_seconds = Since(it->second);
          saved_at.erase(it);
        }
      } else {
        ++stats.upload_failures;
        if (first_error.ok()) first_error = st;
      }
      cv.notify_all();
    }
  }

  void Enqueue(uint64_t step) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (busy == step || std::find(queue.begin(), queue.end(), step) != queue.end()) return;
      queue.push_back(step);
    }
    cv.notify_all();
  }

  Status Recover() {
    DIR* d = ::opendir(options.local_dir.c_str());
    if (d == nullptr) return Status::FromErrno(errno, "open checkpoint directory " + options.local_dir);
    std::vector<std::string> names;
    while (struct dirent* de = ::readdir(d)) names.emplace_back(de->d_name);
    ::closedir(d);
    std::sort(names.begin(), names.end());
    std::set<uint64_t> pending;
    for (const auto& name : names) {
      const std::string path = options.local_dir + "/" + name;
      if (StartsWith(name, ".step-")) {
        // A Save or a download that did not finish: never visible, drop it.
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
        report.push_back(fmt::format("removed {} (a save or download interrupted by a crash)", name));
        continue;
      }
      auto step = ParseStepName(name);
      if (!step) continue;
      if (!Exists(path + "/" + std::string(kManifest))) {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
        report.push_back(fmt::format("removed {}: no manifest", name));
        continue;
      }
      if (UploadPending(*step)) {
        pending.insert(*step);
        if (options.store != nullptr && options.resume) {
          report.push_back(fmt::format("step {}: upload interrupted, resuming it", *step));
          Enqueue(*step);
        } else {
          report.push_back(fmt::format(
              "step {}: upload interrupted; it is complete locally but not published (open with "
              "resume to upload it)",
              *step));
        }
      }
    }
    if (options.store != nullptr) {
      auto dirs = RemoteStepDirs();
      if (!dirs.ok()) {
        report.push_back("cannot list remote checkpoints: " + dirs.error().ToString());
      } else {
        for (uint64_t s : *dirs) {
          if (pending.count(s)) continue;
          auto h = options.store->Head(RemoteKey(s, kManifest));
          if (!h.ok() && h.error().IsNotFound()) {
            report.push_back(fmt::format(
                "remote step {} has files but no manifest: never published (a crashed upload "
                "whose local copy is gone); `strata ckpt rm --remote {}` deletes them",
                s, s));
          }
        }
      }
    }
    for (const auto& line : report) kLog.Info("{}", line);
    return Status::Ok();
  }

  // Downloads the remote checkpoint into local_dir and returns its files.
  Result<std::vector<CheckpointFile>> Download(uint64_t step, int concurrency) {
    STRATA_ASSIGN_OR_RETURN(std::vector<CheckpointFile> files, RemoteManifest(step));
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    const std::string tmp = fmt::format("{}/.{}.download-{:08x}", options.local_dir,
                                        StepName(step), rng() & 0xffffffffu);
    TransferOptions to;
    to.concurrency = std::max(1, concurrency);
    to.part_size = options.part_size;
    // One stream: one GET per file, one file at a time.
    to.multipart_threshold = concurrency <= 1 ? UINT64_MAX : options.part_size;
    to.attempts = options.attempts;
    to.fsync = options.fsync;
    to.preserve_mtime = false;
    // Each download goes to a fresh directory, removed on failure: no
    // partial file could ever be resumed.
    to.resume = false;
    TransferManager dl(to);
    std::vector<Status> results(files.size());
    auto fetch = [&](size_t i) {
      ObjectInfo known;
      known.key = RemoteKey(step, files[i].name);
      known.size = files[i].size;
      known.etag = files[i].etag;
      known.checksum_algorithm = ChecksumAlgorithm::kCrc32c;
      known.checksum = Crc32cBase64(files[i].crc32c);
      auto r = dl.DownloadFile(*options.store, known.key, tmp + "/" + files[i].name,
                               files[i].etag.empty() ? nullptr : &known);
      if (!r.ok()) results[i] = r.error();
    };
    for (size_t i = 0; i < files.size(); ++i) {
      if (concurrency <= 1) fetch(i);
      else dl.Run([&, i] { fetch(i); });
    }
    dl.Wait();
    auto cleanup = [&] {
      std::error_code ec;
      std::filesystem::remove_all(tmp, ec);
    };
    for (const auto& st : results) {
      if (!st.ok()) {
        cleanup();
        return st.WithContext("download of checkpoint step " + std::to_string(step));
      }
    }
    if (files.empty()) std::filesystem::create_directories(tmp);
    if (Status st = VerifyLocal(tmp, files); !st.ok()) {
      cleanup();
      return st.WithContext("downloaded checkpoint step " + std::to_string(step));
    }
    Status st = WriteSmallFile(tmp + "/" + std::string(kManifest), ManifestJson(step, files, true),
                               options.fsync);
    if (st.ok() && options.fsync) st = FsyncDir(tmp);
    if (!st.ok()) {
      cleanup();
      return st;
    }
    const std::string final_path = LocalPath(step);
    std::error_code ec;
    std::filesystem::remove_all(final_path, ec);
    if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
      const Status err = Status::FromErrno(errno, "rename " + tmp + " to " + final_path);
      cleanup();
      return err;
    }
    if (options.fsync) (void)FsyncDir(options.local_dir);
    return files;
  }
};

namespace {

// Files and bytes under `dir` (a partial save), recursively, without following links.
void DiskUsage(const std::string& dir, uint64_t* files, uint64_t* bytes) {
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code fec;
    if (it->is_regular_file(fec)) {
      ++*files;
      *bytes += it->file_size(fec);
    }
  }
}

int64_t MtimeUs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000 + st.st_mtim.tv_nsec / 1000;
}

// A step-N directory: its manifest, then every file's size.
LocalCheckpointEntry ScanStepDir(const std::string& dir, uint64_t step) {
  using State = LocalCheckpointEntry::State;
  LocalCheckpointEntry e;
  e.step = step;
  const std::string mpath = dir + "/" + std::string(kManifest);
  auto text = ReadFileToString(mpath);
  if (!text.ok()) {
    DiskUsage(dir, &e.files, &e.bytes);
    e.state = State::kPartial;
    e.note = "no MANIFEST.json: not a complete checkpoint (the next `strata ckpt` removes it)";
    return e;
  }
  auto files = ParseManifest(*text, step, mpath);
  if (!files.ok()) {
    e.state = State::kDamaged;
    e.note = files.error().message();
    return e;
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_object()) e.created = j.value("created", "");
  e.files = files->size();
  e.bytes = TotalBytes(*files);
  e.upload_pending = Exists(dir + "/" + std::string(kUploadMarker));
  e.state = State::kComplete;
  for (const auto& f : *files) {
    struct stat st;
    if (::stat((dir + "/" + f.name).c_str(), &st) != 0) {
      e.state = State::kDamaged;
      e.note = fmt::format("{} is missing", f.name);
      break;
    }
    if (static_cast<uint64_t>(st.st_size) != f.size) {
      e.state = State::kDamaged;
      e.note = fmt::format("{} has {} bytes, the manifest says {}", f.name, st.st_size, f.size);
      break;
    }
  }
  return e;
}

}  // namespace

const char* LocalCheckpointStateName(LocalCheckpointEntry::State s) {
  switch (s) {
    case LocalCheckpointEntry::State::kComplete:
      return "complete";
    case LocalCheckpointEntry::State::kPartial:
      return "partial";
    case LocalCheckpointEntry::State::kDamaged:
      return "damaged";
  }
  return "partial";
}

Result<std::vector<LocalCheckpointEntry>> ScanLocalCheckpoints(const std::string& local_dir) {
  DIR* d = ::opendir(local_dir.c_str());
  if (d == nullptr) return Status::FromErrno(errno, "open checkpoint directory " + local_dir);
  std::vector<std::string> names;
  while (struct dirent* de = ::readdir(d)) names.emplace_back(de->d_name);
  ::closedir(d);
  std::vector<LocalCheckpointEntry> out;
  for (const auto& name : names) {
    const std::string path = local_dir + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    std::optional<uint64_t> step = ParseStepName(name);
    const bool in_progress = !step && StartsWith(name, ".step-") && name.size() > 18;
    if (in_progress) step = ParseStepName(std::string_view(name).substr(1, 17));
    if (!step) continue;
    LocalCheckpointEntry e;
    if (in_progress) {
      e.step = *step;
      e.state = LocalCheckpointEntry::State::kPartial;
      DiskUsage(path, &e.files, &e.bytes);
      e.note =
          "a save or download in progress (or cut off by a crash: the next `strata ckpt` "
          "removes it)";
    } else {
      e = ScanStepDir(path, *step);
    }
    e.name = name;
    e.mtime_us = MtimeUs(st);
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.step != b.step ? a.step > b.step : a.name < b.name;
  });
  return out;
}

CheckpointManager::CheckpointManager(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<CheckpointManager>> CheckpointManager::Open(CheckpointOptions options) {
  if (options.local_dir.empty()) {
    return Status::InvalidArgument("a checkpoint manager needs a local directory");
  }
  while (options.local_dir.size() > 1 && options.local_dir.back() == '/') options.local_dir.pop_back();
  if (!options.prefix.empty() && options.prefix.back() != '/') options.prefix += '/';
  std::error_code ec;
  std::filesystem::create_directories(options.local_dir, ec);
  if (ec) return Status::IOError("create " + options.local_dir + ": " + ec.message());
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  const CheckpointOptions& o = impl->options;
  impl->io_pool = std::make_unique<ThreadPool>(static_cast<size_t>(std::max(1, o.write_threads)));
  if (o.store != nullptr) {
    TransferOptions to;
    to.concurrency = std::max(1, o.upload_concurrency);
    to.part_size = o.part_size;
    to.multipart_threshold = o.multipart_threshold;
    to.attempts = std::max(1, o.attempts);
    to.resume = true;
    to.state_dir = o.local_dir + "/.transfer-state";
    to.write.checksum = ChecksumAlgorithm::kCrc32c;
    impl->uploader = std::make_unique<TransferManager>(to);
  }
  STRATA_RETURN_IF_ERROR(impl->Recover());
  if (o.store != nullptr) {
    Impl* raw = impl.get();
    impl->upload_thread = std::thread([raw] { raw->UploadLoop(); });
  }
  return std::unique_ptr<CheckpointManager>(new CheckpointManager(std::move(impl)));
}

CheckpointManager::~CheckpointManager() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->upload_thread.joinable()) impl_->upload_thread.join();
}

Status CheckpointManager::Save(uint64_t step, const std::vector<CheckpointItem>& items) {
  Impl& im = *impl_;
  const auto start = Clock::now();
  const std::string final_path = im.LocalPath(step);
  if (Exists(final_path)) {
    return Status::AlreadyExists("checkpoint step " + std::to_string(step) + " already exists in " +
                                 im.options.local_dir);
  }
  std::set<std::string> names;
  for (const auto& it : items) {
    STRATA_RETURN_IF_ERROR(CheckItemName(it.name));
    if (!names.insert(it.name).second) {
      return Status::InvalidArgument("checkpoint item \"" + it.name + "\" is given twice");
    }
  }
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::string partial = fmt::format("{}/.{}.partial-{:08x}", im.options.local_dir,
                                          StepName(step), rng() & 0xffffffffu);
  std::error_code ec;
  std::filesystem::create_directories(partial, ec);
  if (ec) return Status::IOError("create " + partial + ": " + ec.message());
  auto fail = [&](const Status& st) {
    std::error_code ec2;
    std::filesystem::remove_all(partial, ec2);
    return st.WithContext("saving checkpoint step " + std::to_string(step));
  };
  std::vector<CheckpointFile> files;
  std::set<std::string> subdirs;
  for (const auto& it : items) {
    auto f = im.WriteItem(it, partial + "/" + it.name);
    if (!f.ok()) return fail(f.error());
    files.push_back(std::move(*f));
    for (size_t p = it.name.find('/'); p != std::string::npos; p = it.name.find('/', p + 1)) {
      subdirs.insert(it.name.substr(0, p));
    }
  }
  Status st = WriteSmallFile(partial + "/" + std::string(kManifest), ManifestJson(step, files, false),
                             im.options.fsync);
  if (st.ok() && im.options.store != nullptr) {
    st = WriteSmallFile(partial + "/" + std::string(kUploadMarker), "pending\n", im.options.fsync);
  }
  if (st.ok() && im.options.fsync) {
    for (auto sd = subdirs.rbegin(); st.ok() && sd != subdirs.rend(); ++sd) {
      st = FsyncDir(partial + "/" + *sd);
    }
    if (st.ok()) st = FsyncDir(partial);
  }
  if (!st.ok()) return fail(st);
  if (::rename(partial.c_str(), final_path.c_str()) != 0) {
    return fail(Status::FromErrno(errno, "rename " + partial + " to " + final_path));
  }
  if (im.options.fsync) {
    if (Status s = FsyncDir(im.options.local_dir); !s.ok()) return fail(s);
  }
  {
    std::lock_guard<std::mutex> lock(im.mu);
    ++im.stats.saves;
    im.stats.last_save_seconds = Since(start);
    if (im.options.store != nullptr) im.saved_at[step] = Clock::now();
  }
  if (im.options.store != nullptr) im.Enqueue(step);
  im.CleanLocal();
  return Status::Ok();
}

Status CheckpointManager::Wait() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->queue.empty() && !impl_->busy; });
  Status st = impl_->first_error;
  impl_->first_error = Status::Ok();
  return st;
}

Status CheckpointManager::Retry() {
  if (impl_->options.store == nullptr) {
    return Status::InvalidArgument("this checkpoint manager has no object store to upload to");
  }
  for (uint64_t s : impl_->LocalSteps()) {
    if (impl_->UploadPending(s)) impl_->Enqueue(s);
  }
  return Status::Ok();
}

Result<std::vector<CheckpointInfo>> CheckpointManager::List(bool remote) {
  Impl& im = *impl_;
  std::map<uint64_t, CheckpointInfo> all;
  for (uint64_t s : im.LocalSteps()) {
    auto files = im.LocalManifest(s);
    if (!files.ok()) continue;
    CheckpointInfo& c = all[s];
    c.step = s;
    c.local = true;
    c.uploading = im.UploadPending(s);
    c.bytes = TotalBytes(*files);
    c.files = std::move(*files);
  }
  if (remote && im.options.store != nullptr) {
    STRATA_ASSIGN_OR_RETURN(auto dirs, im.RemoteStepDirs());
    for (uint64_t s : dirs) {
      auto files = im.RemoteManifest(s);
      if (!files.ok()) {
        if (files.error().IsNotFound()) continue;  // not published (yet)
        return files.error();
      }
      CheckpointInfo& c = all[s];
      c.step = s;
      c.remote = true;
      c.bytes = TotalBytes(*files);
      c.files = std::move(*files);  // the remote manifest has SHA-256 and ETags
    }
  }
  std::vector<CheckpointInfo> out;
  for (auto& [s, c] : all) out.push_back(std::move(c));
  return out;
}

Result<std::optional<uint64_t>> CheckpointManager::Latest() {
  STRATA_ASSIGN_OR_RETURN(auto all, List());
  if (all.empty()) return std::optional<uint64_t>();
  return std::optional<uint64_t>(all.back().step);
}

Result<LoadedCheckpoint> CheckpointManager::Load(uint64_t step, const LoadOptions& options) {
  Impl& im = *impl_;
  LoadedCheckpoint out;
  out.step = step;
  out.dir = im.LocalPath(step);
  const bool has_local = Exists(out.dir + "/" + std::string(kManifest));
  if (has_local && options.source != LoadOptions::Source::kRemote) {
    auto files = im.LocalManifest(step);
    Status st = files.ok() ? im.VerifyLocal(out.dir, *files) : files.error();
    if (st.ok()) {
      out.files = std::move(*files);
      return out;
    }
    if (options.source == LoadOptions::Source::kLocal || im.options.store == nullptr) return st;
    kLog.Warn("local checkpoint step {} is damaged ({}); loading the remote copy", step,
              st.ToString());
    {
      std::lock_guard<std::mutex> lock(im.mu);
      if (im.busy == step) {
        return st.WithContext("and its upload is in progress, so it cannot be replaced");
      }
    }
  } else if (options.source == LoadOptions::Source::kLocal || im.options.store == nullptr) {
    return Status::NotFound("checkpoint step " + std::to_string(step) + " is not in " +
                            im.options.local_dir);
  }
  {
    std::lock_guard<std::mutex> lock(im.mu);
    if (im.busy == step || std::find(im.queue.begin(), im.queue.end(), step) != im.queue.end()) {
      return Status::Unavailable("checkpoint step " + std::to_string(step) +
                                 " is still being uploaded; Wait() first");
    }
  }
  auto files = im.Download(step, options.download_concurrency);
  if (!files.ok()) {
    if (files.error().IsNotFound()) {
      return Status::NotFound("checkpoint step " + std::to_string(step) + " is neither in " +
                              im.options.local_dir + " nor published in " +
                              im.options.store->url() + " (" + files.error().message() + ")");
    }
    return files.error();
  }
  out.files = std::move(*files);
  out.from_remote = true;
  return out;
}

Result<std::string> CheckpointManager::ReadFile(uint64_t step, std::string_view name) {
  STRATA_ASSIGN_OR_RETURN(LoadedCheckpoint ck, Load(step));
  for (const auto& f : ck.files) {
    if (f.name == name) return ReadFileToString(ck.PathOf(name));
  }
  return Status::NotFound("checkpoint step " + std::to_string(step) + " has no \"" +
                          std::string(name) + "\"");
}

Status CheckpointManager::Remove(uint64_t step, bool local, bool remote, bool force) {
  Impl& im = *impl_;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    if (im.busy == step) {
      return Status::Unavailable("checkpoint step " + std::to_string(step) +
                                 " is being uploaded right now; Wait() first");
    }
    if (local) {
      auto it = std::find(im.queue.begin(), im.queue.end(), step);
      if (it != im.queue.end()) {
        if (!force) {
          return Status::PreconditionFailed("checkpoint step " + std::to_string(step) +
                                            " is not uploaded yet; removing it locally would lose "
                                            "it (use force)");
        }
        im.queue.erase(it);
      }
    }
  }
  if (remote) {
    if (im.options.store == nullptr) {
      return Status::InvalidArgument("this checkpoint manager has no object store");
    }
    STRATA_RETURN_IF_ERROR(im.DeleteRemote(step));
  }
  if (local) {
    const std::string path = im.LocalPath(step);
    if (im.UploadPending(step) && !force) {
      return Status::PreconditionFailed("checkpoint step " + std::to_string(step) +
                                        " is not uploaded yet; removing it locally would lose it "
                                        "(use force)");
    }
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return Status::IOError("remove " + path + ": " + ec.message());
  }
  return Status::Ok();
}

const std::vector<std::string>& CheckpointManager::recovery_report() const {
  return impl_->report;
}

CheckpointStats CheckpointManager::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

const CheckpointOptions& CheckpointManager::options() const { return impl_->options; }

}  // namespace strata::cache
