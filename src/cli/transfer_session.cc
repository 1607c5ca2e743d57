// The pieces every transfer command shares (transfer_session.h).
#include "cli/transfer_session.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/clock.h>

#include "cli/exit_codes.h"

namespace strata::cli::transfer {

void AddConnectionOptions(CLI::App* sub, Common& c) {
  auto* g = sub->add_option_group("Connection", "Endpoint and credentials (as awscli takes them)");
  g->add_option(
      "--endpoint-url", c.endpoint_url,
      "S3 endpoint, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, "
      "the profile's endpoint_url, else AWS)");
  g->add_option(
      "--profile", c.profile,
      "Profile in ~/.aws/credentials and ~/.aws/config (default: AWS_PROFILE or \"default\")");
  g->add_option(
      "--region", c.region,
      "Region to sign for (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's, us-east-1)");
  g->add_flag("--no-verify-ssl", c.no_verify_ssl,
              "Do not verify the TLS certificate of an https:// endpoint");
  g->add_option("--ca-bundle", c.ca_bundle,
                "PEM file of CA certificates to verify the endpoint with");
  g->add_option("--s3-option", c.s3_options,
                "Advanced S3 client setting KEY=VALUE (repeatable): max_retries, timeout_ms, "
                "connect_timeout_ms, path_style, sign_payload, verify_md5, fault_error_rate, "
                "fault_drop_rate, ...")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
}

void AddTransferOptions(CLI::App* sub, Common& c) {
  auto* g = sub->add_option_group("Transfer", "Parallelism and part sizes");
  g->add_option("--concurrency", c.concurrency,
                "Requests in flight at once, across files and parts")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  g->add_option("--part-size", c.part_size,
                "Multipart part size (grows to keep at most 10,000 parts; at least 5MiB)")
      ->capture_default_str();
  g->add_option(
       "--multipart-threshold", c.multipart_threshold,
       "Files larger than this are uploaded in parts and downloaded with parallel ranged GETs")
      ->capture_default_str();
  g->add_flag("--fsync", c.fsync,
              "fsync downloaded files before renaming them into place (survive power loss; costs "
              "disk speed)");
}

void AddOutputOptions(CLI::App* sub, Common& c) {
  auto* g = sub->add_option_group("Output");
  g->add_flag("--json", c.json,
              "One JSON object per line on stdout (one per object, then a summary)");
  g->add_flag("-q,--quiet", c.quiet, "Print errors only");
  g->add_flag("--no-progress", c.no_progress,
              "No progress bar (it is shown only when stderr is a terminal)");
}

void AddFilterOptions(CLI::App* sub, Common& c) {
  sub->add_option(
         "--exclude", c.exclude,
         "Skip paths matching this pattern (relative to SRC; * ? [] wildcards; repeatable)")
      ->allow_extra_args(false);
  sub->add_option(
         "--include", c.include,
         "Do not skip paths matching this pattern, even if an --exclude matched (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--exclude-from", c.exclude_from,
                  "Read --exclude patterns from FILE, one a line (# comments; repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--include-from", c.include_from,
                  "Read --include patterns from FILE, one a line (# comments; repeatable)")
      ->allow_extra_args(false);
}

namespace {

// The patterns of a --exclude-from/--include-from file: one a line, blank
// lines and lines starting with # (or ;, as rclone) skipped, surrounding
// whitespace kept out.
Status AddPatternFile(PathFilter& f, bool include, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status::NotFound(
        fmt::format("--{}-from: cannot read \"{}\"", include ? "include" : "exclude", path));
  }
  std::string line;
  while (std::getline(in, line)) {
    std::string_view p = Trim(line);
    if (p.empty() || p[0] == '#' || p[0] == ';') continue;
    f.Add(include, std::string(p));
  }
  if (in.bad()) return Status::IOError("read " + path);
  return Status::Ok();
}

}  // namespace

