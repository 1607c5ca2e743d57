// strata_bench_s3: load driver for Strata's S3 server side by side with nginx.
//
//   strata_bench_s3 load --endpoint 127.0.0.1:9000 --op get|put --size 4096 --conns 16
//                        --duration 5 --warmup 1 --path /bench/obj-4k [--sign]
//   strata_bench_s3 list --endpoint 127.0.0.1:9000 --bucket list --prefix d2/
//                        --start-after d2/shard-0005000 --repeat 200
//   strata_bench_s3 populate --data DIR --bucket list --objects 1000000 --owner AK
//   strata_bench_s3 sign-cost
//
// `load` runs N threads, each with its own keep-alive connection, for a fixed
// duration after a warm-up. ops/s and GiB/s count each request with the share
// of its duration inside the window; p50/p99 are over the requests that
// completed inside it (`ops` is their number). --sign signs every request
// with SigV4 header auth inside the timed loop (the signing cost is part of
// each latency; `sign-cost` measures it alone). Credentials come from STRATA_ROOT_USER / STRATA_ROOT_PASSWORD, as
// for the server. Results go to stdout as one `RESULT key=value ...` line that
// bench/s3/run.sh parses.
//
// GET setup: the object at --path is written with one PUT (plain or signed)
// unless a GET finds it already there, so both servers serve the same bytes.
// `all_ops` counts every successful request of the run, warm-up included, so
// run.sh can divide the server's CPU time by it. PUT keys: unique per request
// (path-cN-SEQ) for bodies up to 1 MiB, one overwritten key per connection
// (path-cN) above that, so a 64 MiB run does not fill the disk.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <strata/core/strings.h>
#include <strata/objstore/local_engine.h>

#include "http_client.h"
#include "signer.h"

namespace strata::bench {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "strata_bench_s3: %s\n", msg.c_str());
  std::exit(2);
}

// --name value and --flag; unknown names are errors so typos don't go unnoticed.
class Args {
 public:
  Args(int argc, char** argv, int first, const std::vector<std::string>& flags) {
    for (int i = first; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) != 0) Die("unexpected argument " + a);
      a = a.substr(2);
      if (auto eq = a.find('='); eq != std::string::npos) {
        kv_[a.substr(0, eq)] = a.substr(eq + 1);
      } else if (std::find(flags.begin(), flags.end(), a) != flags.end()) {
        kv_[a] = std::string(1, '1');  // (a literal trips a GCC 12 -Wrestrict false positive)
      } else {
        if (i + 1 >= argc) Die("--" + a + " needs a value");
        kv_[a] = argv[++i];
      }
    }
  }
  std::string Str(const std::string& k, const std::string& def = "") {
    used_.push_back(k);
    auto it = kv_.find(k);
    return it == kv_.end() ? def : it->second;
  }
  double Num(const std::string& k, double def) {
    std::string s = Str(k);
    if (s.empty()) return def;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0') Die("--" + k + " wants a number, got " + s);
    return v;
  }
  bool Flag(const std::string& k) { return !Str(k).empty(); }
  void CheckAllUsed() {
    for (const auto& [k, v] : kv_)
      if (std::find(used_.begin(), used_.end(), k) == used_.end()) Die("unknown option --" + k);
  }

 private:
  std::map<std::string, std::string> kv_;
  std::vector<std::string> used_;
};

void SplitEndpoint(const std::string& ep, std::string& host, int& port) {
  auto colon = ep.rfind(':');
  if (colon == std::string::npos) Die("--endpoint wants HOST:PORT");
  host = ep.substr(0, colon);
  port = std::atoi(ep.c_str() + colon + 1);
}

SigningConfig SigningFromEnv(bool sign) {
  SigningConfig cfg;
  if (!sign) return cfg;
  const char* u = std::getenv("STRATA_ROOT_USER");
  const char* p = std::getenv("STRATA_ROOT_PASSWORD");
  if (u == nullptr || p == nullptr || !*u || !*p)
    Die("--sign needs STRATA_ROOT_USER and STRATA_ROOT_PASSWORD in the environment");
  cfg.access_key = u;
  cfg.secret_key = p;
  if (const char* r = std::getenv("STRATA_BENCH_REGION")) cfg.region = r;
  return cfg;
}

