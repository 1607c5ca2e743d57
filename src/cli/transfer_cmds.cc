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

#include "cli/transfer_util.h"

namespace strata::cli {
namespace {

using objstore::HasWildcard;
using objstore::IsLocalDir;
using objstore::LiteralPrefix;
using objstore::LocalFile;
using objstore::ObjectInfo;
using objstore::ObjectStore;
using objstore::PathFilter;
using objstore::S3Client;
using objstore::S3Url;
using objstore::TransferJob;
using objstore::TransferManager;
using objstore::TransferOptions;
using objstore::WildcardMatch;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---------------------------------------------------------------------------
// Options shared by every transfer command.

struct Common {
  std::string endpoint_url;
  std::string profile;
  std::string region;
  std::string ca_bundle;
  bool no_verify_ssl = false;
  std::vector<std::string> s3_options;  // KEY=VALUE, passed to the S3 client URL
  int concurrency = 16;
  std::string part_size = "8MiB";
  std::string multipart_threshold = "16MiB";
  bool fsync = false;
  bool json = false;
  bool quiet = false;
  bool no_progress = false;
  bool dryrun = false;
  std::vector<std::string> exclude;
  std::vector<std::string> include;
};

void AddConnectionOptions(CLI::App* sub, Common& c) {
  auto* g = sub->add_option_group("Connection", "Endpoint and credentials (as awscli takes them)");
  g->add_option("--endpoint-url", c.endpoint_url,
                "S3 endpoint, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, "
                "the profile's endpoint_url, else AWS)");
  g->add_option("--profile", c.profile, "Profile in ~/.aws/credentials and ~/.aws/config (default: AWS_PROFILE or \"default\")");
  g->add_option("--region", c.region, "Region to sign for (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's, us-east-1)");
  g->add_flag("--no-verify-ssl", c.no_verify_ssl, "Do not verify the TLS certificate of an https:// endpoint");
  g->add_option("--ca-bundle", c.ca_bundle, "PEM file of CA certificates to verify the endpoint with");
  g->add_option("--s3-option", c.s3_options,
                "Advanced S3 client setting KEY=VALUE (repeatable): max_retries, timeout_ms, "
                "connect_timeout_ms, path_style, sign_payload, verify_md5, fault_error_rate, fault_drop_rate, ...")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
}

void AddTransferOptions(CLI::App* sub, Common& c) {
  auto* g = sub->add_option_group("Transfer", "Parallelism and part sizes");
  g->add_option("--concurrency", c.concurrency, "Requests in flight at once, across files and parts")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  g->add_option("--part-size", c.part_size,
                "Multipart part size (grows to keep at most 10,000 parts; at least 5MiB)")
      ->capture_default_str();
  g->add_option("--multipart-threshold", c.multipart_threshold,
                "Files larger than this are uploaded in parts and downloaded with parallel ranged GETs")
      ->capture_default_str();
  g->add_flag("--fsync", c.fsync,
              "fsync downloaded files before renaming them into place (survive power loss; costs disk speed)");
}

void AddOutputOptions(CLI::App* sub, Common& c) {
  auto* g = sub->add_option_group("Output");
  g->add_flag("--json", c.json, "One JSON object per line on stdout (one per object, then a summary)");
  g->add_flag("-q,--quiet", c.quiet, "Print errors only");
  g->add_flag("--no-progress", c.no_progress, "No progress bar (it is shown only when stderr is a terminal)");
}

void AddFilterOptions(CLI::App* sub, Common& c) {
  sub->add_option("--exclude", c.exclude,
                  "Skip paths matching this pattern (relative to SRC; * ? [] wildcards; repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--include", c.include,
                  "Do not skip paths matching this pattern, even if an --exclude matched (repeatable)")
      ->allow_extra_args(false);
}

// awscli applies --exclude/--include in command-line order; CLI11 keeps the
// values per option, and the order of occurrences in parse_order().
PathFilter BuildFilters(const Common& c, const CLI::App* sub) {
  PathFilter f;
  size_t ei = 0, ii = 0;
  for (const CLI::Option* o : sub->parse_order()) {
    if (o->check_lname("exclude") && ei < c.exclude.size()) {
      f.Add(false, c.exclude[ei++]);
    } else if (o->check_lname("include") && ii < c.include.size()) {
      f.Add(true, c.include[ii++]);
    }
  }
  while (ei < c.exclude.size()) f.Add(false, c.exclude[ei++]);
  while (ii < c.include.size()) f.Add(true, c.include[ii++]);
  return f;
}

// ---------------------------------------------------------------------------
// Ctrl-C: the downloads' temporary files are removed before exiting (resume
// state of uploads is kept on purpose). The signals are taken by a thread in
// sigwait, so the cleanup runs in normal thread context.

std::mutex g_interrupt_mu;
TransferManager* g_active = nullptr;  // guarded by g_interrupt_mu

void SetActiveManager(TransferManager* m) {
  std::lock_guard l(g_interrupt_mu);
  g_active = m;
}

void InstallInterruptHandler() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  // Before any other thread exists, so that all of them inherit the mask.
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) return;
    std::lock_guard l(g_interrupt_mu);
    if (g_active != nullptr) g_active->RemoveTemporaryFiles();
    std::fputs("\nstrata: interrupted (run the same command again to resume uploads)\n", stderr);
    std::_Exit(sig == SIGINT ? kExitInterrupted : 128 + sig);
  }).detach();
}

