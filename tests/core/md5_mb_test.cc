#include <strata/core/md5_mb.h>

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/strings.h>

namespace strata {
namespace {

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(rng() >> 56);
  return s;
}

// The oracle: OpenSSL's MD5 (Md5() and Hasher::Create(kMd5) run the code under test).
std::string OpenSslMd5(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out, &len, EVP_md5(), nullptr) != 1) std::abort();
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string StreamDigest(std::string_view data) {
  Md5Stream s;
  s.Update(data.data(), data.size());
  return s.Digest();
}

TEST(Md5MbTest, Rfc1321Vectors) {
  EXPECT_EQ(HexEncode(StreamDigest("")), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(HexEncode(StreamDigest("abc")), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(HexEncode(StreamDigest("12345678901234567890123456789012345678901234567890123456789"
                                   "012345678901234567890")),
            "57edf4a22be3c955ac49da2e2107b67a");
  EXPECT_EQ(HexEncode(md5::ScalarDigest("message digest", 14)),
            "f96b697d7cb7938d525a2f31aaf161d0");
}

TEST(Md5MbTest, EdgeLengthsMatchOpenSsl) {
  const std::string data = RandomBytes((1 << 20) + 200, 1);
  for (size_t n : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1023, 1024, 1025,
                   4096 + 13, (1 << 20) + 7}) {
    const std::string_view d(data.data(), n);
    EXPECT_EQ(HexEncode(StreamDigest(d)), HexEncode(OpenSslMd5(d))) << "length " << n;
    EXPECT_EQ(HexEncode(md5::ScalarDigest(d.data(), d.size())), HexEncode(OpenSslMd5(d)))
        << "length " << n;
  }
}

TEST(Md5MbTest, RandomSplitsMatchOpenSsl) {
  std::mt19937_64 rng(7);
  const std::string data = RandomBytes(3 << 20, 2);
  for (int iter = 0; iter < 60; ++iter) {
    const size_t n = rng() % data.size();
    const std::string_view d(data.data() + rng() % (data.size() - n + 1), n);
    Md5Stream s;
    size_t off = 0;
    while (off < n) {
      // Mix tiny, block-sized and large pieces, at unaligned offsets.
      const size_t piece_max = (rng() % 3 == 0) ? 100 : (rng() % 2 ? 70000 : 1 << 20);
      const size_t piece = std::min(n - off, static_cast<size_t>(rng() % (piece_max + 1)));
      s.Update(d.data() + off, piece);
      off += piece;
    }
    EXPECT_EQ(HexEncode(s.Digest()), HexEncode(OpenSslMd5(d)))
        << "iteration " << iter << " n " << n;
  }
}

TEST(Md5MbTest, OneShotMd5MatchesOpenSsl) {
  const std::string data = RandomBytes(100000, 4);
  for (size_t n : {0, 3, 64, 100, 1000, 1024, 99999}) {
    EXPECT_EQ(HexEncode(Md5(std::string_view(data.data(), n))),
              HexEncode(OpenSslMd5(std::string_view(data.data(), n))))
        << "length " << n;
  }
}

TEST(Md5MbTest, HasherCreateMd5MatchesOneShot) {
  const std::string data = RandomBytes((2 << 20) + 33, 3);
  auto h = Hasher::Create(ChecksumAlgorithm::kMd5);
  h->Update(data.data(), 1000);
  h->Update(data.data() + 1000, data.size() - 1000);
  EXPECT_EQ(HexEncode(h->Digest()), HexEncode(OpenSslMd5(data)));
}

TEST(Md5MbTest, PairedScalarMatchesScalar) {
  const std::string a = RandomBytes(29 * 64, 11), b = RandomBytes(29 * 64 + 3, 12);
  uint32_t h0[4] = {1, 2, 3, 4}, h1[4] = {5, 6, 7, 8};
  uint32_t r0[4] = {1, 2, 3, 4}, r1[4] = {5, 6, 7, 8};
  const auto* pa = reinterpret_cast<const unsigned char*>(a.data());
  const auto* pb = reinterpret_cast<const unsigned char*>(b.data()) + 3;
  md5::ScalarBlocks2(h0, pa, h1, pb, 29);
  md5::ScalarBlocks(r0, pa, 29);
  md5::ScalarBlocks(r1, pb, 29);
  for (int w = 0; w < 4; ++w) {
    EXPECT_EQ(h0[w], r0[w]) << "word " << w;
    EXPECT_EQ(h1[w], r1[w]) << "word " << w;
  }
}

TEST(Md5MbTest, Avx2KernelMatchesScalar) {
  if (!md5::CpuHasAvx2()) {
    // The kernel cannot run here; the batcher must then stay off (every
    // stream hashed with the scalar code), or it would call the kernel.
    EXPECT_FALSE(md5::BatchingEnabled());
    return;
  }
  constexpr size_t kBlocks = 37;
  std::vector<std::string> bufs;
  for (int j = 0; j < 8; ++j) bufs.push_back(RandomBytes(kBlocks * 64 + 1, 100 + j));
  alignas(32) uint32_t st[4][8];
  uint32_t ref[8][4];
  const unsigned char* data[8];
  std::mt19937 rng(5);
  for (int j = 0; j < 8; ++j) {
    for (int w = 0; w < 4; ++w) st[w][j] = ref[j][w] = rng();
    // Lane 5 starts at an odd address: the kernel must not assume alignment.
    data[j] = reinterpret_cast<const unsigned char*>(bufs[j].data()) + (j == 5 ? 1 : 0);
  }
  md5::Avx2Blocks8(st, data, kBlocks);
  for (int j = 0; j < 8; ++j) {
    md5::ScalarBlocks(ref[j], data[j], kBlocks);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(st[w][j], ref[j][w]) << "lane " << j << " word " << w;
  }
  // Zero blocks leave the states alone.
  uint32_t before[4][8];
  std::memcpy(before, st, sizeof(st));
  md5::Avx2Blocks8(st, data, 0);
  EXPECT_EQ(std::memcmp(before, st, sizeof(st)), 0);
}

TEST(Md5MbTest, ConcurrentStreamsEachCorrect) {
  constexpr int kThreads = 16;
  const auto before = md5::GetBatchStats();
  std::vector<std::string> bodies;
  for (int t = 0; t < kThreads; ++t) bodies.push_back(RandomBytes((4 << 20) + t * 4099, 1000 + t));
  std::vector<std::string> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      // Several bodies per thread, in 1 MiB updates like the S3 ingest path,
      // with an unaligned head now and then so some lanes carry partial blocks.
      std::string all;
      for (int rep = 0; rep < 3; ++rep) {
        Md5Stream s;
        const std::string& b = bodies[(t + rep) % kThreads];
        size_t off = 0;
        if (rep == 1) {
          s.Update(b.data(), 17);
          off = 17;
        }
        while (off < b.size()) {
          const size_t n = std::min<size_t>(b.size() - off, (1 << 20) - (rng() % 2) * 5);
          s.Update(b.data() + off, n);
          off += n;
        }
        all += s.Digest();
      }
      got[t] = all;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    std::string want;
    for (int rep = 0; rep < 3; ++rep) want += OpenSslMd5(bodies[(t + rep) % kThreads]);
    EXPECT_EQ(HexEncode(got[t]), HexEncode(want)) << "thread " << t;
  }
  const auto after = md5::GetBatchStats();
  if (md5::BatchingEnabled()) {
    // 16 threads x 12 MiB in 1 MiB updates overlap: the 8-lane kernel ran.
    EXPECT_GT(after.kernel_calls, before.kernel_calls);
    EXPECT_GT(after.kernel_blocks, before.kernel_blocks);
  }
}

