// strata_bench_features: the point-in-time join benchmark's data and our side.
//
//   strata_bench_features gen DIR [--feature-rows N] [--entity-rows N] [--keys N] [--seed S]
//       writes DIR/features.parquet (driver_id, event_timestamp, created, conv_rate,
//       acc_rate, trips; ZSTD, 1M-row groups) and DIR/entities.parquet
//       (entity_row, driver_id, event_timestamp, label).
//   strata_bench_features join DIR [--ttl-seconds S] [--budget BYTES] [--out FILE]
//       the Feast-semantics join of the two (created breaks ties, TTL inclusive),
//       written to FILE (default DIR/out_strata.parquet); prints seconds and peak RSS.
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <strata/core/http_client.h>
#include <strata/core/http_server.h>
#include <strata/core/redis.h>
#include <strata/feast/handler.h>
#include <strata/features/historical.h>
#include <strata/features/online.h>
#include <strata/features/online_service.h>
#include <strata/features/parquet.h>

using namespace strata::features;  // NOLINT
using strata::Status;
namespace http = strata::http;

namespace {

int64_t Arg(int argc, char** argv, const char* name, int64_t def) {
  for (int i = 0; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::strtoll(argv[i + 1], nullptr, 10);
  }
  return def;
}

std::string SArg(int argc, char** argv, const char* name, std::string def) {
  for (int i = 0; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return def;
}

constexpr int64_t kSec = 1000000;
constexpr int64_t kBase = 1704067200LL * kSec;  // 2024-01-01
constexpr int64_t kSpan = 30LL * 86400 * kSec;  // feature rows over 30 days

int Gen(const std::string& dir, int64_t frows, int64_t erows, int64_t keys, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Schema fs = {{"driver_id", DataType::Int64()}, {"event_timestamp", DataType::Timestamp()},
               {"created", DataType::Timestamp()}, {"conv_rate", DataType::Double()},
               {"acc_rate", DataType::Float()}, {"trips", DataType::Int64()}};
  ParquetWriteOptions opt;
  opt.codec = ParquetCodec::kZstd;
  auto w = ParquetWriter::Open(dir + "/features.parquet", fs, opt);
  if (!w.ok()) {
    fmt::print(stderr, "{}\n", w.error().ToString());
    return 1;
  }
  const int64_t batch = 1 << 20;
  for (int64_t done = 0; done < frows; done += batch) {
    const int64_t n = std::min(batch, frows - done);
    Table t(fs);
    for (size_t c = 0; c < fs.size(); ++c) t.column(c).Reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t ts = kBase + static_cast<int64_t>(rng() % kSpan);
      t.column(0).Append<int64_t>(1000000 + static_cast<int64_t>(rng() % static_cast<uint64_t>(keys)));
      t.column(1).Append<int64_t>(ts);
      t.column(2).Append<int64_t>(ts + static_cast<int64_t>(rng() % (3600 * kSec)));
      if (rng() % 50 == 0) {
        t.column(3).AppendNull();
      } else {
        t.column(3).Append<double>(static_cast<double>(rng() % 1000000) / 1e6);
      }
      t.column(4).Append<float>(static_cast<float>(rng() % 10000) / 1e4f);
      t.column(5).Append<int64_t>(static_cast<int64_t>(rng() % 500));
    }
    Status st = (*w)->Write(t);
    if (!st.ok()) {
      fmt::print(stderr, "{}\n", st.ToString());
      return 1;
    }
  }
  Status st = (*w)->Close();
  if (!st.ok()) {
    fmt::print(stderr, "{}\n", st.ToString());
    return 1;
  }
  Table e(Schema{{"entity_row", DataType::Int64()}, {"driver_id", DataType::Int64()},
                 {"event_timestamp", DataType::Timestamp()}, {"label", DataType::Int32()}});
  for (int64_t i = 0; i < erows; ++i) {
    e.column(0).Append<int64_t>(i);
    // 10% of the keys are unknown to the feature table.
    e.column(1).Append<int64_t>(1000000 + static_cast<int64_t>(rng() % static_cast<uint64_t>(keys + keys / 10)));
    e.column(2).Append<int64_t>(kBase + static_cast<int64_t>(rng() % (kSpan + 2 * 86400 * kSec)));
    e.column(3).Append<int32_t>(static_cast<int32_t>(rng() % 2));
  }
  st = WriteParquetFile(dir + "/entities.parquet", e, opt);
  if (!st.ok()) {
    fmt::print(stderr, "{}\n", st.ToString());
    return 1;
  }
  fmt::print("wrote {}/features.parquet ({} rows, {} keys) and {}/entities.parquet ({} rows)\n", dir, frows, keys,
             dir, erows);
  return 0;
}

int Join(const std::string& dir, int64_t ttl, int64_t budget, const std::string& out) {
  const auto t0 = std::chrono::steady_clock::now();
  auto ent = ReadParquetFile(dir + "/entities.parquet");
  if (!ent.ok()) {
    fmt::print(stderr, "{}\n", ent.error().ToString());
    return 1;
  }
  ViewJoinSpec v;
  v.name = "driver_stats";
  v.path = dir + "/features.parquet";
  v.join_keys = {"driver_id"};
  v.timestamp_field = "event_timestamp";
  v.created_timestamp_column = "created";
  v.ttl_seconds = ttl;
  v.features = {{"conv_rate", DataType::Double()}, {"acc_rate", DataType::Float()}, {"trips", DataType::Int64()}};
  v.output_names = {"conv_rate", "acc_rate", "trips"};
  HistoricalOptions opt;
  if (budget > 0) opt.memory_budget_bytes = budget;
  HistoricalStats stats;
  auto result = PointInTimeJoin(*ent, {v}, opt, &stats);
  if (!result.ok()) {
    fmt::print(stderr, "{}\n", result.error().ToString());
    return 1;
  }
  const auto t1 = std::chrono::steady_clock::now();
  Status st = WriteParquetFile(out, *result);
  if (!st.ok()) {
    fmt::print(stderr, "{}\n", st.ToString());
    return 1;
  }
  const auto t2 = std::chrono::steady_clock::now();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  fmt::print("strata: {} rows, {} matched, join {:.2f} s, write {:.2f} s, total {:.2f} s, peak RSS {} MiB, "
             "{} partitions, {} bytes spilled\n",
             result->num_rows(), stats.matched, std::chrono::duration<double>(t1 - t0).count(),
             std::chrono::duration<double>(t2 - t1).count(), std::chrono::duration<double>(t2 - t0).count(),
             ru.ru_maxrss / 1024, stats.partitions, stats.spilled_bytes);
  return 0;
}

// ---- online serving ----

constexpr int kViews = 5, kFeaturesPerView = 10;

struct Lat {
  std::vector<double> us;
  double Pct(double p) {
    if (us.empty()) return 0;
    std::sort(us.begin(), us.end());
    return us[std::min(us.size() - 1, static_cast<size_t>(p * static_cast<double>(us.size())))];
  }
};

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Runs fn on `threads` threads for `seconds`; latencies in microseconds.
template <class Fn>
Lat Load(int threads, double seconds, Fn fn) {
  std::vector<Lat> per(static_cast<size_t>(threads));
  std::vector<std::thread> ts;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t) + 7);
      while (std::chrono::steady_clock::now() < end) {
        const auto a = std::chrono::steady_clock::now();
        if (!fn(t, rng)) return;
        per[t].us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
      }
    });
  }
  for (auto& th : ts) th.join();
  Lat all;
  for (auto& l : per) all.us.insert(all.us.end(), l.us.begin(), l.us.end());
  return all;
}

