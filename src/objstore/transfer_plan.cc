// Transfer planning (transfer_plan.h): paths, patterns and filters, local
// walks, the --checksum content comparison, and the cp and sync planners that
// turn sources and listings into jobs for a TransferPlanSink.
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <set>
#include <utility>

#include <strata/core/checksum.h>
#include <strata/core/file_util.h>
#include <strata/core/strings.h>
#include <strata/objstore/transfer.h>
#include <strata/objstore/transfer_plan.h>

namespace strata::objstore {
namespace {

Result<std::string> HashFile(const std::string& path, ChecksumAlgorithm alg) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Status::FromErrno(errno, "open " + path);
  auto h = Hasher::Create(alg);
  std::vector<char> buf(1 << 20);
  for (uint64_t off = 0;;) {
    STRATA_ASSIGN_OR_RETURN(size_t n, PreadUpTo(fd.get(), buf.data(), buf.size(), off, path));
    if (n == 0) break;
    h->Update(buf.data(), n);
    off += n;
  }
  return h->Digest();
}

// The multipart ETag the file would have with this part size.
Result<std::string> MultipartEtagOf(const std::string& path, uint64_t size, uint64_t part) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Status::FromErrno(errno, "open " + path);
  std::string md5s;
  std::vector<char> buf(1 << 20);
  uint64_t off = 0, n = 0;
  while (off < size) {
    const uint64_t len = std::min(part, size - off);
    auto h = Hasher::Create(ChecksumAlgorithm::kMd5);
    for (uint64_t done = 0; done < len;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), len - done));
      STRATA_RETURN_IF_ERROR(PreadFull(fd.get(), buf.data(), want, off + done, path));
      h->Update(buf.data(), want);
      done += want;
    }
    md5s += h->Digest();
    off += len;
    ++n;
  }
  return HexEncode(Md5(md5s)) + "-" + std::to_string(n);
}

bool IsMd5Etag(const std::string& etag) {
  if (etag.size() != 32) return false;
  return std::all_of(etag.begin(), etag.end(),
                     [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)); });
}

int64_t Secs(int64_t ns) {
  return ns >= 0 ? ns / 1'000'000'000 : -((-ns + 999'999'999) / 1'000'000'000);
}

}  // namespace

// ---- Paths and patterns -----------------------------------------------------

