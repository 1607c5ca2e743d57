// The write-ahead log (replay, torn tails, corruption, group commit, rotation)
// and the crash test: a child process inserts with wait=true and reports each
// acknowledged batch over a pipe; it is killed with SIGKILL in the middle of
// writing, sealing and indexing; every acknowledged point must survive.
#include "vector/wal.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <strata/vector/collection.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "testutil/testutil.h"

namespace strata::vector {
namespace {

using internal::Wal;

struct Rec {
  uint64_t lsn;
  uint8_t type;
  std::string body;
};

Result<std::unique_ptr<Wal>> OpenWal(const std::string& dir, std::vector<Rec>* out,
                                     uint64_t start = 1, uint64_t min_next = 1) {
  return Wal::Open(dir, start, min_next, true,
                   [out](uint64_t lsn, uint8_t type, std::string_view body) {
                     out->push_back(Rec{lsn, type, std::string(body)});
                     return Status::Ok();
                   });
}

TEST(WalTest, AppendReplayRotate) {
  testing::TempDir tmp;
  {
    std::vector<Rec> recs;
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp.path(), &recs));
    EXPECT_TRUE(recs.empty());
    for (int i = 0; i < 10; ++i) {
      ASSERT_OK_AND_ASSIGN(uint64_t lsn,
                           w->Append(uint8_t(i % 3), std::string(size_t(i) * 100, char('a' + i))));
      EXPECT_EQ(uint64_t(i + 1), lsn);
      if (i == 4) {
        ASSERT_OK_AND_ASSIGN(uint64_t seq, w->Rotate());
        EXPECT_EQ(2u, seq);
      }
    }
    ASSERT_OK(w->Sync(10));
    EXPECT_EQ(2u, w->Files(1).size());
  }
  std::vector<Rec> recs;
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp.path(), &recs));
  ASSERT_EQ(10u, recs.size());
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(uint64_t(i + 1), recs[i].lsn);
    EXPECT_EQ(uint8_t(i % 3), recs[i].type);
    EXPECT_EQ(std::string(size_t(i) * 100, char('a' + i)), recs[i].body);
  }
  ASSERT_OK_AND_ASSIGN(uint64_t lsn, w->Append(1, "next"));
  EXPECT_EQ(11u, lsn);
  // Files before a start sequence number are dropped (their rows are sealed).
  w.reset();
  recs.clear();
  ASSERT_OK_AND_ASSIGN(w, OpenWal(tmp.path(), &recs, /*start=*/2));
  ASSERT_EQ(6u, recs.size());
  EXPECT_EQ(6u, recs[0].lsn);
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/0000000000000001.log"));
}

TEST(WalTest, TornTailIsCutAndAppendsContinue) {
  testing::TempDir tmp;
  {
    std::vector<Rec> recs;
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp.path(), &recs));
    for (int i = 0; i < 5; ++i) ASSERT_OK(w->Append(1, "record").status());
  }
  const std::string path = tmp.path() + "/0000000000000001.log";
  const auto good_size = std::filesystem::file_size(path);
  // A half-written record: a length, a crc and a few bytes.
  {
    std::ofstream f(path, std::ios::binary | std::ios::app);
    const char junk[] = "\x40\x00\x00\x00\x12\x34\x56\x78partial";
    f.write(junk, sizeof(junk) - 1);
  }
  std::vector<Rec> recs;
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp.path(), &recs));
  EXPECT_EQ(5u, recs.size());
  EXPECT_EQ(good_size, std::filesystem::file_size(path));
  ASSERT_OK_AND_ASSIGN(uint64_t lsn, w->Append(1, "after"));
  EXPECT_EQ(6u, lsn);
  w.reset();
  recs.clear();
  ASSERT_OK_AND_ASSIGN(w, OpenWal(tmp.path(), &recs));
  ASSERT_EQ(6u, recs.size());
  EXPECT_EQ("after", recs[5].body);
}

TEST(WalTest, FlippedBitInTheLastRecordIsATornTail) {
  testing::TempDir tmp;
  {
    std::vector<Rec> recs;
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp.path(), &recs));
    for (int i = 0; i < 3; ++i) ASSERT_OK(w->Append(1, "record-" + std::to_string(i)).status());
  }
  const std::string path = tmp.path() + "/0000000000000001.log";
  std::string data = testing::ReadFileOrEmpty(path);
  data[data.size() - 2] ^= 0x10;
  ASSERT_TRUE(testing::WriteFile(path, data));
  std::vector<Rec> recs;
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp.path(), &recs));
  EXPECT_EQ(2u, recs.size());
}

