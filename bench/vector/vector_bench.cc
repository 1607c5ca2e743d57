// strata_bench_vector: builds each Strata index over a data set and prints
// recall@k against QPS at 1 and 2 search threads, build time and memory, as a
// table and (with --json) one JSON object per line for bench/vector/report.py.
//
// Data sets are directories written by bench/vector/prepare.py:
//   base.fvecs  query.fvecs  gt.ivecs (exact top-100 row numbers per query)
// (fvecs/ivecs: per vector an int32 dimension then the components, the
// TEXMEX/ann-benchmarks layout).
//
//   strata_bench_vector --dir /tmp/vbench/synthetic-1M
//       [--types hnsw,hnsw_sq8,ivf_flat,ivf_pq,diskann,flat] [--M 16] [--efc 200]
//       [--build-threads 2] [--k 10] [--queries 1000] [--filters] [--json out.jsonl]
//
// The data set's metric is read from DIR/metric ("l2", the default, or
// "cosine"). With --collection COLLECTION_DIR it instead opens a collection
// (written by `strata server`, see bench/vector/rest_bench.py) and measures
// in-process Collection::SearchBatch in batches of --batch queries: the
// in-process side of the REST comparison.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <strata/vector/collection.h>
#include <strata/vector/index.h>

#ifdef STRATA_BENCH_HAVE_HNSWLIB
#include "hnswlib_anchor.h"
#endif

using namespace strata;
using namespace strata::vector;