// Deterministic, incompressible-looking bytes, identical for both servers.
std::string MakeBody(size_t n) {
  std::string s(n, '\0');
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return s;
}

double Percentile(std::vector<uint64_t>& v, double q) {
  if (v.empty()) return 0;
  size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return static_cast<double>(v[i]);
}

bool Ok2xx(int status) { return status >= 200 && status < 300; }

// One setup request, failing loudly (it runs before any timing).
void MustDo(Client& cl, RequestBuilder& rb, const char* method, const std::string& path,
            const std::string& body, std::initializer_list<int> also_ok = {}) {
  Response r;
  auto head = rb.Build(method, path, "", body.size());
  if (!cl.Do(head, body.data(), body.size(), true, r)) Die(fmt::format("{} {}: {}", method, path, cl.error()));
  if (Ok2xx(r.status)) return;
  for (int s : also_ok)
    if (r.status == s) return;
  Die(fmt::format("{} {} -> {}: {}", method, path, r.status, r.body.substr(0, 600)));
}

int RunLoad(Args& a) {
  std::string host;
  int port = 0;
  SplitEndpoint(a.Str("endpoint", "127.0.0.1:9000"), host, port);
  const std::string op = a.Str("op", "get");
  const size_t size = static_cast<size_t>(a.Num("size", 4096));
  const int conns = static_cast<int>(a.Num("conns", 16));
  const double duration = a.Num("duration", 5);
  const double warmup = a.Num("warmup", 1);
  const std::string path = a.Str("path", "/bench/obj");
  const std::string target = a.Str("target", "strata");
  const std::string label = a.Str("label", "");
  const bool sign = a.Flag("sign");
  std::string key_mode = a.Str("keys", size <= (1u << 20) ? "unique" : "per-conn");
  a.CheckAllUsed();
  if (op != "get" && op != "put") Die("--op is get or put");
  if (key_mode != "unique" && key_mode != "per-conn") Die("--keys is unique or per-conn");
  if (path.size() < 2 || path[0] != '/' || path.find('/', 1) == std::string::npos)
    Die("--path wants /bucket/key");
  const std::string host_header = fmt::format("{}:{}", host, port);
  const SigningConfig cfg = SigningFromEnv(sign);
  const std::string body = MakeBody(size);

  {  // Setup: the bucket (Strata) and, for GET, the object itself.
    Client cl(host, port);
    RequestBuilder rb(host_header, cfg);
    if (sign) {
      std::string bucket = path.substr(0, path.find('/', 1));
      MustDo(cl, rb, "PUT", bucket, "", {409});  // 409: already owned by us
    }
    if (op == "get") {
      // The bytes are deterministic: a present object of the right size is ours
      // (small ones are compared), so A/B/A reruns skip the PUT.
      auto present = [&] {
        Response r;
        return cl.Do(rb.Build("GET", path, "", 0), nullptr, 0, size <= 65536, r) && r.status == 200 &&
               r.body_bytes == size && (size > 65536 || r.body == body);
      };
      if (!present()) {
        MustDo(cl, rb, "PUT", path, body);
        if (!present()) Die(fmt::format("verification GET {} failed {}", path, cl.error()));
      }
    }
  }

  const std::string run_tag = fmt::format("{:x}", NowUnixNanos() / 1000 % 0xffffffff);
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::vector<uint64_t>> lat(conns);
  std::vector<uint64_t> errors(conns, 0), all_ok(conns, 0);
  std::vector<double> work(conns, 0.0);  // requests' shares inside the window (see below)
  std::vector<std::string> first_error(conns);
  Clock::time_point t_start, t_end;

  auto worker = [&](int id) {
    Client cl(host, port);
    RequestBuilder rb(host_header, cfg);
    std::vector<uint64_t>& my = lat[id];
    my.reserve(1 << 20);
    std::string key;
    uint64_t seq = 0;
    Response r;
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    while (!stop.load(std::memory_order_relaxed)) {
      const Clock::time_point t0 = Clock::now();
      bool ok;
      if (op == "get") {
        ok = cl.Do(rb.Build("GET", path, "", 0), nullptr, 0, false, r) && r.status == 200 &&
             r.body_bytes == size;
      } else {
        key = key_mode == "unique" ? fmt::format("{}-{}-c{}-{}", path, run_tag, id, seq++)
                                   : fmt::format("{}-c{}", path, id);
        ok = cl.Do(rb.Build("PUT", key, "", size), body.data(), body.size(), false, r) &&
             Ok2xx(r.status);
      }
      const Clock::time_point t1 = Clock::now();
      if (ok) {
        ++all_ok[id];  // for server CPU per request, which run.sh measures over the whole run
        // Throughput: each request counts with the share of its duration that
        // lies inside the window, so a 64 MiB run with a handful of requests
        // per connection is not off by whole requests at either edge.
        const auto lo = std::max(t0, t_start), hi = std::min(t1, t_end);
        if (hi > lo) work[id] += std::chrono::duration<double>(hi - lo).count() /
                                 std::max(1e-9, std::chrono::duration<double>(t1 - t0).count());
      }
      // Latencies and errors: requests that completed inside the window.
      if (t1 < t_start || t1 > t_end) continue;
      if (!ok) {
        if (errors[id]++ == 0)
          first_error[id] = cl.error().empty() ? fmt::format("status {}: {}", r.status, r.body.substr(0, 400))
                                               : cl.error();
        continue;
      }
      my.push_back(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
    }
  };

  std::vector<std::thread> threads;
  for (int i = 0; i < conns; ++i) threads.emplace_back(worker, i);
  while (ready.load() < conns) std::this_thread::yield();
  const Clock::time_point t0 = Clock::now();
  t_start = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warmup));
  t_end = t_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration));
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_until(t_end);
  stop.store(true);
  for (auto& t : threads) t.join();

  std::vector<uint64_t> all;
  uint64_t errs = 0, total_ok = 0;
  double total_work = 0;
  std::string err_text;
  for (int i = 0; i < conns; ++i) {
    all.insert(all.end(), lat[i].begin(), lat[i].end());
    errs += errors[i];
    total_work += work[i];
    total_ok += all_ok[i];
    if (err_text.empty() && !first_error[i].empty()) err_text = first_error[i];
  }
  const double ops = static_cast<double>(all.size());  // latency samples
  const double p50 = Percentile(all, 0.50) / 1e3, p99 = Percentile(all, 0.99) / 1e3;
  std::printf("RESULT target=%s label=%s op=%s size=%zu conns=%d duration=%.2f ops=%.0f ops_per_s=%.1f "
              "p50_us=%.1f p99_us=%.1f gib_per_s=%.4f errors=%llu signed=%d all_ops=%llu\n",
              target.c_str(), label.empty() ? "-" : label.c_str(), op.c_str(), size, conns, duration, ops,
              total_work / duration, p50, p99,
              total_work * static_cast<double>(size) / duration / (1ull << 30),
              static_cast<unsigned long long>(errs), sign ? 1 : 0,
              static_cast<unsigned long long>(total_ok));
  if (errs > 0) std::fprintf(stderr, "strata_bench_s3: %llu errors; first: %s\n",
                             static_cast<unsigned long long>(errs), err_text.c_str());
  return errs > 0 && all.empty() ? 1 : 0;
}

