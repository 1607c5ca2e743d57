// The writeback stage (mount --writeback): blocks staged durably in a local
// directory, read from there until uploaded, uploaded in the background,
// recovered after a crash (referenced blocks uploaded, others dropped), with
// a byte limit and a fallback when staging fails; and ChunkStore over it.
#include "fs/writeback.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <strata/objstore/object_store.h>

#include "fs/chunk_store.h"
#include "fs/data_io.h"
#include "testutil/testutil.h"

namespace strata::fs {
namespace {

using testing::TempDir;

// Records uploads; can be made to fail or to block.
struct FakeBackend {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::pair<uint64_t, uint32_t>, std::string> objects;
  std::set<std::pair<uint64_t, uint32_t>> deleted;
  int fail_next = 0;  // uploads that fail before they succeed again
  bool fail_all = false;
  bool hold = false;  // uploads wait while set
  int started = 0;

  Writeback::UploadFn Upload() {
    return [this](uint64_t id, uint32_t index, std::string_view data) {
      std::unique_lock<std::mutex> lk(mu);
      started++;
      cv.notify_all();
      cv.wait(lk, [&] { return !hold; });
      if (fail_all) return Status::Unavailable("store down");
      if (fail_next > 0) {
        fail_next--;
        return Status::Unavailable("store hiccup");
      }
      objects[{id, index}] = std::string(data);
      return Status::Ok();
    };
  }
  Writeback::DeleteFn Delete() {
    return [this](uint64_t id, uint32_t index, uint32_t) {
      std::lock_guard<std::mutex> lk(mu);
      objects.erase({id, index});
      deleted.insert({id, index});
      return Status::Ok();
    };
  }
  size_t Count() {
    std::lock_guard<std::mutex> lk(mu);
    return objects.size();
  }
};

WritebackOptions Opts(const std::string& dir) {
  WritebackOptions o;
  o.dir = dir;
  o.uploads = 2;
  o.retry_base_ms = 5;
  return o;
}

bool Exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

TEST(WritebackTest, StagedBlockIsDurableReadableThenUploadedAndRemoved) {
  TempDir tmp;
  FakeBackend be;
  auto o = Opts(tmp.Join("stage"));
  o.upload_delay_ms = 3600 * 1000;  // nothing uploads until Drain
  auto wb = Writeback::Open(o, be.Upload(), be.Delete());
  ASSERT_TRUE(wb.ok()) << wb.error().ToString();
  (*wb)->Start();
  const std::string data = "hello, staged world";
  ASSERT_TRUE((*wb)->Stage(7, 0, data));
  // On disk under its key's name, complete.
  EXPECT_EQ(testing::ReadFileOrEmpty(o.dir + "/7_0_" + std::to_string(data.size())), data);
  EXPECT_EQ((*wb)->Stats().staged_blocks, 1u);
  EXPECT_EQ((*wb)->Stats().staged_bytes, data.size());
  EXPECT_EQ(be.Count(), 0u);
  char buf[6] = {0};
  bool found = false;
  ASSERT_TRUE((*wb)->Read(7, 0, data.size(), 7, 6, buf, &found).ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(std::string(buf, 6), "staged");
  EXPECT_TRUE((*wb)->Contains(7, 0));

  ASSERT_TRUE((*wb)->Drain().ok());  // ignores the delay
  EXPECT_EQ((be.objects[{7, 0}]), data);
  EXPECT_FALSE(Exists(o.dir + "/7_0_" + std::to_string(data.size())));
  EXPECT_EQ((*wb)->Stats().staged_blocks, 0u);
  EXPECT_EQ((*wb)->Stats().uploaded_blocks, 1u);
  ASSERT_TRUE((*wb)->Read(7, 0, data.size(), 0, 1, buf, &found).ok());
  EXPECT_FALSE(found);  // now in the object store
}

TEST(WritebackTest, SyncEachAndSyncMakeStagesDurable) {
  TempDir tmp;
  FakeBackend be;
  for (bool each : {false, true}) {
    auto o = Opts(tmp.Join(each ? "each" : "batch"));
    o.sync_each = each;
    o.upload_delay_ms = 3600 * 1000;
    auto wb = Writeback::Open(o, be.Upload(), be.Delete());
    ASSERT_TRUE(wb.ok());
    EXPECT_TRUE((*wb)->Sync().ok());  // nothing staged
    ASSERT_TRUE((*wb)->Stage(1, 0, "abc"));
    ASSERT_TRUE((*wb)->Stage(1, 1, "defg"));
    EXPECT_TRUE((*wb)->Sync().ok());
    EXPECT_TRUE((*wb)->Sync().ok());  // nothing new: no syncfs
    EXPECT_EQ(testing::ReadFileOrEmpty(o.dir + "/1_1_4"), "defg");
  }
}

TEST(WritebackTest, LimitAndFailedStageFallBackToTheCaller) {
  TempDir tmp;
  FakeBackend be;
  auto o = Opts(tmp.Join("stage"));
  o.limit_bytes = 100;
  o.upload_delay_ms = 3600 * 1000;
  auto wb = Writeback::Open(o, be.Upload(), be.Delete());
  ASSERT_TRUE(wb.ok());
  (*wb)->Start();
  EXPECT_TRUE((*wb)->Stage(1, 0, std::string(60, 'a')));
  EXPECT_FALSE((*wb)->Stage(2, 0, std::string(60, 'b')));  // would exceed 100 bytes
  EXPECT_TRUE((*wb)->Stage(3, 0, std::string(40, 'c')));   // fits exactly
  EXPECT_EQ((*wb)->Stats().fallbacks, 1u);
  EXPECT_EQ((*wb)->Stats().staged_bytes, 100u);
  // A stage write that fails (the directory is gone: as ENOSPC or EIO would)
  // is reported, and takes no room.
  ASSERT_TRUE((*wb)->Drain().ok());
  std::string lock = o.dir + "/LOCK";
  ASSERT_EQ(::unlink(lock.c_str()), 0);
  ASSERT_EQ(::rmdir(o.dir.c_str()), 0);
  EXPECT_FALSE((*wb)->Stage(4, 0, "xyz"));
  EXPECT_EQ((*wb)->Stats().fallbacks, 2u);
  EXPECT_EQ((*wb)->Stats().staged_bytes, 0u);
}

TEST(WritebackTest, StageKeepsTheDisksFreeSpaceFloor) {
  TempDir tmp;
  FakeBackend be;
  auto o = Opts(tmp.Join("stage"));
  o.upload_delay_ms = 3600 * 1000;
  o.min_free_bytes = int64_t{1} << 62;  // more than any disk has free
  auto wb = Writeback::Open(o, be.Upload(), be.Delete());
  ASSERT_TRUE(wb.ok());
  EXPECT_FALSE((*wb)->Stage(1, 0, "no room"));
  EXPECT_EQ((*wb)->Stats().fallbacks, 1u);
  EXPECT_EQ((*wb)->Stats().staged_bytes, 0u);
  EXPECT_TRUE(Writeback::ListStaged(o.dir).empty());
}

TEST(WritebackTest, RecoverUploadsReferencedBlocksAndDropsTheRest) {
  TempDir tmp;
  FakeBackend be;
  auto o = Opts(tmp.Join("stage"));
  {
    // A mount that staged and died: nothing uploaded.
    auto o2 = o;
    o2.upload_delay_ms = 3600 * 1000;
    auto wb = Writeback::Open(o2, be.Upload(), be.Delete());
    ASSERT_TRUE(wb.ok());
    (*wb)->Start();
    ASSERT_TRUE((*wb)->Stage(10, 0, "committed-a"));
    ASSERT_TRUE((*wb)->Stage(10, 1, "committed-b"));
    ASSERT_TRUE((*wb)->Stage(11, 0, "never-committed"));
  }
  ASSERT_TRUE(testing::WriteFile(o.dir + "/12_0_4.tmp", "torn"));  // an interrupted stage
  ASSERT_TRUE(testing::WriteFile(o.dir + "/13_0_100", "short"));   // damaged: wrong length
  EXPECT_EQ(be.Count(), 0u);
  EXPECT_EQ(Writeback::ListStaged(o.dir).size(), 3u);  // not the .tmp, not the short one

  auto wb = Writeback::Open(o, be.Upload(), be.Delete());
  ASSERT_TRUE(wb.ok());
  auto kept = (*wb)->Recover([](uint64_t id) { return id == 10 || id == 13; });
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, 2u);
  EXPECT_FALSE(Exists(o.dir + "/11_0_15"));  // unreferenced: removed
  EXPECT_FALSE(Exists(o.dir + "/12_0_4.tmp"));
  EXPECT_TRUE(Exists(o.dir + "/13_0_100"));  // left for a person, not uploaded
  // Readable from the stage before the uploads run.
  char buf[11];
  bool found = false;
  ASSERT_TRUE((*wb)->Read(10, 1, 11, 0, 11, buf, &found).ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(std::string(buf, 11), "committed-b");
  (*wb)->Start();
  ASSERT_TRUE((*wb)->Drain().ok());
  EXPECT_EQ(be.objects.size(), 2u);
  EXPECT_EQ((be.objects[{10, 0}]), "committed-a");
  EXPECT_EQ((be.objects[{10, 1}]), "committed-b");
  EXPECT_EQ(be.objects.count({11, 0}), 0u);
}

TEST(WritebackTest, OneMountPerStage) {
  TempDir tmp;
  FakeBackend be;
  auto a = Writeback::Open(Opts(tmp.Join("s")), be.Upload(), be.Delete());
  ASSERT_TRUE(a.ok());
  auto b = Writeback::Open(Opts(tmp.Join("s")), be.Upload(), be.Delete());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code(), StatusCode::kUnavailable) << b.error().ToString();
}

TEST(WritebackTest, FailedUploadsAreRetriedAndDrainGivesUpWithoutLosingTheBlock) {
  TempDir tmp;
  FakeBackend be;
  auto o = Opts(tmp.Join("stage"));
  auto wb = Writeback::Open(o, be.Upload(), be.Delete());
  ASSERT_TRUE(wb.ok());
  be.fail_next = 2;
  (*wb)->Start();
  ASSERT_TRUE((*wb)->Stage(5, 0, "retry me"));
  ASSERT_TRUE((*wb)->Drain().ok());
  EXPECT_EQ((be.objects[{5, 0}]), "retry me");
  EXPECT_GE((*wb)->Stats().upload_failures, 2u);

  be.fail_all = true;
  ASSERT_TRUE((*wb)->Stage(6, 0, "stuck"));
  Status st = (*wb)->Drain(3);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(Exists(o.dir + "/6_0_5"));  // kept for the next mount
  EXPECT_EQ((*wb)->Stats().staged_blocks, 1u);
}

TEST(WritebackTest, ForgetDropsStagedBlocksAndDeletesOnesUploadingMeanwhile) {
  TempDir tmp;
  FakeBackend be;
  auto o = Opts(tmp.Join("stage"));
  o.uploads = 1;
  o.upload_delay_ms = 3600 * 1000;
  auto wb = Writeback::Open(o, be.Upload(), be.Delete());
  ASSERT_TRUE(wb.ok());
  (*wb)->Start();
  ASSERT_TRUE((*wb)->Stage(20, 0, "freed before upload"));
  (*wb)->Forget(20);
  EXPECT_FALSE(Exists(o.dir + "/20_0_19"));
  EXPECT_EQ((*wb)->Stats().staged_blocks, 0u);

  // Freed while its upload runs: the object is deleted after it lands.
  be.hold = true;
  ASSERT_TRUE((*wb)->Stage(21, 0, "freed mid-upload"));
  std::thread drain([&] { EXPECT_TRUE((*wb)->Drain().ok()); });
  {
    std::unique_lock<std::mutex> lk(be.mu);
    be.cv.wait(lk, [&] { return be.started >= 1; });
  }
  (*wb)->Forget(21);
  {
    std::lock_guard<std::mutex> lk(be.mu);
    be.hold = false;
  }
  be.cv.notify_all();
  drain.join();
  EXPECT_EQ(be.Count(), 0u);
  EXPECT_EQ(be.deleted.count({21, 0}), 1u);
  EXPECT_FALSE(Exists(o.dir + "/21_0_16"));
}

TEST(WritebackTest, ChunkStoreStagesReadsAndDeletesThroughTheStage) {
  TempDir tmp;
  auto mem = objstore::NewMemObjectStore("wb-test");
  ChunkStoreOptions co;
  co.volume = "v";
  co.block_size = 1024;
  co.block_ram_bytes = 0;  // reads must come from the stage, not RAM
  ChunkStore cs(mem.get(), nullptr, co);
  auto o = Opts(tmp.Join("stage"));
  o.upload_delay_ms = 3600 * 1000;
  auto wb = Writeback::Open(
      o, [&](uint64_t id, uint32_t i, std::string_view d) { return cs.UploadBlock(id, i, d); },
      [&](uint64_t id, uint32_t i, uint32_t len) { return mem->Delete(cs.BlockKey(id, i, len)); });
  ASSERT_TRUE(wb.ok());
  (*wb)->Start();
  cs.SetWriteback(wb->get(), true);
  std::string a(1024, 'x'), b(300, 'y');
  ASSERT_TRUE(cs.PutBlock(1, 0, a).ok());
  ASSERT_TRUE(cs.PutBlock(1, 1, b).ok());
  EXPECT_FALSE(mem->Head(cs.BlockKey(1, 0, 1024)).ok());  // not uploaded
  std::string got(1324, '\0');
  ASSERT_TRUE(cs.ReadSlice(1, 1324, 0, 1324, got.data()).ok());
  EXPECT_EQ(got, a + b);
  ASSERT_TRUE((*wb)->Drain().ok());
  EXPECT_TRUE(mem->Head(cs.BlockKey(1, 0, 1024)).ok());
  EXPECT_TRUE(mem->Head(cs.BlockKey(1, 1, 300)).ok());
  std::fill(got.begin(), got.end(), '\0');
  ASSERT_TRUE(cs.ReadSlice(1, 1324, 0, 1324, got.data()).ok());
  EXPECT_EQ(got, a + b);

  // A slice freed while staged: no object ever appears.
  ASSERT_TRUE(cs.PutBlock(2, 0, b).ok());
  ASSERT_TRUE(cs.DeleteSlice(2, 300).ok());
  ASSERT_TRUE((*wb)->Drain().ok());
  EXPECT_FALSE(mem->Head(cs.BlockKey(2, 0, 300)).ok());

  // Without stage_new, PutBlock uploads at once (leftovers still readable).
  cs.SetWriteback(wb->get(), false);
  ASSERT_TRUE(cs.PutBlock(3, 0, b).ok());
  EXPECT_TRUE(mem->Head(cs.BlockKey(3, 0, 300)).ok());
  cs.SetWriteback(nullptr, false);
}

// The chunk/slice part of the metadata engine, in memory.
class MemSliceMeta final : public SliceMeta {
 public:
  Result<uint64_t> NewSliceId() override { return next_++; }
  Result<std::vector<fsmeta::Slice>> ReadChunk(Ino ino, uint32_t c) override {
    std::lock_guard<std::mutex> lk(mu_);
    return chunks_[{ino, c}];
  }
  Status WriteChunk(Ino ino, uint32_t c, uint32_t pos, const fsmeta::Slice& s, int64_t) override {
    std::lock_guard<std::mutex> lk(mu_);
    fsmeta::Slice t = s;
    t.pos = pos;
    chunks_[{ino, c}].push_back(t);
    return Status::Ok();
  }
  Status ReplaceSlices(Ino, uint32_t, const std::vector<fsmeta::Slice>&,
                       const std::vector<fsmeta::Slice>&) override {
    return Status::Internal("not used");
  }

