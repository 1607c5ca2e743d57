// strata ls | cp | mv | sync | rm | cat | head | presign | mb | rb | du — transfers against any S3
// endpoint, on the parallel engine of objstore/transfer.h.
#include "cli/transfer_cmds.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/checksum.h>
#include <strata/core/strings.h>
#include <strata/objstore/object_store.h>
#include <strata/objstore/s3_client.h>
#include <strata/objstore/transfer.h>
#include <strata/objstore/transfer_plan.h>

#include "cli/exit_codes.h"
#include "cli/transfer_session.h"
#include "cli/transfer_util.h"

namespace strata::cli::transfer {
namespace {

// ---------------------------------------------------------------------------
// Jobs: what the planners (objstore/transfer_plan.h) decide, run on the
// engine's pool and reported when done.

// s5cmd's --no-clobber, --if-size-differ, --if-source-newer: whether an
// existing destination is overwritten.
struct OverwritePolicy {
  bool no_clobber = false;
  bool if_size_differ = false;
  bool if_source_newer = false;
  bool any() const { return no_clobber || if_size_differ || if_source_newer; }
};

class Runner final : public objstore::TransferPlanSink {
 public:
  // move: each source is deleted once its copy succeeded (strata mv).
  Runner(Session& s, Reporter& r, bool dryrun, bool move = false, OverwritePolicy overwrite = {})
      : s_(s), r_(r), dryrun_(dryrun), move_(move), overwrite_(overwrite) {}

  void Transfer(TransferJob j) override { Submit(std::move(j)); }

  void Reject(const TransferJob& j, const Status& why) override {
    Describe(j, [&](std::string_view op, const std::string& src, const std::string& dst) {
      r_.Object(op, src, dst, j.size, s_.Explain(why), 0);
    });
  }

  void Error(const Status& st) override { r_.Error(st); }

  void DeleteObjects(const std::string& bucket, std::vector<std::string> keys) override {
    Wait();
    SubmitDeletes(bucket, std::move(keys));
  }

  void DeleteFile(const LocalFile& f) override {
    Wait();
    if (dryrun_) {
      r_.Note("delete", f.path, "", f.size);
      return;
    }
    Status st;
    if (::unlink(f.path.c_str()) != 0) st = Status::FromErrno(errno, "delete " + f.path);
    r_.Object("delete", f.path, "", f.size, st, 0);
  }

  // cp/mv --max-age/--min-age: sources outside the ages are left out, as
  // rclone's filters (nothing reported).
  void set_age_filter(AgeFilter f) { age_ = f; }
  // cp/mv --flatten: two sources landing on one destination is an error.
  void set_flatten(bool f) { flatten_ = f; }

  void Submit(TransferJob j) {
    if (age_.any() && !AgeIncluded(j)) return;
    if (flatten_) {
      const std::string dst = j.kind == TransferJob::kUpload ? S3Url(j.bucket, j.key)
                              : j.kind == TransferJob::kCopy ? S3Url(j.dst_bucket, j.dst_key)
                                                             : j.local;
      if (!flat_dsts_.insert(dst).second) {
        Reject(j, Status::AlreadyExists("--flatten: another source already lands on " + dst));
        return;
      }
    }
    if (move_ && j.kind == TransferJob::kCopy && !s_.has_source_endpoint() &&
        j.bucket == j.dst_bucket && j.key == j.dst_key) {
      // Copying onto itself and then deleting the source would lose the object.
      Reject(j, Status::InvalidArgument("source and destination are the same object"));
      return;
    }
    if (dryrun_ && !j.compare_local && !overwrite_.any()) {
      Describe(j, [&](std::string_view op, const std::string& src, const std::string& dst) {
        r_.Note(op, src, dst, j.size);
      });
      return;
    }
    // With an overwrite policy the total is added once the job is not skipped.
    if (!j.compare_local && !overwrite_.any()) s_.mgr().AddTotal(j.size, 1);
    s_.mgr().Run([this, j = std::move(j)] { Execute(j); });
  }

  // Deletes keys in batches of 1,000 (DeleteObjects), batches in parallel.
  void SubmitDeletes(const std::string& bucket, std::vector<std::string> keys) {
    if (keys.empty()) return;
    if (dryrun_) {
      for (const auto& k : keys) r_.Note("delete", S3Url(bucket, k), "", 0);
      return;
    }
    s_.mgr().AddTotal(0, keys.size());
    for (size_t i = 0; i < keys.size(); i += 1000) {
      std::vector<std::string> batch(keys.begin() + static_cast<std::ptrdiff_t>(i),
                                     keys.begin() + static_cast<std::ptrdiff_t>(std::min(keys.size(), i + 1000)));
      s_.mgr().Run([this, bucket, batch = std::move(batch)] {
        const auto t0 = Clock::now();
        auto store = s_.Bucket(bucket);
        Result<std::vector<Status>> r = store.ok() ? (*store)->DeleteMany(batch) : Result<std::vector<Status>>(store.error());
        for (size_t k = 0; k < batch.size(); ++k) {
          Status st = !r.ok() ? r.error() : (k < r->size() ? (*r)[k] : Status::Ok());
          r_.Object("delete", S3Url(bucket, batch[k]), "", 0, s_.Explain(st), Since(t0));
        }
      });
    }
  }

  void Wait() { s_.mgr().Wait(); }

 private:
  template <class F>
  void Describe(const TransferJob& j, F&& f) {
    switch (j.kind) {
      case TransferJob::kUpload:
        f(move_ ? "move" : "upload", j.local, S3Url(j.bucket, j.key));
        break;
      case TransferJob::kDownload:
        f(move_ ? "move" : "download", S3Url(j.bucket, j.key), j.local);
        break;
      case TransferJob::kCopy:
        f(move_ ? "move" : "copy", S3Url(j.bucket, j.key), S3Url(j.dst_bucket, j.dst_key));
        break;
    }
  }

