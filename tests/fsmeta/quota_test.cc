// Directory quotas (JuiceFS `quota` semantics), RemoveTree and CloneFile, each test run against SQLite
// and against a real Redis server: limits on the space and inode count below a
// directory, enforced with EDQUOT on create, mkdir, write, truncate, fallocate,
// link and rename into the tree; usage shared by every client of the volume;
// CheckQuotas finds and repairs drift.
#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <strata/fsmeta/meta_engine.h>

#include "fsmeta/codec.h"
#include "fsmeta/kv.h"
#include "testutil/postgres_server.h"
#include "testutil/testutil.h"

namespace strata::fsmeta {
namespace {

using strata::testing::TempDir;
using strata::testing::ToStatus;

#define EXPECT_ERRNO(expr, want)                                          \
  do {                                                                    \
    ::strata::Status _st = ToStatus(expr);                                \
    EXPECT_EQ(ErrnoOf(_st), (want)) << #expr << " -> " << _st.ToString(); \
  } while (0)

// Started on first use, stopped when the binary exits.
strata::testing::RedisServer* Redis() {
  static strata::testing::RedisServer server;
  static const bool ok = server.Start().ok();
  return ok ? &server : nullptr;
}

class QuotaTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "redis") {
      ASSERT_NE(Redis(), nullptr) << "redis-server did not start";
      url_ = "redis://127.0.0.1:" + std::to_string(Redis()->port()) + "/5";
    } else if (GetParam() == "postgres") {
      Status why;
      auto* pg = strata::testing::SharedPostgres(&why);
      if (!pg) {
        if (why.code() == StatusCode::kNotFound) GTEST_SKIP() << why.ToString();
        FAIL() << "postgres did not start: " << why.ToString();
      }
      url_ = pg->Url("v5");
    } else {
      url_ = "sqlite3://" + dir_.Join("meta.db");
    }
    ASSERT_OK_AND_ASSIGN(m_, OpenMeta(url_));
    ASSERT_OK(m_->Destroy());
    Format f;
    f.name = "quota";
    f.trash_days = 0;
    ASSERT_OK(m_->Init(f, false));
    ASSERT_OK(m_->NewSession(SessionInfo{}).status());
  }

  std::unique_ptr<MetaEngine> Second() {
    auto r = OpenMeta(url_);
    EXPECT_TRUE(r.has_value());
    auto m = std::move(*r);
    EXPECT_OK(m->LoadFormat().status());
    EXPECT_OK(m->NewSession(SessionInfo{}).status());
    return m;
  }
  Ino Dir(Ino parent, const std::string& name) {
    auto r = m_->Mkdir(root_, parent, name, 0755, 0);
    EXPECT_OK(r);
    return r.has_value() ? r->ino : 0;
  }
  Ino File(Ino parent, const std::string& name, uint64_t size = 0) {
    auto r = m_->Mknod(root_, parent, name, S_IFREG | 0644, 0, 0);
    EXPECT_OK(r);
    if (!r.has_value()) return 0;
    if (size) {
      EXPECT_OK(m_->Write(
          r->ino, 0, 0,
          Slice{++slice_, static_cast<uint32_t>(size), 0, static_cast<uint32_t>(size), 0}, 1));
    }
    return r->ino;
  }
  Quota Get(Ino ino) {
    auto q = m_->GetQuota(ino);
    EXPECT_OK(q);
    return q.has_value() ? *q : Quota{};
  }

  TempDir dir_{"fsquota"};
  std::string url_;
  std::unique_ptr<MetaEngine> m_;
  Context root_;
  uint64_t slice_ = 100;
};

TEST_P(QuotaTest, SetCountsWhatIsAlreadyThere) {
  Ino d = Dir(kRootIno, "d");
  File(d, "a", 5000);       // 8 KiB rounded
  Ino sub = Dir(d, "sub");  // 4 KiB, one inode
  File(sub, "b", 1);        // 4 KiB
  File(kRootIno, "outside", 100000);
  ASSERT_OK(m_->SetQuota(d, 1 << 20, 100));
  Quota q = Get(d);
  EXPECT_EQ(q.max_space, 1u << 20);
  EXPECT_EQ(q.max_inodes, 100u);
  EXPECT_EQ(q.used_inodes, 3);
  EXPECT_EQ(q.used_space, 8192 + 4096 + 4096);
  // Changing the limits keeps the usage.
  ASSERT_OK(m_->SetQuota(d, 0, 50));
  q = Get(d);
  EXPECT_EQ(q.max_space, 0u);
  EXPECT_EQ(q.used_inodes, 3);
  ASSERT_OK_AND_ASSIGN(auto all, m_->ListQuotas());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].ino, d);
  EXPECT_ERRNO(m_->GetQuota(sub), ENOENT);
  Ino f = File(kRootIno, "plain");
  EXPECT_ERRNO(m_->SetQuota(f, 1, 1), ENOTDIR);
  ASSERT_OK(m_->DeleteQuota(d));
  EXPECT_ERRNO(m_->GetQuota(d), ENOENT);
  EXPECT_ERRNO(m_->DeleteQuota(d), ENOENT);
}

