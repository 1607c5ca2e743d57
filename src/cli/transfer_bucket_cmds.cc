// strata ls | mb | rb | du: listings and buckets (transfer_session.h).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/strings.h>
#include <strata/objstore/object_store.h>
#include <strata/objstore/s3_client.h>
#include <strata/objstore/transfer.h>

#include "cli/exit_codes.h"
#include "cli/transfer_session.h"
#include "cli/transfer_util.h"

namespace strata::cli::transfer {
namespace {

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// ---------------------------------------------------------------------------
// ls

struct LsArgs {
  std::string target;
  bool recursive = false;
  bool human = false;
  bool summarize = false;
  bool etag = false;           // s5cmd --etag: an ETag column
  bool all_versions = false;   // s5cmd --all-versions: every version and delete marker
  bool show_fullpath = false;  // s5cmd --show-fullpath: only s3://BUCKET/KEY per line
};

int ListBuckets(Common& c, Session& s, S3Client& client) {
  auto buckets = client.ListBuckets();
  if (!buckets.ok()) return Fail(s.Explain(buckets.error()), "ls", c.json);
  for (const auto& b : *buckets) {
    if (c.json) {
      fmt::print("{}\n", Dump({{"bucket", b.name}, {"created", FormatIso8601(b.created_ns)}}));
    } else {
      fmt::print("{} {}\n", FormatLocalTime(b.created_ns), b.name);
    }
  }
  return kExitOk;
}

// ls --all-versions: every version and delete marker under the prefix (all
// levels), newest first per key.
int ListVersions(Common& c, LsArgs& a, Session& s, S3Client& client, const Location& loc) {
  auto size_str = [&](uint64_t n) { return a.human ? HumanBytes(n) : std::to_string(n); };
  std::string key_marker, version_marker;
  uint64_t count = 0, total = 0;
  bool any = false;
  for (;;) {
    auto page = client.ListObjectVersions(loc.bucket, loc.key, key_marker, version_marker);
    if (!page.ok()) return Fail(s.Explain(page.error()), "ls", c.json);
    for (const objstore::ObjectVersion& v : page->versions) {
      any = true;
      if (!v.delete_marker) {
        ++count;
        total += v.size;
      }
      const std::string url = S3Url(loc.bucket, v.key);
      if (c.json) {
        nlohmann::json j{{"key", v.key},
                         {"version_id", v.version_id},
                         {"is_latest", v.is_latest},
                         {"delete_marker", v.delete_marker},
                         {"last_modified", FormatIso8601(v.mtime_ns)}};
        if (!v.delete_marker) {
          j["size"] = v.size;
          j["etag"] = v.etag;
          j["storage_class"] = v.storage_class.empty() ? "STANDARD" : v.storage_class;
        }
        if (a.show_fullpath) j["url"] = url;
        fmt::print("{}\n", Dump(j));
      } else if (a.show_fullpath) {
        fmt::print("{} {}\n", url, v.version_id);
      } else {
        const std::string size = v.delete_marker ? "DELETED" : size_str(v.size);
        const std::string etag =
            a.etag ? fmt::format(" {:<34}", v.delete_marker ? "" : v.etag) : "";
        fmt::print("{} {:>10}{} {:<36} {}{}\n", FormatLocalTime(v.mtime_ns), size, etag,
                   v.version_id,
                   v.key.substr(std::min(v.key.size(), loc.key.find_last_of('/') + 1)),
                   v.is_latest ? " (latest)" : "");
      }
    }
    if (page->next_key_marker.empty()) break;
    key_marker = page->next_key_marker;
    version_marker = page->next_version_marker;
  }
  if (a.summarize) {
    if (c.json) {
      fmt::print("{}\n", Dump({{"summary", true}, {"objects", count}, {"bytes", total}}));
    } else {
      fmt::print("\nTotal Objects: {}\n   Total Size: {}\n", count, size_str(total));
    }
  }
  std::fflush(stdout);
  if (!any && !loc.key.empty()) return kExitNotFound;
  return kExitOk;
}

int CmdLs(Common& c, LsArgs& a) {
  Session s(c);
  if (Status st = s.Init(false); !st.ok()) return Usage("ls", st.message());
  auto client = s.Client();
  if (!client.ok()) return Fail(client.error(), "ls", c.json);
  auto size_str = [&](uint64_t n) { return a.human ? HumanBytes(n) : std::to_string(n); };
  if (a.target.empty() || a.target == "s3://") {
    if (a.etag || a.all_versions || a.show_fullpath) {
      return Usage("ls",
                   "--etag, --all-versions and --show-fullpath list objects: give s3://BUCKET");
    }
    return ListBuckets(c, s, **client);
  }
  auto loc = ParseLocation(a.target);
  if (!loc.ok()) return Usage("ls", loc.error().message());
  if (!loc->s3) return Usage("ls", "ls lists s3:// locations; use your shell's ls for local files");
  if (a.all_versions) return ListVersions(c, a, s, **client, *loc);
  auto store = s.Bucket(loc->bucket);
  if (!store.ok()) return Fail(store.error(), "ls", c.json);
  const std::string prefix = loc->key;
  const size_t slash = prefix.find_last_of('/');
  const size_t dir_len = a.recursive ? 0 : (slash == std::string::npos ? 0 : slash + 1);
  std::string token;
  uint64_t count = 0, total = 0;
  bool any = false;
  for (;;) {
    auto page = (*store)->List(prefix, a.recursive ? "" : "/", token, 1000);
    if (!page.ok()) return Fail(s.Explain(page.error()), "ls", c.json);
    for (const std::string& p : page->common_prefixes) {
      any = true;
      if (c.json) {
        nlohmann::json j{{"prefix", p}};
        if (a.show_fullpath) j["url"] = S3Url(loc->bucket, p);
        fmt::print("{}\n", Dump(j));
      } else if (a.show_fullpath) {
        fmt::print("{}\n", S3Url(loc->bucket, p));
      } else {
        fmt::print("{:>30} {}\n", "PRE", p.substr(dir_len));
      }
    }
    for (const ObjectInfo& o : page->objects) {
      any = true;
      ++count;
      total += o.size;
      if (c.json) {
        nlohmann::json j{{"key", o.key},
                         {"size", o.size},
                         {"etag", o.etag},
                         {"last_modified", FormatIso8601(o.mtime_ns)}};
        if (a.show_fullpath) j["url"] = S3Url(loc->bucket, o.key);
        fmt::print("{}\n", Dump(j));
      } else if (a.show_fullpath) {
        fmt::print("{}\n", S3Url(loc->bucket, o.key));
      } else if (a.etag) {
        fmt::print("{} {:>10} {:<34} {}\n", FormatLocalTime(o.mtime_ns), size_str(o.size), o.etag,
                   o.key.substr(dir_len));
      } else {
        fmt::print("{} {:>10} {}\n", FormatLocalTime(o.mtime_ns), size_str(o.size),
                   o.key.substr(dir_len));
      }
    }
    if (page->next_token.empty()) break;
    token = page->next_token;
  }
  if (a.summarize) {
    if (c.json) {
      fmt::print("{}\n", Dump({{"summary", true}, {"objects", count}, {"bytes", total}}));
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
// mb, rb

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
    if (c.json) {
      fmt::print("{}\n", Dump({{"op", "make_bucket"}, {"bucket", loc->bucket}, {"ok", true}}));
    } else if (!c.quiet) {
      fmt::print("make_bucket: {}\n", loc->bucket);
    }
  }
  return rc;
}

Reporter::Options QuietReporter() {
  Reporter::Options o;
  o.quiet = true;
  o.progress = false;
  return o;
}

// rb --force, before DeleteBucket: aborts the multipart uploads in progress,
// then deletes every version and delete marker (an unversioned bucket lists
// its objects as "null" versions), batches of 1,000 in parallel. Returns the
// exit code of the failures (kExitOk when everything went).
int EmptyBucket(Session& s, S3Client& client, const std::string& bucket) {
  Reporter rep(QuietReporter(), nullptr);
  TransferManager& mgr = s.mgr();
  std::string key_marker, id_marker;
  for (;;) {
    auto page = client.ListMultipartUploads(bucket, "", key_marker, id_marker);
    if (!page.ok()) {
      rep.Error(s.Explain(page.error()), "listing the multipart uploads of " + bucket);
      return rep.Finish("rb");
    }
    for (const objstore::MultipartUploadEntry& u : page->uploads) {
      mgr.Run([&, u] {
        Status st = client.AbortMultipartUpload(bucket, u.key, u.upload_id);
        if (st.code() == StatusCode::kNotFound)
          st = Status::Ok();  // completed or aborted meanwhile
        rep.Object("abort", S3Url(bucket, u.key), "", 0, s.Explain(st), 0);
      });
    }
    if (page->next_key_marker.empty()) break;
    key_marker = page->next_key_marker;
    id_marker = page->next_upload_id_marker;
  }
  mgr.Wait();
  auto submit = [&](std::vector<std::pair<std::string, std::string>> batch) {
    if (batch.empty()) return;
    mgr.Run([&, batch = std::move(batch)] {
      auto r = client.DeleteVersions(bucket, batch);
      for (size_t i = 0; i < batch.size(); ++i) {
        Status st = r.ok() ? (*r)[i] : r.error();
        rep.Object("delete", S3Url(bucket, batch[i].first) + " (version " + batch[i].second + ")",
                   "", 0, s.Explain(st), 0);
      }
    });
  };
  key_marker.clear();
  std::string version_marker;
  std::vector<std::pair<std::string, std::string>> batch;
  for (;;) {
    auto page = client.ListObjectVersions(bucket, "", key_marker, version_marker);
    if (!page.ok()) {
      mgr.Wait();
      rep.Error(s.Explain(page.error()), "listing the versions of " + bucket);
      return rep.Finish("rb");
    }
    for (const objstore::ObjectVersion& v : page->versions) {
      batch.emplace_back(v.key, v.version_id);
      if (batch.size() == 1000) submit(std::exchange(batch, {}));
    }
    if (page->next_key_marker.empty()) break;
    key_marker = page->next_key_marker;
    version_marker = page->next_version_marker;
  }
  submit(std::move(batch));
  mgr.Wait();
  return rep.Finish("rb");
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
      if (Status h = (*client)->HeadBucket(loc->bucket); !h.ok()) {
        rc = Fail(s.Explain(h).WithContext("remove_bucket " + loc->bucket), "rb", c.json);
        continue;
      }
      if (const int erc = EmptyBucket(s, **client, loc->bucket); erc != kExitOk) {
        rc = erc;
        continue;
      }
    }
    Status st = (*client)->DeleteBucket(loc->bucket);
    if (!st.ok()) {
      if (st.code() == StatusCode::kPreconditionFailed) {
        st = st.WithContext("bucket " + loc->bucket +
                            " is not empty (use --force to delete its objects first)");
      }
      rc = Fail(s.Explain(st).WithContext("remove_bucket " + loc->bucket), "rb", c.json);
      continue;
    }
    if (c.json) {
      fmt::print("{}\n", Dump({{"op", "remove_bucket"}, {"bucket", loc->bucket}, {"ok", true}}));
    } else if (!c.quiet) {
      fmt::print("remove_bucket: {}\n", loc->bucket);
    }
  }
  return rc;
}

// ---------------------------------------------------------------------------
// du

int CmdDu(Common& c, std::vector<std::string>& targets, bool human, bool group) {
  Session s(c);
  if (Status st = s.Init(false); !st.ok()) return Usage("du", st.message());
  int rc = kExitOk;
  auto size_str = [&](uint64_t n) { return human ? HumanBytes(n) : std::to_string(n); };
  for (const std::string& t : targets) {
    auto loc = ParseLocation(t);
    if (!loc.ok() || !loc->s3) return Usage("du", "du takes s3://BUCKET[/PREFIX]");
    auto store = s.Bucket(loc->bucket);
    if (!store.ok()) return Fail(store.error(), "du", c.json);
    // By storage class (STANDARD when the listing names none, as S3 means).
    std::map<std::string, std::pair<uint64_t, uint64_t>> by_class;  // class -> (objects, bytes)
    uint64_t n = 0, bytes = 0;
    Status ls = (*store)->ListAll(loc->key, [&](const ObjectInfo& o) {
      ++n;
      bytes += o.size;
      auto& g = by_class[o.storage_class.empty() ? "STANDARD" : o.storage_class];
      ++g.first;
      g.second += o.size;
      return Status::Ok();
    });
    if (!ls.ok()) {
      rc = Fail(s.Explain(ls), "du", c.json);
      continue;
    }
    if (!group) {
      if (c.json) {
        fmt::print("{}\n", Dump({{"location", t}, {"objects", n}, {"bytes", bytes}}));
      } else {
        fmt::print("{}\t{} objects\t{}\n", size_str(bytes), n, t);
      }
      continue;
    }
    for (const auto& [cls, g] : by_class) {
      if (c.json) {
        fmt::print("{}\n", Dump({{"location", t},
                                 {"storage_class", cls},
                                 {"objects", g.first},
                                 {"bytes", g.second}}));
      } else {
        fmt::print("{}\t{} objects\t{}\t{}\n", size_str(g.second), g.first, t, cls);
      }
    }
  }
  return rc;
}

// ---------------------------------------------------------------------------
// Registration

struct State {
  Common common;
  LsArgs ls;
  std::vector<std::string> mb, rb, du;
  bool rb_force = false;
  bool du_human = false;
  bool du_group = false;
};

void RegisterLs(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* ls = app.add_subcommand(
      "ls", "List buckets, or the objects and prefixes under s3://BUCKET[/PREFIX]");
  ls->add_option("target", st->ls.target, "s3://BUCKET[/PREFIX] (nothing: list buckets)");
  ls->add_flag("-r,--recursive", st->ls.recursive,
               "List every object under the prefix, not one level");
  ls->add_flag("-H,--human-readable", st->ls.human, "Sizes in KiB/MiB/GiB");
  ls->add_flag("--summarize", st->ls.summarize, "Print the number of objects and their total size");
  ls->add_flag("-e,--etag", st->ls.etag, "Show each object's ETag");
  ls->add_flag("--all-versions", st->ls.all_versions,
               "List every version and delete marker under the prefix (all levels), with version "
               "ids");
  ls->add_flag("--show-fullpath", st->ls.show_fullpath,
               "Print only the full s3://BUCKET/KEY of each entry");
  AddConnectionOptions(ls, c);
  AddOutputOptions(ls, c);
  ls->footer(
      Footer("  strata ls --endpoint-url http://127.0.0.1:9000\n"
             "  strata ls s3://data/shards/\n"
             "  strata ls --recursive --summarize --human-readable s3://data\n"
             "  strata ls --all-versions s3://data/model.bin\n"
             "  strata ls -r --show-fullpath s3://data/logs/ | xargs ..."));
  ls->callback(Wrap(st, exit_code, [st] { return CmdLs(st->common, st->ls); }));
}

void RegisterMbRbDu(CLI::App& app, const std::shared_ptr<State>& st, int* exit_code) {
  Common& c = st->common;
  auto* mb = app.add_subcommand("mb", "Create buckets");
  mb->add_option("buckets", st->mb, "s3://BUCKET...")->required();
  AddConnectionOptions(mb, c);
  AddOutputOptions(mb, c);
  mb->footer(Footer("  strata mb s3://data"));
  mb->callback(Wrap(st, exit_code, [st] { return CmdMb(st->common, st->mb); }));

  auto* rb =
      app.add_subcommand("rb", "Delete buckets (empty ones, or everything in them with --force)");
  rb->add_option("buckets", st->rb, "s3://BUCKET...")->required();
  rb->add_flag("--force", st->rb_force,
               "First abort the multipart uploads in progress and delete every object (every "
               "version and delete marker of a versioned bucket)");
  AddTransferOptions(rb, c);
  AddConnectionOptions(rb, c);
  AddOutputOptions(rb, c);
  rb->footer(Footer("  strata rb --force s3://scratch"));
  rb->callback(Wrap(st, exit_code, [st] { return CmdRb(st->common, st->rb, st->rb_force); }));

  auto* du = app.add_subcommand("du", "Total size and object count under s3://BUCKET[/PREFIX]");
  du->add_option("targets", st->du, "s3://BUCKET[/PREFIX]...")->required();
  du->add_flag("-H,--human-readable", st->du_human, "Sizes in KiB/MiB/GiB");
  du->add_flag("-g,--group", st->du_group, "One line per storage class");
  AddConnectionOptions(du, c);
  AddOutputOptions(du, c);
  du->footer(Footer("  strata du -H s3://data/shards/\n  strata du --group s3://data"));
  du->callback(
      Wrap(st, exit_code, [st] { return CmdDu(st->common, st->du, st->du_human, st->du_group); }));
}

}  // namespace

void RegisterBucketCommands(CLI::App& app, int* exit_code) {
  auto st = std::make_shared<State>();
  RegisterLs(app, st, exit_code);
  RegisterMbRbDu(app, st, exit_code);
}

}  // namespace strata::cli::transfer