  // mv: the copy, then the source deleted only while it is still what was
  // copied: a local file of unchanged size and mtime, an object of the ETag
  // that was copied (a conditional DeleteObject). A source that changed is
  // kept and reported (kPreconditionFailed); its copy stays.
  Status Move(const TransferJob& j) {
    if (j.kind == TransferJob::kUpload) return MoveFile(j);
    TransferJob pinned = j;
    std::string etag;
    if (j.kind == TransferJob::kDownload) {
      STRATA_ASSIGN_OR_RETURN(ObjectStore * store, s_.Bucket(j.bucket));
      STRATA_ASSIGN_OR_RETURN(ObjectInfo got, s_.mgr().DownloadFile(*store, j.key, j.local,
                                                                    j.info ? &*j.info : nullptr));
      etag = got.etag;
    } else {
      if (!pinned.info) {
        STRATA_ASSIGN_OR_RETURN(ObjectStore * store, s_.SourceBucket(j.bucket));
        STRATA_ASSIGN_OR_RETURN(ObjectInfo head, store->Head(j.key));
        pinned.info = std::move(head);
      }
      STRATA_RETURN_IF_ERROR(RunJob(pinned, s_));
      etag = pinned.info->etag;
    }
    STRATA_ASSIGN_OR_RETURN(S3Client * c, s_.SourceClient());
    Status d = c->DeleteObject(j.bucket, j.key,
                               etag.empty() ? std::nullopt : std::optional<std::string>(etag));
    if (d.code() == StatusCode::kPreconditionFailed) {
      return Status::PreconditionFailed(S3Url(j.bucket, j.key) +
                                        " changed after it was copied; the source was kept");
    }
    return d.WithContext("copied, but the source was not deleted");
  }

  Status MoveFile(const TransferJob& j) {
    struct stat before {};
    if (::stat(j.local.c_str(), &before) != 0) return Status::FromErrno(errno, "stat " + j.local);
    STRATA_RETURN_IF_ERROR(RunJob(j, s_));
    struct stat after {};
    if (::stat(j.local.c_str(), &after) != 0 || after.st_size != before.st_size ||
        after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
        after.st_mtim.tv_nsec != before.st_mtim.tv_nsec) {
      return Status::PreconditionFailed(j.local +
                                        " changed while it was uploaded; the source was kept");
    }
    if (::unlink(j.local.c_str()) != 0) {
      return Status::FromErrno(errno, "delete " + j.local)
          .WithContext("copied, but the source was not deleted");
    }
    return Status::Ok();
  }

  struct Side {
    bool exists = false;
    uint64_t size = 0;
    int64_t mtime_ns = 0;
  };

  Result<Side> LocalSide(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return Side{};
      return Status::FromErrno(errno, "stat " + path);
    }
    return Side{true, static_cast<uint64_t>(st.st_size),
                int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec};
  }

  Result<Side> ObjectSide(const std::string& bucket, const std::string& key,
                          const std::optional<ObjectInfo>& known) {
    if (known) return Side{true, known->size, known->mtime_ns};
    STRATA_ASSIGN_OR_RETURN(ObjectStore * store, s_.Bucket(bucket));
    auto h = store->Head(key);
    if (!h.ok() && h.error().code() == StatusCode::kNotFound) return Side{};
    if (!h.ok()) return h.error().WithContext("HEAD " + S3Url(bucket, key));
    return Side{true, h->size, h->mtime_ns};
  }

  // Why j is skipped under overwrite_ ("" = it is not). s5cmd's rule: a
  // missing destination is always written; else each flag given decides in
  // turn (--no-clobber, then --if-size-differ, then --if-source-newer) and the
  // last one decides. Times compare in whole seconds (S3's resolution).
  Result<std::string> SkipReason(const TransferJob& j) {
    Result<Side> src = Status::Internal("unset"), dst = Status::Internal("unset");
    switch (j.kind) {
      case TransferJob::kUpload:
        dst = ObjectSide(j.bucket, j.key, std::nullopt);
        if (dst.ok() && dst->exists) src = LocalSide(j.local);
        break;
      case TransferJob::kDownload:
        dst = LocalSide(j.local);
        if (dst.ok() && dst->exists) src = ObjectSide(j.bucket, j.key, j.info);
        break;
      case TransferJob::kCopy:
        dst = ObjectSide(j.dst_bucket, j.dst_key, std::nullopt);
        if (dst.ok() && dst->exists) src = ObjectSide(j.bucket, j.key, j.info);
        break;
    }
    if (!dst.ok()) return dst.error();
    if (!dst->exists) return std::string();
    if (!src.ok()) return src.error();
    std::string why;
    if (overwrite_.no_clobber) why = "destination exists (--no-clobber)";
    if (overwrite_.if_size_differ) {
      why = src->size == dst->size ? "same size (--if-size-differ)" : "";
    }
    if (overwrite_.if_source_newer) {
      const bool newer = src->mtime_ns / 1'000'000'000 > dst->mtime_ns / 1'000'000'000;
      why = newer ? "" : "source is not newer (--if-source-newer)";
    }
    return why;
  }

