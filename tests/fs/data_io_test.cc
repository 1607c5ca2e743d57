// DataIO and ChunkStore over an in-memory object store and an in-memory slice
// list (the metadata engine's chunk/slice part), checked against a plain
// byte-array model of the file.
#include "fs/data_io.h"

#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include <strata/cache/cached_object_store.h>
#include "fs/chunk_store.h"
#include <strata/objstore/fault_injection.h>
#include <strata/objstore/object_store.h>

#include "testutil/testutil.h"

namespace strata::fs {
namespace {

using fsmeta::Slice;

class FakeSliceMeta final : public SliceMeta {
 public:
  Result<uint64_t> NewSliceId() override { return next_id_++; }
  Result<std::vector<Slice>> ReadChunk(Ino ino, uint32_t c) override {
    std::lock_guard<std::mutex> lk(mu_);
    reads_++;
    return chunks_[{ino, c}];
  }
  Status WriteChunk(Ino ino, uint32_t c, uint32_t pos, const Slice& s, int64_t) override {
    std::lock_guard<std::mutex> lk(mu_);
    txns_++;
    Push(ino, c, pos, s);
    return Status::Ok();
  }
  void Push(Ino ino, uint32_t c, uint32_t pos, const Slice& s) {
    Slice t = s;
    t.pos = pos;
    chunks_[{ino, c}].push_back(t);
  }
  // One call is one metadata transaction.
  Status WriteChunks(Ino ino, const std::vector<fsmeta::MetaEngine::SliceWrite>& ws) override {
    std::lock_guard<std::mutex> lk(mu_);
    txns_++;
    for (const auto& w : ws) Push(ino, w.chunk_index, w.pos, w.slice);
    return Status::Ok();
  }
  uint64_t Txns() {
    std::lock_guard<std::mutex> lk(mu_);
    return txns_;
  }
  Status ReplaceSlices(Ino ino, uint32_t c, const std::vector<Slice>& expected,
                       const std::vector<Slice>& replacement) override {
    std::lock_guard<std::mutex> lk(mu_);
    auto& cur = chunks_[{ino, c}];
    if (!(cur == expected)) return fsmeta::FsError(EAGAIN, "chunk changed");
    cur = replacement;
    return Status::Ok();
  }
  // Truncates the model: drops/clips slices beyond len (a tiny version of
  // what the engine does).
  size_t SliceCount(Ino ino, uint32_t c) {
    std::lock_guard<std::mutex> lk(mu_);
    return chunks_[{ino, c}].size();
  }