namespace {

struct Args {
  std::string dir;
  std::vector<std::string> types = {"hnsw", "ivf_flat", "ivf_pq", "diskann"};
  uint32_t M = 16, efc = 200, build_threads = 2, k = 10;
  size_t max_queries = 1000;
  size_t diskann_max_n = 250000;
  bool filters = false;
  bool filter_buckets = false;  // DIR/filters/ (prepare.py clustered): issue 22's table
  std::string filter_strategies = "auto,exact";
  double stop_recall = 0.98;  // a bucket's ef sweep ends at the first ef reaching this
  std::string json;
  std::string ef_list, nprobe_list;
  int repeat = 3;       // best of N timed runs per point (ann-benchmarks does the same)
  bool anchor = true;   // hnswlib interleaved with HNSW when linked in
  std::string cache;    // directory: reuse built indexes across runs (profiling)
  std::string collection;  // in-process Collection::SearchBatch on this collection dir
  size_t batch = 100;
};

template <class T>
bool ReadVecs(const std::string& path, std::vector<T>* out, size_t* dim) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->clear();
  *dim = 0;
  int32_t d;
  std::vector<T> row;
  while (f.read(reinterpret_cast<char*>(&d), 4)) {
    if (*dim == 0) *dim = size_t(d);
    if (size_t(d) != *dim) return false;
    row.resize(d);
    if (!f.read(reinterpret_cast<char*>(row.data()), d * sizeof(T))) return false;
    out->insert(out->end(), row.begin(), row.end());
  }
  return *dim > 0;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    size_t q = s.find(',', p);
    if (q == std::string::npos) q = s.size();
    if (q > p) out.push_back(s.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

std::vector<uint32_t> ParseList(const std::string& s, std::vector<uint32_t> dflt) {
  if (s.empty()) return dflt;
  std::vector<uint32_t> v;
  for (auto& x : Split(s)) v.push_back(uint32_t(std::stoul(x)));
  return v;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU seconds of this thread / of the whole process. On a shared machine
// (CI, or 2 vCPUs with other jobs) wall time measures the neighbours as much
// as the code, so every point is also reported per CPU second: QPS(1t) from
// the calling thread's CPU time, QPS(2t) and build time from the process's
// CPU time divided by the thread count.
double ThreadCpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}
double ProcessCpu() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Data {
  size_t dim = 0, n = 0, nq = 0, gt_k = 0;
  std::vector<float> base, queries;
  std::vector<int32_t> gt;  // nq x gt_k
};

double Recall(const std::vector<uint64_t>& labels, size_t k,
              const std::vector<std::vector<uint32_t>>& truth) {
  double sum = 0;
  size_t counted = 0;
  for (size_t q = 0; q < truth.size(); ++q) {
    size_t want = std::min(k, truth[q].size());
    if (want == 0) continue;
    size_t hit = 0;
    for (size_t i = 0; i < k; ++i) {
      uint64_t id = labels[q * k + i];
      if (id == kNoId) break;
      for (size_t j = 0; j < want; ++j) hit += truth[q][j] == id;
    }
    sum += double(hit) / double(want);
    ++counted;
  }
  return counted ? sum / double(counted) : 1.0;
}

FILE* g_json = nullptr;

std::string LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

struct QpsPoint {
  double recall = 0, qps1 = 0, qps2 = 0;          // wall clock
  double cpu_qps1 = 0, cpu_qps2 = 0;              // per CPU second (see ThreadCpu)
};

struct Built {
  double wall_s = 0, cpu_s = 0;  // cpu_s: process CPU seconds / build threads
  double mem_mb = 0, disk_mb = 0;
};

void Emit(const char* engine, const std::string& index, const std::string& build_params,
          const std::string& search, const QpsPoint& p, const Built& b,
          const std::string& extra = "") {
  std::printf("%-15s %-9s %-22s %-20s recall@10 %.4f  QPS 1t %7.0f (cpu %7.0f)  2t %7.0f (cpu %7.0f)\n",
              engine, index.c_str(), build_params.c_str(), search.c_str(), p.recall, p.qps1,
              p.cpu_qps1, p.qps2, p.cpu_qps2);
  std::fflush(stdout);
  if (g_json) {
    std::fprintf(g_json,
                 "{\"engine\":\"%s\",\"index\":\"%s\",\"build\":\"%s\",\"search\":\"%s\","
                 "\"recall\":%.5f,\"qps1\":%.1f,\"qps2\":%.1f,\"cpu_qps1\":%.1f,\"cpu_qps2\":%.1f,"
                 "\"build_s\":%.3f,\"build_cpu_s\":%.3f,\"mem_mb\":%.2f,\"disk_mb\":%.2f,"
                 "\"load\":\"%s\"%s}\n",
                 engine, index.c_str(), build_params.c_str(), search.c_str(), p.recall, p.qps1,
                 p.qps2, p.cpu_qps1, p.cpu_qps2, b.wall_s, b.cpu_s, b.mem_mb, b.disk_mb,
                 LoadAvg().c_str(), extra.c_str());
    std::fflush(g_json);
  }
}

// A search engine under test: runs every query on `threads` threads and
// writes nq x k labels.
using SearchFn = std::function<void(unsigned threads, std::vector<uint64_t>* labels)>;

// Best-of-`repeat` QPS at 1 and 2 threads for each engine, runs interleaved
// (engine A, engine B, A, B, ...) so machine load hits all of them alike.
// warm (optional) gets the first engine's labels.
std::vector<QpsPoint> Measure(const std::vector<SearchFn>& engines, size_t nq, size_t k,
                              const std::vector<std::vector<uint32_t>>& truth, int repeat,
                              std::vector<uint64_t>* warm = nullptr) {
  std::vector<QpsPoint> pts(engines.size());
  std::vector<uint64_t> labels;
  for (size_t e = 0; e < engines.size(); ++e) {
    engines[e](1, &labels);  // warm-up, and the recall
    pts[e].recall = Recall(labels, k, truth);
    if (e == 0 && warm) *warm = labels;
  }
  for (int r = 0; r < repeat; ++r) {
    for (unsigned threads : {1u, 2u}) {
      for (size_t e = 0; e < engines.size(); ++e) {
        double t0 = Now(), c0 = threads == 1 ? ThreadCpu() : ProcessCpu();
        engines[e](threads, &labels);
        double qps = double(nq) / (Now() - t0);
        double cpu = (threads == 1 ? ThreadCpu() : ProcessCpu()) - c0;
        double cpu_qps = double(nq) / (cpu / threads);
        double& best = threads == 1 ? pts[e].qps1 : pts[e].qps2;
        best = std::max(best, qps);
        double& cbest = threads == 1 ? pts[e].cpu_qps1 : pts[e].cpu_qps2;
        cbest = std::max(cbest, cpu_qps);
      }
    }
  }
  return pts;
}

SearchFn StrataEngine(const Index& idx, const Data& d, size_t k, SearchParams sp) {
  return [&idx, &d, k, sp](unsigned threads, std::vector<uint64_t>* labels) mutable {
    sp.num_threads = threads;
    SearchResults res;
    Status s = idx.Search(d.nq, d.queries.data(), k, sp, &res);
    if (!s.ok()) {
      std::fprintf(stderr, "search failed: %s\n", s.ToString().c_str());
      std::exit(1);
    }
    labels->resize(d.nq * k);
    for (size_t i = 0; i < labels->size(); ++i) (*labels)[i] = res.neighbors[i].id;
  };
}

// One filter bucket written by prepare.py clustered (write_filters): the
// allow set as a row-id bitset, and the exact filtered top-k per query.
struct Bucket {
  std::string name, kind;
  double selectivity = 0;  // asked; the real one is matches / n
  size_t matches = 0;
  std::unique_ptr<BitsetIdFilter> filter;
  std::vector<std::vector<uint32_t>> truth;
};

bool LoadBuckets(const std::string& dir, const Data& d, size_t k, std::vector<Bucket>* out) {
  std::ifstream tsv(dir + "/filters/buckets.tsv");
  if (!tsv) return false;
  std::string name, kind;
  double sel;
  size_t matches;
  while (tsv >> name >> kind >> sel >> matches) {
    Bucket b;
    b.name = name;
    b.kind = kind;
    b.selectivity = sel;
    std::ifstream bits(dir + "/filters/" + name + ".bits", std::ios::binary);
    std::vector<unsigned char> bytes((d.n + 7) / 8);
    if (!bits.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()))) {
      std::fprintf(stderr, "%s/filters/%s.bits: short\n", dir.c_str(), name.c_str());
      return false;
    }
    b.filter = std::make_unique<BitsetIdFilter>(d.n);
    for (size_t i = 0; i < d.n; ++i) {
      if ((bytes[i >> 3] >> (i & 7)) & 1) b.filter->Set(i);
    }
    b.matches = size_t(b.filter->Cardinality());
    std::vector<int32_t> gt;
    size_t gk = 0;
    if (b.matches != matches || !ReadVecs(dir + "/filters/" + name + ".gt.ivecs", &gt, &gk) ||
        gt.size() / gk < d.nq) {
      std::fprintf(stderr, "%s/filters/%s: inconsistent bucket\n", dir.c_str(), name.c_str());
      return false;
    }
    b.truth.resize(d.nq);
    for (size_t q = 0; q < d.nq; ++q) {
      for (size_t j = 0; j < std::min(gk, k); ++j) {
        if (gt[q * gk + j] >= 0) b.truth[q].push_back(uint32_t(gt[q * gk + j]));
      }
    }
    out->push_back(std::move(b));
  }
  return !out->empty();
}