  void Execute(const TransferJob& j) {
    const auto t0 = Clock::now();
    Status st;
    bool skipped = false;
    if (overwrite_.any()) {
      auto why = SkipReason(j);
      if (!why.ok()) {
        st = why.error();
      } else if (!why->empty()) {
        Describe(j, [&](std::string_view op, const std::string& src, const std::string& dst) {
          r_.Skip(op, src, dst, j.size, *why);
        });
        return;
      } else if (dryrun_ && !j.compare_local) {
        Describe(j, [&](std::string_view op, const std::string& src, const std::string& dst) {
          r_.Note(op, src, dst, j.size);
        });
        return;
      }
      if (st.ok() && !j.compare_local) s_.mgr().AddTotal(j.size, 1);
    }
    if (j.compare_local) {
      // sync --checksum: hash first (on the pool), transfer only if different.
      auto store = s_.Bucket(j.bucket);
      if (!store.ok()) {
        st = store.error();
      } else {
        auto same = objstore::SameContent(*j.compare_local, *j.compare_remote, **store, j.key,
                                          s_.topts().part_size);
        if (!same.ok()) {
          st = same.error();
        } else if (*same) {
          skipped = true;
        } else if (dryrun_) {
          Describe(j, [&](std::string_view op, const std::string& src, const std::string& dst) {
            r_.Note(op, src, dst, j.size);
          });
          skipped = true;
        }
      }
      if (skipped) return;
      s_.mgr().AddTotal(j.size, 1);
    }
    if (st.ok()) st = move_ ? Move(j) : RunJob(j, s_);
    st = s_.Explain(st);
    if (!st.ok()) s_.mgr().CountFailure();
    Describe(j, [&](std::string_view op, const std::string& src, const std::string& dst) {
      r_.Object(op, src, dst, j.size, st, Since(t0));
    });
  }

  static Status RunJob(const TransferJob& j, Session& s) {
    switch (j.kind) {
      case TransferJob::kUpload: {
        STRATA_ASSIGN_OR_RETURN(ObjectStore * store, s.Bucket(j.bucket));
        return s.mgr().UploadFile(j.local, *store, j.key).error();
      }
      case TransferJob::kDownload: {
        STRATA_ASSIGN_OR_RETURN(ObjectStore * store, s.Bucket(j.bucket));
        return s.mgr().DownloadFile(*store, j.key, j.local, j.info ? &*j.info : nullptr).error();
      }
      case TransferJob::kCopy: {
        if (s.has_source_endpoint()) {
          // Two services: the bytes stream through this process.
          STRATA_ASSIGN_OR_RETURN(ObjectStore * from, s.SourceBucket(j.bucket));
          STRATA_ASSIGN_OR_RETURN(ObjectStore * to, s.Bucket(j.dst_bucket));
          return s.mgr().CopyBetweenStores(*from, j.key, *to, j.dst_key).error();
        }
        STRATA_ASSIGN_OR_RETURN(S3Client * c, s.Client());
        return s.mgr().CopyS3Object(*c, j.bucket, j.key, j.dst_bucket, j.dst_key, j.info ? &*j.info : nullptr).error();
      }
    }
    return Status::Internal("unknown job");
  }

  bool AgeIncluded(const TransferJob& j) {
    int64_t mtime = 0;
    if (j.kind == TransferJob::kUpload) {
      struct stat st {};
      if (::stat(j.local.c_str(), &st) != 0) return true;  // the upload reports the error
      mtime = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
    } else if (j.info) {
      mtime = j.info->mtime_ns;
    } else {
      auto store = s_.Bucket(j.bucket);
      if (!store.ok()) return true;
      auto h = (*store)->Head(j.key);
      if (!h.ok()) return true;
      mtime = h->mtime_ns;
    }
    return age_.Included(mtime);
  }

  Session& s_;
  Reporter& r_;
  bool dryrun_;
  bool move_;
  OverwritePolicy overwrite_;
  AgeFilter age_;
  bool flatten_ = false;
  std::set<std::string> flat_dsts_;  // planning thread only
};

Reporter::Options ReporterOptions(const Common& c) {
  Reporter::Options o;
  o.json = c.json;
  o.quiet = c.quiet;
  o.progress = !c.no_progress;
  return o;
}

// ---------------------------------------------------------------------------
// cp

// What uploads and server-side copies store with each object (cp, mv, sync).
struct ObjectArgs {
  std::string content_type;
  std::vector<std::string> metadata;  // KEY=VALUE
  std::string cache_control, expires, content_encoding, content_disposition;
  std::string storage_class, acl;
  std::string sse, sse_kms_key_id;  // --sse AES256|aws:kms, --sse-kms-key-id
  std::string metadata_directive;   // COPY | REPLACE ("" = awscli's rule)
  std::string checksum_algorithm = "CRC32C";