 private:
  std::mutex mu_;
  std::map<std::pair<Ino, uint32_t>, std::vector<Slice>> chunks_;
  std::atomic<uint64_t> next_id_{1};
  uint64_t reads_ = 0;
  uint64_t txns_ = 0;
};

struct Rig {
  explicit Rig(uint32_t block_size = 64 * 1024, Compression comp = Compression::kNone,
               uint64_t buffer = 64ull << 20, uint64_t block_ram = 128ull << 20) {
    store = objstore::NewMemObjectStore("fs-test");
    cache::CacheOptions co;
    co.block_size = block_size;
    co.ram_capacity_bytes = 8ull << 20;
    co.metadata_ttl_ms = 1 << 30;
    co.readahead = false;
    co.admission = cache::AdmissionPolicy::kAll;
    auto c = cache::CachedObjectStore::Open(store.get(), co);
    EXPECT_TRUE(c.has_value());
    cache = std::move(*c);
    ChunkStoreOptions so;
    so.volume = "vol";
    so.block_size = block_size;
    so.compression = comp;
    so.max_uploads = 4;
    so.block_ram_bytes = block_ram;
    chunks = std::make_unique<ChunkStore>(store.get(), cache.get(), so);
    DataOptions dopt;
    dopt.buffer_size = buffer;
    dopt.background_compaction = false;
    data = std::make_unique<DataIO>(&meta, chunks.get(), dopt);
  }
  std::string ReadAll(Ino ino, uint64_t len) {
    std::string out(len, '\xee');
    auto n = data->Read(ino, 0, len, out.data(), len);
    EXPECT_TRUE(n.has_value()) << n.error().ToString();
    if (n) {
      EXPECT_EQ(*n, len);
    }
    return out;
  }
  FakeSliceMeta meta;
  std::unique_ptr<objstore::ObjectStore> store;
  std::unique_ptr<cache::CachedObjectStore> cache;
  std::unique_ptr<ChunkStore> chunks;
  std::unique_ptr<DataIO> data;
};

std::string Random(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(g());
  return s;
}

void Apply(std::string* model, uint64_t off, std::string_view d) {
  if (model->size() < off + d.size()) model->resize(off + d.size(), '\0');
  model->replace(off, d.size(), d);
}

TEST(VisibleSegmentsTest, LaterSlicesOverrideEarlierOnes) {
  std::vector<Slice> s = {{1, 100, 0, 100, 0}, {2, 10, 0, 10, 50}, {0, 0, 0, 5, 95}};
  auto seg = VisibleSegments(s, 0, 120);
  ASSERT_EQ(seg.size(), 5u);
  EXPECT_EQ(seg[0].id, 1u);
  EXPECT_EQ(seg[0].len, 50u);
  EXPECT_EQ(seg[1].id, 2u);
  EXPECT_EQ(seg[1].pos, 50u);
  EXPECT_EQ(seg[2].id, 1u);
  EXPECT_EQ(seg[2].pos, 60u);
  EXPECT_EQ(seg[2].off, 60u);
  EXPECT_EQ(seg[2].len, 35u);
  EXPECT_EQ(seg[3].id, 0u);  // the hole slice
  EXPECT_EQ(seg[4].id, 0u);  // never written
  EXPECT_EQ(seg[4].pos, 100u);
  EXPECT_EQ(seg[4].len, 20u);
}

TEST(ChunkStoreTest, BlockKeysFollowTheJuiceFsLayout) {
  Rig r;
  EXPECT_EQ(r.chunks->BlockKey(1234567, 2, 4096), "vol/chunks/1/1234/1234567_2_4096");
  uint64_t id;
  uint32_t idx, len;
  ASSERT_TRUE(r.chunks->ParseBlockKey("vol/chunks/1/1234/1234567_2_4096", &id, &idx, &len));
  EXPECT_EQ(id, 1234567u);
  EXPECT_EQ(idx, 2u);
  EXPECT_EQ(len, 4096u);
  EXPECT_FALSE(r.chunks->ParseBlockKey("vol/chunks/1/9/1234567_2_4096", &id, &idx, &len));
  EXPECT_FALSE(r.chunks->ParseBlockKey("other/chunks/1/1234/1234567_2_4096", &id, &idx, &len));
  EXPECT_FALSE(r.chunks->ParseBlockKey("vol/chunks/0/0/x_1_2", &id, &idx, &len));
}

TEST(ChunkStoreTest, CompressionRoundTrips) {
  std::string text;
  for (int i = 0; i < 5000; i++) text += "strata fs block " + std::to_string(i % 17) + "\n";
  std::string noise = Random(100000, 7);
  for (Compression c : {Compression::kNone, Compression::kLz4, Compression::kZstd}) {
    for (const std::string& in : {text, noise, std::string()}) {
      ASSERT_OK_AND_ASSIGN(std::string z, CompressBlock(c, in));
      if (c != Compression::kNone && &in == &text) {
        EXPECT_LT(z.size(), in.size() / 4);
      }
      std::string out(in.size(), '\0');
      ASSERT_OK(DecompressBlock(c, z, out.data(), out.size()));
      EXPECT_EQ(out, in);
    }
  }
  ASSERT_OK_AND_ASSIGN(std::string z, CompressBlock(Compression::kZstd, text));
  std::string out(text.size() + 1, '\0');
  EXPECT_FALSE(DecompressBlock(Compression::kZstd, z, out.data(), out.size()).ok());
  z[z.size() / 2] ^= 0x55;
  out.resize(text.size());
  Status st = DecompressBlock(Compression::kLz4, z, out.data(), out.size());
  EXPECT_FALSE(st.ok() && out == text);
}

TEST(DataIOTest, SequentialWriteCommitsBlocksAndReadsBack) {
  Rig r;
  std::string d = Random(1000000, 1);  // 15.3 blocks of 64 KiB
  for (size_t off = 0; off < d.size(); off += 4096) {
    ASSERT_OK(r.data->Write(2, off, std::string_view(d).substr(off, 4096)));
  }
  EXPECT_EQ(r.data->DirtyLength(2), d.size());
  EXPECT_EQ(r.ReadAll(2, d.size()), d);  // read-your-writes before the commit
  ASSERT_OK(r.data->Flush(2));
  EXPECT_FALSE(r.data->HasDirty(2));
  EXPECT_EQ(r.meta.SliceCount(2, 0), 1u);  // contiguous appends: one slice
  EXPECT_EQ(r.ReadAll(2, d.size()), d);
  // Blocks named by the layout exist with the right lengths.
  ASSERT_OK_AND_ASSIGN(auto info, r.store->Head(r.chunks->BlockKey(1, 15, 1000000 - 15 * 65536)));
  EXPECT_EQ(info.size, 1000000u - 15 * 65536);
  // A fresh DataIO (another mount) sees the committed data.
  DataIO other(&r.meta, r.chunks.get(), DataOptions{});
  std::string out(d.size(), '\0');
  ASSERT_OK_AND_ASSIGN(size_t n, other.Read(2, 0, d.size(), out.data(), d.size()));
  EXPECT_EQ(n, d.size());
  EXPECT_EQ(out, d);
}

void RandomOverwrites(Compression comp) {
  Rig r(16 * 1024, comp);
  std::string model;
  std::mt19937_64 g(static_cast<uint64_t>(comp) + 99);
  for (int i = 0; i < 300; i++) {
    uint64_t off = g() % 300000;
    size_t len = 1 + g() % 20000;
    std::string d = Random(len, g());
    if (i % 3 == 0) d.assign(len, static_cast<char>('a' + i % 26));  // compressible
    ASSERT_OK(r.data->Write(3, off, d));
    Apply(&model, off, d);
    if (i % 37 == 0) {
      ASSERT_OK(r.data->Flush(3));
    }
    if (i % 50 == 0) {
      ASSERT_EQ(r.ReadAll(3, model.size()), model) << "step " << i;
    }
  }
  ASSERT_EQ(r.ReadAll(3, model.size()), model);
  ASSERT_OK(r.data->Flush(3));
  ASSERT_EQ(r.ReadAll(3, model.size()), model);
  // Partial reads at odd offsets.
  for (int i = 0; i < 50; i++) {
    uint64_t off = g() % model.size();
    size_t len = 1 + g() % 50000;
    std::string out(len, '\0');
    ASSERT_OK_AND_ASSIGN(size_t n, r.data->Read(3, off, len, out.data(), model.size()));
    ASSERT_EQ(n, std::min<size_t>(len, model.size() - off));
    ASSERT_EQ(out.substr(0, n), model.substr(off, n));
  }
}

TEST(DataIOTest, FailedUploadsAreReportedAndNothingIsCommitted) {
  auto mem = objstore::NewMemObjectStore("fs-fail-test");
  objstore::FaultOptions always;
  always.error_rate = 1.0;
  objstore::FaultInjectionObjectStore faulty(mem.get(), always);
  cache::CacheOptions co;
  co.block_size = 64 * 1024;
  co.ram_capacity_bytes = 1 << 20;
  co.readahead = false;
  auto c = cache::CachedObjectStore::Open(&faulty, co);
  ASSERT_TRUE(c.has_value());
  ChunkStoreOptions so;
  so.volume = "vol";
  so.block_size = 64 * 1024;
  so.max_uploads = 2;
  ChunkStore chunks(&faulty, c->get(), so);
  FakeSliceMeta meta;
  DataOptions dopt;
  dopt.background_compaction = false;
  DataIO data(&meta, &chunks, dopt);
  // One partial block: uploaded by the flushing thread itself.
  ASSERT_OK(data.Write(2, 0, Random(4096, 5)));
  EXPECT_FALSE(data.Flush(2).ok());
  EXPECT_EQ(meta.SliceCount(2, 0), 0u);
  // Four full blocks through the upload pool, then the partial last one.
  ASSERT_OK(data.Write(3, 0, Random(300000, 6)));
  EXPECT_FALSE(data.Flush(3).ok());
  EXPECT_EQ(meta.SliceCount(3, 0), 0u);
  // With the store healthy again, both paths commit and read back.
  faulty.SetOptions(objstore::FaultOptions{});
  const std::string small = Random(4096, 7), big = Random(300000, 8);
  ASSERT_OK(data.Write(4, 0, small));
  ASSERT_OK(data.Write(5, 0, big));
  ASSERT_OK(data.Flush(4));
  ASSERT_OK(data.Flush(5));
  EXPECT_EQ(meta.SliceCount(4, 0), 1u);
  EXPECT_EQ(meta.SliceCount(5, 0), 1u);
  std::string out(big.size(), '\0');
  ASSERT_OK_AND_ASSIGN(size_t n, data.Read(5, 0, big.size(), out.data(), big.size()));
  EXPECT_EQ(n, big.size());
  EXPECT_EQ(out, big);
  ASSERT_OK_AND_ASSIGN(n, data.Read(4, 0, small.size(), out.data(), small.size()));
  EXPECT_EQ(out.substr(0, small.size()), small);
}

// A file written at scattered offsets (many slices, each uploaded while the
// next is written) commits its slices together: one transaction per 64
// slices at most, not one per write, with the same bytes.
TEST(DataIOTest, ScatteredWritesCommitTheirSlicesTogether) {
  Rig r;
  std::string model;
  constexpr int kPieces = 200;
  for (int i = 0; i < kPieces; ++i) {
    // Backwards, so no write continues the previous one's slice.
    const uint64_t off = static_cast<uint64_t>(kPieces - 1 - i) * 10000;
    const std::string d = Random(3000, 100 + i);
    ASSERT_OK(r.data->Write(9, off, d));
    Apply(&model, off, d);
  }
  ASSERT_OK(r.data->Flush(9));
  uint64_t slices = 0;
  for (uint32_t c = 0; c * fsmeta::kChunkSize < model.size(); ++c)
    slices += r.meta.SliceCount(9, c);
  EXPECT_EQ(slices, static_cast<uint64_t>(kPieces));
  EXPECT_LE(r.meta.Txns(), static_cast<uint64_t>(kPieces / 64 + 1));
  EXPECT_EQ(r.ReadAll(9, model.size()), model);
}

TEST(DataIOTest, RandomOverwritesMatchAModel) { RandomOverwrites(Compression::kNone); }
TEST(DataIOTest, RandomOverwritesWithLz4) { RandomOverwrites(Compression::kLz4); }
TEST(DataIOTest, RandomOverwritesWithZstd) { RandomOverwrites(Compression::kZstd); }

TEST(DataIOTest, HolesReadAsZerosAndChunkBoundariesSplitWrites) {
  Rig r;
  const uint64_t k = fsmeta::kChunkSize;
  std::string a = Random(5000, 3), b = Random(300000, 4);
  ASSERT_OK(r.data->Write(4, 100, a));
  ASSERT_OK(r.data->Write(4, k - 100000, b));  // crosses into chunk 1
  ASSERT_OK(r.data->Flush(4));
  EXPECT_EQ(r.meta.SliceCount(4, 0), 2u);
  EXPECT_EQ(r.meta.SliceCount(4, 1), 1u);
  uint64_t len = k - 100000 + b.size();
  std::string out(200000, '\x11');
  ASSERT_OK_AND_ASSIGN(size_t n, r.data->Read(4, 0, 200000, out.data(), len));
  ASSERT_EQ(n, 200000u);
  EXPECT_EQ(out.substr(0, 100), std::string(100, '\0'));
  EXPECT_EQ(out.substr(100, a.size()), a);
  EXPECT_EQ(out.substr(100 + a.size()), std::string(200000 - 100 - a.size(), '\0'));
  out.assign(b.size(), '\0');
  ASSERT_OK_AND_ASSIGN(n, r.data->Read(4, k - 100000, b.size(), out.data(), len));
  EXPECT_EQ(out, b);
  // Reads stop at the length the caller gives.
  ASSERT_OK_AND_ASSIGN(n, r.data->Read(4, len - 10, 100, out.data(), len));
  EXPECT_EQ(n, 10u);
  ASSERT_OK_AND_ASSIGN(n, r.data->Read(4, len, 100, out.data(), len));
  EXPECT_EQ(n, 0u);
}

TEST(DataIOTest, SmallBufferForcesCommitsWithoutLosingData) {
  Rig r(64 * 1024, Compression::kNone, /*buffer=*/256 * 1024);
  std::string model;
  std::mt19937_64 g(5);
  for (int i = 0; i < 200; i++) {
    uint64_t off = (i % 2) ? g() % 2000000 : model.size();
    std::string d = Random(1 + g() % 60000, g());
    ASSERT_OK(r.data->Write(5, off, d));
    Apply(&model, off, d);
    EXPECT_LE(r.data->buffered_bytes(), 256u * 1024 + 60000);
  }
  EXPECT_EQ(r.ReadAll(5, model.size()), model);
  ASSERT_OK(r.data->Flush(5));
  EXPECT_EQ(r.data->buffered_bytes(), 0u);
  EXPECT_EQ(r.ReadAll(5, model.size()), model);
}

TEST(DataIOTest, CompactionKeepsTheBytesAndLeavesOneSlice) {
  Rig r(16 * 1024);
  std::string model;
  std::mt19937_64 g(6);
  for (int i = 0; i < 40; i++) {
    uint64_t off = g() % 100000;
    std::string d = Random(1 + g() % 10000, g());
    ASSERT_OK(r.data->Write(6, off, d));
    Apply(&model, off, d);
    ASSERT_OK(r.data->Flush(6));
  }
  EXPECT_GT(r.meta.SliceCount(6, 0), 10u);
  ASSERT_OK_AND_ASSIGN(bool done, r.data->CompactChunk(6, 0, 2));
  EXPECT_TRUE(done);
  EXPECT_EQ(r.meta.SliceCount(6, 0), 1u);
  EXPECT_EQ(r.ReadAll(6, model.size()), model);
}

TEST(DataIOTest, ConcurrentWritersAndReaders) {
  Rig r(32 * 1024);
  constexpr int kWriters = 4;
  constexpr size_t kRegion = 200000;
  std::vector<std::string> parts;
  for (int w = 0; w < kWriters; w++) parts.push_back(Random(kRegion, 100 + w));
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int w = 0; w < kWriters; w++) {
    ts.emplace_back([&, w] {
      for (size_t off = 0; off < kRegion; off += 7000) {
        size_t n = std::min<size_t>(7000, kRegion - off);
        if (!r.data->Write(7, w * kRegion + off, std::string_view(parts[w]).substr(off, n)).ok()) bad++;
        if (off % 49000 == 0 && !r.data->Flush(7).ok()) bad++;
      }
    });
  }
  for (int rd = 0; rd < 3; rd++) {
    ts.emplace_back([&, rd] {
      std::mt19937_64 g(rd);
      std::string buf(20000, '\0');
      while (!stop) {
        uint64_t len = r.data->DirtyLength(7);
        if (len == 0) continue;
        uint64_t off = g() % len;
        auto n = r.data->Read(7, off, buf.size(), buf.data(), len);
        if (!n) bad++;
        // Every byte read is either zero (not yet written) or the writer's byte.
        for (size_t i = 0; n && i < *n; i++) {
          uint64_t p = off + i;
          char want = parts[p / kRegion][p % kRegion];
          if (buf[i] != 0 && buf[i] != want) {
            bad++;
            break;
          }
        }
      }
    });
  }
  for (int w = 0; w < kWriters; w++) ts[w].join();
  stop = true;
  for (size_t i = kWriters; i < ts.size(); i++) ts[i].join();
  EXPECT_EQ(bad.load(), 0);
  ASSERT_OK(r.data->Flush(7));
  std::string all;
  for (auto& p : parts) all += p;
  EXPECT_EQ(r.ReadAll(7, all.size()), all);
}

TEST(DataIOTest, ReadsAfterWritesComeFromRamWithoutGets) {
  Rig r(64 * 1024, Compression::kLz4);
  std::string d = Random(500000, 9);
  ASSERT_OK(r.data->Write(9, 0, d));
  ASSERT_OK(r.data->Flush(9));
  EXPECT_EQ(r.ReadAll(9, d.size()), d);
  EXPECT_EQ(r.cache->stats().backend_gets, 0u);
}

TEST(DataIOTest, SequentialReadsPrefetchFollowingBlocks) {
  Rig r(64 * 1024, Compression::kNone, 64ull << 20, /*block_ram=*/0);
  std::string d = Random(2000000, 8);
  ASSERT_OK(r.data->Write(8, 0, d));
  ASSERT_OK(r.data->Flush(8));
  ReadState rs;
  std::string buf(16384, '\0');
  for (uint64_t off = 0; off < 65536 * 2; off += buf.size()) {
    ASSERT_OK_AND_ASSIGN(size_t n, r.data->Read(8, off, buf.size(), buf.data(), d.size(), &rs));
    ASSERT_EQ(std::string_view(buf.data(), n), std::string_view(d).substr(off, n));
  }
  EXPECT_GT(rs.sequential, 2u);
  EXPECT_GT(rs.prefetched_to, 65536u * 3);
  auto before = r.cache->stats();
  EXPECT_GT(before.backend_gets, 0u);
  EXPECT_EQ(before.heads, 0u);  // prefetches know each block's length from its key
}

TEST(DataIOTest, SequentialPrefetchCrossesIntoTheNextChunk) {
  Rig r(64 * 1024, Compression::kNone, 64ull << 20, /*block_ram=*/0);
  const uint64_t chunk = 64ull << 20;
  const uint64_t at = chunk - 128 * 1024;  // two blocks before the boundary, two after
  std::string d = Random(256 * 1024, 11);
  ASSERT_OK(r.data->Write(11, at, d));
  ASSERT_OK(r.data->Flush(11));
  ReadState rs;
  std::string buf(16384, '\0');
  for (uint64_t off = at; off < at + 2 * buf.size(); off += buf.size()) {
    ASSERT_OK_AND_ASSIGN(size_t n, r.data->Read(11, off, buf.size(), buf.data(), at + d.size(), &rs));
    ASSERT_EQ(std::string_view(buf.data(), n), std::string_view(d).substr(off - at, n));
  }
  // Only chunk 0 was read; the prefetch must also fetch chunk 1's two blocks.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (r.cache->stats().backend_gets < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(r.cache->stats().backend_gets, 4u);
  EXPECT_GE(rs.prefetched_to, at + d.size());
}

TEST(DataIOTest, PrefetchHeadFetchesTheBlockOfASmallFileBeforeItsRead) {
  Rig r(64 * 1024, Compression::kNone, 64ull << 20, /*block_ram=*/0);
  std::string small = Random(5000, 12), big = Random(64 * 1024 + 1, 13);
  ASSERT_OK(r.data->Write(12, 0, small));
  ASSERT_OK(r.data->Write(13, 0, big));
  ASSERT_OK(r.data->Flush(12));
  ASSERT_OK(r.data->Flush(13));
  r.data->PrefetchHead(13, big.size());  // more than one block: left to readahead
  r.data->PrefetchHead(12, 0);           // empty: nothing to fetch
  EXPECT_EQ(r.cache->stats().backend_gets, 0u);
  r.data->PrefetchHead(12, small.size());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (r.cache->stats().backend_gets < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(r.cache->stats().backend_gets, 1u);
  // The read joins or finds that fetch: still one GET.
  EXPECT_EQ(r.ReadAll(12, small.size()), small);
  EXPECT_EQ(r.cache->stats().backend_gets, 1u);
}

TEST(DataIOTest, UncompressedBlocksAreReadWithoutHeads) {
  // Block objects are immutable and their length is in the key: a cold read
  // is one GET per block, no HEAD; a second read is served by the cache.
  Rig r(64 * 1024, Compression::kNone, 64ull << 20, /*block_ram=*/0);
  std::string d = Random(200000, 5);
  ASSERT_OK(r.data->Write(5, 0, d));
  ASSERT_OK(r.data->Flush(5));
  EXPECT_EQ(r.ReadAll(5, d.size()), d);
  auto s1 = r.cache->stats();
  EXPECT_EQ(s1.heads, 0u);
  EXPECT_EQ(s1.backend_gets, 4u);  // 200000 bytes in 64 KiB blocks
  EXPECT_EQ(r.ReadAll(5, d.size()), d);
  EXPECT_EQ(r.cache->stats().backend_gets, 4u);
}

TEST(DataIOTest, CompressedBlocksStillLearnTheirStoredLength) {
  Rig r(64 * 1024, Compression::kZstd, 64ull << 20, /*block_ram=*/0);
  std::string d = Random(100000, 6);
  ASSERT_OK(r.data->Write(6, 0, d));
  ASSERT_OK(r.data->Flush(6));
  EXPECT_EQ(r.ReadAll(6, d.size()), d);
  EXPECT_GT(r.cache->stats().heads, 0u);
}

}  // namespace
}  // namespace strata::fs
