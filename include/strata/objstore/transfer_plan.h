// Transfer planning: what `strata cp` and `strata sync` copy and delete.
//
// The planners expand the sources (local files, directories and globs; object
// keys, prefixes and wildcards), apply awscli's --exclude/--include filters,
// compare source and destination (size and mtime, size only, or content) and
// hand each decision to a TransferPlanSink, in the order a user sees them
// reported. They move no bytes themselves: the caller runs the jobs (on a
// TransferManager, transfer.h) and reports them.
//
// Paths: object keys use '/', local paths are as given; a "relative path"
// (rel) is a file's path under the walked directory or a key under the listed
// prefix. Patterns are fnmatch(3) wildcards (* ? [...]); '*' also matches '/'
// (as s5cmd).
//
// Thread-safety: the functions are reentrant; a PathFilter may be shared once
// built. The sink is called from the calling thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/core/status.h>
#include <strata/objstore/object_store.h>

namespace strata::objstore {

// ---- Paths and patterns -----------------------------------------------------

bool HasWildcard(std::string_view s);
// The part of a pattern before its first wildcard.
std::string_view LiteralPrefix(std::string_view pattern);
// '*' also matches '/'.
bool WildcardMatch(const std::string& pattern, const std::string& s);

// awscli's --exclude/--include: every path is included, then each rule in
// command-line order decides for the paths it matches (the last match wins).
class PathFilter {
 public:
  void Add(bool include, std::string pattern) { rules_.push_back({include, std::move(pattern)}); }
  bool empty() const { return rules_.empty(); }
  bool Included(const std::string& rel) const;