  // The first flag given, for "--X applies to uploads" messages ("" = none).
  std::string FirstGiven() const {
    const std::pair<const char*, bool> flags[] = {
        {"--content-type", !content_type.empty()},
        {"--metadata", !metadata.empty()},
        {"--cache-control", !cache_control.empty()},
        {"--expires", !expires.empty()},
        {"--content-encoding", !content_encoding.empty()},
        {"--content-disposition", !content_disposition.empty()},
        {"--storage-class", !storage_class.empty()},
        {"--acl", !acl.empty()},
        {"--sse", !sse.empty()},
        {"--sse-kms-key-id", !sse_kms_key_id.empty()},
        {"--metadata-directive", !metadata_directive.empty()}};
    for (const auto& [name, given] : flags) {
      if (given) return name;
    }
    return "";
  }
};

// The WriteOptions of ObjectArgs (kInvalidArgument says which flag is wrong).
Result<objstore::WriteOptions> BuildWriteOptions(const ObjectArgs& a) {
  objstore::WriteOptions w;
  w.checksum = ParseChecksumAlgorithm(a.checksum_algorithm);
  if (w.checksum == ChecksumAlgorithm::kNone && !IEquals(a.checksum_algorithm, "none")) {
    return Status::InvalidArgument(
        "--checksum-algorithm must be CRC32, CRC32C, CRC64NVME, SHA1, SHA256 or NONE");
  }
  w.content_type = a.content_type;
  for (const std::string& kv : a.metadata) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::InvalidArgument("--metadata \"" + kv + "\" is not KEY=VALUE");
    w.user_meta[ToLower(kv.substr(0, eq))] = kv.substr(eq + 1);
  }
  w.cache_control = a.cache_control;
  w.content_encoding = a.content_encoding;
  w.content_disposition = a.content_disposition;
  if (!a.expires.empty()) {
    // awscli and s5cmd take a timestamp; HTTP sends Expires as an HTTP-date.
    auto t = ParseIso8601(a.expires);
    if (!t) t = ParseHttpDate(a.expires);
    if (!t) {
      return Status::InvalidArgument("--expires \"" + a.expires +
                                     "\" is not a time (e.g. 2030-01-02T03:04:05Z)");
    }
    w.expires = FormatHttpDate(*t);
  }
  // Passed as given: the server says which classes and ACLs it offers.
  w.storage_class = a.storage_class;
  w.acl = a.acl;
  // Passed on as given (AES256, aws:kms, aws:kms:dsse): the server refuses
  // what it does not offer, and the object fails with its message.
  w.sse = a.sse;
  w.sse_kms_key_id = a.sse_kms_key_id;
  if (!a.sse_kms_key_id.empty() && a.sse.rfind("aws:kms", 0) != 0) {
    return Status::InvalidArgument("--sse-kms-key-id needs --sse aws:kms");
  }
  if (!a.metadata_directive.empty()) {
    if (!IEquals(a.metadata_directive, "COPY") && !IEquals(a.metadata_directive, "REPLACE")) {
      return Status::InvalidArgument("--metadata-directive must be COPY or REPLACE");
    }
    const bool copy = IEquals(a.metadata_directive, "COPY");
    if (copy &&
        (!w.content_type.empty() || !w.user_meta.empty() || !w.cache_control.empty() ||
         !w.expires.empty() || !w.content_encoding.empty() || !w.content_disposition.empty())) {
      return Status::InvalidArgument(
          "--metadata-directive COPY keeps the source's metadata: it cannot be combined with "
          "--content-type, --metadata, --cache-control, --expires, --content-encoding or "
          "--content-disposition");
    }
  }
  return w;
}

// --metadata-directive: set on the session's options; only for S3 -> S3.
Status ApplyMetadataDirective(const ObjectArgs& a, bool s3_to_s3, Session& s) {
  if (a.metadata_directive.empty()) return Status::Ok();
  if (!s3_to_s3) {
    return Status::InvalidArgument(
        "--metadata-directive applies to S3 -> S3 copies (uploads always send the metadata "
        "given)");
  }
  s.options_before_init().metadata_directive = IEquals(a.metadata_directive, "COPY")
                                                   ? TransferOptions::MetadataDirective::kCopy
                                                   : TransferOptions::MetadataDirective::kReplace;
  return Status::Ok();
}

// --sse and --sse-c-key exclude each other (S3 refuses both on one request).
Status CheckSse(const ObjectArgs& a, const Common& c) {
  if (!a.sse.empty() && !c.sse_c_key.empty()) {
    return Status::InvalidArgument("--sse and --sse-c-key exclude each other");
  }
  return Status::Ok();
}

void AddObjectOptions(CLI::App* sub, ObjectArgs& a) {
  auto* g = sub->add_option_group("Object", "What uploads and copies store with each object");
  g->add_option("--content-type", a.content_type, "Content-Type of uploaded objects");
  g->add_option("--metadata", a.metadata,
                "User metadata KEY=VALUE of uploaded objects (repeatable)")
      ->allow_extra_args(false);
  g->add_option("--cache-control", a.cache_control, "Cache-Control header, e.g. \"max-age=3600\"");
  g->add_option("--expires", a.expires,
                "Expires header, as a time: 2030-01-02T03:04:05Z (sent as an HTTP date)");
  g->add_option("--content-encoding", a.content_encoding, "Content-Encoding header, e.g. gzip");
  g->add_option("--content-disposition", a.content_disposition,
                "Content-Disposition header, e.g. \"attachment; filename=a.csv\"");
  g->add_option("--storage-class", a.storage_class,
                "x-amz-storage-class: STANDARD, STANDARD_IA, ONEZONE_IA, INTELLIGENT_TIERING, "
                "GLACIER_IR, REDUCED_REDUNDANCY, ... (a class the server lacks is an error)");
  g->add_option("--acl", a.acl,
                "Canned ACL (x-amz-acl): private, public-read, public-read-write, "
                "authenticated-read, bucket-owner-read, bucket-owner-full-control");
  g->add_option("--sse", a.sse,
                "Server-side encryption (x-amz-server-side-encryption): AES256 (SSE-S3) or aws:kms "
                "(SSE-KMS)");
  g->add_option("--sse-kms-key-id", a.sse_kms_key_id,
                "The KMS key of --sse aws:kms (x-amz-server-side-encryption-aws-kms-key-id)");
  g->add_option("--metadata-directive", a.metadata_directive,
                "S3 -> S3 copies: COPY the source's metadata or REPLACE it with the flags given "
                "(default: REPLACE when a metadata flag is given, else COPY)");
  g->add_option(
       "--checksum-algorithm", a.checksum_algorithm,
       "Checksum the server verifies on upload: CRC32, CRC32C, CRC64NVME, SHA1, SHA256, NONE")
      ->capture_default_str();
  // Metadata given to an S3 -> S3 copy replaces the source's (awscli's REPLACE).
}

struct CpArgs {
  std::vector<std::string> paths;  // SRC... DST
  bool recursive = false;
  ObjectArgs object;
  OverwritePolicy overwrite;
  bool flatten = false;  // s5cmd: objects land under DST by base name
};

// A source that reads stdin (cp - s3://...): not rewindable, so the S3 client
// sends it as a multipart upload of in-memory parts.
class StdinSource final : public objstore::ByteSource {
 public:
  Result<size_t> Read(char* buf, size_t n) override {
    for (;;) {
      ssize_t r = ::read(STDIN_FILENO, buf, n);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Status::FromErrno(errno, "read stdin");
      return static_cast<size_t>(r);
    }
  }
};