// Queries answered with fewer than min(k, matches) points.
size_t ShortResults(const std::vector<uint64_t>& labels, size_t nq, size_t k, size_t matches) {
  size_t want = std::min(k, matches), n_short = 0;
  for (size_t q = 0; q < nq; ++q) {
    size_t got = 0;
    while (got < k && labels[q * k + got] != kNoId) ++got;
    n_short += got < want;
  }
  return n_short;
}

FilterStrategy StrategyByName(const std::string& s) {
  if (s == "graph") return FilterStrategy::kGraph;
  if (s == "acorn") return FilterStrategy::kAcorn;
  if (s == "exact") return FilterStrategy::kExact;
  if (s != "auto") {
    std::fprintf(stderr, "unknown filter strategy %s (auto, graph, acorn, exact)\n", s.c_str());
    std::exit(2);
  }
  return FilterStrategy::kAuto;
}

// Issue 22's filtered table, Strata's side: per bucket and strategy, the ef
// sweep (ending at the first ef whose recall@k reaches --stop-recall; exact
// is one point) with the bucket's allow set as the filter, recall against
// the exact filtered top-k, and the queries that came back short.
void RunFilterBuckets(const Args& a, const Data& d, const Index& idx, const std::string& label,
                      const std::string& build, const Built& bt,
                      const std::vector<Bucket>& buckets) {
  const std::vector<uint32_t> efs = ParseList(a.ef_list, {16, 32, 64, 128, 256, 512});
  for (const Bucket& b : buckets) {
    for (const std::string& strat : Split(a.filter_strategies)) {
      const FilterStrategy fs = StrategyByName(strat);
      for (uint32_t ef : efs) {
        SearchParams sp;
        sp.ef = ef;
        sp.filter = b.filter.get();
        sp.filter_strategy = fs;
        std::vector<uint64_t> labels;
        QpsPoint pt =
            Measure({StrataEngine(idx, d, a.k, sp)}, d.nq, a.k, b.truth, a.repeat, &labels)[0];
        size_t n_short = ShortResults(labels, d.nq, a.k, b.matches);
        std::string search = fs == FilterStrategy::kExact ? "exact" : "ef=" + std::to_string(ef);
        char extra[256];
        std::snprintf(extra, sizeof(extra),
                      ",\"bucket\":\"%s\",\"kind\":\"%s\",\"selectivity\":%g,"
                      "\"matches\":%zu,\"n\":%zu,\"strategy\":\"%s\",\"short\":%zu",
                      b.name.c_str(), b.kind.c_str(), b.selectivity, b.matches, d.n, strat.c_str(),
                      n_short);
        std::printf("[%s, %zu rows, %s] short %zu  ", b.name.c_str(), b.matches, strat.c_str(),
                    n_short);
        Emit("strata", label, build, search, pt, bt, extra);
        if (fs == FilterStrategy::kExact || pt.recall >= a.stop_recall) break;
      }
    }
  }
}

