// MD5 throughput: Strata's batched Md5Stream against OpenSSL's MD5, in the same
// run. BM_Md5{Strata,OpenSsl}/N: N threads, each one S3 PUT stream hashing its
// own 4 MiB bodies in 1 MiB updates (as LocalEngine's ingest does);
// bytes_per_second is the aggregate of all N streams over wall-clock time.
//
//   build/strata_bench_core --benchmark_filter=Md5
//   STRATA_MD5_SIMD=scalar build/strata_bench_core   # batching off
#include <benchmark/benchmark.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/md5_mb.h>

namespace {

constexpr size_t kBody = 4 << 20;
constexpr size_t kUpdate = 1 << 20;

std::string Body(int seed) {
  std::mt19937_64 rng(seed);
  std::string s(kBody, '\0');
  for (size_t i = 0; i < kBody; i += 8) {
    const uint64_t v = rng();
    __builtin_memcpy(&s[i], &v, 8);
  }
  return s;
}

// One PUT body: hashed in 1 MiB updates, as LocalEngine's ingest does.
void HashStrata(const std::string& body, unsigned char out[16]) {
  strata::Md5Stream s;
  for (size_t off = 0; off < kBody; off += kUpdate) s.Update(body.data() + off, kUpdate);
  s.Digest(out);
}

void HashOpenSsl(EVP_MD_CTX* ctx, const EVP_MD* md, const std::string& body, unsigned char* out) {
  unsigned int len = 0;
  if (EVP_DigestInit_ex(ctx, md, nullptr) != 1) std::abort();
  for (size_t off = 0; off < kBody; off += kUpdate) EVP_DigestUpdate(ctx, body.data() + off, kUpdate);
  EVP_DigestFinal_ex(ctx, out, &len);
}

// What OneShot() in checksum.cc did: a reused context, Init/Update/Final.
void HashOpenSslOnce(EVP_MD_CTX* ctx, const EVP_MD* md, const std::string& body, unsigned char* out) {
  unsigned int len = 0;
  if (EVP_DigestInit_ex(ctx, md, nullptr) != 1) std::abort();
  EVP_DigestUpdate(ctx, body.data(), body.size());
  EVP_DigestFinal_ex(ctx, out, &len);
}

// state.range(0) concurrent streams (threads), each hashing kBodiesPerThread
// bodies per iteration; bytes_per_second is the aggregate over all of them
// (wall-clock time of the iteration, threads started inside it).
constexpr int kBodiesPerThread = 4;

template <bool kOpenSsl>
void BM_Md5Concurrent(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<std::string> bodies;
  for (int t = 0; t < n; ++t) bodies.push_back(Body(t));
  EVP_MD* md = EVP_MD_fetch(nullptr, "MD5", nullptr);
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int t = 0; t < n; ++t) {
      threads.emplace_back([&, t] {
        unsigned char out[EVP_MAX_MD_SIZE];
        EVP_MD_CTX* ctx = kOpenSsl ? EVP_MD_CTX_new() : nullptr;
        for (int i = 0; i < kBodiesPerThread; ++i) {
          if (kOpenSsl) {
            HashOpenSsl(ctx, md, bodies[t], out);
          } else {
            HashStrata(bodies[t], out);
          }
          benchmark::DoNotOptimize(out);
        }
        EVP_MD_CTX_free(ctx);
      });
    }
    for (auto& th : threads) th.join();
  }
  EVP_MD_free(md);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * n * kBodiesPerThread *
                          static_cast<int64_t>(kBody));
}

void BM_Md5Strata(benchmark::State& state) { BM_Md5Concurrent<false>(state); }
void BM_Md5OpenSsl(benchmark::State& state) { BM_Md5Concurrent<true>(state); }

// The building blocks alone, one thread: scalar blocks and the 8-lane kernel
// (bytes counted over all 8 lanes).
void BM_Md5ScalarBlocks(benchmark::State& state) {
  const std::string body = Body(1);
  uint32_t h[4] = {1, 2, 3, 4};
  for (auto _ : state) {
    strata::md5::ScalarBlocks(h, reinterpret_cast<const unsigned char*>(body.data()), kBody / 64);
    benchmark::DoNotOptimize(h);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBody);
}

void BM_Md5ScalarBlocks2(benchmark::State& state) {
  const std::string a = Body(1), b = Body(2);
  uint32_t h[4] = {1, 2, 3, 4}, g[4] = {5, 6, 7, 8};
  for (auto _ : state) {
    strata::md5::ScalarBlocks2(h, reinterpret_cast<const unsigned char*>(a.data()), g,
                               reinterpret_cast<const unsigned char*>(b.data()), kBody / 64);
    benchmark::DoNotOptimize(h);
    benchmark::DoNotOptimize(g);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBody * 2);
}

void BM_Md5Avx2Kernel8(benchmark::State& state) {
  if (!strata::md5::CpuHasAvx2()) {
    state.SkipWithError("no AVX2");
    return;
  }
  std::string bodies[8];
  const unsigned char* data[8];
  for (int j = 0; j < 8; ++j) {
    bodies[j] = Body(j);
    data[j] = reinterpret_cast<const unsigned char*>(bodies[j].data());
  }
  alignas(32) uint32_t st[4][8] = {};
  for (auto _ : state) {
    strata::md5::Avx2Blocks8(st, data, kBody / 64);
    benchmark::DoNotOptimize(st);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBody * 8);
}

// Short one-shot digests (ETags of ETags, Content-MD5 of small requests):
// strata::Md5() against OpenSSL's EVP one-shot.
void BM_Md5OneShotStrata(benchmark::State& state) {
  const std::string body = Body(3).substr(0, static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(strata::Md5(body));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_Md5OneShotOpenSsl(benchmark::State& state) {
  const std::string body = Body(3).substr(0, static_cast<size_t>(state.range(0)));
  EVP_MD* md = EVP_MD_fetch(nullptr, "MD5", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char out[EVP_MAX_MD_SIZE];
  for (auto _ : state) {
    HashOpenSslOnce(ctx, md, body, out);
    benchmark::DoNotOptimize(out);
  }
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(md);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

}  // namespace

BENCHMARK(BM_Md5OneShotOpenSsl)->Arg(32)->Arg(1000);
BENCHMARK(BM_Md5OneShotStrata)->Arg(32)->Arg(1000);
BENCHMARK(BM_Md5ScalarBlocks)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Md5ScalarBlocks2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Md5Avx2Kernel8)->Unit(benchmark::kMillisecond);
// Interleaved per stream count, so each pair is measured in the same minutes.
BENCHMARK(BM_Md5OpenSsl)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Md5Strata)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Md5OpenSsl)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Md5Strata)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Md5OpenSsl)->Arg(4)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Md5Strata)->Arg(4)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Md5OpenSsl)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Md5Strata)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Md5OpenSsl)->Arg(16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Md5Strata)->Arg(16)->UseRealTime()->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  const auto s = strata::md5::GetBatchStats();
  std::printf("batching %s: kernel calls %llu, kernel blocks %llu, idle lane-blocks %llu, "
              "scalar blocks %llu, pair blocks %llu, handoffs %llu\n",
              strata::md5::BatchingEnabled() ? "on" : "off",
              static_cast<unsigned long long>(s.kernel_calls),
              static_cast<unsigned long long>(s.kernel_blocks),
              static_cast<unsigned long long>(s.idle_blocks),
              static_cast<unsigned long long>(s.scalar_blocks),
              static_cast<unsigned long long>(s.pair_blocks),
              static_cast<unsigned long long>(s.handoffs));
  benchmark::Shutdown();
  return 0;
}