// *closed is set when the reader of stdout went away (EPIPE: `| head`).
// `limit` (--bwlimit) paces the reads.
Status StreamToStdout(ObjectStore& store, const std::string& key, bool* closed = nullptr,
                      objstore::RateLimiter* limit = nullptr) {
  auto write_failed = [&] {
    if (errno == EPIPE && closed != nullptr) *closed = true;
    return Status::FromErrno(errno, "write to stdout");
  };
  Status s = store.Get(key, {}, [&](const char* data, size_t n) {
    if (limit != nullptr) limit->Acquire(n);
    if (std::fwrite(data, 1, n, stdout) != n) return write_failed();
    return Status::Ok();
  });
  if (std::fflush(stdout) != 0 && s.ok()) return write_failed();
  return s;
}

// cp, and mv (move): the same planning and engine; mv deletes each source
// after its copy succeeded.
int CmdCp(Common& c, CpArgs& a, const CLI::App* sub, bool move = false) {
  const char* cmd = move ? "mv" : "cp";
  if (a.paths.size() < 2) return Usage(cmd, std::string(cmd) + " needs a source and a destination");
  auto w_r = BuildWriteOptions(a.object);
  if (!w_r.ok()) return Usage(cmd, w_r.error().message());
  objstore::WriteOptions w = std::move(*w_r);
  if (Status st = CheckSse(a.object, c); !st.ok()) return Usage(cmd, st.message());
  auto age = BuildAgeFilter(c);
  if (!age.ok()) return Usage(cmd, age.error().message());
  Session s(c);
  auto filters_r = BuildFilters(c, sub);
  if (!filters_r.ok()) return Usage(cmd, filters_r.error().message());
  const PathFilter filters = std::move(*filters_r);
  std::vector<std::string> srcs(a.paths.begin(), a.paths.end() - 1);
  auto dst_r = ParseLocation(a.paths.back());
  if (!dst_r.ok()) return Usage(cmd, dst_r.error().message());
  const Location dst = *dst_r;
  std::vector<Location> src_locs;
  for (const std::string& p : srcs) {
    auto l = ParseLocation(p);
    if (!l.ok()) return Usage(cmd, l.error().message());
    if (!l->s3 && !dst.s3) {
      return Usage(
          cmd,
          fmt::format(
              "one of SRC and DST must be an s3:// location (use your shell's {} for local files)",
              cmd));
    }
    src_locs.push_back(*l);
  }
  const bool many = srcs.size() > 1;
  const bool s3_to_s3 = dst.s3 && std::all_of(src_locs.begin(), src_locs.end(),
                                              [](const Location& l) { return l.s3; });
  if (Status st = ApplyMetadataDirective(a.object, s3_to_s3, s); !st.ok()) {
    return Usage(cmd, st.message());
  }
  if (Status st = s.Init(true, &w); !st.ok()) return Usage(cmd, st.message());
  if (!c.source_endpoint_url.empty() && !s3_to_s3) {
    return Usage(cmd, "--source-endpoint-url applies to S3 -> S3 copies (both SRC and DST s3://)");
  }
  if (move) {
    const bool dash = !dst.s3 && dst.key == "-";
    for (const Location& l : src_locs) {
      if (!l.s3 && l.key == "-") return Usage(cmd, "mv cannot move stdin (use cp - s3://...)");
    }
    if (dash) return Usage(cmd, "mv cannot move to stdout (use cp or cat)");
  }
  if (dst.key == "-" && !dst.s3 && (many || a.recursive))
    return Usage(cmd, "only one object can be written to stdout");
  if (!dst.s3) {
    // Never accepted and dropped: these describe objects written to S3.
    if (std::string f = a.object.FirstGiven(); !f.empty())
      return Usage(cmd, f + " applies to uploads and copies to s3://, not to local destinations");
  }
  const bool from_stdin = src_locs.size() == 1 && !src_locs[0].s3 && src_locs[0].key == "-";
  if (a.overwrite.any() && !dst.s3 && dst.key == "-") {
    return Usage(cmd,
                 "--no-clobber, --if-size-differ and --if-source-newer need a destination "
                 "that can exist, not stdout");
  }
  if (from_stdin && (a.overwrite.if_size_differ || a.overwrite.if_source_newer)) {
    return Usage(cmd, "--if-size-differ and --if-source-newer cannot compare stdin");
  }

  // stdin / stdout: one object, streamed.
  if (from_stdin) {
    if (!dst.s3 || dst.key.empty() || dst.key.back() == '/') {
      return Usage(cmd, "cp - needs a full s3://BUCKET/KEY destination");
    }
    auto store = s.Bucket(dst.bucket);
    if (!store.ok()) return Fail(store.error(), cmd, c.json);
    StdinSource in;
    // --no-clobber: the server refuses to replace (If-None-Match: *), so no
    // race between a check and the write.
    w.if_none_match_star = a.overwrite.no_clobber;
    objstore::RateLimitedStream limited(in, s.topts().upload_limit.get());
    auto r = (*store)->Put(dst.key, limited, w);
    if (!r.ok() && a.overwrite.no_clobber && r.error().code() == StatusCode::kPreconditionFailed) {
      Reporter rep(ReporterOptions(c), nullptr);
      rep.Skip("upload", "-", dst.str(), 0, "destination exists (--no-clobber)");
      return rep.Finish(cmd);
    }
    if (!r.ok()) return Fail(s.Explain(r.error()), cmd, c.json);
    return kExitOk;
  }
  if (!dst.s3 && dst.key == "-") {
    const Location& src = src_locs[0];
    if (!src.s3 || HasWildcard(src.key))
      return Usage(cmd, "cp SRC - needs one s3://BUCKET/KEY source");
    auto store = s.Bucket(src.bucket);
    if (!store.ok()) return Fail(store.error(), cmd, c.json);
    Status st = StreamToStdout(**store, src.key, nullptr, s.topts().download_limit.get());
    if (!st.ok()) return Fail(s.Explain(st), cmd, c.json);
    return kExitOk;
  }

  Reporter rep(ReporterOptions(c), s.mgr_ptr());
  Runner run(s, rep, c.dryrun, move, a.overwrite);
  run.set_age_filter(*age);
  run.set_flatten(a.flatten);
  objstore::CopyTarget target;
  target.flatten = a.flatten;
  target.s3 = dst.s3;
  target.bucket = dst.bucket;
  target.key = dst.key;
  target.many = many;
  for (const Location& src : src_locs) {
    if (!src.s3) {
      // Local source: a file, a directory (--recursive) or a glob.
      objstore::PlanCopyFromLocal(src.key, a.recursive, target, filters, run);
      continue;
    }
    auto store = s.SourceBucket(src.bucket);
    if (!store.ok()) {
      rep.Error(store.error());
      continue;
    }
    Status ls = objstore::PlanCopyFromStore(**store, src.bucket, src.key, a.recursive, target,
                                            filters, run);
    if (!ls.ok()) rep.Error(s.Explain(ls), "listing " + src.str());
  }
  run.Wait();
  return rep.Finish(cmd);
}

