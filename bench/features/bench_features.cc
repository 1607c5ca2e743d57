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
#include <random>
#include <string>

#include <fmt/format.h>

#include <strata/features/historical.h>
#include <strata/features/parquet.h>

using namespace strata::features;  // NOLINT
using strata::Status;

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