TEST(WalTest, DamageInAnOlderFileIsCorruption) {
  testing::TempDir tmp;
  {
    std::vector<Rec> recs;
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp.path(), &recs));
    for (int i = 0; i < 3; ++i) ASSERT_OK(w->Append(1, "record-" + std::to_string(i)).status());
    ASSERT_OK(w->Rotate().status());
    ASSERT_OK(w->Append(1, "in the second file").status());
  }
  const std::string path = tmp.path() + "/0000000000000001.log";
  std::string data = testing::ReadFileOrEmpty(path);
  data[40] ^= 0x01;
  ASSERT_TRUE(testing::WriteFile(path, data));
  std::vector<Rec> recs;
  auto w = OpenWal(tmp.path(), &recs);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(StatusCode::kCorruption, w.error().code());
  EXPECT_NE(std::string::npos, w.error().message().find("0000000000000001.log"))
      << w.error().ToString();
}

TEST(WalTest, GroupCommitSharesFsyncs) {
  testing::TempDir tmp;
  std::vector<Rec> recs;
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp.path(), &recs));
  constexpr int kThreads = 8, kEach = 50;
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        auto lsn = w->Append(1, std::string(64, 'x'));
        if (!lsn.ok() || !w->Sync(*lsn).ok()) ++failures;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(0, failures.load());
  EXPECT_EQ(uint64_t(kThreads * kEach), w->last_lsn());
  EXPECT_LE(w->syncs(), uint64_t(kThreads * kEach));
  std::printf("[group commit] %d synced appends took %llu fsyncs\n", kThreads * kEach,
              static_cast<unsigned long long>(w->syncs()));
}

TEST(WalTest, SequenceNumbersNeverGoBack) {
  testing::TempDir tmp;
  {
    std::vector<Rec> recs;
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp.path(), &recs));
    ASSERT_OK(w->Append(1, "a").status());
  }
  // The manifest knew of lsn 41 (records lost with power): continue after it.
  std::vector<Rec> recs;
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp.path(), &recs, 1, 42));
  ASSERT_OK_AND_ASSIGN(uint64_t lsn, w->Append(1, "b"));
  EXPECT_EQ(42u, lsn);
  w.reset();
  recs.clear();
  ASSERT_OK_AND_ASSIGN(w, OpenWal(tmp.path(), &recs, 1, 42));
  ASSERT_EQ(2u, recs.size());
  EXPECT_EQ(42u, recs[1].lsn);
}

// ---------------------------------------------------------------------------
// kill -9

struct Msg {
  uint8_t kind;  // 0 = about to upsert [a, b), 1 = upsert acked, 2 = about to delete a, 3 = delete
                 // acked
  uint64_t a, b;
};

std::vector<float> VecOf(uint64_t id) {
  std::vector<float> v(8);
  for (size_t i = 0; i < 8; ++i) v[i] = float((id * 31 + i * 7) % 1000) / 100.0f;
  return v;
}

CollectionOptions CrashOptions() {
  CollectionOptions o;
  o.segment_rows = 400;  // seals, rewrites and index builds all the time
  o.index_threads = 1;
  o.merge_small_rows = 1000;
  o.merge_max_rows = 5000;
  o.compact_deleted_ratio = 0.1;
  return o;
}

[[noreturn]] void Child(const std::string& dir, int fd, uint64_t first_id) {
  auto c = Collection::Open(dir, CrashOptions());
  if (!c.ok()) {
    std::fprintf(stderr, "child: %s\n", c.error().ToString().c_str());
    _exit(2);
  }
  auto send = [&](Msg m) {
    if (::write(fd, &m, sizeof m) != ssize_t(sizeof m)) _exit(3);
  };
  uint64_t id = first_id;
  for (int round = 0;; ++round) {
    std::vector<Point> batch;
    for (int i = 0; i < 25; ++i) {
      Point p;
      p.id = PointId::Number(id + uint64_t(i));
      p.vectors.push_back({"", VecOf(id + uint64_t(i))});
      p.payload = "{\"id\":" + std::to_string(id + uint64_t(i)) + "}";
      batch.push_back(std::move(p));
    }
    send({0, id, id + 25});
    WriteOptions wo;
    wo.wait = true;
    if (!(*c)->Upsert(batch, wo).ok()) _exit(4);
    send({1, id, id + 25});
    if (round % 4 == 3) {
      const uint64_t victim = id - 40;  // from an earlier batch
      send({2, victim, 0});
      if (!(*c)->Delete(std::vector<PointId>{PointId::Number(victim)}, wo).ok()) _exit(5);
      send({3, victim, 0});
    }
    id += 25;
  }
}