bool HasWildcard(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

std::string_view LiteralPrefix(std::string_view pattern) {
  const size_t w = pattern.find_first_of("*?[");
  return w == std::string_view::npos ? pattern : pattern.substr(0, w);
}

bool WildcardMatch(const std::string& pattern, const std::string& s) {
  return ::fnmatch(pattern.c_str(), s.c_str(), 0) == 0;
}

bool PathFilter::Included(const std::string& rel) const {
  bool in = true;
  for (const Rule& r : rules_) {
    if (WildcardMatch(r.pattern, rel)) in = r.include;
  }
  return in;
}

std::string JoinKey(const std::string& prefix, const std::string& rel) {
  if (prefix.empty()) return rel;
  if (prefix.back() == '/') return prefix + rel;
  return prefix + "/" + rel;
}

std::string JoinPath(const std::string& dir, const std::string& rel) {
  if (dir.empty()) return rel;
  if (dir.back() == '/') return dir + rel;
  return dir + "/" + rel;
}

std::string DirPrefix(const std::string& key) {
  if (key.empty() || key.back() == '/') return key;
  return key + "/";
}

std::string BaseName(const std::string& path) {
  std::string s = path;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  const size_t slash = s.find_last_of('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

std::optional<std::string> SafeRel(const std::string& rel) {
  if (rel.empty() || rel.back() == '/' || rel.front() == '/') return std::nullopt;
  for (std::string_view part : Split(rel, '/')) {
    if (part.empty() || part == "." || part == "..") return std::nullopt;
  }
  return rel;
}

std::string S3Url(const std::string& bucket, const std::string& key) {
  return "s3://" + bucket + "/" + key;
}

// ---- Local files ------------------------------------------------------------

bool IsLocalDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<LocalFile> StatLocal(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound("\"" + path + "\" does not exist");
    return Status::FromErrno(errno, "stat " + path);
  }
  LocalFile f;
  f.path = path;
  f.size = static_cast<uint64_t>(st.st_size);
  f.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  if (S_ISDIR(st.st_mode)) return Status::InvalidArgument("\"" + path + "\" is a directory");
  if (!S_ISREG(st.st_mode))
    return Status::InvalidArgument("\"" + path + "\" is not a regular file");
  return f;
}

namespace {
Status WalkDir(const std::string& dir, const std::string& rel,
               std::set<std::pair<dev_t, ino_t>>& seen, std::vector<LocalFile>* out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Status::FromErrno(errno, "open directory " + dir);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string p = dir == "/" ? "/" + n : dir + "/" + n;
    const std::string r = rel.empty() ? n : rel + "/" + n;
    struct stat st;
    if (::stat(p.c_str(), &st) != 0) continue;  // a broken symlink, or gone meanwhile
    if (S_ISDIR(st.st_mode)) {
      if (!seen.insert({st.st_dev, st.st_ino}).second) continue;  // a symlink loop
      STRATA_RETURN_IF_ERROR(WalkDir(p, r, seen, out));
    } else if (S_ISREG(st.st_mode)) {
      // Our own temporary and partial (resumable) download files are never
      // sources.
      if (n.find(".strata-tmp-") != std::string::npos) continue;
      if (n.ends_with(".strata-partial") || n.ends_with(".strata-partial.state")) continue;
      LocalFile f;
      f.path = p;
      f.rel = r;
      f.size = static_cast<uint64_t>(st.st_size);
      f.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
      out->push_back(std::move(f));
    }
  }
  return Status::Ok();
}
}  // namespace

Status WalkLocal(const std::string& root, std::vector<LocalFile>* out) {
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound("\"" + root + "\" does not exist");
    return Status::FromErrno(errno, "stat " + root);
  }
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument("\"" + root + "\" is not a directory");
  std::set<std::pair<dev_t, ino_t>> seen{{st.st_dev, st.st_ino}};
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  const size_t before = out->size();
  STRATA_RETURN_IF_ERROR(WalkDir(r, "", seen, out));
  std::sort(out->begin() + static_cast<std::ptrdiff_t>(before), out->end(),
            [](const LocalFile& a, const LocalFile& b) { return a.rel < b.rel; });
  return Status::Ok();
}

// ---- Content comparison -------------------------------------------------------

Result<bool> SameContent(const LocalFile& f, const ObjectInfo& listed, ObjectStore& store,
                         const std::string& key, uint64_t part_size) {
  if (f.size != listed.size) return false;
  if (IsMd5Etag(listed.etag)) {
    STRATA_ASSIGN_OR_RETURN(std::string d, HashFile(f.path, ChecksumAlgorithm::kMd5));
    return HexEncode(d) == ToLower(listed.etag);
  }
  STRATA_ASSIGN_OR_RETURN(ObjectInfo h, store.Head(key));
  const ChecksumAlgorithm a = h.checksum_algorithm;
  if ((a == ChecksumAlgorithm::kCrc32 || a == ChecksumAlgorithm::kCrc32c ||
       a == ChecksumAlgorithm::kCrc64Nvme || a == ChecksumAlgorithm::kSha1 ||
       a == ChecksumAlgorithm::kSha256) &&
      !h.checksum.empty() && h.checksum.find('-') == std::string::npos) {
    STRATA_ASSIGN_OR_RETURN(std::string d, HashFile(f.path, a));
    return Base64Encode(d) == h.checksum;
  }
  const size_t dash = h.etag.rfind('-');
  if (dash == std::string::npos) return false;
  auto nparts = ParseUint64(std::string_view(h.etag).substr(dash + 1));
  if (!nparts || *nparts == 0) return false;
  std::set<uint64_t> candidates = {EffectivePartSize(f.size, part_size), 8ull << 20, 16ull << 20,
                                   5ull << 20};
  const uint64_t even = (f.size + *nparts - 1) / *nparts;
  candidates.insert((even + (1 << 20) - 1) / (1 << 20) * (1 << 20));
  for (uint64_t p : candidates) {
    if (p == 0 || (f.size + p - 1) / p != *nparts) continue;
    STRATA_ASSIGN_OR_RETURN(std::string e, MultipartEtagOf(f.path, f.size, p));
    if (e == ToLower(h.etag)) return true;
  }
  return false;
}