TEST(Md5MbTest, StreamsDroppedWithoutDigestDoNotStallTheService) {
  const std::string data = RandomBytes(2 << 20, 9);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 4; ++rep) {
        {
          Md5Stream abandoned;
          abandoned.Update(data.data() + t, data.size() - t);
        }  // destroyed without Digest()
        Md5Stream s;
        s.Update(data.data(), data.size());
        if (s.Digest() == OpenSslMd5(data)) ok.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 32);
  // And the service still takes new work afterwards.
  EXPECT_EQ(StreamDigest(data), OpenSslMd5(data));
}

TEST(Md5MbTest, AsyncUpdatesMatchOpenSsl) {
  std::mt19937_64 rng(21);
  const std::string data = RandomBytes(5 << 20, 22);
  for (int iter = 0; iter < 20; ++iter) {
    const size_t n = rng() % data.size();
    Md5Stream s;
    size_t off = 0;
    while (off < n) {
      const size_t piece = std::min<size_t>(n - off, rng() % 3 == 0 ? rng() % 200 : rng() % (1 << 20));
      if (rng() % 4 == 0) {
        s.Update(data.data() + off, piece);
      } else {
        s.UpdateAsync(data.data() + off, piece);
      }
      off += piece;
    }
    EXPECT_EQ(HexEncode(s.Digest()), HexEncode(OpenSslMd5(std::string_view(data.data(), n))))
        << "iteration " << iter;
  }
}