TEST_P(QuotaTest, InodeLimitRefusesCreateMkdirSymlinkLink) {
  Ino d = Dir(kRootIno, "d");
  ASSERT_OK(m_->SetQuota(d, 0, 2));
  Ino a = File(d, "a");
  Ino sub = Dir(d, "sub");
  EXPECT_ERRNO(m_->Mknod(root_, d, "c", S_IFREG | 0644, 0, 0), EDQUOT);
  // Below a subdirectory too: the quota covers the whole tree.
  EXPECT_ERRNO(m_->Mkdir(root_, sub, "deeper", 0755, 0), EDQUOT);
  EXPECT_ERRNO(m_->Create(root_, sub, "c", 0644, 0, O_RDWR), EDQUOT);
  EXPECT_ERRNO(m_->Symlink(root_, d, "l", "a"), EDQUOT);
  Ino out = File(kRootIno, "out");
  EXPECT_ERRNO(m_->Link(root_, out, d, "hard"), EDQUOT);
  // Nothing of the refused operations was left behind.
  EXPECT_ERRNO(m_->Lookup(root_, d, "c"), ENOENT);
  EXPECT_ERRNO(m_->Lookup(root_, sub, "deeper"), ENOENT);
  EXPECT_EQ(Get(d).used_inodes, 2);
  // Removing frees room again.
  ASSERT_OK(m_->Unlink(root_, d, "a"));
  (void)a;
  EXPECT_EQ(Get(d).used_inodes, 1);
  ASSERT_OK(m_->Mknod(root_, d, "c", S_IFREG | 0644, 0, 0).status());
  // Outside the tree nothing is limited.
  File(kRootIno, "free1");
  File(kRootIno, "free2");
}

TEST_P(QuotaTest, SpaceLimitRefusesWriteTruncateFallocate) {
  Ino d = Dir(kRootIno, "d");
  ASSERT_OK(m_->SetQuota(d, 16384, 0));
  Ino f = File(d, "f");
  ASSERT_OK(m_->Write(f, 0, 0, Slice{1, 12288, 0, 12288, 0}, 1));
  EXPECT_ERRNO(m_->Write(f, 0, 12288, Slice{2, 8192, 0, 8192, 0}, 1), EDQUOT);
  // The refused write left the file as it was.
  ASSERT_OK_AND_ASSIGN(Attr a, m_->GetAttr(f));
  EXPECT_EQ(a.size, 12288u);
  ASSERT_OK_AND_ASSIGN(auto slices, m_->Read(f, 0));
  EXPECT_EQ(slices.size(), 1u);
  // Overwriting inside the file needs no space.
  ASSERT_OK(m_->Write(f, 0, 0, Slice{3, 4096, 0, 4096, 0}, 1));
  Attr in;
  in.size = 1 << 20;
  EXPECT_ERRNO(m_->SetAttr(root_, f, kSetSize, in), EDQUOT);
  EXPECT_ERRNO(m_->Fallocate(root_, f, 0, 0, 1 << 20), EDQUOT);
  // Up to the limit exactly is allowed; a directory costs 4 KiB.
  ASSERT_OK(m_->Fallocate(root_, f, 0, 0, 16384));
  EXPECT_EQ(Get(d).used_space, 16384);
  EXPECT_ERRNO(m_->Mkdir(root_, d, "sub", 0755, 0), EDQUOT);
  // Shrinking gives the space back.
  in.size = 0;
  ASSERT_OK(m_->SetAttr(root_, f, kSetSize, in).status());
  EXPECT_EQ(Get(d).used_space, 0);
  ASSERT_OK(m_->Mkdir(root_, d, "sub", 0755, 0).status());
  EXPECT_EQ(Get(d).used_space, 4096);
}