// ---------------------------------------------------------------------------
// The session of one command: the S3 client, stores per bucket, the engine.

class Session {
 public:
  explicit Session(const Common& c) : c_(c) {}
  ~Session() {
    if (mgr_) SetActiveManager(nullptr);
  }

  Status Init(bool need_manager, const objstore::WriteOptions* write = nullptr) {
    auto ps = ParseByteSize(c_.part_size);
    auto mt = ParseByteSize(c_.multipart_threshold);
    if (!ps) return Status::InvalidArgument("--part-size \"" + c_.part_size + "\" is not a size (e.g. 8MiB)");
    if (!mt) {
      return Status::InvalidArgument("--multipart-threshold \"" + c_.multipart_threshold +
                                     "\" is not a size (e.g. 16MiB)");
    }
    if (*ps < (5ull << 20)) return Status::InvalidArgument("--part-size must be at least 5MiB (S3's minimum)");
    if (*ps > (5ull << 30)) return Status::InvalidArgument("--part-size must be at most 5GiB (S3's maximum)");
    if (*mt > (5ull << 30)) {
      return Status::InvalidArgument("--multipart-threshold must be at most 5GiB (S3's largest single PUT)");
    }
    topts_.concurrency = c_.concurrency;
    topts_.part_size = *ps;
    topts_.multipart_threshold = *mt;
    topts_.fsync = c_.fsync;
    if (write != nullptr) topts_.write = *write;
    if (need_manager) {
      mgr_ = std::make_unique<TransferManager>(topts_);
      SetActiveManager(mgr_.get());
    }
    return Status::Ok();
  }

  TransferManager& mgr() { return *mgr_; }
  TransferManager* mgr_ptr() { return mgr_.get(); }
  const TransferOptions& topts() const { return topts_; }
  bool anonymous() const { return anonymous_; }  // after Client(): no credentials found

  Result<S3Client*> Client() {
    std::lock_guard l(mu_);
    if (client_) return client_.get();
    std::vector<std::pair<std::string, std::string>> params;
    if (!c_.endpoint_url.empty()) params.emplace_back("endpoint", c_.endpoint_url);
    if (!c_.region.empty()) params.emplace_back("region", c_.region);
    if (!c_.profile.empty()) params.emplace_back("profile", c_.profile);
    if (!c_.ca_bundle.empty()) params.emplace_back("ca_file", c_.ca_bundle);
    if (c_.no_verify_ssl) params.emplace_back("tls_verify", "false");
    // Keep a pooled connection for every request in flight.
    params.emplace_back("max_idle_connections", std::to_string(c_.concurrency + 8));
    params.emplace_back("part_size", std::to_string(topts_.part_size));
    params.emplace_back("multipart_threshold", std::to_string(std::max<uint64_t>(topts_.multipart_threshold, 5ull << 20)));
    for (const std::string& kv : c_.s3_options) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        return Status::InvalidArgument("--s3-option \"" + kv + "\" is not KEY=VALUE");
      }
      params.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    std::string url = "s3://strata-cli";
    char sep = '?';
    for (const auto& [k, v] : params) {
      url += sep + UriEncode(k, false) + "=" + UriEncode(v, false);
      sep = '&';
    }
    auto resolved = objstore::ResolveS3Url(url);
    if (!resolved.ok()) return resolved.error();
    anonymous_ = resolved->first.credentials.access_key.empty();
    aws_endpoint_ = resolved->first.endpoint.empty();
    auto client = S3Client::Create(resolved->first);
    if (!client.ok()) return client.error();
    client_ = std::move(*client);
    return client_.get();
  }

  Result<ObjectStore*> Bucket(const std::string& bucket) {
    STRATA_ASSIGN_OR_RETURN(S3Client * c, Client());
    std::lock_guard l(mu_);
    auto& s = stores_[bucket];
    if (!s) s = c->OpenBucket(bucket);
    return s.get();
  }

  // Adds what to do about it to errors whose cause is plain.
  Status Explain(Status s) const {
    if (s.code() == StatusCode::kPermissionDenied && anonymous_) {
      return s.WithContext(
          "no credentials were found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or use --profile)");
    }
    if (s.code() == StatusCode::kUnavailable && aws_endpoint_) {
      return s.WithContext("cannot reach AWS S3 (for another service, set --endpoint-url or AWS_ENDPOINT_URL)");
    }
    return s;
  }

 private:
  const Common& c_;
  TransferOptions topts_;
  std::unique_ptr<TransferManager> mgr_;
  std::mutex mu_;
  std::shared_ptr<S3Client> client_;                                  // guarded by mu_
  std::unordered_map<std::string, std::unique_ptr<ObjectStore>> stores_;  // guarded by mu_
  bool anonymous_ = false;
  bool aws_endpoint_ = false;  // no endpoint configured: AWS itself
};