TEST(CrashTest, KillNineLosesNoAcknowledgedPoint) {
  testing::TempDir tmp;
  const std::string dir = tmp.Join("c");
  {
    CollectionSchema s;
    VectorFieldSchema f;
    f.index.type = IndexType::kHnsw;
    f.index.dim = 8;
    f.index.hnsw_ef_construction = 32;
    s.vectors.push_back(f);
    s.payload = {{"id", PayloadType::kInteger, false}};
    ASSERT_OK(Collection::Create(dir, "c", s, CrashOptions()).status());
  }
  std::set<uint64_t> acked, maybe, deleted, maybe_deleted;
  uint64_t next_id = 0;
  std::mt19937 rng(7);
  for (int round = 0; round < 4; ++round) {
    int fds[2];
    ASSERT_EQ(0, ::pipe(fds));
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      Child(dir, fds[1], next_id);
    }
    ::close(fds[1]);
    // Let it run for a while (a different moment each round), then kill it.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(400 + rng() % 900);
    uint64_t highest = next_id;
    Msg m;
    auto handle = [&](const Msg& msg) {
      switch (msg.kind) {
        case 0:
          for (uint64_t i = msg.a; i < msg.b; ++i) maybe.insert(i);
          highest = std::max(highest, msg.b);
          break;
        case 1:
          for (uint64_t i = msg.a; i < msg.b; ++i) {
            acked.insert(i);
            maybe.erase(i);
          }
          break;
        case 2:
          maybe_deleted.insert(msg.a);
          break;
        case 3:
          deleted.insert(msg.a);
          maybe_deleted.erase(msg.a);
          break;
      }
    };
    while (std::chrono::steady_clock::now() < deadline) {
      ssize_t r = ::read(fds[0], &m, sizeof m);
      if (r != ssize_t(sizeof m)) break;
      handle(m);
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited by itself with " << WEXITSTATUS(status);
    while (::read(fds[0], &m, sizeof m) == ssize_t(sizeof m)) handle(m);
    ::close(fds[0]);
    next_id = highest;

    CollectionOptions o = CrashOptions();
    o.background = false;  // check the state exactly as recovered
    ASSERT_OK_AND_ASSIGN(auto c, Collection::Open(dir, o));
    ScrollRequest sr;
    sr.limit = 1'000'000;
    sr.with_payload = true;
    ASSERT_OK_AND_ASSIGN(auto all, c->Scroll(sr));
    std::set<uint64_t> present;
    for (const auto& r : all.points) present.insert(r.id.hi);
    size_t lost = 0;
    for (uint64_t id : acked) {
      if (deleted.count(id) || maybe_deleted.count(id)) continue;
      if (!present.count(id)) ++lost;
    }
    EXPECT_EQ(0u, lost) << "round " << round << ": acknowledged points lost";
    for (uint64_t id : deleted)
      EXPECT_FALSE(present.count(id)) << "deleted point " << id << " came back";
    for (uint64_t id : present)
      EXPECT_TRUE(acked.count(id) || maybe.count(id)) << "point " << id << " was never written";
    // Contents survive too.
    for (const auto& r : all.points) {
      if (r.id.hi % 97 != 0) continue;
      EXPECT_EQ("{\"id\":" + std::to_string(r.id.hi) + "}", r.payload);
      ASSERT_OK_AND_ASSIGN(auto recs, c->Get(std::vector<PointId>{r.id}, false, true));
      ASSERT_EQ(1u, recs.size());
      EXPECT_EQ(VecOf(r.id.hi), recs[0].vectors.at(0).values);
    }
    ASSERT_OK_AND_ASSIGN(size_t n, c->Count(*ParseFilterExpression("id >= 0")));
    EXPECT_EQ(present.size(), n);
    std::printf("[crash round %d] %zu acked, %zu present, %zu deleted, %zu segments\n", round,
                acked.size(), present.size(), deleted.size(), c->Info().segments);
    // Points of a batch cut by the kill were not acknowledged: forget them.
    for (uint64_t id : maybe) {
      if (!present.count(id)) continue;
      acked.insert(id);
    }
    maybe.clear();
    for (uint64_t id : maybe_deleted) {
      if (!present.count(id)) deleted.insert(id);
    }
    maybe_deleted.clear();
    ASSERT_GT(acked.size(), 0u);
  }
}

}  // namespace
}  // namespace strata::vector