// The mount's early check at write(): growth past the tightest quota above
// the file is EDQUOT; an overwrite or a file outside every quota is fine.
TEST_P(QuotaTest, CheckQuotaGrowthRefusesWritesPastTheQuota) {
  Ino top = Dir(kRootIno, "top");
  Ino mid = Dir(top, "mid");
  ASSERT_OK(m_->SetQuota(top, 1 << 20, 0));
  ASSERT_OK(m_->SetQuota(mid, 65536, 0));
  Ino f = File(mid, "f", 8192);
  EXPECT_OK(m_->CheckQuotaGrowth(f, 4096));             // inside the committed size
  EXPECT_OK(m_->CheckQuotaGrowth(f, 8192 + 57344));  // exactly mid's headroom (64 KiB - 8 KiB)
  EXPECT_ERRNO(m_->CheckQuotaGrowth(f, 8192 + 57345), EDQUOT);
  Ino out = File(kRootIno, "out");
  EXPECT_OK(m_->CheckQuotaGrowth(out, 1ull << 40));
  ASSERT_OK(m_->DeleteQuota(mid));
  Ino g = File(top, "g");
  EXPECT_OK(m_->CheckQuotaGrowth(g, 512 * 1024));
  EXPECT_ERRNO(m_->CheckQuotaGrowth(g, 2 << 20), EDQUOT);
}

TEST_P(QuotaTest, NestedQuotasAreAllCharged) {
  Ino top = Dir(kRootIno, "top");
  Ino mid = Dir(top, "mid");
  ASSERT_OK(m_->SetQuota(top, 0, 10));
  ASSERT_OK(m_->SetQuota(mid, 0, 100));
  for (int i = 0; i < 9; ++i) File(mid, "f" + std::to_string(i));
  EXPECT_EQ(Get(top).used_inodes, 10);  // mid itself and its nine files
  EXPECT_EQ(Get(mid).used_inodes, 9);
  // The outer limit refuses though the inner one has room.
  EXPECT_ERRNO(m_->Mknod(root_, mid, "x", S_IFREG | 0644, 0, 0), EDQUOT);
  EXPECT_EQ(Get(mid).used_inodes, 9);
}

TEST_P(QuotaTest, RenameMovesUsageBetweenTrees) {
  Ino a = Dir(kRootIno, "a");
  Ino b = Dir(kRootIno, "b");
  ASSERT_OK(m_->SetQuota(a, 0, 0));
  ASSERT_OK(m_->SetQuota(b, 8192, 0));
  File(a, "small", 100);  // 4 KiB
  File(a, "big", 10000);  // 12 KiB
  ASSERT_OK(m_->Rename(root_, a, "small", b, "small", 0));
  EXPECT_EQ(Get(a).used_space, 12288);
  EXPECT_EQ(Get(b).used_space, 4096);
  EXPECT_EQ(Get(b).used_inodes, 1);
  // Renaming into b beyond its limit is refused and leaves both names as they were.
  EXPECT_ERRNO(m_->Rename(root_, a, "big", b, "big", 0), EDQUOT);
  ASSERT_OK(m_->Lookup(root_, a, "big").status());
  EXPECT_ERRNO(m_->Lookup(root_, b, "big"), ENOENT);
  // Replacing a file in b frees the replaced one's space.
  File(a, "small2", 1);
  ASSERT_OK(m_->Rename(root_, a, "small2", b, "small", 0));
  EXPECT_EQ(Get(b).used_space, 4096);
  EXPECT_EQ(Get(b).used_inodes, 1);
  EXPECT_EQ(Get(a).used_inodes, 1);
  // Inside one tree nothing changes.
  Ino sub = Dir(a, "sub");
  ASSERT_OK(m_->Rename(root_, a, "big", sub, "big", 0));
  EXPECT_EQ(Get(a).used_space, 12288 + 4096);
  // A directory with content cannot cross between quota trees (EXDEV: mv copies);
  // an empty one can.
  EXPECT_ERRNO(m_->Rename(root_, a, "sub", kRootIno, "sub", 0), EXDEV);
  Dir(a, "empty");
  ASSERT_OK(m_->Rename(root_, a, "empty", kRootIno, "empty", 0));
  EXPECT_EQ(Get(a).used_inodes, 2);  // sub and big below it
  auto drift = m_->CheckQuotas(0, false);
  ASSERT_OK(drift);
  EXPECT_TRUE(drift->empty()) << (*drift)[0];
}