// ---------------------------------------------------------------------------
// sync

struct SyncArgs {
  std::string src, dst;
  bool del = false;
  bool checksum = false;
  bool size_only = false;
  ObjectArgs object;
};

int CmdSync(Common& c, SyncArgs& a, const CLI::App* sub) {
  auto w = BuildWriteOptions(a.object);
  if (!w.ok()) return Usage("sync", w.error().message());
  if (Status st = CheckSse(a.object, c); !st.ok()) return Usage("sync", st.message());
  auto age_r = BuildAgeFilter(c);
  if (!age_r.ok()) return Usage("sync", age_r.error().message());
  const AgeFilter age = *age_r;
  Session s(c);
  auto src_r = ParseLocation(a.src), dst_r = ParseLocation(a.dst);
  if (!src_r.ok()) return Usage("sync", src_r.error().message());
  if (!dst_r.ok()) return Usage("sync", dst_r.error().message());
  const Location src = *src_r, dst = *dst_r;
  if (Status st = ApplyMetadataDirective(a.object, src.s3 && dst.s3, s); !st.ok()) {
    return Usage("sync", st.message());
  }
  if (Status st = s.Init(true, &*w); !st.ok()) return Usage("sync", st.message());
  if (std::string f = a.object.FirstGiven(); !f.empty() && !dst.s3)
    return Usage("sync", f + " applies to uploads and copies to s3://, not to local destinations");
  if (!src.s3 && !dst.s3) return Usage("sync", "one of SRC and DST must be an s3:// location");
  if (HasWildcard(src.s3 ? src.key : "") ) return Usage("sync", "sync takes a directory or prefix, not a pattern (use --exclude/--include)");
  if (a.checksum && a.size_only) return Usage("sync", "--checksum and --size-only exclude each other");
  auto filters_r = BuildFilters(c, sub);
  if (!filters_r.ok()) return Usage("sync", filters_r.error().message());
  const PathFilter filters = std::move(*filters_r);
  Reporter rep(ReporterOptions(c), s.mgr_ptr());
  Runner run(s, rep, c.dryrun);
  objstore::SyncOptions opts;
  opts.compare = a.checksum ? objstore::SyncCompare::kChecksum
                 : a.size_only ? objstore::SyncCompare::kSizeOnly
                               : objstore::SyncCompare::kSizeAndMtime;
  opts.delete_extra = a.del;

  // Each side's current state, by relative path.
  // --max-age/--min-age filter both sides, as rclone's: what is left out on
  // either side is neither copied nor deleted.
  auto list_s3 = [&](const Location& l, std::map<std::string, ObjectInfo>* out) -> Status {
    STRATA_ASSIGN_OR_RETURN(ObjectStore * store, s.Bucket(l.bucket));
    STRATA_RETURN_IF_ERROR(objstore::ListForSync(*store, objstore::DirPrefix(l.key), filters, out));
    if (age.any())
      std::erase_if(*out, [&](const auto& e) { return !age.Included(e.second.mtime_ns); });
    return Status::Ok();
  };
  auto walk = [&](const std::string& dir, std::vector<LocalFile>* out) {
    Status w = objstore::WalkLocal(dir, out);
    if (!w.ok()) rep.Error(w);
    if (age.any())
      std::erase_if(*out, [&](const LocalFile& f) { return !age.Included(f.mtime_ns); });
    return w.ok();
  };
  auto listed = [&](const Location& l, std::map<std::string, ObjectInfo>* out) {
    Status st = list_s3(l, out);
    if (!st.ok()) rep.Error(s.Explain(st), "listing " + l.str());
    return st.ok();
  };

  std::map<std::string, ObjectInfo> remote;  // dst (uploads) or src (downloads, copies)
  if (!src.s3) {
    // local -> S3
    std::vector<LocalFile> files;
    if (!walk(src.key, &files) || !listed(dst, &remote)) return rep.Finish("sync");
    objstore::PlanSyncUpload(files, remote, dst.bucket, objstore::DirPrefix(dst.key), filters,
                             opts, run);
  } else if (!dst.s3) {
    // S3 -> local
    if (!listed(src, &remote)) return rep.Finish("sync");
    std::vector<LocalFile> files;
    if (IsLocalDir(dst.key) && !walk(dst.key, &files)) return rep.Finish("sync");
    objstore::PlanSyncDownload(remote, src.bucket, std::move(files), dst.key, filters, opts, run);
  } else {
    // S3 -> S3, server-side.
    std::map<std::string, ObjectInfo> dst_objs;
    if (!listed(src, &remote) || !listed(dst, &dst_objs)) return rep.Finish("sync");
    objstore::PlanSyncCopy(remote, src.bucket, dst_objs, dst.bucket, objstore::DirPrefix(dst.key),
                           opts, run);
  }
  run.Wait();
  return rep.Finish("sync");
}