 private:
  std::mutex mu_;
  std::map<std::pair<Ino, uint32_t>, std::vector<fsmeta::Slice>> chunks_;
  std::atomic<uint64_t> next_{1};
};

TEST(WritebackTest, CloseCommitsStagedBlocksAndReadsThemBeforeTheUpload) {
  TempDir tmp;
  auto mem = objstore::NewMemObjectStore("wb-dataio-test");
  ChunkStoreOptions co;
  co.volume = "v";
  co.block_size = 64 * 1024;
  co.block_ram_bytes = 0;
  ChunkStore cs(mem.get(), nullptr, co);
  auto o = Opts(tmp.Join("stage"));
  o.upload_delay_ms = 3600 * 1000;
  auto wb = Writeback::Open(
      o, [&](uint64_t id, uint32_t i, std::string_view d) { return cs.UploadBlock(id, i, d); },
      [&](uint64_t id, uint32_t i, uint32_t len) { return mem->Delete(cs.BlockKey(id, i, len)); });
  ASSERT_TRUE(wb.ok());
  (*wb)->Start();
  cs.SetWriteback(wb->get(), true);
  MemSliceMeta meta;
  DataOptions dopts;
  dopts.background_compaction = false;
  DataIO io(&meta, &cs, dopts);
  std::string data(150 * 1000, '\0');
  for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<char>(i * 7 + 3);
  ASSERT_TRUE(io.Write(1, 0, data).ok());
  ASSERT_TRUE(io.Flush(1).ok());  // what a close does
  EXPECT_FALSE(io.HasDirty(1));   // committed
  size_t objects = 0;
  ASSERT_TRUE(mem->ListAll("",
                           [&](const objstore::ObjectInfo&) {
                             objects++;
                             return Status::Ok();
                           })
                  .ok());
  EXPECT_EQ(objects, 0u);  // the three blocks wait in the stage
  EXPECT_EQ((*wb)->Stats().staged_blocks, 3u);
  std::string got(data.size(), '\0');
  auto n = io.Read(1, 0, got.size(), got.data(), data.size());
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(*n, data.size());
  EXPECT_EQ(got, data);
  ASSERT_TRUE((*wb)->Drain().ok());
  ASSERT_TRUE(mem->ListAll("",
                           [&](const objstore::ObjectInfo&) {
                             objects++;
                             return Status::Ok();
                           })
                  .ok());
  EXPECT_EQ(objects, 3u);
  std::fill(got.begin(), got.end(), '\0');
  ASSERT_TRUE(io.Read(1, 0, got.size(), got.data(), data.size()).ok());
  EXPECT_EQ(got, data);
  cs.SetWriteback(nullptr, false);
}

}  // namespace
}  // namespace strata::fs