TEST_P(QuotaTest, QuotaDirectoryMovesWithItsUsage) {
  Ino outer = Dir(kRootIno, "outer");
  Ino q = Dir(kRootIno, "q");
  File(q, "f", 4096);
  ASSERT_OK(m_->SetQuota(q, 0, 0));
  ASSERT_OK(m_->SetQuota(outer, 0, 3));
  // q (1 inode) + f (1 inode) fit into outer's 3.
  ASSERT_OK(m_->Rename(root_, kRootIno, "q", outer, "q", 0));
  EXPECT_EQ(Get(outer).used_inodes, 2);
  EXPECT_EQ(Get(outer).used_space, 8192);
  ASSERT_OK_AND_ASSIGN(auto drift, m_->CheckQuotas(0, false));
  EXPECT_TRUE(drift.empty());
}

TEST_P(QuotaTest, TwoClientsShareOneQuota) {
  Ino d = Dir(kRootIno, "shared");
  ASSERT_OK(m_->SetQuota(d, 0, 40));
  auto m2 = Second();
  std::atomic<int> created{0}, refused{0}, other{0};
  auto worker = [&](MetaEngine* m, const std::string& prefix) {
    for (int i = 0; i < 30; ++i) {
      auto r = m->Mknod(root_, d, prefix + std::to_string(i), S_IFREG | 0644, 0, 0);
      if (r.has_value()) {
        created++;
      } else if (ErrnoOf(r.error()) == EDQUOT) {
        refused++;
      } else {
        other++;
      }
    }
  };
  std::thread t1(worker, m_.get(), "a");
  std::thread t2(worker, m2.get(), "b");
  t1.join();
  t2.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(created.load(), 40);
  EXPECT_EQ(refused.load(), 20);
  EXPECT_EQ(Get(d).used_inodes, 40);
  ASSERT_OK_AND_ASSIGN(auto drift, m_->CheckQuotas(d, false));
  EXPECT_TRUE(drift.empty());
}

TEST_P(QuotaTest, CheckFindsAndRepairsDrift) {
  Ino d = Dir(kRootIno, "d");
  File(d, "a", 100);
  ASSERT_OK(m_->SetQuota(d, 0, 0));
  ASSERT_OK_AND_ASSIGN(auto drift, m_->CheckQuotas(0, false));
  EXPECT_TRUE(drift.empty());
  // Inject drift: rewrite the record's usage directly.
  std::unique_ptr<TxnKV> kv;
  if (GetParam() == "redis") {
    ASSERT_OK_AND_ASSIGN(kv, OpenRedisKV(url_));
  } else if (GetParam() == "postgres") {
    ASSERT_OK_AND_ASSIGN(kv, OpenPostgresKV(url_));
  } else {
    ASSERT_OK_AND_ASSIGN(kv, OpenSqliteKV(dir_.Join("meta.db")));
  }
  ASSERT_OK(kv->Txn(
      [&](KvTxn& t) {
        auto v = t.Get(codec::QuotaKey(d));
        EXPECT_TRUE(v.has_value());
        std::string s = *v;
        std::string bad;
        PutBigEndian64(&bad, 999999);
        PutBigEndian64(&bad, 77);
        s.replace(16, 16, bad);
        t.Set(codec::QuotaKey(d), s);
        return Status::Ok();
      },
      false));
  ASSERT_OK_AND_ASSIGN(drift, m_->CheckQuotas(0, false));
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_NE(drift[0].find("999999"), std::string::npos) << drift[0];
  EXPECT_EQ(Get(d).used_space, 999999);  // a check without repair changes nothing
  ASSERT_OK_AND_ASSIGN(drift, m_->CheckQuotas(d, true));
  ASSERT_EQ(drift.size(), 1u);
  Quota q = Get(d);
  EXPECT_EQ(q.used_space, 4096);
  EXPECT_EQ(q.used_inodes, 1);
  ASSERT_OK_AND_ASSIGN(drift, m_->CheckQuotas(0, false));
  EXPECT_TRUE(drift.empty());
}

TEST_P(QuotaTest, RemovedDirectoryTakesItsQuota) {
  Ino d = Dir(kRootIno, "d");
  ASSERT_OK(m_->SetQuota(d, 0, 5));
  ASSERT_OK(m_->Rmdir(root_, kRootIno, "d"));
  EXPECT_ERRNO(m_->GetQuota(d), ENOENT);
  ASSERT_OK_AND_ASSIGN(auto all, m_->ListQuotas());
  EXPECT_TRUE(all.empty());
}