// The S3 ingest pattern: two buffers per stream, one filled while the other is
// hashed; the buffer is overwritten right after the next UpdateAsync returns.
TEST(Md5MbTest, ConcurrentDoubleBufferedStreams) {
  constexpr int kThreads = 12;
  std::vector<std::string> bodies;
  for (int t = 0; t < kThreads; ++t) bodies.push_back(RandomBytes((3 << 20) + t * 977, 300 + t));
  std::vector<std::string> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      constexpr size_t kChunk = 256 << 10;
      std::string bufs[2] = {std::string(kChunk, '\0'), std::string(kChunk, '\0')};
      Md5Stream s;
      const std::string& b = bodies[t];
      int cur = 0;
      for (size_t off = 0; off < b.size(); off += kChunk) {
        const size_t n = std::min(kChunk, b.size() - off);
        std::memcpy(bufs[cur].data(), b.data() + off, n);  // the other buffer may be hashing
        s.UpdateAsync(bufs[cur].data(), n);  // waits for the previous one first
        cur ^= 1;
        // The buffer just released is scribbled over, as a reader would.
        std::memset(bufs[cur].data(), 0xAB, kChunk);
      }
      got[t] = s.Digest();
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(HexEncode(got[t]), HexEncode(OpenSslMd5(bodies[t]))) << "thread " << t;
  }
}

// The batcher holds free lanes open for the next chunks of open streams, but
// only for a bounded time: streams that stay open without submitting (a
// client that stalls mid-body) must not hold up the others, and a blocking
// Update() is never held back at all.
TEST(Md5MbTest, StalledOpenStreamsDelayOthersOnlyBriefly) {
  const md5::BatchStats before = md5::GetBatchStats();
  const std::string chunk = RandomBytes(1 << 20, 31);
  std::vector<std::unique_ptr<Md5Stream>> stalled;
  for (int i = 0; i < 6; ++i) {
    stalled.push_back(std::make_unique<Md5Stream>());
    stalled.back()->UpdateAsync(chunk.data(), chunk.size());
    stalled.back()->Wait();  // open, nothing pending, and nothing coming
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  Md5Stream s;
  std::string expect;
  for (int i = 0; i < 16; ++i) {
    s.UpdateAsync(chunk.data(), chunk.size());
    expect += chunk;
  }
  EXPECT_EQ(HexEncode(s.Digest()), HexEncode(OpenSslMd5(expect)));
  const auto async_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const auto t1 = Clock::now();
  EXPECT_EQ(StreamDigest(chunk), OpenSslMd5(chunk));
  const auto sync_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  // 16 MiB hash in ~30 ms; each of the 16 chunks may wait out one fill wait
  // (2 ms). A stall that waited for the stalled streams would never end.
  EXPECT_LT(async_ms, 1500.0);
  EXPECT_LT(sync_ms, 500.0);
  // With the batcher on (AVX2), it waited for the stalled streams and gave up;
  // with it off (no AVX2, or STRATA_MD5_SIMD=scalar) nothing ever waits.
  const uint64_t timeouts = md5::GetBatchStats().fill_timeouts - before.fill_timeouts;
  if (md5::BatchingEnabled()) {
    EXPECT_GT(timeouts, 0u) << "the batcher never waited for the open streams";
  } else {
    EXPECT_EQ(timeouts, 0u);
  }
  for (auto& p : stalled) p->Digest();
}

TEST(Md5MbTest, DestroyedWithPendingAsyncUpdateWaits) {
  const std::string data = RandomBytes(4 << 20, 23);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      for (int rep = 0; rep < 3; ++rep) {
        std::string buf = data;
        {
          Md5Stream s;
          s.UpdateAsync(buf.data(), buf.size());
        }  // the destructor waits; buf is still alive here
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(StreamDigest(data), OpenSslMd5(data));
}

TEST(Md5MbTest, ResetStartsOver) {
  Md5Stream s;
  s.Update("garbage", 7);
  s.Reset();
  s.Update("abc", 3);
  EXPECT_EQ(HexEncode(s.Digest()), "900150983cd24fb0d6963f7d28e17f72");
}

}  // namespace
}  // namespace strata