int Online(const std::string& dir, const std::string& redis, int64_t entities, double seconds, int threads) {
  namespace fs = std::filesystem;
  fs::create_directories(dir + "/data");
  // Five views of ten Float64 features over the same driver entity: 50 features.
  std::string defs = "entities:\n  - {name: driver, join_keys: [driver_id]}\nfeature_views:\n";
  std::mt19937_64 rng(3);
  for (int v = 0; v < kViews; ++v) {
    defs += fmt::format("  - name: v{}\n    entities: [driver]\n    schema:\n", v);
    Schema s = {{"driver_id", DataType::Int64()}, {"ts", DataType::Timestamp()}};
    for (int f = 0; f < kFeaturesPerView; ++f) {
      defs += fmt::format("      - {{name: v{}_f{}, dtype: Float64}}\n", v, f);
      s.push_back({fmt::format("v{}_f{}", v, f), DataType::Double()});
    }
    defs += fmt::format("    source: {{path: data/v{}.parquet, timestamp_field: ts}}\n", v);
    Table t(s);
    for (int64_t e = 0; e < entities; ++e) {
      t.column(0).Append<int64_t>(e);
      t.column(1).Append<int64_t>(kBase + e);
      for (int f = 0; f < kFeaturesPerView; ++f) t.column(2 + f).Append<double>(static_cast<double>(rng() % 100000) / 7);
    }
    Status st = WriteParquetFile(fmt::format("{}/data/v{}.parquet", dir, v), t);
    if (!st.ok()) {
      fmt::print(stderr, "{}\n", st.ToString());
      return 1;
    }
  }
  std::ofstream(dir + "/defs.yaml") << defs;
  fmt::print("| store | materialize rows/s | request | Strata p50 (ms) | p99 (ms) | req/s | CPU/req (ms) | bare Redis HMGET p50 (ms) | p99 (ms) | p50 ratio | p99 ratio |\n");
  fmt::print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const std::string& kind : {std::string("redis"), std::string("rocksdb")}) {
    if (kind == "redis" && redis.empty()) continue;
    std::ofstream(dir + "/feature_store.yaml")
        << "project: bench\nonline_store:\n"
        << (kind == "redis" ? fmt::format("  type: redis\n  connection_string: \"{}\"\n", redis)
                            : std::string("  type: rocksdb\n  path: data/online\n"));
    auto repo = LoadFeatureRepo(dir);
    if (!repo.ok() || !ApplyRepo(*repo).ok()) {
      fmt::print(stderr, "repo: {}\n", repo.ok() ? "apply failed" : repo.error().ToString());
      return 1;
    }
    auto reg = LoadRegistry(repo->config.registry_path);
    reg->config = repo->config;
    auto store = OpenOnlineStore(reg->config);
    if (!store.ok()) {
      fmt::print(stderr, "{}\n", store.error().ToString());
      return 1;
    }
    MaterializeOptions mo;
    mo.start_us = kBase - 1;
    mo.end_us = kBase + entities;
    MaterializeStats ms;
    const auto m0 = std::chrono::steady_clock::now();
    Status st = Materialize(&*reg, store->get(), mo, &ms);
    const double msecs = std::chrono::duration<double>(std::chrono::steady_clock::now() - m0).count();
    if (!st.ok()) {
      fmt::print(stderr, "{}\n", st.ToString());
      return 1;
    }
    // The feature server as `strata features serve` hosts it.
    OnlineService service(*reg, std::move(*store), OnlineServiceOptions{});
    strata::feast::Handler handler(&service, {});
    http::ServerOptions so;
    so.name = "features";
    std::unique_ptr<http::Server> server = http::FrontendServer(so, &handler);
    if (!service.Open().ok() || !server->Start().ok()) return 1;
    std::string features = "[";
    for (int v = 0; v < kViews; ++v) {
      for (int f = 0; f < kFeaturesPerView; ++f) features += fmt::format("{}\"v{}:v{}_f{}\"", v + f ? "," : "", v, v, f);
    }
    features += "]";
    for (int batch : {1, 100}) {
      std::vector<http::HttpClient> clients(static_cast<size_t>(threads));
      auto request = [&](int t, std::mt19937_64& r) {
        std::string ents;
        for (int i = 0; i < batch; ++i) ents += fmt::format("{}{}", i ? "," : "", r() % static_cast<uint64_t>(entities));
        const std::string body = fmt::format(R"({{"features":{},"entities":{{"driver_id":[{}]}}}})", features, ents);
        http::ClientRequest req;
        req.method = "POST";
        req.host = "127.0.0.1";
        req.port = static_cast<uint16_t>(server->port());
        req.target = "/get-online-features";
        req.body = body;
        auto resp = clients[t].Send(req);
        if (!resp.ok() || (*resp)->status() != 200) return false;
        return (*resp)->ReadAll().ok();
      };
      Load(threads, 0.5, request);  // warm-up
      const double cpu0 = CpuSeconds();
      Lat ours = Load(threads, seconds, request);
      // Client and server share this process: CPU per request covers both
      // sides of the HTTP exchange (not redis-server's).
      const double cpu_per_req = ours.us.empty() ? 0 : (CpuSeconds() - cpu0) / static_cast<double>(ours.us.size());
      // The anchor: the same hashes read straight from Redis, one pipelined round trip.
      Lat bare;
      if (kind == "redis") {
        const size_t colon = redis.rfind(':');
        strata::redis::Endpoint endpoint;
        endpoint.host = redis.substr(0, colon);
        endpoint.port = std::atoi(redis.c_str() + colon + 1);
        std::vector<std::unique_ptr<strata::redis::Connection>> conns(static_cast<size_t>(threads));
        for (auto& c : conns) {
          auto opened = strata::redis::Connection::Open(endpoint);
          if (!opened.ok()) return 1;
          c = std::move(*opened);
        }
        bare = Load(threads, seconds, [&](int t, std::mt19937_64& r) {
          for (int i = 0; i < batch; ++i) {
            const std::string key = SerializeEntityKey({{"driver_id", OnlineValue::Int(static_cast<int64_t>(r() % static_cast<uint64_t>(entities)))}}) + "bench";
            conns[t]->Append(std::vector<std::string_view>{"HMGET", key, "v0", "v1", "v2", "v3", "v4"});
          }
          for (int i = 0; i < batch; ++i) {
            if (!conns[t]->GetReply().ok()) return false;
          }
          return true;
        });
      }
      const double p50 = ours.Pct(0.5), p99 = ours.Pct(0.99);
      fmt::print("| {} | {:.0f} | {} entit{} x 50 features | {:.3f} | {:.3f} | {:.0f} | {:.3f} | {} | {} | {} | {} |\n",
                 kind, static_cast<double>(ms.rows_scanned) / msecs, batch, batch == 1 ? "y" : "ies", p50 / 1000,
                 p99 / 1000, static_cast<double>(ours.us.size()) / seconds, cpu_per_req * 1000,
                 bare.us.empty() ? "-" : fmt::format("{:.3f}", bare.Pct(0.5) / 1000),
                 bare.us.empty() ? "-" : fmt::format("{:.3f}", bare.Pct(0.99) / 1000),
                 bare.us.empty() ? "-" : fmt::format("{:.1f}x", p50 / bare.Pct(0.5)),
                 bare.us.empty() ? "-" : fmt::format("{:.1f}x", p99 / bare.Pct(0.99)));
      std::fflush(stdout);
    }
    server->Stop();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: {} gen|join DIR [options]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  if (mode == "gen") {
    return Gen(dir, Arg(argc, argv, "--feature-rows", 10000000), Arg(argc, argv, "--entity-rows", 1000000),
               Arg(argc, argv, "--keys", 100000), static_cast<uint64_t>(Arg(argc, argv, "--seed", 42)));
  }
  if (mode == "online") {
    return Online(dir, SArg(argc, argv, "--redis", ""), Arg(argc, argv, "--entities", 100000),
                  static_cast<double>(Arg(argc, argv, "--seconds", 5)), static_cast<int>(Arg(argc, argv, "--threads", 2)));
  }
  if (mode == "read") {  // decoding alone, for a breakdown
    const auto t0 = std::chrono::steady_clock::now();
    auto r = ParquetReader::OpenFile(dir + "/features.parquet");
    if (!r.ok()) return 1;
    int64_t rows = 0;
    for (int g = 0; g < (*r)->num_row_groups(); ++g) {
      auto t = (*r)->ReadRowGroup(g);
      if (!t.ok()) return 1;
      rows += static_cast<int64_t>(t->num_rows());
    }
    fmt::print("read {} rows in {:.2f} s\n", rows,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return 0;
  }
  if (mode == "join") {
    return Join(dir, Arg(argc, argv, "--ttl-seconds", 7 * 86400), Arg(argc, argv, "--budget", 0),
                SArg(argc, argv, "--out", dir + "/out_strata.parquet"));
  }
  fmt::print(stderr, "unknown mode {}\n", mode);
  return 2;
}