// ---- cp ---------------------------------------------------------------------

std::string CopyTarget::For(const std::string& rel, bool tree) const {
  const bool into = tree || many || key.empty() || key.back() == '/' || (!s3 && IsLocalDir(key));
  if (!into) return key;
  const std::string name = tree && !flatten ? rel : BaseName(rel);
  return s3 ? JoinKey(key, name) : JoinPath(key, name);
}

namespace {

TransferJob UploadJob(const LocalFile& f, const std::string& bucket, const std::string& key) {
  TransferJob j;
  j.kind = TransferJob::kUpload;
  j.local = f.path;
  j.bucket = bucket;
  j.key = key;
  j.size = f.size;
  return j;
}

// A download or copy of bucket/key to `to` (a path, or a key of dst.bucket).
TransferJob ObjectJob(const std::string& bucket, const std::string& key, const CopyTarget& dst,
                      const std::string& to) {
  TransferJob j;
  j.kind = dst.s3 ? TransferJob::kCopy : TransferJob::kDownload;
  j.bucket = bucket;
  j.key = key;
  if (dst.s3) {
    j.dst_bucket = dst.bucket;
    j.dst_key = to;
  } else {
    j.local = to;
  }
  return j;
}

// A key under a download destination that cannot be a file there.
void RejectUnsafeKey(const std::string& bucket, const ObjectInfo& o, TransferPlanSink& sink) {
  TransferJob j;
  j.kind = TransferJob::kDownload;
  j.bucket = bucket;
  j.key = o.key;
  j.size = o.size;
  sink.Reject(j,
              Status::InvalidArgument("the key cannot be a local path (empty, '.' or '..' parts)"));
}

// The files a local source names: itself if it exists, else the glob's matches.
std::optional<std::vector<std::string>> ExpandLocal(const std::string& source,
                                                    TransferPlanSink& sink) {
  std::vector<std::string> paths;
  struct stat st;
  if (::stat(source.c_str(), &st) == 0) {
    paths.push_back(source);
  } else if (HasWildcard(source)) {
    glob_t g{};
    if (::glob(source.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
    if (paths.empty()) {
      sink.Error(Status::NotFound("no local file matches \"" + source + "\""));
      return std::nullopt;
    }
  } else {
    sink.Error(Status::NotFound("\"" + source + "\" does not exist"));
    return std::nullopt;
  }
  return paths;
}

}  // namespace

void PlanCopyFromLocal(const std::string& source, bool recursive, const CopyTarget& dst,
                       const PathFilter& filter, TransferPlanSink& sink) {
  std::optional<std::vector<std::string>> paths = ExpandLocal(source, sink);
  if (!paths) return;
  const bool expanded = paths->size() > 1 || (*paths)[0] != source;
  for (const std::string& p : *paths) {
    if (IsLocalDir(p)) {
      if (!recursive) {
        sink.Error(Status::InvalidArgument("\"" + p + "\" is a directory (use --recursive)"));
        continue;
      }
      std::vector<LocalFile> files;
      if (Status w = WalkLocal(p, &files); !w.ok()) {
        sink.Error(w);
        continue;
      }
      // A globbed directory keeps its own name under DST; SRC given as is copies its contents.
      const std::string base = expanded ? BaseName(p) + "/" : "";
      for (const LocalFile& f : files) {
        if (!filter.Included(f.rel)) continue;
        sink.Transfer(UploadJob(f, dst.bucket, dst.For(base + f.rel, true)));
      }
    } else {
      auto f = StatLocal(p);
      if (!f.ok()) {
        sink.Error(f.error());
        continue;
      }
      if (expanded && !filter.Included(BaseName(p))) continue;
      sink.Transfer(
          UploadJob(*f, dst.bucket, expanded ? JoinKey(dst.key, BaseName(p)) : dst.For(p, false)));
    }
  }
}

Status PlanCopyFromStore(ObjectStore& store, const std::string& bucket, const std::string& key,
                         bool recursive, const CopyTarget& dst, const PathFilter& filter,
                         TransferPlanSink& sink) {
  const std::string where = "s3://" + bucket + (key.empty() ? "" : "/" + key);
  bool pattern = HasWildcard(key);
  if (pattern) {
    // A key that really contains * ? [ is taken literally.
    auto h = store.Head(key);
    if (h.ok()) pattern = false;
  }
  if (pattern || recursive) {
    std::string list_prefix, base;
    if (pattern) {
      list_prefix = std::string(LiteralPrefix(key));
      const size_t slash = list_prefix.find_last_of('/');
      base = slash == std::string::npos ? "" : list_prefix.substr(0, slash + 1);
    } else {
      list_prefix = base = DirPrefix(key);
    }
    uint64_t matched = 0;
    STRATA_RETURN_IF_ERROR(store.ListAll(list_prefix, [&](const ObjectInfo& o) {
      if (pattern && !WildcardMatch(key, o.key)) return Status::Ok();
      std::string rel = o.key.substr(base.size());
      if (!filter.Included(rel)) return Status::Ok();
      if (!dst.s3 && !SafeRel(rel)) {
        if (rel.empty() || rel.back() == '/') return Status::Ok();  // a "directory" marker
        RejectUnsafeKey(bucket, o, sink);
        return Status::Ok();
      }
      ++matched;
      TransferJob j = ObjectJob(bucket, o.key, dst, dst.For(rel, true));
      j.size = o.size;
      j.info = o;
      sink.Transfer(std::move(j));
      return Status::Ok();
    }));
    if (matched == 0 && pattern) {
      sink.Error(Status::NotFound("no object matches " + where));
    } else if (matched == 0 && !key.empty()) {
      sink.Error(Status::NotFound("no object under " + where));
    }
    return Status::Ok();
  }
  if (key.empty() || key.back() == '/') {
    sink.Error(Status::InvalidArgument(where + " names a prefix (use --recursive)"));
    return Status::Ok();
  }
  // One object: its size from a HEAD now, so the engine need not.
  TransferJob j = ObjectJob(bucket, key, dst, dst.For(key, false));
  auto h = store.Head(key);
  if (!h.ok()) {
    sink.Reject(j, h.error());
    return Status::Ok();
  }
  j.size = h->size;
  j.info = *h;
  sink.Transfer(std::move(j));
  return Status::Ok();
}

// ---- sync -------------------------------------------------------------------

Status ListForSync(ObjectStore& store, const std::string& prefix, const PathFilter& filter,
                   std::map<std::string, ObjectInfo>* out) {
  return store.ListAll(prefix, [&](const ObjectInfo& o) {
    std::string rel = o.key.substr(prefix.size());
    if (rel.empty() || rel.back() == '/') return Status::Ok();
    if (!filter.Included(rel)) return Status::Ok();
    (*out)[rel] = o;
    return Status::Ok();
  });
}

void PlanSyncUpload(const std::vector<LocalFile>& files,
                    const std::map<std::string, ObjectInfo>& remote, const std::string& bucket,
                    const std::string& prefix, const PathFilter& filter, const SyncOptions& options,
                    TransferPlanSink& sink) {
  std::set<std::string> seen;
  for (const LocalFile& f : files) {
    if (!filter.Included(f.rel)) continue;
    seen.insert(f.rel);
    TransferJob j = UploadJob(f, bucket, prefix + f.rel);
    if (auto it = remote.find(f.rel); it != remote.end()) {
      const ObjectInfo& o = it->second;
      if (options.compare == SyncCompare::kChecksum) {
        if (o.size == f.size) {
          j.compare_local = f;
          j.compare_remote = o;
        }
      } else if (o.size == f.size && (options.compare == SyncCompare::kSizeOnly ||
                                      Secs(f.mtime_ns) <= Secs(o.mtime_ns))) {
        continue;
      }
    }
    sink.Transfer(std::move(j));
  }
  if (!options.delete_extra) return;
  std::vector<std::string> gone;
  for (const auto& [rel, o] : remote) {
    if (!seen.count(rel)) gone.push_back(prefix + rel);
  }
  sink.DeleteObjects(bucket, std::move(gone));
}

void PlanSyncDownload(const std::map<std::string, ObjectInfo>& remote, const std::string& bucket,
                      std::vector<LocalFile> local_files, const std::string& dir,
                      const PathFilter& filter, const SyncOptions& options,
                      TransferPlanSink& sink) {
  std::map<std::string, LocalFile> local;
  for (LocalFile& f : local_files) local[f.rel] = std::move(f);
  for (const auto& [rel, o] : remote) {
    if (!SafeRel(rel)) {
      RejectUnsafeKey(bucket, o, sink);
      continue;
    }
    TransferJob j;
    j.kind = TransferJob::kDownload;
    j.bucket = bucket;
    j.key = o.key;
    j.local = JoinPath(dir, rel);
    j.size = o.size;
    j.info = o;
    if (auto it = local.find(rel); it != local.end()) {
      const LocalFile& f = it->second;
      if (options.compare == SyncCompare::kChecksum) {
        if (o.size == f.size) {
          j.compare_local = f;
          j.compare_remote = o;
        }
      } else if (o.size == f.size && (options.compare == SyncCompare::kSizeOnly ||
                                      Secs(f.mtime_ns) == Secs(o.mtime_ns))) {
        continue;
      }
    }
    sink.Transfer(std::move(j));
  }
  if (!options.delete_extra) return;
  for (const auto& [rel, f] : local) {
    if (remote.count(rel) || !filter.Included(rel)) continue;
    sink.DeleteFile(f);
  }
}

void PlanSyncCopy(const std::map<std::string, ObjectInfo>& src, const std::string& src_bucket,
                  const std::map<std::string, ObjectInfo>& dst, const std::string& dst_bucket,
                  const std::string& dst_prefix, const SyncOptions& options,
                  TransferPlanSink& sink) {
  for (const auto& [rel, o] : src) {
    if (auto it = dst.find(rel); it != dst.end()) {
      const ObjectInfo& d = it->second;
      bool same;
      if (options.compare == SyncCompare::kChecksum) {
        same = d.size == o.size && d.etag == o.etag;
      } else {
        same = d.size == o.size &&
               (options.compare == SyncCompare::kSizeOnly || Secs(o.mtime_ns) <= Secs(d.mtime_ns));
      }
      if (same) continue;
    }
    TransferJob j;
    j.kind = TransferJob::kCopy;
    j.bucket = src_bucket;
    j.key = o.key;
    j.dst_bucket = dst_bucket;
    j.dst_key = dst_prefix + rel;
    j.size = o.size;
    j.info = o;
    sink.Transfer(std::move(j));
  }
  if (!options.delete_extra) return;
  std::vector<std::string> gone;
  for (const auto& [rel, d] : dst) {
    if (!src.count(rel)) gone.push_back(dst_prefix + rel);
  }
  sink.DeleteObjects(dst_bucket, std::move(gone));
}

}  // namespace strata::objstore