int Fail(const Status& s, std::string_view cmd, bool json = false) {
  if (json) {
    nlohmann::json j{{"error", s.ToString()}, {"exit_code", ExitCodeFor(s)}};
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print(stderr, "strata {}: {}\n", cmd, s.ToString());
  }
  return ExitCodeFor(s);
}

int Usage(std::string_view cmd, const std::string& msg) {
  fmt::print(stderr, "strata {}: {}\nRun 'strata {} --help' for usage.\n", cmd, msg, cmd);
  return kExitUsage;
}

std::string FormatLocalTime(int64_t ns) {
  const time_t t = static_cast<time_t>(ns / 1'000'000'000);
  struct tm tm;
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

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

  void Submit(TransferJob j) {
    if (move_ && j.kind == TransferJob::kCopy && j.bucket == j.dst_bucket && j.key == j.dst_key) {
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
        STRATA_ASSIGN_OR_RETURN(ObjectStore * store, s_.Bucket(j.bucket));
        STRATA_ASSIGN_OR_RETURN(ObjectInfo head, store->Head(j.key));
        pinned.info = std::move(head);
      }
      STRATA_RETURN_IF_ERROR(RunJob(pinned, s_));
      etag = pinned.info->etag;
    }
    STRATA_ASSIGN_OR_RETURN(S3Client * c, s_.Client());
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
        STRATA_ASSIGN_OR_RETURN(S3Client * c, s.Client());
        return s.mgr().CopyS3Object(*c, j.bucket, j.key, j.dst_bucket, j.dst_key, j.info ? &*j.info : nullptr).error();
      }
    }
    return Status::Internal("unknown job");
  }

  Session& s_;
  Reporter& r_;
  bool dryrun_;
  bool move_;
  OverwritePolicy overwrite_;
};

Reporter::Options ReporterOptions(const Common& c) {
  Reporter::Options o;
  o.json = c.json;
  o.quiet = c.quiet;
  o.progress = !c.no_progress;
  return o;
}

// ---------------------------------------------------------------------------
// ls

struct LsArgs {
  std::string target;
  bool recursive = false;
  bool human = false;
  bool summarize = false;
};