// RemoveTree (`strata fs rmr`): a tree of several levels and more entries
// than one batch goes in full; its slices are queued for deletion; quotas
// above it are given the space and inodes back; fsck finds nothing.
TEST_P(QuotaTest, RemoveTreeRemovesEverythingBelow) {
  Ino top = Dir(kRootIno, "top");
  ASSERT_OK(m_->SetQuota(top, 0, 0));
  Ino t = Dir(top, "t");
  File(top, "keep", 10);
  uint64_t entries = 1;  // t itself
  for (int d = 0; d < 3; ++d) {
    Ino sub = Dir(t, "d" + std::to_string(d));
    entries++;
    Ino deeper = Dir(sub, "deeper");
    entries++;
    File(deeper, "x", 5000);
    entries++;
    for (int i = 0; i < (d == 0 ? 600 : 20); ++i) {
      File(sub, "f" + std::to_string(i), i % 2 ? 100 : 0);
      entries++;
    }
  }
  ASSERT_OK_AND_ASSIGN(Format f, m_->LoadFormat());
  EXPECT_EQ(f.trash_days, 0);
  ASSERT_OK_AND_ASSIGN(uint64_t n, m_->RemoveTree(root_, top, "t"));
  EXPECT_EQ(n, entries);
  EXPECT_ERRNO(m_->Lookup(root_, top, "t"), ENOENT);
  ASSERT_OK(m_->Lookup(root_, top, "keep").status());
  Quota q = Get(top);
  EXPECT_EQ(q.used_inodes, 1);
  EXPECT_EQ(q.used_space, 4096);
  ASSERT_OK_AND_ASSIGN(auto pending, m_->PendingSliceDeletes(0));
  EXPECT_EQ(pending.size(), 3u + 300u + 10u + 10u);  // every file that had data
  ASSERT_OK_AND_ASSIGN(StatFs st, m_->StatFS(root_, kRootIno));
  EXPECT_EQ(st.used_inodes, 3u);  // root, top, keep
  ASSERT_OK_AND_ASSIGN(auto problems, m_->Check(CheckOptions{}));
  EXPECT_TRUE(problems.empty()) << problems[0];
  // A file is removed like unlink; a missing name is ENOENT; permissions hold.
  ASSERT_OK_AND_ASSIGN(n, m_->RemoveTree(root_, top, "keep"));
  EXPECT_EQ(n, 1u);
  EXPECT_ERRNO(m_->RemoveTree(root_, top, "keep"), ENOENT);
  Ino locked = Dir(kRootIno, "locked");
  File(locked, "a");
  Context alice{1000, 1000, {}, 1, true};
  EXPECT_ERRNO(m_->RemoveTree(alice, kRootIno, "locked"), EACCES);
  ASSERT_OK(m_->Lookup(root_, locked, "a").status());
}

TEST_P(QuotaTest, DumpAndLoadKeepQuotas) {
  Ino d = Dir(kRootIno, "d");
  File(d, "f", 5000);
  ASSERT_OK(m_->SetQuota(d, 1 << 20, 10));
  std::stringstream dump;
  ASSERT_OK(m_->Dump(dump));
  ASSERT_OK(m_->Destroy());
  ASSERT_OK(m_->Load(dump));
  Quota q = Get(d);
  EXPECT_EQ(q.max_space, 1u << 20);
  EXPECT_EQ(q.max_inodes, 10u);
  EXPECT_EQ(q.used_space, 8192);
  EXPECT_EQ(q.used_inodes, 1);
}