// ---------------------------------------------------------------------------
// rm, cat, mb, rb, du

struct RmArgs {
  std::vector<std::string> targets;
  bool recursive = false;
};

int CmdRm(Common& c, RmArgs& a, const CLI::App* sub) {
  Session s(c);
  if (Status st = s.Init(true); !st.ok()) return Usage("rm", st.message());
  auto filters_r = BuildFilters(c, sub);
  if (!filters_r.ok()) return Usage("rm", filters_r.error().message());
  const PathFilter filters = std::move(*filters_r);
  Reporter rep(ReporterOptions(c), s.mgr_ptr());
  Runner run(s, rep, c.dryrun);
  for (const std::string& t : a.targets) {
    auto loc = ParseLocation(t);
    if (!loc.ok()) return Usage("rm", loc.error().message());
    if (!loc->s3) return Usage("rm", "rm deletes s3:// objects; use your shell's rm for local files");
    auto store = s.Bucket(loc->bucket);
    if (!store.ok()) {
      rep.Error(store.error());
      continue;
    }
    bool pattern = HasWildcard(loc->key);
    if (pattern && (*store)->Head(loc->key).ok()) pattern = false;
    if (!pattern && !a.recursive) {
      if (loc->key.empty() || loc->key.back() == '/') {
        rep.Error(Status::InvalidArgument(t + " names a prefix (use --recursive)"));
        continue;
      }
      run.SubmitDeletes(loc->bucket, {loc->key});
      continue;
    }
    const std::string list_prefix = pattern ? std::string(LiteralPrefix(loc->key)) : loc->key;
    const std::string base = pattern ? list_prefix.substr(0, list_prefix.find_last_of('/') == std::string::npos
                                                                  ? 0
                                                                  : list_prefix.find_last_of('/') + 1)
                                     : list_prefix;
    std::vector<std::string> keys;
    Status ls = (*store)->ListAll(list_prefix, [&](const ObjectInfo& o) {
      if (pattern && !WildcardMatch(loc->key, o.key)) return Status::Ok();
      if (!filters.Included(o.key.substr(base.size()))) return Status::Ok();
      keys.push_back(o.key);
      if (keys.size() == 1000) run.SubmitDeletes(loc->bucket, std::exchange(keys, {}));
      return Status::Ok();
    });
    run.SubmitDeletes(loc->bucket, std::move(keys));
    if (!ls.ok()) rep.Error(s.Explain(ls), "listing " + t);
  }
  run.Wait();
  return rep.Finish("rm");
}

int CmdCat(Common& c, std::vector<std::string>& targets) {
  Session s(c);
  if (Status st = s.Init(false); !st.ok()) return Usage("cat", st.message());
  static char buf[1 << 20];
  std::setvbuf(stdout, buf, _IOFBF, sizeof(buf));
  for (const std::string& t : targets) {
    auto loc = ParseLocation(t);
    if (!loc.ok()) return Usage("cat", loc.error().message());
    if (!loc->s3 || loc->key.empty()) return Usage("cat", "cat takes s3://BUCKET/KEY");
    auto store = s.Bucket(loc->bucket);
    if (!store.ok()) return Fail(store.error(), "cat");
    bool closed = false;
    Status st = StreamToStdout(**store, loc->key, &closed);
    if (closed) return kExitOk;  // the reader went away (| head): not an error
    if (!st.ok()) return Fail(s.Explain(st), "cat");
  }
  return kExitOk;
}

// ---------------------------------------------------------------------------
// Registration

struct State {
  Common common;
  CpArgs cp;
  CpArgs mv;
  SyncArgs sync;
  RmArgs rm;
  std::vector<std::string> cat;
};

// The options cp and mv share.
void AddCopyOptions(CLI::App* sub, CpArgs& a, Common& c, bool move) {
  sub->add_option(
         "paths", a.paths,
         move
             ? "SRC... DST: local paths (globs) and s3://BUCKET/KEY (wildcards * ? [ ] in the key; "
               "* also matches /)"
             : "SRC... DST: local paths (- for stdin/stdout, globs) and s3://BUCKET/KEY (wildcards "
               "* ? [ ] "
               "in the key; * also matches /)")
      ->required()
      ->expected(2, -1);
  sub->add_flag("-r,--recursive", a.recursive,
                move ? "Move directories / every object under a prefix"
                     : "Copy directories / every object under a prefix");
  AddObjectOptions(sub, a.object);
  auto* g =
      sub->add_option_group("Overwrite", "Whether an existing destination is replaced (s5cmd)");
  g->add_flag("-n,--no-clobber", a.overwrite.no_clobber,
              "Never overwrite an existing destination (skipped ones are reported)");
  g->add_flag("--if-size-differ", a.overwrite.if_size_differ,
              "Overwrite an existing destination only if the sizes differ");
  g->add_flag("--if-source-newer", a.overwrite.if_source_newer,
              "Overwrite an existing destination only if the source is newer (whole seconds)");
  sub->add_option(
      "--source-endpoint-url", c.source_endpoint_url,
      "S3 -> S3 between two services: the endpoint of the s3:// sources (--endpoint-url "
      "is the destination's); the bytes stream through strata, in parallel parts");
  sub->add_flag("--flatten", a.flatten,
                "Put every source directly under DST by its base name, dropping the directories "
                "of trees and wildcard matches (s5cmd)");
  sub->add_flag("--dryrun", c.dryrun,
                move ? "Print what would be moved, change nothing"
                     : "Print what would be copied, copy nothing");
  AddFilterOptions(sub, c);
  AddAgeOptions(sub, c);
  AddSseCustomerOption(sub, c);
  AddTransferOptions(sub, c);
  AddBandwidthOption(sub, c);
  AddConnectionOptions(sub, c);
  AddOutputOptions(sub, c);
}