// awscli applies --exclude/--include in command-line order; CLI11 keeps the
// values per option, and the order of occurrences in parse_order().
Result<PathFilter> BuildFilters(const Common& c, const CLI::App* sub) {
  PathFilter f;
  size_t ei = 0, ii = 0, efi = 0, ifi = 0;
  for (const CLI::Option* o : sub->parse_order()) {
    if (o->check_lname("exclude") && ei < c.exclude.size()) {
      f.Add(false, c.exclude[ei++]);
    } else if (o->check_lname("include") && ii < c.include.size()) {
      f.Add(true, c.include[ii++]);
    } else if (o->check_lname("exclude-from") && efi < c.exclude_from.size()) {
      STRATA_RETURN_IF_ERROR(AddPatternFile(f, false, c.exclude_from[efi++]));
    } else if (o->check_lname("include-from") && ifi < c.include_from.size()) {
      STRATA_RETURN_IF_ERROR(AddPatternFile(f, true, c.include_from[ifi++]));
    }
  }
  while (ei < c.exclude.size()) f.Add(false, c.exclude[ei++]);
  while (ii < c.include.size()) f.Add(true, c.include[ii++]);
  while (efi < c.exclude_from.size()) {
    STRATA_RETURN_IF_ERROR(AddPatternFile(f, false, c.exclude_from[efi++]));
  }
  while (ifi < c.include_from.size()) {
    STRATA_RETURN_IF_ERROR(AddPatternFile(f, true, c.include_from[ifi++]));
  }
  return f;
}

void AddAgeOptions(CLI::App* sub, Common& c) {
  sub->add_option("--max-age", c.max_age,
                  "Only files modified less than this long ago (1h, 2d, 30m, 1w; or a date: "
                  "2030-01-02, 2030-01-02 15:04:05, RFC 3339; UTC)");
  sub->add_option("--min-age", c.min_age,
                  "Only files modified more than this long ago (same syntax as --max-age)");
}

void AddBandwidthOption(CLI::App* sub, Common& c) {
  sub->add_option("--bwlimit", c.bwlimit,
                  "Bandwidth limit shared by all workers, as rclone's: 10M (MiB/s), 512K, 100B "
                  "(bytes/s; a bare number is KiB/s), UP:DOWN (10M:100M) for separate upload and "
                  "download limits, or off")
      ->type_name("RATE");
}

namespace {
// One rate of --bwlimit; 0 = no limit.
Result<uint64_t> ParseRate(std::string_view text, std::string_view whole) {
  const std::string t = ToLower(Trim(text));
  if (t == "off" || t.empty()) return uint64_t{0};
  const bool bare = t.find_first_not_of("0123456789.") == std::string::npos;
  auto r = ParseByteSize(bare ? t + "k" : t);
  if (!r.ok()) {
    return Status::InvalidArgument(
        "--bwlimit \"" + std::string(whole) +
        "\" is not a rate (e.g. 10M, 512K, 100B, or UP:DOWN as 10M:50M)");
  }
  return *r;
}
}  // namespace

Result<BandwidthLimit> ParseBandwidthLimit(std::string_view text) {
  // rclone's timetables ("08:00,512K 12:00,10M") name times of day.
  if (text.find_first_of(", \t") != std::string_view::npos ||
      text.find('-') != std::string_view::npos) {
    return Status::NotSupported("--bwlimit \"" + std::string(text) +
                                "\": timetables are not supported; give one RATE or UP:DOWN");
  }
  BandwidthLimit b;
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    STRATA_ASSIGN_OR_RETURN(b.up, ParseRate(text, text));
    b.down = b.up;
    b.shared = true;
    return b;
  }
  if (text.find(':', colon + 1) != std::string_view::npos) {
    return Status::InvalidArgument("--bwlimit \"" + std::string(text) + "\": use RATE or UP:DOWN");
  }
  STRATA_ASSIGN_OR_RETURN(b.up, ParseRate(text.substr(0, colon), text));
  STRATA_ASSIGN_OR_RETURN(b.down, ParseRate(text.substr(colon + 1), text));
  return b;
}

void AddSseCustomerOption(CLI::App* sub, Common& c) {
  sub->add_option("--sse-c-key", c.sse_c_key,
                  "SSE-C: the customer key (base64 of 32 bytes, or 32 raw bytes), sent on "
                  "uploads, downloads, HEADs and both sides of S3 -> S3 copies");
}