 private:
  struct Rule {
    bool include;
    std::string pattern;
  };
  std::vector<Rule> rules_;
};

// prefix + rel with one '/' between ("" prefix: rel).
std::string JoinKey(const std::string& prefix, const std::string& rel);
// dir + rel with one '/' between ("" dir: rel).
std::string JoinPath(const std::string& dir, const std::string& rel);
// "a/b" -> "a/b/"; "" and "a/" stay.
std::string DirPrefix(const std::string& key);
// The last path component ("a/b/" -> "b").
std::string BaseName(const std::string& path);
// rel when it can be a file under a destination directory; nullopt for keys
// that cannot ("a/", "/a", "../x", "a//b", "a/./b").
std::optional<std::string> SafeRel(const std::string& rel);
// "s3://bucket/key".
std::string S3Url(const std::string& bucket, const std::string& key);

// ---- Local files ------------------------------------------------------------

// One regular file.
struct LocalFile {
  std::string path;  // as opened
  std::string rel;   // relative to the walked root, '/'-separated ("" from StatLocal)
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};
// Whether path is a directory (following symlinks).
bool IsLocalDir(const std::string& path);
// Every regular file under root (symlinks followed, loops skipped, our own
// temporary download files left out), appended to *out sorted by rel.
Status WalkLocal(const std::string& root, std::vector<LocalFile>* out);
// The regular file at path (kNotFound, or kInvalidArgument for a directory or
// anything else).
Result<LocalFile> StatLocal(const std::string& path);

// ---- Content comparison (sync --checksum) ---------------------------------

// Whether the local file holds the object's bytes: MD5 against a single-part
// ETag, else the stored full-object checksum (a HEAD of key in store), else the
// multipart ETag recomputed with the likely part sizes (part_size among them).
// Unknown counts as different.
Result<bool> SameContent(const LocalFile& file, const ObjectInfo& listed, ObjectStore& store,
                         const std::string& key, uint64_t part_size);

// ---- Jobs and the sink ----------------------------------------------------------

// One object to move.
struct TransferJob {
  enum Kind { kUpload, kDownload, kCopy };
  Kind kind = kUpload;
  std::string local;                // upload source / download destination
  std::string bucket, key;          // the S3 side (copy: the source)
  std::string dst_bucket, dst_key;  // copy destination
  uint64_t size = 0;
  std::optional<ObjectInfo> info;  // the source object, from a listing or a HEAD
  // sync --checksum: transfer only if SameContent(compare_local,
  // compare_remote) says the two differ.
  std::optional<LocalFile> compare_local;
  std::optional<ObjectInfo> compare_remote;
};

class TransferPlanSink {
 public:
  virtual ~TransferPlanSink() = default;
  // Move this object.
  virtual void Transfer(TransferJob job) = 0;
  // This object cannot be moved: report it as failed (job says what it was).
  virtual void Reject(const TransferJob& job, const Status& why) = 0;
  // A problem not tied to one object (a source that does not exist, a pattern
  // that matches nothing).
  virtual void Error(const Status& status) = 0;
  // sync --delete, once every transfer before it is done: these keys of
  // bucket, or this local file.
  virtual void DeleteObjects(const std::string& bucket, std::vector<std::string> keys) = 0;
  virtual void DeleteFile(const LocalFile& file) = 0;
};

// ---- cp ---------------------------------------------------------------------

// Where cp puts what it copies.
struct CopyTarget {
  bool s3 = false;
  std::string bucket;  // s3 only
  std::string key;     // s3: the key or prefix; local: the path
  bool many = false;   // more than one source was given
  bool flatten = false;  // s5cmd's --flatten: trees land by base name only
  // Where the file or object `rel` goes: under DST (keeping rel when tree and
  // not flatten, else its base name) when tree, many, DST ends in '/' or is an existing
  // local directory; else DST itself.
  std::string For(const std::string& rel, bool tree) const;
};

// A local source: a file, a directory (with recursive; a directory given as
// is copies its contents, one a glob matched keeps its name) or a glob.
void PlanCopyFromLocal(const std::string& source, bool recursive, const CopyTarget& dst,
                       const PathFilter& filter, TransferPlanSink& sink);

// An object source in store (the bucket `bucket`): one key, every object
// under a prefix (recursive), or the keys matching a wildcard pattern (a key
// that really contains * ? [ is taken literally). Returns the listing's error;
// everything else goes to the sink.
Status PlanCopyFromStore(ObjectStore& store, const std::string& bucket, const std::string& key,
                         bool recursive, const CopyTarget& dst, const PathFilter& filter,
                         TransferPlanSink& sink);

// ---- sync -------------------------------------------------------------------

enum class SyncCompare {
  // Copied when missing, sizes differ, or (upload and copy) the source is
  // newer, (download) the mtimes differ, in whole seconds.
  kSizeAndMtime,
  kSizeOnly,  // --size-only
  // --checksum: uploads and downloads of equal size become jobs with
  // compare_local/compare_remote set; copies compare ETags.
  kChecksum,
};

struct SyncOptions {
  SyncCompare compare = SyncCompare::kSizeAndMtime;
  bool delete_extra = false;  // --delete: remove what DST has and SRC has not
};

// The objects under prefix by relative path, directory markers ("", "x/")
// and paths the filter excludes left out.
Status ListForSync(ObjectStore& store, const std::string& prefix, const PathFilter& filter,
                   std::map<std::string, ObjectInfo>* out);

// Local directory -> bucket/prefix ("" or ending in '/'): files are the walk
// of the directory, remote the ListForSync of the destination.
void PlanSyncUpload(const std::vector<LocalFile>& files,
                    const std::map<std::string, ObjectInfo>& remote, const std::string& bucket,
                    const std::string& prefix, const PathFilter& filter, const SyncOptions& options,
                    TransferPlanSink& sink);

// bucket -> local directory `dir`: remote the ListForSync of the source,
// local the walk of dir (empty when it does not exist).
void PlanSyncDownload(const std::map<std::string, ObjectInfo>& remote, const std::string& bucket,
                      std::vector<LocalFile> local, const std::string& dir,
                      const PathFilter& filter, const SyncOptions& options, TransferPlanSink& sink);

// Server-side: src_bucket -> dst_bucket/dst_prefix ("" or ending in '/').
void PlanSyncCopy(const std::map<std::string, ObjectInfo>& src, const std::string& src_bucket,
                  const std::map<std::string, ObjectInfo>& dst, const std::string& dst_bucket,
                  const std::string& dst_prefix, const SyncOptions& options,
                  TransferPlanSink& sink);

}  // namespace strata::objstore