void RegisterCp(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* cp = app.add_subcommand(
      "cp", "Copy files to, from and between S3 locations (parallel, multipart, resumable)");
  AddCopyOptions(cp, st->cp, c, false);
  cp->footer(
      Footer("  strata cp model.bin s3://ckpt/run1/                 upload (key run1/model.bin)\n"
             "  strata cp --recursive ./dataset s3://data/ds1       a directory\n"
             "  strata cp 's3://data/shards/*.tar' ./shards/        objects matching a pattern\n"
             "  strata cp s3://data/a.bin s3://backup/a.bin         server-side copy\n"
             "  tar c dir | strata cp - s3://data/dir.tar           from stdin\n"
             "An interrupted multipart upload, or download above the multipart threshold,\n"
             "resumes when the same command is run again."));
  cp->callback(Wrap(st, exit_code, [st, cp] { return CmdCp(st->common, st->cp, cp); }));
}

void RegisterMv(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* mv = app.add_subcommand("mv",
                                "Move files to, from and between S3 locations (cp, then delete "
                                "each source once its copy succeeded)");
  AddCopyOptions(mv, st->mv, c, true);
  mv->footer(Footer(
      "  strata mv model.bin s3://ckpt/run1/                 upload, then delete model.bin\n"
      "  strata mv --recursive s3://data/tmp/ ./tmp/         download a prefix, then delete it\n"
      "  strata mv 's3://data/in/*.csv' s3://data/done/      server-side copy, then delete\n"
      "A source is deleted only after its copy succeeded: a failed copy deletes nothing.\n"
      "Local directories that --recursive emptied are left in place."));
  mv->callback(
      Wrap(st, exit_code, [st, mv] { return CmdCp(st->common, st->mv, mv, /*move=*/true); }));
}

void RegisterSync(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* sync = app.add_subcommand("sync", "Make DST hold what SRC holds: copy new and changed files (size and mtime, or --checksum)");
  sync->add_option("src", st->sync.src, "Local directory or s3://BUCKET[/PREFIX]")->required();
  sync->add_option("dst", st->sync.dst, "Local directory or s3://BUCKET[/PREFIX]")->required();
  sync->add_flag("--delete", st->sync.del, "Delete files in DST that are not in SRC");
  sync->add_flag("--checksum", st->sync.checksum,
                 "Compare contents, not mtimes: local MD5 vs single-part ETag, or the stored CRC32C/CRC64NVME "
                 "checksum, or the multipart ETag");
  sync->add_flag("--size-only", st->sync.size_only, "Compare sizes only");
  AddObjectOptions(sync, st->sync.object);
  sync->add_flag("--dryrun", c.dryrun, "Print what would be copied or deleted, change nothing");
  AddFilterOptions(sync, c);
  AddAgeOptions(sync, c);
  AddSseCustomerOption(sync, c);
  AddTransferOptions(sync, c);
  AddBandwidthOption(sync, c);
  AddConnectionOptions(sync, c);
  AddOutputOptions(sync, c);
  sync->footer(Footer("  strata sync ./dataset s3://data/ds1\n"
                      "  strata sync --delete s3://data/ds1 ./dataset\n"
                      "  strata sync --checksum --exclude '*.tmp' ./out s3://results/out\n"
                      "A file is copied when it is missing or its size differs, or (upload) the local file\n"
                      "is newer than the object, or (download) the mtimes differ; downloads get the object's\n"
                      "LastModified as mtime, so a second run copies nothing."));
  sync->callback(Wrap(st, exit_code, [st, sync] { return CmdSync(st->common, st->sync, sync); }));
}

void RegisterRm(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* rm = app.add_subcommand("rm", "Delete objects (batched DeleteObjects with --recursive or wildcards)");
  rm->add_option("targets", st->rm.targets, "s3://BUCKET/KEY (wildcards allowed) or, with --recursive, a prefix")
      ->required();
  rm->add_flag("-r,--recursive", st->rm.recursive, "Delete every object under the prefix");
  rm->add_flag("--dryrun", c.dryrun, "Print what would be deleted, delete nothing");
  AddFilterOptions(rm, c);
  AddTransferOptions(rm, c);
  AddConnectionOptions(rm, c);
  AddOutputOptions(rm, c);
  rm->footer(Footer("  strata rm s3://data/old.bin\n"
                    "  strata rm --recursive s3://data/tmp/\n"
                    "  strata rm 's3://data/logs/*.gz'"));
  rm->callback(Wrap(st, exit_code, [st, rm] { return CmdRm(st->common, st->rm, rm); }));
}

void RegisterCat(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* cat = app.add_subcommand("cat", "Write objects to stdout");
  cat->add_option("targets", st->cat, "s3://BUCKET/KEY...")->required();
  AddSseCustomerOption(cat, c);
  AddConnectionOptions(cat, c);
  cat->footer(Footer("  strata cat s3://data/config.json | jq ."));
  cat->callback(Wrap(st, exit_code, [st] { return CmdCat(st->common, st->cat); }));
}

}  // namespace

// The commands of this file; head and presign are transfer_info_cmds.cc's.
void RegisterCopyCommands(CLI::App& app, int* exit_code) {
  auto st = std::make_shared<State>();
  RegisterCp(app, st, exit_code);
  RegisterMv(app, st, exit_code);
  RegisterSync(app, st, exit_code);
  RegisterRm(app, st, exit_code);
  RegisterCat(app, st, exit_code);
}

}  // namespace strata::cli::transfer

namespace strata::cli {

void RegisterTransferCommands(CLI::App& app, int* exit_code) {
  transfer::RegisterCopyCommands(app, exit_code);
  transfer::RegisterInfoCommands(app, exit_code);
  transfer::RegisterBucketCommands(app, exit_code);
  transfer::RegisterRunCommand(app, exit_code);
}

}  // namespace strata::cli