size_t CountOccurrences(std::string_view s, std::string_view needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string_view::npos; p = s.find(needle, p + needle.size())) ++n;
  return n;
}

int RunList(Args& a) {
  std::string host;
  int port = 0;
  SplitEndpoint(a.Str("endpoint", "127.0.0.1:9000"), host, port);
  const std::string bucket = a.Str("bucket", "list");
  const std::string prefix = a.Str("prefix", "");
  const std::string start_after = a.Str("start-after", "");
  const int max_keys = static_cast<int>(a.Num("max-keys", 1000));
  const int repeat = static_cast<int>(a.Num("repeat", 100));
  const int warmup = static_cast<int>(a.Num("warmup", 5));
  const std::string label = a.Str("label", "");
  // --versions 1: ListObjectVersions (start-after is its key-marker).
  const bool versions = a.Num("versions", 0) != 0;
  a.CheckAllUsed();
  const SigningConfig cfg = SigningFromEnv(true);

  // Sorted by name, as a canonical query string wants (the builder re-canonicalises anyway).
  std::string query = versions ? fmt::format("max-keys={}", max_keys)
                               : fmt::format("list-type=2&max-keys={}", max_keys);
  if (versions && !start_after.empty())
    query = "key-marker=" + UriEncode(start_after, false) + "&" + query;
  if (!prefix.empty()) query += "&prefix=" + UriEncode(prefix, false);
  if (!versions && !start_after.empty()) query += "&start-after=" + UriEncode(start_after, false);
  if (versions) query += "&versions=";
  const std::string path = "/" + bucket;

  Client cl(host, port);
  RequestBuilder rb(fmt::format("{}:{}", host, port), cfg);
  std::vector<uint64_t> ns;
  size_t keys = 0;
  std::string first_key;
  for (int i = 0; i < warmup + repeat; ++i) {
    Response r;
    const Clock::time_point t0 = Clock::now();
    if (!cl.Do(rb.Build("GET", path, query, 0), nullptr, 0, true, r)) Die("list: " + cl.error());
    const Clock::time_point t1 = Clock::now();
    if (r.status != 200) Die(fmt::format("list -> {}: {}", r.status, r.body.substr(0, 600)));
    keys = CountOccurrences(r.body, "<Key>");
    if (static_cast<int>(keys) != max_keys)
      Die(fmt::format("list returned {} keys, wanted {} (is the bucket populated?)", keys, max_keys));
    if (i == 0) {
      size_t p = r.body.find("<Key>");
      first_key = r.body.substr(p + 5, r.body.find("</Key>", p) - p - 5);
    }
    if (i >= warmup) ns.push_back(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
  }
  std::vector<uint64_t> copy = ns;
  const double p50 = Percentile(copy, 0.5) / 1e6, p90 = Percentile(copy, 0.9) / 1e6;
  const double mn = static_cast<double>(*std::min_element(ns.begin(), ns.end())) / 1e6;
  std::printf(versions ? "RESULT target=strata label=%s op=list-versions versions=%zu repeat=%d "
                         "median_ms=%.3f p90_ms=%.3f min_ms=%.3f first_key=%s\n"
                       : "RESULT target=strata label=%s op=list keys=%zu repeat=%d median_ms=%.3f "
                         "p90_ms=%.3f min_ms=%.3f first_key=%s\n",
              label.empty() ? "-" : label.c_str(), keys, repeat, p50, p90, mn, first_key.c_str());
  return 0;
}

class StringSource : public objstore::ByteSource {
 public:
  explicit StringSource(std::string_view s) : s_(s) {}
  Result<size_t> Read(char* buf, size_t n) override {
    n = std::min(n, s_.size() - pos_);
    std::memcpy(buf, s_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

// In-process population of a listing bucket, before the server opens the directory.
int RunPopulate(Args& a) {
  const std::string data = a.Str("data");
  const std::string bucket = a.Str("bucket", "list");
  const std::string owner = a.Str("owner", std::getenv("STRATA_ROOT_USER") ? std::getenv("STRATA_ROOT_USER") : "");
  const uint64_t objects = static_cast<uint64_t>(a.Num("objects", 10000));
  const int prefixes = static_cast<int>(a.Num("prefixes", 4));
  const int nthreads = static_cast<int>(a.Num("threads", 2));
  const size_t obj_size = static_cast<size_t>(a.Num("object-size", 64));
  // > 0: versioning Enabled, and each key gets this many versions (--objects counts versions).
  const uint64_t per_key = static_cast<uint64_t>(a.Num("versions-per-key", 0));
  a.CheckAllUsed();
  if (data.empty()) Die("populate needs --data DIR (the server's --data; objects go to DIR/store)");
  if (owner.empty()) Die("populate needs --owner ACCESS_KEY or STRATA_ROOT_USER");

  objstore::EngineOptions eo;
  eo.data_dir = data + "/store";
  eo.sync = false;  // population speed; the server reopens the directory afterwards
  auto opened = objstore::LocalEngine::Open(eo);
  if (!opened.ok()) Die("open engine: " + opened.error().ToString());
  std::unique_ptr<objstore::LocalEngine> engine = std::move(*opened);
  Status st = engine->CreateBucket(bucket, owner);
  if (!st.ok() && st.code() != StatusCode::kAlreadyExists) Die("create bucket: " + st.ToString());
  if (per_key > 0) {
    st = engine->SetBucketConfig(bucket, "versioning", std::string("Enabled"));
    if (!st.ok()) Die("enable versioning: " + st.ToString());
  }

  const std::string body = MakeBody(obj_size);
  std::atomic<uint64_t> done{0};
  std::atomic<bool> failed{false};
  const Clock::time_point t0 = Clock::now();
  auto worker = [&](int id) {
    char key[64];
    for (uint64_t i = static_cast<uint64_t>(id); i < objects && !failed.load(); i += static_cast<uint64_t>(nthreads)) {
      const uint64_t k = per_key > 0 ? i / per_key : i;
      std::snprintf(key, sizeof(key), "d%d/shard-%07llu",
                    static_cast<int>(k % static_cast<uint64_t>(prefixes)),
                    static_cast<unsigned long long>(k));
      StringSource src(body);
      objstore::PutOptions po;
      po.expected_size = body.size();
      auto r = engine->PutObject(bucket, key, src, std::move(po));
      if (!r.ok()) {
        std::fprintf(stderr, "put %s: %s\n", key, r.error().ToString().c_str());
        failed.store(true);
        return;
      }
      uint64_t d = done.fetch_add(1) + 1;
      if (d % 100000 == 0) {
        std::fprintf(stderr, "populate: %llu / %llu (%.0f/s)\n", static_cast<unsigned long long>(d),
                     static_cast<unsigned long long>(objects),
                     static_cast<double>(d) / std::chrono::duration<double>(Clock::now() - t0).count());
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < nthreads; ++i) threads.emplace_back(worker, i);
  for (auto& t : threads) t.join();
  if (failed.load()) return 1;
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("populated bucket %s in %s/store: %llu objects of %zu bytes under %d prefixes in %.1f s (%.0f/s)\n",
              bucket.c_str(), data.c_str(), static_cast<unsigned long long>(objects), obj_size, prefixes, secs,
              static_cast<double>(objects) / secs);
  return 0;
}

// Client-side cost of one SigV4 signature (canonical request, SHA-256, HMAC, head).
int RunSignCost(Args& a) {
  const int n = static_cast<int>(a.Num("iterations", 200000));
  a.CheckAllUsed();
  SigningConfig cfg;
  cfg.access_key = "AKIDEXAMPLE";
  cfg.secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  RequestBuilder rb("127.0.0.1:9000", cfg);
  size_t sink = 0;
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < n; ++i) sink += rb.Build("GET", "/bench/obj-4k", "", 0).size();
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
  std::printf("RESULT op=sign-cost us_per_request=%.2f (%zu)\n", us, sink % 7);
  return 0;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata::bench;
  if (argc < 2) {
    std::fprintf(stderr, "usage: strata_bench_s3 load|list|populate|sign-cost [--options]\n"
                         "  see the comment at the top of bench/s3/main.cc, or bench/s3/run.sh\n");
    return 2;
  }
  std::string mode = argv[1];
  Args a(argc, argv, 2, {"sign"});
  if (mode == "load") return RunLoad(a);
  if (mode == "list") return RunList(a);
  if (mode == "populate") return RunPopulate(a);
  if (mode == "sign-cost") return RunSignCost(a);
  Die("unknown mode " + mode);
}
