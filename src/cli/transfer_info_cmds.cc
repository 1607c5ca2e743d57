// strata head | presign: one object's metadata as JSON, and presigned URLs.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/checksum.h>
#include <strata/core/strings.h>

#include "cli/exit_codes.h"
#include "cli/transfer_session.h"
#include "cli/transfer_util.h"

namespace strata::cli::transfer {
namespace {

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

struct InfoState {
  Common common;
  std::vector<std::string> head;
  PresignArgs presign;
};

void RegisterHeadPresign(CLI::App& app, const std::shared_ptr<InfoState>& st, int* exit_code) {
  Common& c = st->common;
  auto* head = app.add_subcommand(
      "head", "Print an object's metadata as one JSON object (or check that a bucket exists)");
  head->add_option("targets", st->head, "s3://BUCKET/KEY or s3://BUCKET...")->required();
  AddSseCustomerOption(head, c);
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

}  // namespace

void RegisterInfoCommands(CLI::App& app, int* exit_code) {
  RegisterHeadPresign(app, std::make_shared<InfoState>(), exit_code);
}

}  // namespace strata::cli::transfer