// CloneFile: the clone reads the same slices; writing either file leaves the
// other as it was; a shared slice is queued for deletion only when the last
// file referring to it goes (unlink, truncate, compaction); dump/load keep
// the references; quotas and volume counters count the clone.
TEST_P(QuotaTest, CloneSharesSlicesUntilTheLastOwnerGoes) {
  Ino d = Dir(kRootIno, "d");
  ASSERT_OK(m_->SetQuota(d, 0, 0));
  Ino src = File(kRootIno, "src");
  ASSERT_OK(m_->Write(src, 0, 0, Slice{501, 10000, 0, 10000, 0}, 1));
  ASSERT_OK(m_->Write(src, 1, 0, Slice{502, 100, 0, 100, 0}, 1));
  ASSERT_OK(m_->SetXattr(root_, src, "user.k", "v", 0));
  ASSERT_OK_AND_ASSIGN(Entry c, m_->CloneFile(root_, src, d, "copy"));
  ASSERT_OK_AND_ASSIGN(Attr sa, m_->GetAttr(src));
  EXPECT_EQ(c.attr.size, sa.size);
  EXPECT_NE(c.ino, src);
  ASSERT_OK_AND_ASSIGN(auto s0, m_->Read(src, 0));
  ASSERT_OK_AND_ASSIGN(auto c0, m_->Read(c.ino, 0));
  EXPECT_EQ(s0, c0);
  ASSERT_OK_AND_ASSIGN(std::string xv, m_->GetXattr(root_, c.ino, "user.k"));
  EXPECT_EQ(xv, "v");
  EXPECT_EQ(Get(d).used_inodes, 1);
  EXPECT_EQ(Get(d).used_space, static_cast<int64_t>((sa.size + 4095) / 4096 * 4096));
  EXPECT_ERRNO(m_->CloneFile(root_, src, d, "copy"), EEXIST);
  EXPECT_ERRNO(m_->CloneFile(root_, d, kRootIno, "dircopy"), EISDIR);
  // Copy-on-write: a write to the clone is a new slice in the clone only.
  ASSERT_OK(m_->Write(c.ino, 0, 0, Slice{503, 10, 0, 10, 0}, 2));
  ASSERT_OK_AND_ASSIGN(auto s0b, m_->Read(src, 0));
  EXPECT_EQ(s0b, s0);
  // Removing the source frees nothing that the clone uses.
  ASSERT_OK(m_->Unlink(root_, kRootIno, "src"));
  ASSERT_OK_AND_ASSIGN(auto pending, m_->PendingSliceDeletes(0));
  EXPECT_TRUE(pending.empty()) << pending.size() << " slices queued, first " << pending[0].id;
  // Dump and load keep the reference counts.
  std::stringstream dump;
  ASSERT_OK(m_->Dump(dump));
  ASSERT_OK(m_->Destroy());
  ASSERT_OK(m_->Load(dump));
  // Then the last owner frees them all.
  ASSERT_OK(m_->Unlink(root_, d, "copy"));
  ASSERT_OK_AND_ASSIGN(pending, m_->PendingSliceDeletes(0));
  std::set<uint64_t> ids;
  for (const auto& p : pending) ids.insert(p.id);
  EXPECT_EQ(ids, (std::set<uint64_t>{501, 502, 503}));
  ASSERT_OK_AND_ASSIGN(auto problems, m_->Check(CheckOptions{}));
  EXPECT_TRUE(problems.empty()) << problems[0];
}

TEST_P(QuotaTest, CloneThenTruncateAndCompactKeepSharedSlices) {
  Ino src = File(kRootIno, "src");
  ASSERT_OK(m_->Write(src, 0, 0, Slice{601, 4096, 0, 4096, 0}, 1));
  ASSERT_OK(m_->Write(src, 0, 4096, Slice{602, 4096, 0, 4096, 0}, 1));
  ASSERT_OK_AND_ASSIGN(Entry c, m_->CloneFile(root_, src, kRootIno, "copy"));
  Attr in;
  in.size = 0;
  ASSERT_OK(m_->SetAttr(root_, src, kSetSize, in).status());
  ASSERT_OK_AND_ASSIGN(auto pending, m_->PendingSliceDeletes(0));
  EXPECT_TRUE(pending.empty());
  // Compaction of the clone replaces both shared slices by one of its own:
  // the source no longer has them (truncated), so both are freed now.
  ASSERT_OK_AND_ASSIGN(auto cur, m_->Read(c.ino, 0));
  ASSERT_OK(m_->ReplaceSlices(c.ino, 0, cur, {Slice{603, 8192, 0, 8192, 0}}));
  ASSERT_OK_AND_ASSIGN(pending, m_->PendingSliceDeletes(0));
  std::set<uint64_t> ids;
  for (const auto& p : pending) ids.insert(p.id);
  EXPECT_EQ(ids, (std::set<uint64_t>{601, 602}));
}

INSTANTIATE_TEST_SUITE_P(Backends, QuotaTest, ::testing::Values("sqlite", "redis", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace strata::fsmeta
