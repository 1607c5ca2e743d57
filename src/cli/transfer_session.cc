// The pieces every transfer command shares (transfer_session.h).
#include "cli/transfer_session.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cstdio>
#include <ctime>
#include <exception>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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
    std::fputs("\nstrata: interrupted (run the same command again to resume uploads)\n", stderr);
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