Result<int64_t> ParseAgeCutoff(std::string_view text, int64_t now_ns) {
  const std::string t(Trim(text));
  auto bad = [&] {
    return Status::InvalidArgument("\"" + t +
                                   "\" is neither a duration (1h, 2d, 30m, 1h30m) nor a date "
                                   "(2030-01-02, 2030-01-02 15:04:05, 2030-01-02T15:04:05Z)");
  };
  if (t.empty()) return bad();
  // An absolute time.
  if (t.size() >= 10 && t[4] == '-' && t[7] == '-') {
    std::string iso = t;
    if (iso.size() == 10) iso += "T00:00:00";
    if (iso.size() > 10 && iso[10] == ' ') iso[10] = 'T';
    if (iso.back() != 'Z' && iso.find('+', 10) == std::string::npos &&
        iso.find('-', 10) == std::string::npos) {
      iso += 'Z';
    }
    if (auto ns = ParseIso8601(iso)) return *ns;
    return bad();
  }
  // A duration: number+unit pairs (a bare number is seconds).
  static const std::pair<std::string_view, double> kUnits[] = {
      {"ms", 1e-3}, {"s", 1},         {"m", 60},         {"h", 3600},
      {"d", 86400}, {"w", 7 * 86400}, {"M", 30 * 86400}, {"y", 365 * 86400}};
  double secs = 0;
  size_t i = 0;
  while (i < t.size()) {
    size_t j = i;
    while (j < t.size() && (std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == '.')) ++j;
    if (j == i) return bad();
    const double n = std::strtod(t.substr(i, j - i).c_str(), nullptr);
    size_t k = j;
    while (k < t.size() && std::isalpha(static_cast<unsigned char>(t[k]))) ++k;
    const std::string_view unit = std::string_view(t).substr(j, k - j);
    double mult = -1;
    if (unit.empty()) mult = (i == 0 && k == t.size()) ? 1 : -1;
    for (const auto& [u, m] : kUnits) {
      if (unit == u) mult = m;
    }
    if (mult < 0) return bad();
    secs += n * mult;
    i = k;
  }
  return now_ns - static_cast<int64_t>(secs * 1e9);
}

Result<AgeFilter> BuildAgeFilter(const Common& c) {
  AgeFilter f;
  const int64_t now = NowUnixNanos();
  if (!c.max_age.empty()) {
    auto t = ParseAgeCutoff(c.max_age, now);
    if (!t.ok()) return t.error().WithContext("--max-age");
    f.min_mtime_ns = *t;
  }
  if (!c.min_age.empty()) {
    auto t = ParseAgeCutoff(c.min_age, now);
    if (!t.ok()) return t.error().WithContext("--min-age");
    f.max_mtime_ns = *t;
  }
  return f;
}

Result<std::string> DecodeSseCustomerKey(const std::string& text) {
  if (auto d = Base64Decode(text); d && d->size() == 32) return *d;
  if (text.size() == 32) return text;
  return Status::InvalidArgument(
      "--sse-c-key must be 32 bytes: base64 of a 256-bit key (e.g. from `openssl rand -base64 "
      "32`) or 32 raw characters");
}

// ---------------------------------------------------------------------------
// Ctrl-C: the downloads' temporary files are removed before exiting (resume
// state of uploads is kept on purpose). The signals are taken by a thread in
// sigwait, so the cleanup runs in normal thread context.

namespace {
std::mutex g_interrupt_mu;
TransferManager* g_active = nullptr;  // guarded by g_interrupt_mu
}  // namespace

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
    std::fputs(
        "\nstrata: interrupted (run the same command again to resume uploads and large "
        "downloads)\n",
        stderr);
    std::_Exit(sig == SIGINT ? kExitInterrupted : 128 + sig);
  }).detach();
}

int Fail(const Status& s, std::string_view cmd, bool json) {
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

// A command's CLI11 callback: runs fn and stores its exit code.
std::function<void()> Wrap(std::shared_ptr<void> keep, int* exit_code, std::function<int()> fn) {
  return [keep = std::move(keep), exit_code, fn = std::move(fn)] {
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

std::string Footer(std::string examples) {
  return "\nExamples:\n" + examples + "\n\n" + kExitCodesHelp;
}

}  // namespace strata::cli::transfer