// In-process Collection::SearchBatch over the queries in batches of a.batch
// (the collection layer picks the threads: all cores for >= 8 queries, as the
// REST server does for /points/search/batch). Labels are the point ids, which
// rest_bench.py sets to row numbers.
int RunCollection(const Args& a, const Data& d, const std::vector<std::vector<uint32_t>>& truth) {
  CollectionOptions opts;
  opts.background = false;
  auto opened = Collection::Open(a.collection, opts);
  if (!opened) {
    std::fprintf(stderr, "open %s: %s\n", a.collection.c_str(),
                 opened.error().ToString().c_str());
    return 1;
  }
  auto& coll = *opened;
  for (uint32_t ef : ParseList(a.ef_list, {64})) {
    std::vector<std::vector<SearchRequest>> batches;
    for (size_t q0 = 0; q0 < d.nq; q0 += a.batch) {
      std::vector<SearchRequest> reqs;
      for (size_t q = q0; q < std::min(d.nq, q0 + a.batch); ++q) {
        SearchRequest r;
        r.vector.assign(d.queries.begin() + q * d.dim, d.queries.begin() + (q + 1) * d.dim);
        r.limit = a.k;
        r.ef = ef;
        reqs.push_back(std::move(r));
      }
      batches.push_back(std::move(reqs));
    }
    std::vector<uint64_t> labels(d.nq * a.k, kNoId);
    double best_wall = 0, best_cpu = 0;
    for (int r = 0; r <= a.repeat; ++r) {  // the first run warms up
      double t0 = Now(), c0 = ProcessCpu();
      size_t q = 0;
      for (const auto& reqs : batches) {
        auto res = coll->SearchBatch(reqs);
        if (!res) {
          std::fprintf(stderr, "search: %s\n", res.error().ToString().c_str());
          return 1;
        }
        for (const auto& row : *res) {
          for (size_t i = 0; i < row.size() && i < a.k; ++i) labels[q * a.k + i] = row[i].record.id.hi;
          ++q;
        }
      }
      double wall = Now() - t0, cpu = ProcessCpu() - c0;
      if (r > 0) {
        best_wall = std::max(best_wall, double(d.nq) / wall);
        best_cpu = std::max(best_cpu, double(d.nq) / cpu);
      }
    }
    double rec = Recall(labels, a.k, truth);
    std::printf("in-process Collection::SearchBatch ef=%u batch=%zu: recall@10 %.4f, QPS %.0f "
                "(per CPU second %.0f), load %s\n",
                ef, a.batch, rec, best_wall, best_cpu, LoadAvg().c_str());
    if (g_json) {
      std::fprintf(g_json,
                   "{\"engine\":\"strata-inprocess\",\"index\":\"HNSW\",\"search\":\"ef=%u,batch=%zu\","
                   "\"recall\":%.5f,\"qps\":%.1f,\"cpu_qps\":%.1f}\n",
                   ef, a.batch, rec, best_wall, best_cpu);
      std::fflush(g_json);
    }
  }
  if (g_json) std::fclose(g_json);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", s.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (s == "--dir") a.dir = next();
    else if (s == "--types") a.types = Split(next());
    else if (s == "--M") a.M = uint32_t(std::stoul(next()));
    else if (s == "--efc") a.efc = uint32_t(std::stoul(next()));
    else if (s == "--build-threads") a.build_threads = uint32_t(std::stoul(next()));
    else if (s == "--k") a.k = uint32_t(std::stoul(next()));
    else if (s == "--queries") a.max_queries = std::stoul(next());
    else if (s == "--diskann-max-n") a.diskann_max_n = std::stoul(next());
    else if (s == "--filters") a.filters = true;
    else if (s == "--filter-buckets")
      a.filter_buckets = true;
    else if (s == "--filter-strategies")
      a.filter_strategies = next();
    else if (s == "--stop-recall")
      a.stop_recall = std::stod(next());
    else if (s == "--json") a.json = next();
    else if (s == "--ef") a.ef_list = next();
    else if (s == "--nprobe") a.nprobe_list = next();
    else if (s == "--repeat") a.repeat = std::stoi(next());
    else if (s == "--no-anchor") a.anchor = false;
    else if (s == "--cache") a.cache = next();
    else if (s == "--collection") a.collection = next();
    else if (s == "--batch") a.batch = std::stoul(next());
    else {
      std::fprintf(stderr,
                   "usage: %s --dir DIR [--types hnsw,hnsw_sq8,ivf_flat,ivf_pq,diskann,flat] "
                   "[--M 16] [--efc 200] [--build-threads 2] [--k 10] [--queries 1000] "
                   "[--ef 10,20,..] [--nprobe 4,8,..] [--repeat 3] [--no-anchor] [--filters] "
                   "[--filter-buckets [--filter-strategies auto,exact] [--stop-recall 0.98]] "
                   "[--json out.jsonl]\n",
                   argv[0]);
      return 2;
    }
  }
  if (a.dir.empty()) {
    std::fprintf(stderr, "--dir is required (see bench/vector/prepare.py)\n");
    return 2;
  }
  Data d;
  size_t qdim = 0;
  if (!ReadVecs(a.dir + "/base.fvecs", &d.base, &d.dim) ||
      !ReadVecs(a.dir + "/query.fvecs", &d.queries, &qdim) || qdim != d.dim ||
      !ReadVecs(a.dir + "/gt.ivecs", &d.gt, &d.gt_k)) {
    std::fprintf(stderr, "cannot read base.fvecs/query.fvecs/gt.ivecs in %s\n", a.dir.c_str());
    return 1;
  }
  d.n = d.base.size() / d.dim;
  d.nq = std::min(d.queries.size() / d.dim, a.max_queries);
  d.queries.resize(d.nq * d.dim);
  std::vector<std::vector<uint32_t>> truth(d.nq);
  for (size_t q = 0; q < d.nq; ++q) {
    for (size_t j = 0; j < std::min<size_t>(d.gt_k, a.k); ++j) truth[q].push_back(d.gt[q * d.gt_k + j]);
  }
  Metric metric = Metric::kL2;
  {
    std::ifstream mf(a.dir + "/metric");
    std::string m;
    if (mf >> m && m == "cosine") metric = Metric::kCosine;
    else if (!m.empty() && m != "l2") {
      std::fprintf(stderr, "unknown metric %s in %s/metric\n", m.c_str(), a.dir.c_str());
      return 1;
    }
  }
  if (!a.json.empty()) g_json = std::fopen(a.json.c_str(), "a");
  if (!a.collection.empty()) return RunCollection(a, d, truth);
  std::vector<Bucket> buckets;
  if (a.filter_buckets && !LoadBuckets(a.dir, d, a.k, &buckets)) {
    std::fprintf(stderr,
                 "--filter-buckets: no usable %s/filters/buckets.tsv (prepare.py "
                 "clustered writes it)\n",
                 a.dir.c_str());
    return 1;
  }
  std::printf("data %s: %zu x %zu, %zu queries, %s, SIMD %s\n", a.dir.c_str(), d.n, d.dim, d.nq,
              metric == Metric::kCosine ? "cosine" : "l2",
              std::string(SimdLevelName(ActiveSimdLevel())).c_str());
  // hnswlib's cosine is inner product over normalised copies (its Python
  // "cosine" space does the same); Strata normalises inside Add/Search.
  std::vector<float> unit_base, unit_queries;
  if (metric == Metric::kCosine) {
    auto normalise = [&](const std::vector<float>& in, std::vector<float>* out) {
      out->assign(in.begin(), in.end());
      for (size_t i = 0; i < out->size(); i += d.dim) {
        double s = 0;
        for (size_t j = 0; j < d.dim; ++j) s += double((*out)[i + j]) * (*out)[i + j];
        float inv = s > 0 ? float(1.0 / std::sqrt(s)) : 0.f;
        for (size_t j = 0; j < d.dim; ++j) (*out)[i + j] *= inv;
      }
    };
    normalise(d.base, &unit_base);
    normalise(d.queries, &unit_queries);
  }
  const float* anchor_base = metric == Metric::kCosine ? unit_base.data() : d.base.data();
  const float* anchor_queries = metric == Metric::kCosine ? unit_queries.data() : d.queries.data();
  std::vector<uint64_t> ids(d.n);
  for (size_t i = 0; i < d.n; ++i) ids[i] = i;
  const double raw_mb = double(d.n) * d.dim * 4 / 1e6;

  for (const std::string& type : a.types) {
    IndexParams p;
    p.dim = uint32_t(d.dim);
    p.metric = metric;
    p.num_threads = a.build_threads;
    std::string build;
    char buf[128];
    if (type == "hnsw" || type == "hnsw_sq8") {
      p.type = IndexType::kHnsw;
      p.hnsw_m = a.M;
      p.hnsw_ef_construction = a.efc;
      p.hnsw_sq8 = type == "hnsw_sq8";
      std::snprintf(buf, sizeof(buf), "M=%u,efC=%u", a.M, a.efc);
    } else if (type == "ivf_flat") {
      p.type = IndexType::kIvfFlat;
      p.ivf_nlist = uint32_t(std::clamp<double>(4 * std::sqrt(double(d.n)), 16, 1024));
      std::snprintf(buf, sizeof(buf), "nlist=%u", p.ivf_nlist);
    } else if (type == "ivf_pq") {
      p.type = IndexType::kIvfPq;
      p.ivf_nlist = uint32_t(std::clamp<double>(4 * std::sqrt(double(d.n)), 16, 1024));
      p.ivfpq_rerank = RerankStorage::kDisk;
      std::snprintf(buf, sizeof(buf), "nlist=%u,m=%u,rerank=disk", p.ivf_nlist, d.dim / 4 ? uint32_t(d.dim / 4) : 1u);
    } else if (type == "diskann") {
      if (d.n > a.diskann_max_n) {
        std::printf("diskann: skipped (%zu rows > --diskann-max-n %zu)\n", d.n, a.diskann_max_n);
        continue;
      }
      p.type = IndexType::kDiskAnn;
      p.diskann_r = 64;
      p.diskann_l = 100;
      std::snprintf(buf, sizeof(buf), "R=64,L=100,alpha=1.2,m=%zu", d.dim / 2);
    } else if (type == "flat") {
      p.type = IndexType::kFlat;
      std::snprintf(buf, sizeof(buf), "exact");
    } else {
      std::fprintf(stderr, "unknown type %s\n", type.c_str());
      return 2;
    }
    build = buf;
    auto created = CreateIndex(p);
    if (!created) {
      std::fprintf(stderr, "%s\n", created.error().ToString().c_str());
      return 1;
    }
    auto idx = std::move(*created);
    double t0 = Now(), c0 = ProcessCpu();
    std::string cache_path = a.cache.empty() ? "" : a.cache + "/" + type + "-" + build + ".idx";
    Status s;
    if (!cache_path.empty() && std::ifstream(cache_path).good()) {
      auto loaded = Index::Load(cache_path);
      if (!loaded) {
        std::fprintf(stderr, "%s\n", loaded.error().ToString().c_str());
        return 1;
      }
      idx = std::move(*loaded);
      std::printf("loaded %s (build time below is the load time)\n", cache_path.c_str());
    } else {
      s = idx->Add(d.n, d.base.data(), ids.data());
      if (s.ok() && !cache_path.empty()) s = idx->Save(cache_path);
    }
    Built bt;
    bt.wall_s = Now() - t0;
    bt.cpu_s = (ProcessCpu() - c0) / a.build_threads;
    if (!s.ok()) {
      std::fprintf(stderr, "build failed: %s\n", s.ToString().c_str());
      return 1;
    }
    bt.mem_mb = idx->MemoryBytes() / 1e6;
    bt.disk_mb = idx->DiskBytes() / 1e6;
    std::printf("%s %s: built in %.2f s (%.2f CPU s per thread) on %u threads; RAM %.1f MB "
                "(raw vectors %.1f MB, ratio %.3f), disk %.1f MB\n",
                IndexTypeName(p.type).data(), build.c_str(), bt.wall_s, bt.cpu_s, a.build_threads,
                bt.mem_mb, raw_mb, bt.mem_mb / raw_mb, bt.disk_mb);
    std::string label = type == "hnsw_sq8" ? "HNSW_SQ8" : std::string(IndexTypeName(p.type));
    if (a.filter_buckets) {  // only issue 22's filtered table for this index
      RunFilterBuckets(a, d, *idx, label, build, bt, buckets);
      continue;
    }

    auto run = [&](const std::string& search, const SearchParams& sp) {
      QpsPoint pt = Measure({StrataEngine(*idx, d, a.k, sp)}, d.nq, a.k, truth, a.repeat)[0];
      Emit("strata", label, build, search, pt, bt);
    };
    if (p.type == IndexType::kHnsw) {
      std::vector<SearchFn> anchors;
#ifdef STRATA_BENCH_HAVE_HNSWLIB
      std::unique_ptr<bench::HnswlibAnchor> hnswlib;
      Built hb;
      size_t anchor_ef = 0;
      if (a.anchor && !p.hnsw_sq8 && __builtin_cpu_supports("avx2") &&
          __builtin_cpu_supports("fma")) {
        hnswlib = bench::NewHnswlibAnchor(d.dim, d.n, a.M, a.efc, metric == Metric::kCosine);
        double h0 = Now(), hc0 = ProcessCpu();
        hnswlib->Build(anchor_base, d.n, a.build_threads);
        hb.wall_s = Now() - h0;
        hb.cpu_s = (ProcessCpu() - hc0) / a.build_threads;
        hb.mem_mb = hnswlib->MemoryBytes() / 1e6;
        std::printf("hnswlib (native, AVX2) %s: built in %.2f s (%.2f CPU s per thread) on %u "
                    "threads; RAM %.1f MB (build CPU time hnswlib / Strata = %.2f)\n",
                    build.c_str(), hb.wall_s, hb.cpu_s, a.build_threads, hb.mem_mb,
                    hb.cpu_s / bt.cpu_s);
        anchors.push_back([&](unsigned threads, std::vector<uint64_t>* labels) {
          labels->resize(d.nq * a.k);
          hnswlib->Search(anchor_queries, d.nq, a.k, anchor_ef, threads, labels->data());
        });
      }
#endif
      for (uint32_t ef :
           ParseList(a.ef_list, {10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512})) {
        SearchParams sp;
        sp.ef = ef;
        std::vector<SearchFn> engines = {StrataEngine(*idx, d, a.k, sp)};
        engines.insert(engines.end(), anchors.begin(), anchors.end());
#ifdef STRATA_BENCH_HAVE_HNSWLIB
        anchor_ef = ef;
#endif
        std::vector<QpsPoint> pts = Measure(engines, d.nq, a.k, truth, a.repeat);
        std::string search = "ef=" + std::to_string(ef);
        Emit("strata", label, build, search, pts[0], bt);
#ifdef STRATA_BENCH_HAVE_HNSWLIB
        if (pts.size() > 1) {
          Emit("hnswlib-native", "HNSW", build, search, pts[1], hb);
          std::printf("  Strata / hnswlib QPS per CPU second: 1t %.2f, 2t %.2f\n",
                      pts[0].cpu_qps1 / pts[1].cpu_qps1, pts[0].cpu_qps2 / pts[1].cpu_qps2);
        }
#endif
      }
    } else if (p.type == IndexType::kIvfFlat) {
      for (uint32_t np : ParseList(a.nprobe_list, {1, 2, 4, 8, 16, 32, 64})) {
        SearchParams sp;
        sp.nprobe = np;
        run("nprobe=" + std::to_string(np), sp);
      }
    } else if (p.type == IndexType::kIvfPq) {
      for (uint32_t np : ParseList(a.nprobe_list, {4, 8, 16, 32, 64})) {
        for (uint32_t rr : {20u, 50u, 100u}) {
          SearchParams sp;
          sp.nprobe = np;
          sp.rerank = rr;
          run("nprobe=" + std::to_string(np) + ",rerank=" + std::to_string(rr), sp);
        }
      }
    } else if (p.type == IndexType::kDiskAnn) {
      for (uint32_t l : {10u, 20u, 30u, 50u, 75u, 100u, 150u}) {
        SearchParams sp;
        sp.search_l = l;
        sp.beam_width = 4;
        run("L=" + std::to_string(l) + ",W=4", sp);
      }
    } else {
      run("exact", SearchParams());
    }

    if (a.filters && p.type != IndexType::kFlat) {
      // Random payload filters at 50%, 10%, 1%: recall against exact filtered
      // search, planner on (kAuto).
      auto flat = *CreateIndex([&] {
        IndexParams fp;
        fp.type = IndexType::kFlat;
        fp.dim = uint32_t(d.dim);
        fp.metric = metric;
        return fp;
      }());
      (void)flat->Add(d.n, d.base.data(), ids.data());
      for (double sel : {0.5, 0.1, 0.01}) {
        BitsetIdFilter filter(d.n);
        std::mt19937_64 rng(uint64_t(sel * 1000) + 1);
        for (size_t i = 0; i < d.n; ++i) {
          if (std::uniform_real_distribution<double>(0, 1)(rng) < sel) filter.Set(i);
        }
        SearchParams exact;
        exact.filter = &filter;
        exact.num_threads = 2;
        SearchResults gt;
        (void)flat->Search(d.nq, d.queries.data(), a.k, exact, &gt);
        std::vector<std::vector<uint32_t>> ftruth(d.nq);
        for (size_t q = 0; q < d.nq; ++q) {
          for (size_t j = 0; j < gt.Count(q); ++j) ftruth[q].push_back(uint32_t(gt.Row(q)[j].id));
        }
        SearchParams sp;
        sp.ef = 64;
        sp.nprobe = 32;
        sp.rerank = 50;
        sp.search_l = 100;
        sp.filter = &filter;
        QpsPoint pt = Measure({StrataEngine(*idx, d, a.k, sp)}, d.nq, a.k, ftruth, a.repeat)[0];
        char sb[64];
        std::snprintf(sb, sizeof(sb), "filter=%.0f%%,auto", sel * 100);
        Emit("strata", label, build, sb, pt, bt, ",\"filtered\":true");
        if (sel == 0.01) {
          std::printf("  filtered recall@10 at 1%% selectivity: %.4f (target >= 0.95: %s)\n",
                      pt.recall, pt.recall >= 0.95 ? "met" : "NOT met");
        }
      }
    }
  }
  if (g_json) std::fclose(g_json);
  return 0;
}