int CmdLs(Common& c, LsArgs& a) {
  Session s(c);
  if (Status st = s.Init(false); !st.ok()) return Usage("ls", st.message());
  auto client = s.Client();
  if (!client.ok()) return Fail(client.error(), "ls", c.json);
  auto size_str = [&](uint64_t n) { return a.human ? HumanBytes(n) : std::to_string(n); };
  if (a.target.empty() || a.target == "s3://") {
    auto buckets = (*client)->ListBuckets();
    if (!buckets.ok()) return Fail(s.Explain(buckets.error()), "ls", c.json);
    for (const auto& b : *buckets) {
      if (c.json) {
        fmt::print("{}\n", nlohmann::json{{"bucket", b.name}, {"created", FormatIso8601(b.created_ns)}}.dump());
      } else {
        fmt::print("{} {}\n", FormatLocalTime(b.created_ns), b.name);
      }
    }
    return kExitOk;
  }
  auto loc = ParseLocation(a.target);
  if (!loc.ok()) return Usage("ls", loc.error().message());
  if (!loc->s3) return Usage("ls", "ls lists s3:// locations; use your shell's ls for local files");
  auto store = s.Bucket(loc->bucket);
  if (!store.ok()) return Fail(store.error(), "ls", c.json);
  const std::string prefix = loc->key;
  const size_t dir_len = a.recursive ? 0 : (prefix.find_last_of('/') == std::string::npos ? 0 : prefix.find_last_of('/') + 1);
  std::string token;
  uint64_t count = 0, total = 0;
  bool any = false;
  for (;;) {
    auto page = (*store)->List(prefix, a.recursive ? "" : "/", token, 1000);
    if (!page.ok()) return Fail(s.Explain(page.error()), "ls", c.json);
    for (const std::string& p : page->common_prefixes) {
      any = true;
      if (c.json) {
        fmt::print("{}\n", nlohmann::json{{"prefix", p}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      } else {
        fmt::print("{:>30} {}\n", "PRE", p.substr(dir_len));
      }
    }
    for (const ObjectInfo& o : page->objects) {
      any = true;
      ++count;
      total += o.size;
      if (c.json) {
        fmt::print("{}\n", nlohmann::json{{"key", o.key}, {"size", o.size}, {"etag", o.etag},
                                          {"last_modified", FormatIso8601(o.mtime_ns)}}
                               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      } else {
        fmt::print("{} {:>10} {}\n", FormatLocalTime(o.mtime_ns), size_str(o.size), o.key.substr(dir_len));
      }
    }
    if (page->next_token.empty()) break;
    token = page->next_token;
  }
  if (a.summarize) {
    if (c.json) {
      fmt::print("{}\n", nlohmann::json{{"summary", true}, {"objects", count}, {"bytes", total}}.dump());
    } else {
      fmt::print("\nTotal Objects: {}\n   Total Size: {}\n", count, size_str(total));
    }
  }
  std::fflush(stdout);
  // Like awscli: listing a prefix that matches nothing is an error.
  if (!any && !prefix.empty()) return kExitNotFound;
  return kExitOk;
}

// ---------------------------------------------------------------------------
// cp

// What uploads and server-side copies store with each object (cp, mv, sync).
struct ObjectArgs {
  std::string content_type;
  std::vector<std::string> metadata;  // KEY=VALUE
  std::string cache_control, expires, content_encoding, content_disposition;
  std::string storage_class, acl;
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
        {"--acl", !acl.empty()}};
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
  return w;
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
Status StreamToStdout(ObjectStore& store, const std::string& key, bool* closed = nullptr) {
  auto write_failed = [&] {
    if (errno == EPIPE && closed != nullptr) *closed = true;
    return Status::FromErrno(errno, "write to stdout");
  };
  Status s = store.Get(key, {}, [&](const char* data, size_t n) {
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
  Session s(c);
  if (Status st = s.Init(true, &w); !st.ok()) return Usage(cmd, st.message());
  const PathFilter filters = BuildFilters(c, sub);
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
    auto r = (*store)->Put(dst.key, in, w);
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
    Status st = StreamToStdout(**store, src.key);
    if (!st.ok()) return Fail(s.Explain(st), cmd, c.json);
    return kExitOk;
  }

  Reporter rep(ReporterOptions(c), s.mgr_ptr());
  Runner run(s, rep, c.dryrun, move, a.overwrite);
  objstore::CopyTarget target;
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
    auto store = s.Bucket(src.bucket);
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
  Session s(c);
  if (Status st = s.Init(true, &*w); !st.ok()) return Usage("sync", st.message());
  auto src_r = ParseLocation(a.src), dst_r = ParseLocation(a.dst);
  if (!src_r.ok()) return Usage("sync", src_r.error().message());
  if (!dst_r.ok()) return Usage("sync", dst_r.error().message());
  const Location src = *src_r, dst = *dst_r;
  if (std::string f = a.object.FirstGiven(); !f.empty() && !dst.s3)
    return Usage("sync", f + " applies to uploads and copies to s3://, not to local destinations");
  if (!src.s3 && !dst.s3) return Usage("sync", "one of SRC and DST must be an s3:// location");
  if (HasWildcard(src.s3 ? src.key : "") ) return Usage("sync", "sync takes a directory or prefix, not a pattern (use --exclude/--include)");
  if (a.checksum && a.size_only) return Usage("sync", "--checksum and --size-only exclude each other");
  const PathFilter filters = BuildFilters(c, sub);
  Reporter rep(ReporterOptions(c), s.mgr_ptr());
  Runner run(s, rep, c.dryrun);
  objstore::SyncOptions opts;
  opts.compare = a.checksum ? objstore::SyncCompare::kChecksum
                 : a.size_only ? objstore::SyncCompare::kSizeOnly
                               : objstore::SyncCompare::kSizeAndMtime;
  opts.delete_extra = a.del;

  // Each side's current state, by relative path.
  auto list_s3 = [&](const Location& l, std::map<std::string, ObjectInfo>* out) -> Status {
    STRATA_ASSIGN_OR_RETURN(ObjectStore * store, s.Bucket(l.bucket));
    return objstore::ListForSync(*store, objstore::DirPrefix(l.key), filters, out);
  };
  auto walk = [&](const std::string& dir, std::vector<LocalFile>* out) {
    Status w = objstore::WalkLocal(dir, out);
    if (!w.ok()) rep.Error(w);
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
  const PathFilter filters = BuildFilters(c, sub);
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

int CmdMb(Common& c, std::vector<std::string>& targets) {
  Session s(c);
  if (Status st = s.Init(false); !st.ok()) return Usage("mb", st.message());
  auto client = s.Client();
  if (!client.ok()) return Fail(client.error(), "mb", c.json);
  int rc = kExitOk;
  for (const std::string& t : targets) {
    auto loc = ParseLocation(t);
    if (!loc.ok() || !loc->s3 || !loc->key.empty()) return Usage("mb", "mb takes s3://BUCKET");
    Status st = (*client)->CreateBucket(loc->bucket);
    if (!st.ok()) {
      rc = Fail(s.Explain(st).WithContext("make_bucket " + loc->bucket), "mb", c.json);
      continue;
    }
    if (c.json) fmt::print("{}\n", nlohmann::json{{"op", "make_bucket"}, {"bucket", loc->bucket}, {"ok", true}}.dump());
    else if (!c.quiet) fmt::print("make_bucket: {}\n", loc->bucket);
  }
  return rc;
}

int CmdRb(Common& c, std::vector<std::string>& targets, bool force) {
  Session s(c);
  if (Status st = s.Init(true); !st.ok()) return Usage("rb", st.message());
  auto client = s.Client();
  if (!client.ok()) return Fail(client.error(), "rb", c.json);
  int rc = kExitOk;
  for (const std::string& t : targets) {
    auto loc = ParseLocation(t);
    if (!loc.ok() || !loc->s3 || !loc->key.empty()) return Usage("rb", "rb takes s3://BUCKET");
    if (force) {
      Common quiet = c;
      quiet.quiet = true;
      quiet.json = false;
      Reporter rep(ReporterOptions(quiet), s.mgr_ptr());
      Runner run(s, rep, false);
      auto store = s.Bucket(loc->bucket);
      if (!store.ok()) return Fail(store.error(), "rb", c.json);
      std::vector<std::string> keys;
      Status ls = (*store)->ListAll("", [&](const ObjectInfo& o) {
        keys.push_back(o.key);
        if (keys.size() == 1000) run.SubmitDeletes(loc->bucket, std::exchange(keys, {}));
        return Status::Ok();
      });
      run.SubmitDeletes(loc->bucket, std::move(keys));
      run.Wait();
      const int drc = rep.Finish("rb");
      if (!ls.ok()) {
        rc = Fail(s.Explain(ls).WithContext("emptying " + loc->bucket), "rb", c.json);
        continue;
      }
      if (drc != kExitOk) {
        rc = drc;
        continue;
      }
    }
    Status st = (*client)->DeleteBucket(loc->bucket);
    if (!st.ok()) {
      if (st.code() == StatusCode::kPreconditionFailed) {
        st = st.WithContext("bucket " + loc->bucket + " is not empty (use --force to delete its objects first)");
      }
      rc = Fail(s.Explain(st).WithContext("remove_bucket " + loc->bucket), "rb", c.json);
      continue;
    }
    if (c.json) fmt::print("{}\n", nlohmann::json{{"op", "remove_bucket"}, {"bucket", loc->bucket}, {"ok", true}}.dump());
    else if (!c.quiet) fmt::print("remove_bucket: {}\n", loc->bucket);
  }
  return rc;
}

int CmdDu(Common& c, std::vector<std::string>& targets, bool human) {
  Session s(c);
  if (Status st = s.Init(false); !st.ok()) return Usage("du", st.message());
  int rc = kExitOk;
  for (const std::string& t : targets) {
    auto loc = ParseLocation(t);
    if (!loc.ok() || !loc->s3) return Usage("du", "du takes s3://BUCKET[/PREFIX]");
    auto store = s.Bucket(loc->bucket);
    if (!store.ok()) return Fail(store.error(), "du", c.json);
    uint64_t n = 0, bytes = 0;
    Status ls = (*store)->ListAll(loc->key, [&](const ObjectInfo& o) {
      ++n;
      bytes += o.size;
      return Status::Ok();
    });
    if (!ls.ok()) {
      rc = Fail(s.Explain(ls), "du", c.json);
      continue;
    }
    if (c.json) {
      fmt::print("{}\n", nlohmann::json{{"location", t}, {"objects", n}, {"bytes", bytes}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
      fmt::print("{}\t{} objects\t{}\n", human ? HumanBytes(bytes) : std::to_string(bytes), n, t);
    }
  }
  return rc;
}

// ---------------------------------------------------------------------------
// head, presign

// The longest presigned URL lifetime S3 accepts (X-Amz-Expires).
constexpr int64_t kMaxPresignExpiresSec = 7 * 86400;

nlohmann::json HeadJson(const ObjectInfo& o) {
  nlohmann::json j{{"key", o.key},
                   {"size", o.size},
                   {"etag", o.etag},
                   {"last_modified", FormatIso8601(o.mtime_ns)},
                   {"content_type", o.content_type},
                   // S3 sends no x-amz-storage-class for STANDARD objects.
                   {"storage_class", o.storage_class.empty() ? "STANDARD" : o.storage_class},
                   {"metadata", o.user_meta}};
  if (!o.version_id.empty()) j["version_id"] = o.version_id;
  if (const std::string alg(ChecksumAlgorithmName(o.checksum_algorithm));
      !alg.empty() && !o.checksum.empty()) {
    j["checksum"] = {{"algorithm", alg}, {"value", o.checksum}};
  }
  return j;
}

int CmdHead(Common& c, std::vector<std::string>& targets) {
  Session s(c);
  if (Status st = s.Init(false); !st.ok()) return Usage("head", st.message());
  auto client = s.Client();
  if (!client.ok()) return Fail(client.error(), "head");
  int rc = kExitOk;
  for (const std::string& t : targets) {
    auto loc = ParseLocation(t);
    if (!loc.ok()) return Usage("head", loc.error().message());
    if (!loc->s3) return Usage("head", "head takes s3://BUCKET/KEY or s3://BUCKET");
    if (HasWildcard(loc->key)) return Usage("head", "head takes one object, not a pattern: " + t);
    if (loc->key.empty()) {
      Status st = (*client)->HeadBucket(loc->bucket);
      if (st.IsNotFound()) st = Status::NotFound("bucket \"" + loc->bucket + "\" does not exist");
      if (!st.ok()) {
        rc = Fail(s.Explain(st), "head");
        continue;
      }
      fmt::print("{}\n", nlohmann::json{{"bucket", loc->bucket}}.dump(
                             -1, ' ', false, nlohmann::json::error_handler_t::replace));
      continue;
    }
    auto store = s.Bucket(loc->bucket);
    if (!store.ok()) return Fail(store.error(), "head");
    auto info = (*store)->Head(loc->key);
    if (!info.ok()) {
      Status st = info.error();
      if (st.IsNotFound()) {
        // A HEAD's 404 has no body to tell a missing key from a missing bucket.
        st = (*client)->HeadBucket(loc->bucket).IsNotFound()
                 ? Status::NotFound("bucket \"" + loc->bucket + "\" does not exist")
                 : Status::NotFound("object " + t + " does not exist");
      }
      rc = Fail(s.Explain(st), "head");
      continue;
    }
    fmt::print("{}\n",
               HeadJson(*info).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return rc;
}

// "3600", "90s", "15m", "1h30m", "7d": whole seconds.
Result<int64_t> ParseExpiry(std::string_view text) {
  const Status bad = Status::InvalidArgument(
      "--expire \"" + std::string(text) + "\" is not a duration (e.g. 3600, 90s, 15m, 1h30m, 7d)");
  if (text.empty()) return bad;
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    int64_t n = 0;
    const size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      n = n * 10 + (text[i] - '0');
      if (n > 10'000'000'000) return bad;
      ++i;
    }
    if (i == start) return bad;
    if (i == text.size()) {
      if (start != 0) return bad;  // "1h30": a bare number only on its own
      return n;
    }
    int64_t unit = 0;
    switch (text[i]) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      default:
        return bad;
    }
    total += n * unit;
    if (total > 10'000'000'000) return bad;
    ++i;
  }
  return total;
}

struct PresignArgs {
  std::string target;
  std::string expire = "1h";
  std::string method = "GET";
};

int CmdPresign(Common& c, PresignArgs& a) {
  auto loc = ParseLocation(a.target);
  if (!loc.ok()) return Usage("presign", loc.error().message());
  if (!loc->s3 || loc->key.empty() || HasWildcard(loc->key)) {
    return Usage("presign", "presign takes one s3://BUCKET/KEY");
  }
  if (!IEquals(a.method, "GET") && !IEquals(a.method, "PUT")) {
    return Usage("presign", "--method must be GET or PUT");
  }
  const std::string method = IEquals(a.method, "GET") ? "GET" : "PUT";
  auto secs = ParseExpiry(a.expire);
  if (!secs.ok()) return Usage("presign", secs.error().message());
  if (*secs < 1) return Usage("presign", "--expire must be at least 1s");
  if (*secs > kMaxPresignExpiresSec) {
    return Usage("presign", "--expire must be at most 7d (604800 seconds), the longest S3 accepts");
  }
  Session s(c);
  if (Status st = s.Init(false); !st.ok()) return Usage("presign", st.message());
  auto client = s.Client();
  if (!client.ok()) return Fail(client.error(), "presign");
  if (s.anonymous()) {
    return Fail(Status::PermissionDenied("presigning needs credentials (set AWS_ACCESS_KEY_ID and "
                                         "AWS_SECRET_ACCESS_KEY, or use --profile)"),
                "presign");
  }
  // Signing is local: the object need not exist (a PUT URL is for a new one).
  auto url = (*client)->Presign(method, loc->bucket, loc->key, *secs);
  if (!url.ok()) return Fail(url.error(), "presign");
  fmt::print("{}\n", *url);
  return kExitOk;
}

// ---------------------------------------------------------------------------
// Registration

struct State {
  Common common;
  LsArgs ls;
  CpArgs cp;
  CpArgs mv;
  SyncArgs sync;
  PresignArgs presign;
  std::vector<std::string> head;
  RmArgs rm;
  std::vector<std::string> cat, mb, rb, du;
  bool rb_force = false;
  bool du_human = false;
};

// A command's CLI11 callback: runs fn and stores its exit code.
std::function<void()> Wrap(const std::shared_ptr<State>& st, int* exit_code,
                           std::function<int()> fn) {
  return [st, exit_code, fn = std::move(fn)] {
    ::signal(SIGPIPE, SIG_IGN);
    InstallInterruptHandler();
    try {
      *exit_code = fn();
    } catch (const std::exception& e) {
      fmt::print(stderr, "strata: internal error: {}\n", e.what());
      *exit_code = kExitSomeFailed;
    }
  };
}

std::string Footer(std::string examples) { return "\nExamples:\n" + examples + "\n\n" + kExitCodesHelp; }

void RegisterLs(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* ls = app.add_subcommand("ls", "List buckets, or the objects and prefixes under s3://BUCKET[/PREFIX]");
  ls->add_option("target", st->ls.target, "s3://BUCKET[/PREFIX] (nothing: list buckets)");
  ls->add_flag("-r,--recursive", st->ls.recursive, "List every object under the prefix, not one level");
  ls->add_flag("-H,--human-readable", st->ls.human, "Sizes in KiB/MiB/GiB");
  ls->add_flag("--summarize", st->ls.summarize, "Print the number of objects and their total size");
  AddConnectionOptions(ls, c);
  AddOutputOptions(ls, c);
  ls->footer(Footer("  strata ls --endpoint-url http://127.0.0.1:9000\n"
                    "  strata ls s3://data/shards/\n"
                    "  strata ls --recursive --summarize --human-readable s3://data"));
  ls->callback(Wrap(st, exit_code, [st] { return CmdLs(st->common, st->ls); }));
}

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
  sub->add_flag("--dryrun", c.dryrun,
                move ? "Print what would be moved, change nothing"
                     : "Print what would be copied, copy nothing");
  AddFilterOptions(sub, c);
  AddTransferOptions(sub, c);
  AddConnectionOptions(sub, c);
  AddOutputOptions(sub, c);
}

void RegisterCp(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* cp = app.add_subcommand(
      "cp", "Copy files to, from and between S3 locations (parallel, multipart, resumable)");
  AddCopyOptions(cp, st->cp, c, false);
  cp->footer(Footer("  strata cp model.bin s3://ckpt/run1/                 upload (key run1/model.bin)\n"
                    "  strata cp --recursive ./dataset s3://data/ds1       a directory\n"
                    "  strata cp 's3://data/shards/*.tar' ./shards/        objects matching a pattern\n"
                    "  strata cp s3://data/a.bin s3://backup/a.bin         server-side copy\n"
                    "  tar c dir | strata cp - s3://data/dir.tar           from stdin\n"
                    "An interrupted multipart upload resumes when the same command is run again."));
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

void RegisterHeadPresign(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* head = app.add_subcommand(
      "head", "Print an object's metadata as one JSON object (or check that a bucket exists)");
  head->add_option("targets", st->head, "s3://BUCKET/KEY or s3://BUCKET...")->required();
  AddConnectionOptions(head, c);
  head->footer(
      Footer("  strata head s3://data/model.bin\n"
             "Prints {\"key\", \"size\", \"etag\", \"last_modified\", \"content_type\", "
             "\"storage_class\",\n"
             "\"metadata\"} and, when the server sends them, \"version_id\" and \"checksum\"."));
  head->callback(Wrap(st, exit_code, [st] { return CmdHead(st->common, st->head); }));

  auto* pre = app.add_subcommand("presign",
                                 "Print a presigned URL (SigV4 query-string auth) for one object");
  pre->add_option("target", st->presign.target, "s3://BUCKET/KEY")->required();
  pre->add_option("--expire,--expires-in", st->presign.expire,
                  "How long the URL is valid: seconds, or 90s, 15m, 1h30m, 7d (at most 7d)")
      ->capture_default_str();
  pre->add_option("--method", st->presign.method, "GET (download) or PUT (upload)")
      ->capture_default_str();
  AddConnectionOptions(pre, c);
  pre->footer(
      Footer("  strata presign s3://data/report.pdf\n"
             "  strata presign --expire 24h s3://data/report.pdf\n"
             "  curl -T file \"$(strata presign --method PUT s3://inbox/file)\"\n"
             "Signing needs credentials but no request: the object need not exist."));
  pre->callback(Wrap(st, exit_code, [st] { return CmdPresign(st->common, st->presign); }));
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
  AddTransferOptions(sync, c);
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

void RegisterBucketCommands(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* cat = app.add_subcommand("cat", "Write objects to stdout");
  cat->add_option("targets", st->cat, "s3://BUCKET/KEY...")->required();
  AddConnectionOptions(cat, c);
  cat->footer(Footer("  strata cat s3://data/config.json | jq ."));
  cat->callback(Wrap(st, exit_code, [st] { return CmdCat(st->common, st->cat); }));

  auto* mb = app.add_subcommand("mb", "Create buckets");
  mb->add_option("buckets", st->mb, "s3://BUCKET...")->required();
  AddConnectionOptions(mb, c);
  AddOutputOptions(mb, c);
  mb->footer(Footer("  strata mb s3://data"));
  mb->callback(Wrap(st, exit_code, [st] { return CmdMb(st->common, st->mb); }));

  auto* rb = app.add_subcommand("rb", "Delete buckets (empty ones, or everything in them with --force)");
  rb->add_option("buckets", st->rb, "s3://BUCKET...")->required();
  rb->add_flag("--force", st->rb_force, "Delete every object in the bucket first");
  AddTransferOptions(rb, c);
  AddConnectionOptions(rb, c);
  AddOutputOptions(rb, c);
  rb->footer(Footer("  strata rb --force s3://scratch"));
  rb->callback(Wrap(st, exit_code, [st] { return CmdRb(st->common, st->rb, st->rb_force); }));
}

void RegisterDu(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* du = app.add_subcommand("du", "Total size and object count under s3://BUCKET[/PREFIX]");
  du->add_option("targets", st->du, "s3://BUCKET[/PREFIX]...")->required();
  du->add_flag("-H,--human-readable", st->du_human, "Sizes in KiB/MiB/GiB");
  AddConnectionOptions(du, c);
  AddOutputOptions(du, c);
  du->footer(Footer("  strata du -H s3://data/shards/"));
  du->callback(Wrap(st, exit_code, [st] { return CmdDu(st->common, st->du, st->du_human); }));
}

}  // namespace

void RegisterTransferCommands(CLI::App& app, int* exit_code) {
  auto st = std::make_shared<State>();
  RegisterLs(app, st, exit_code);
  RegisterCp(app, st, exit_code);
  RegisterMv(app, st, exit_code);
  RegisterSync(app, st, exit_code);
  RegisterRm(app, st, exit_code);
  RegisterBucketCommands(app, st, exit_code);
  RegisterDu(app, st, exit_code);
  RegisterHeadPresign(app, st, exit_code);
}

}  // namespace strata::cli
