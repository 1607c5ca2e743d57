// MetaEngine tests, each run against SQLite, a real Redis server and a real
// PostgreSQL server (started by the test on free loopback ports, stopped at
// the end; the PostgreSQL runs skip where its binaries are not installed).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include <strata/fsmeta/meta_engine.h>

#include "fsmeta/acl.h"
#include "fsmeta/codec.h"
#include "fsmeta/kv.h"
#include "testutil/postgres_server.h"
#include "testutil/testutil.h"

namespace strata::fsmeta {
namespace {

using strata::testing::TempDir;
using strata::testing::ToStatus;

#define EXPECT_ERRNO(expr, want)                                                  \
  do {                                                                            \
    ::strata::Status _st = ToStatus(expr);                                        \
    EXPECT_EQ(ErrnoOf(_st), (want)) << #expr << " -> " << _st.ToString();         \
  } while (0)

// ---- a Redis server for the whole test binary -------------------------------

// Started on first use (testutil's RedisServer), killed when the binary exits.
class RedisServer {
 public:
  static RedisServer& Get() {
    static RedisServer server;
    return server;
  }
  int port() const { return server_.port(); }
  bool ok() const { return ok_; }

 private:
  RedisServer() : ok_(server_.Start().ok()) {}
  strata::testing::RedisServer server_;
  bool ok_;
};

// ---- fixture ------------------------------------------------------------------

class MetaTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "redis") {
      ASSERT_TRUE(RedisServer::Get().ok()) << "redis-server did not start";
    }
    if (GetParam() == "postgres") {
      Status why;
      if (!strata::testing::SharedPostgres(&why)) {
        if (why.code() == StatusCode::kNotFound) GTEST_SKIP() << why.ToString();
        FAIL() << "postgres did not start: " << why.ToString();
      }
    }
    url_ = Url(0);
    ASSERT_OK_AND_ASSIGN(m_, OpenMeta(url_));
    ASSERT_OK(m_->Destroy());
    Format f;
    f.name = "test";
    f.storage = "mem://";
    f.trash_days = 0;
    ASSERT_OK(m_->Init(f, false));
    ASSERT_OK(m_->NewSession(SessionInfo{}).status());
  }

  // The same volume (n = 0) or another one (n > 0).
  std::string Url(int n) {
    if (GetParam() == "redis") {
      return "redis://127.0.0.1:" + std::to_string(RedisServer::Get().port()) + "/" + std::to_string(n);
    }
    if (GetParam() == "postgres")
      return strata::testing::SharedPostgres()->Url("v" + std::to_string(n));
    return "sqlite3://" + dir_.Join("meta" + std::to_string(n) + ".db");
  }

  std::unique_ptr<MetaEngine> Second() {
    auto r = OpenMeta(url_);
    EXPECT_TRUE(r.has_value());
    auto m = std::move(*r);
    EXPECT_OK(m->NewSession(SessionInfo{}).status());
    return m;
  }

  std::unique_ptr<TxnKV> RawKV() {
    if (GetParam() == "redis") return std::move(*OpenRedisKV(url_));
    if (GetParam() == "postgres") return std::move(*OpenPostgresKV(url_));
    return std::move(*OpenSqliteKV(dir_.Join("meta0.db")));
  }

  Entry MkFile(Ino parent, const std::string& name, uint32_t mode = 0644, const Context* c = nullptr) {
    auto r = m_->Mknod(c ? *c : root_, parent, name, S_IFREG | mode, 0, 0);
    EXPECT_OK(r);
    return r.has_value() ? *r : Entry{};
  }
  Entry MkDir(Ino parent, const std::string& name, uint32_t mode = 0755, const Context* c = nullptr) {
    auto r = m_->Mkdir(c ? *c : root_, parent, name, mode, 0);
    EXPECT_OK(r);
    return r.has_value() ? *r : Entry{};
  }
  void ExpectClean() {
    auto problems = m_->Check(CheckOptions{});
    ASSERT_OK(problems);
    for (const auto& p : *problems) ADD_FAILURE() << "fsck: " << p;
  }
  std::set<uint64_t> PendingIds() {
    std::set<uint64_t> ids;
    auto r = m_->PendingSliceDeletes(0);
    EXPECT_OK(r);
    if (r.has_value()) {
      for (const auto& s : *r) ids.insert(s.id);
    }
    return ids;
  }

  TempDir dir_{"fsmeta"};
  std::string url_;
  std::unique_ptr<MetaEngine> m_;
  Context root_;
  Context alice_{1000, 1000, {}, 1, true};
  Context bob_{2000, 2000, {}, 2, true};
};

TEST_P(MetaTest, FormatIsStoredAndGuarded) {
  ASSERT_OK_AND_ASSIGN(Format f, m_->LoadFormat());
  EXPECT_EQ(f.name, "test");
  EXPECT_EQ(f.block_size, 4u << 20);
  Format other;
  other.name = "other";
  EXPECT_STATUS_CODE(m_->Init(other, false), StatusCode::kAlreadyExists);
  ASSERT_OK(m_->Init(other, true));
  ASSERT_OK_AND_ASSIGN(f, m_->LoadFormat());
  EXPECT_EQ(f.name, "other");
  Format bad = other;
  bad.block_size = 12345;
  EXPECT_STATUS_CODE(m_->Init(bad, true), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(OpenMeta("ftp://x").status(), StatusCode::kInvalidArgument);
}

TEST_P(MetaTest, CreateLookupAndErrors) {
  Entry d = MkDir(kRootIno, "d");
  Entry f = MkFile(d.ino, "f");
  EXPECT_TRUE(S_ISREG(f.attr.mode));
  EXPECT_EQ(f.attr.mode & 07777, 0644u);
  EXPECT_EQ(f.attr.nlink, 1u);
  EXPECT_EQ(f.attr.parent, d.ino);
  ASSERT_OK_AND_ASSIGN(Entry e, m_->Lookup(root_, d.ino, "f"));
  EXPECT_EQ(e.ino, f.ino);
  ASSERT_OK_AND_ASSIGN(e, m_->Lookup(root_, d.ino, ".."));
  EXPECT_EQ(e.ino, kRootIno);
  ASSERT_OK_AND_ASSIGN(e, m_->Lookup(root_, d.ino, "."));
  EXPECT_EQ(e.ino, d.ino);
  ASSERT_OK_AND_ASSIGN(Attr root, m_->GetAttr(kRootIno));
  EXPECT_EQ(root.nlink, 3u);

  EXPECT_ERRNO(m_->Lookup(root_, d.ino, "missing"), ENOENT);
  EXPECT_ERRNO(m_->Lookup(root_, f.ino, "x"), ENOTDIR);
  EXPECT_ERRNO(m_->Mknod(root_, d.ino, "f", S_IFREG | 0644, 0, 0), EEXIST);
  EXPECT_ERRNO(m_->Mkdir(root_, d.ino, "f", 0755, 0), EEXIST);
  EXPECT_ERRNO(m_->Mknod(root_, f.ino, "x", S_IFREG | 0644, 0, 0), ENOTDIR);
  EXPECT_ERRNO(m_->Mknod(root_, 999999, "x", S_IFREG | 0644, 0, 0), ENOENT);
  EXPECT_ERRNO(m_->Mknod(root_, d.ino, std::string(256, 'a'), S_IFREG | 0644, 0, 0), ENAMETOOLONG);
  EXPECT_ERRNO(m_->GetAttr(999999), ENOENT);

  // umask, fifo, device, socket
  ASSERT_OK_AND_ASSIGN(Entry fifo, m_->Mknod(root_, d.ino, "fifo", S_IFIFO | 0666, 022, 0));
  EXPECT_EQ(fifo.attr.mode, static_cast<uint32_t>(S_IFIFO | 0644));
  ASSERT_OK_AND_ASSIGN(Entry chr, m_->Mknod(root_, d.ino, "chr", S_IFCHR | 0600, 0, 0x0501));
  EXPECT_EQ(chr.attr.rdev, 0x0501u);
  ASSERT_OK(m_->Mknod(root_, d.ino, "sock", S_IFSOCK | 0600, 0, 0).status());
  ASSERT_OK_AND_ASSIGN(Entry cr, m_->Create(root_, d.ino, "created", 0666, 027, O_RDWR));
  EXPECT_EQ(cr.attr.mode & 0777, 0640u);
  ASSERT_OK(m_->Close(cr.ino));

  ASSERT_OK_AND_ASSIGN(Entry sl, m_->Symlink(root_, d.ino, "link", "../target/x"));
  EXPECT_TRUE(S_ISLNK(sl.attr.mode));
  EXPECT_EQ(sl.attr.size, 11u);
  ASSERT_OK_AND_ASSIGN(std::string target, m_->ReadLink(sl.ino));
  EXPECT_EQ(target, "../target/x");
  EXPECT_ERRNO(m_->ReadLink(f.ino), EINVAL);
  ExpectClean();
}

TEST_P(MetaTest, UnlinkRmdirErrors) {
  Entry d = MkDir(kRootIno, "d");
  Entry sub = MkDir(d.ino, "sub");
  MkFile(d.ino, "f");
  EXPECT_ERRNO(m_->Unlink(root_, kRootIno, "d"), EISDIR);
  EXPECT_ERRNO(m_->Rmdir(root_, d.ino, "f"), ENOTDIR);
  EXPECT_ERRNO(m_->Rmdir(root_, kRootIno, "d"), ENOTEMPTY);
  EXPECT_ERRNO(m_->Unlink(root_, d.ino, "nope"), ENOENT);
  EXPECT_ERRNO(m_->Rmdir(root_, d.ino, "nope"), ENOENT);
  ASSERT_OK_AND_ASSIGN(Attr da, m_->GetAttr(d.ino));
  EXPECT_EQ(da.nlink, 3u);
  ASSERT_OK(m_->Rmdir(root_, d.ino, "sub"));
  EXPECT_ERRNO(m_->GetAttr(sub.ino), ENOENT);
  ASSERT_OK(m_->Unlink(root_, d.ino, "f"));
  ASSERT_OK_AND_ASSIGN(da, m_->GetAttr(d.ino));
  EXPECT_EQ(da.nlink, 2u);
  ASSERT_OK(m_->Rmdir(root_, kRootIno, "d"));
  ASSERT_OK_AND_ASSIGN(StatFs s, m_->StatFS(root_, kRootIno));
  EXPECT_EQ(s.used_inodes, 1u);
  ExpectClean();
}

TEST_P(MetaTest, PermissionsAndSticky) {
  Entry home = MkDir(kRootIno, "home", 0755, &alice_);
  EXPECT_EQ(home.attr.uid, 1000u);
  Entry af = MkFile(home.ino, "a", 0600, &alice_);
  // bob cannot create in alice's 0755 directory, nor read her 0600 file
  EXPECT_ERRNO(m_->Mknod(bob_, home.ino, "b", S_IFREG | 0644, 0, 0), EACCES);
  EXPECT_ERRNO(m_->Open(bob_, af.ino, O_RDONLY), EACCES);
  EXPECT_ERRNO(m_->Unlink(bob_, home.ino, "a"), EACCES);
  EXPECT_ERRNO(m_->Access(bob_, af.ino, R_OK), EACCES);
  EXPECT_OK(m_->Access(alice_, af.ino, R_OK | W_OK));
  Attr chmod;
  chmod.mode = 0777;
  EXPECT_ERRNO(m_->SetAttr(bob_, af.ino, kSetMode, chmod), EPERM);
  // A non-owner may only clear set-user-ID/set-group-ID (what the kernel
  // asks for when he writes or truncates the file); anything else, or a mode
  // that changes nothing, stays refused.
  Attr setid;
  setid.mode = 06666;
  ASSERT_OK(m_->SetAttr(alice_, af.ino, kSetMode, setid));
  Attr cleared;
  cleared.mode = 0666;
  Attr widened;
  widened.mode = 06777;
  EXPECT_ERRNO(m_->SetAttr(bob_, af.ino, kSetMode, widened), EPERM);
  EXPECT_ERRNO(m_->SetAttr(bob_, af.ino, kSetMode, setid), EPERM);
  ASSERT_OK_AND_ASSIGN(Attr ca, m_->SetAttr(bob_, af.ino, kSetMode, cleared));
  EXPECT_EQ(ca.mode & 07777, 0666u);
  Attr owner_only;
  owner_only.mode = 0600;
  ASSERT_OK(m_->SetAttr(alice_, af.ino, kSetMode, owner_only));
  Attr chown;
  chown.uid = 2000;
  EXPECT_ERRNO(m_->SetAttr(alice_, af.ino, kSetUid, chown), EPERM);
  ASSERT_OK_AND_ASSIGN(Attr a, m_->SetAttr(root_, af.ino, kSetUid, chown));
  EXPECT_EQ(a.uid, 2000u);
  // group permission through a supplementary group
  Context carol{3000, 3000, {1000}, 3, true};
  Entry g = MkFile(home.ino, "g", 0640, &alice_);
  EXPECT_OK(m_->Access(carol, g.ino, R_OK));
  EXPECT_ERRNO(m_->Access(carol, g.ino, W_OK), EACCES);
  // no permission check when asked so
  Context unchecked = bob_;
  unchecked.check_permission = false;
  EXPECT_OK(m_->Mknod(unchecked, home.ino, "b", S_IFREG | 0644, 0, 0).status());

  // sticky /tmp: bob may not remove or rename alice's file; the owners may
  Entry tmp = MkDir(kRootIno, "tmp", 01777);
  MkFile(tmp.ino, "alice", 0644, &alice_);
  MkFile(tmp.ino, "bob", 0644, &bob_);
  EXPECT_ERRNO(m_->Unlink(bob_, tmp.ino, "alice"), EPERM);
  EXPECT_ERRNO(m_->Rename(bob_, tmp.ino, "alice", tmp.ino, "x", 0), EPERM);
  EXPECT_ERRNO(m_->Rename(bob_, tmp.ino, "bob", tmp.ino, "alice", 0), EPERM);
  EXPECT_OK(m_->Rename(bob_, tmp.ino, "bob", tmp.ino, "bob2", 0));
  EXPECT_OK(m_->Unlink(alice_, tmp.ino, "alice"));
  EXPECT_OK(m_->Unlink(root_, tmp.ino, "bob2"));
  ExpectClean();
}

TEST_P(MetaTest, SetAttrAndTimes) {
  Entry f = MkFile(kRootIno, "f", 0644, &alice_);
  Attr in;
  in.mode = 0600;
  in.atime_ns = 111;
  in.mtime_ns = 222;
  ASSERT_OK_AND_ASSIGN(Attr a, m_->SetAttr(alice_, f.ino, kSetMode | kSetAtime | kSetMtime, in));
  EXPECT_EQ(a.mode, static_cast<uint32_t>(S_IFREG | 0600));
  EXPECT_EQ(a.atime_ns, 111);
  EXPECT_EQ(a.mtime_ns, 222);
  EXPECT_GT(a.ctime_ns, 222);
  EXPECT_ERRNO(m_->SetAttr(bob_, f.ino, kSetMtimeNow, in), EACCES);
  Entry d = MkDir(kRootIno, "d");
  in.size = 10;
  EXPECT_ERRNO(m_->SetAttr(root_, d.ino, kSetSize, in), EISDIR);
  ASSERT_OK_AND_ASSIGN(a, m_->SetAttr(alice_, f.ino, kSetSize, in));
  EXPECT_EQ(a.size, 10u);
}

// ftruncate/fallocate through a descriptor opened for writing: POSIX checked
// access at open, so a mode that no longer grants write (a file created with
// mode 0, or chmodded since) does not refuse them; without the descriptor
// (truncate by path) the mode is checked, and nothing else is exempted.
TEST_P(MetaTest, WriteHandleSkipsTheModeCheckOfSizeChanges) {
  Entry dir = MkDir(kRootIno, "d", 0777);
  Entry f = MkFile(dir.ino, "zero", 0, &alice_);
  Context by_path = alice_;
  Context by_fd = alice_;
  by_fd.write_handle = true;
  Attr in;
  in.size = 100;
  EXPECT_ERRNO(m_->SetAttr(by_path, f.ino, kSetSize, in), EACCES);
  EXPECT_ERRNO(m_->Fallocate(by_path, f.ino, 0, 0, 4096), EACCES);
  ASSERT_OK_AND_ASSIGN(Attr a, m_->SetAttr(by_fd, f.ino, kSetSize, in));
  EXPECT_EQ(a.size, 100u);
  ASSERT_OK(m_->Fallocate(by_fd, f.ino, 0, 0, 8192));
  ASSERT_OK(m_->Fallocate(by_fd, f.ino, kFallocPunchHole | kFallocKeepSize, 0, 10));
  ASSERT_OK_AND_ASSIGN(a, m_->GetAttr(f.ino));
  EXPECT_EQ(a.size, 8192u);
  // Another user's descriptor: the same (it was opened for writing somehow).
  Context bob_fd = bob_;
  bob_fd.write_handle = true;
  in.size = 0;
  ASSERT_OK_AND_ASSIGN(a, m_->SetAttr(bob_fd, f.ino, kSetSize, in));
  EXPECT_EQ(a.size, 0u);
  // ftruncate's own mtime update (the kernel sends it with the size).
  in.size = 7;
  ASSERT_OK_AND_ASSIGN(a, m_->SetAttr(bob_fd, f.ino, kSetSize | kSetMtimeNow, in));
  EXPECT_EQ(a.size, 7u);
  EXPECT_ERRNO(m_->SetAttr(bob_, f.ino, kSetSize | kSetMtimeNow, in), EACCES);
  EXPECT_ERRNO(m_->SetAttr(bob_, f.ino, kSetMtimeNow, in), EACCES);
  // The ownership rules still hold for the descriptor.
  Attr chmod;
  chmod.mode = 0777;
  EXPECT_ERRNO(m_->SetAttr(bob_fd, f.ino, kSetMode, chmod), EPERM);
  // Explicit times through the handle: the kernel's writeback cache writes
  // back the mtime of the descriptor's writes; without a handle only the owner.
  Attr times;
  times.mtime_ns = 5;
  EXPECT_ERRNO(m_->SetAttr(bob_, f.ino, kSetMtime, times), EPERM);
  ASSERT_OK_AND_ASSIGN(a, m_->SetAttr(bob_fd, f.ino, kSetMtime, times));
  EXPECT_EQ(a.mtime_ns, 5);
  // A directory or a special file stays refused.
  EXPECT_ERRNO(m_->SetAttr(by_fd, dir.ino, kSetSize, in), EISDIR);
  EXPECT_ERRNO(m_->Fallocate(by_fd, dir.ino, 0, 0, 10), EISDIR);
  ExpectClean();
}

TEST_P(MetaTest, RenameSemantics) {
  Entry a = MkDir(kRootIno, "a");
  Entry b = MkDir(kRootIno, "b");
  Entry f = MkFile(a.ino, "f");
  Entry g = MkFile(b.ino, "g");
  Entry sub = MkDir(a.ino, "sub");
  MkFile(sub.ino, "inner");

  // plain move across directories
  ASSERT_OK(m_->Rename(root_, a.ino, "f", b.ino, "f2", 0));
  EXPECT_ERRNO(m_->Lookup(root_, a.ino, "f"), ENOENT);
  ASSERT_OK_AND_ASSIGN(Entry e, m_->Lookup(root_, b.ino, "f2"));
  EXPECT_EQ(e.ino, f.ino);
  EXPECT_EQ(e.attr.parent, b.ino);

  // replace: the old target is gone
  ASSERT_OK(m_->Rename(root_, b.ino, "f2", b.ino, "g", 0));
  ASSERT_OK_AND_ASSIGN(e, m_->Lookup(root_, b.ino, "g"));
  EXPECT_EQ(e.ino, f.ino);
  EXPECT_ERRNO(m_->GetAttr(g.ino), ENOENT);

  // NOREPLACE / EXCHANGE
  Entry h = MkFile(b.ino, "h");
  EXPECT_ERRNO(m_->Rename(root_, b.ino, "g", b.ino, "h", kRenameNoReplace), EEXIST);
  ASSERT_OK(m_->Rename(root_, b.ino, "g", b.ino, "h", kRenameExchange));
  ASSERT_OK_AND_ASSIGN(e, m_->Lookup(root_, b.ino, "h"));
  EXPECT_EQ(e.ino, f.ino);
  ASSERT_OK_AND_ASSIGN(e, m_->Lookup(root_, b.ino, "g"));
  EXPECT_EQ(e.ino, h.ino);
  EXPECT_ERRNO(m_->Rename(root_, b.ino, "g", b.ino, "nothing", kRenameExchange), ENOENT);
  EXPECT_ERRNO(m_->Rename(root_, b.ino, "g", b.ino, "h", kRenameExchange | kRenameNoReplace), EINVAL);

  // exchange a directory with a file across parents: nlinks follow
  ASSERT_OK(m_->Rename(root_, a.ino, "sub", b.ino, "g", kRenameExchange));
  ASSERT_OK_AND_ASSIGN(Attr aa, m_->GetAttr(a.ino));
  ASSERT_OK_AND_ASSIGN(Attr ba, m_->GetAttr(b.ino));
  EXPECT_EQ(aa.nlink, 2u);
  EXPECT_EQ(ba.nlink, 3u);
  ASSERT_OK_AND_ASSIGN(Attr sa, m_->GetAttr(sub.ino));
  EXPECT_EQ(sa.parent, b.ino);
  ASSERT_OK(m_->Rename(root_, a.ino, "sub", b.ino, "g", kRenameExchange));  // back

  // directories: into itself, over non-empty, file over dir, dir over file
  EXPECT_ERRNO(m_->Rename(root_, a.ino, "sub", sub.ino, "x", 0), EINVAL);
  EXPECT_ERRNO(m_->Rename(root_, kRootIno, "a", sub.ino, "x", 0), EINVAL);
  Entry full = MkDir(b.ino, "full");
  MkFile(full.ino, "x");
  EXPECT_ERRNO(m_->Rename(root_, a.ino, "sub", b.ino, "full", 0), ENOTEMPTY);
  EXPECT_ERRNO(m_->Rename(root_, b.ino, "h", b.ino, "full", 0), EISDIR);
  EXPECT_ERRNO(m_->Rename(root_, a.ino, "sub", b.ino, "h", 0), ENOTDIR);
  Entry empty = MkDir(b.ino, "empty");
  ASSERT_OK(m_->Rename(root_, a.ino, "sub", b.ino, "empty", 0));
  EXPECT_ERRNO(m_->GetAttr(empty.ino), ENOENT);
  ASSERT_OK_AND_ASSIGN(aa, m_->GetAttr(a.ino));
  ASSERT_OK_AND_ASSIGN(ba, m_->GetAttr(b.ino));
  EXPECT_EQ(aa.nlink, 2u);
  EXPECT_EQ(ba.nlink, 4u);  // full, empty(now sub), plus . and ..
  EXPECT_ERRNO(m_->Rename(root_, a.ino, "missing", b.ino, "x", 0), ENOENT);
  ExpectClean();
}

TEST_P(MetaTest, HardLinks) {
  Entry d = MkDir(kRootIno, "d");
  Entry f = MkFile(kRootIno, "f");
  ASSERT_OK_AND_ASSIGN(Entry l, m_->Link(root_, f.ino, d.ino, "l"));
  EXPECT_EQ(l.attr.nlink, 2u);
  EXPECT_EQ(l.attr.parent, 0u);
  EXPECT_ERRNO(m_->Link(root_, d.ino, kRootIno, "dl"), EPERM);
  EXPECT_ERRNO(m_->Link(root_, f.ino, d.ino, "l"), EEXIST);
  ExpectClean();
  ASSERT_OK(m_->Unlink(root_, kRootIno, "f"));
  ASSERT_OK_AND_ASSIGN(Attr a, m_->GetAttr(f.ino));
  EXPECT_EQ(a.nlink, 1u);
  ASSERT_OK(m_->Unlink(root_, d.ino, "l"));
  EXPECT_ERRNO(m_->GetAttr(f.ino), ENOENT);
  ExpectClean();
}

TEST_P(MetaTest, SlicesWriteReadTruncatePunch) {
  Entry f = MkFile(kRootIno, "f");
  ASSERT_OK_AND_ASSIGN(uint64_t id1, m_->NewSliceId());
  ASSERT_OK_AND_ASSIGN(uint64_t id2, m_->NewSliceId());
  EXPECT_NE(id1, id2);
  ASSERT_OK(m_->Write(f.ino, 0, 0, Slice{id1, 1000, 0, 1000, 0}, 5));
  ASSERT_OK(m_->Write(f.ino, 0, 500, Slice{id2, 100, 0, 100, 0}, 6));
  ASSERT_OK_AND_ASSIGN(uint64_t id4, m_->NewSliceId());
  ASSERT_OK(m_->Write(f.ino, 2, 10, Slice{id4, 100, 0, 100, 0}, 7));
  ASSERT_OK_AND_ASSIGN(Attr a, m_->GetAttr(f.ino));
  EXPECT_EQ(a.size, 2 * kChunkSize + 110);
  EXPECT_EQ(a.mtime_ns, 7);
  ASSERT_OK_AND_ASSIGN(auto s0, m_->Read(f.ino, 0));
  ASSERT_EQ(s0.size(), 2u);
  EXPECT_EQ(s0[0], (Slice{id1, 1000, 0, 1000, 0}));
  EXPECT_EQ(s0[1], (Slice{id2, 100, 0, 100, 500}));
  ASSERT_OK_AND_ASSIGN(auto s1, m_->Read(f.ino, 1));
  EXPECT_TRUE(s1.empty());
  EXPECT_ERRNO(m_->Write(f.ino, 0, kChunkSize - 10, Slice{id1, 1000, 0, 20, 0}, 8), EINVAL);
  EXPECT_ERRNO(m_->Read(424242, 0), ENOENT);

  // shrink into chunk 0: chunk 2 is dropped (its slice queued), chunk 0 gets a hole tail
  ASSERT_OK(m_->Truncate(root_, f.ino, 700));
  ASSERT_OK_AND_ASSIGN(a, m_->GetAttr(f.ino));
  EXPECT_EQ(a.size, 700u);
  ASSERT_OK_AND_ASSIGN(auto s2, m_->Read(f.ino, 2));
  EXPECT_TRUE(s2.empty());
  ASSERT_OK_AND_ASSIGN(s0, m_->Read(f.ino, 0));
  ASSERT_EQ(s0.size(), 3u);
  EXPECT_EQ(s0[2].id, 0u);
  EXPECT_EQ(s0[2].pos, 700u);
  EXPECT_EQ(s0[2].len, kChunkSize - 700);  // to the old end, which lay past this chunk
  EXPECT_EQ(PendingIds(), std::set<uint64_t>{id4});
  ASSERT_OK(m_->ConfirmSliceDeletes({id4}));
  // extend: the length grows, no data appears
  ASSERT_OK(m_->Truncate(root_, f.ino, 3 * kChunkSize));
  ASSERT_OK_AND_ASSIGN(a, m_->GetAttr(f.ino));
  EXPECT_EQ(a.size, 3 * kChunkSize);

  // punch a hole over [100, 200) keeping the size; zero range extends
  EXPECT_ERRNO(m_->Fallocate(root_, f.ino, kFallocPunchHole, 100, 100), EINVAL);
  ASSERT_OK(m_->Fallocate(root_, f.ino, kFallocPunchHole | kFallocKeepSize, 100, 100));
  ASSERT_OK_AND_ASSIGN(s0, m_->Read(f.ino, 0));
  ASSERT_EQ(s0.size(), 4u);
  EXPECT_EQ(s0[3], (Slice{0, 100, 0, 100, 100}));
  ASSERT_OK(m_->Fallocate(root_, f.ino, kFallocZeroRange, 3 * kChunkSize - 10, 20));
  ASSERT_OK_AND_ASSIGN(a, m_->GetAttr(f.ino));
  EXPECT_EQ(a.size, 3 * kChunkSize + 10);
  ASSERT_OK_AND_ASSIGN(auto s3, m_->Read(f.ino, 3));
  ASSERT_EQ(s3.size(), 1u);
  EXPECT_EQ(s3[0], (Slice{0, 10, 0, 10, 0}));
  ASSERT_OK(m_->Fallocate(root_, f.ino, 0, 0, 4 * kChunkSize));
  ASSERT_OK_AND_ASSIGN(a, m_->GetAttr(f.ino));
  EXPECT_EQ(a.size, 4 * kChunkSize);
  Entry d = MkDir(kRootIno, "d");
  EXPECT_ERRNO(m_->Fallocate(root_, d.ino, 0, 0, 10), EISDIR);
  ExpectClean();

  // compaction: replace the slice list if unchanged
  ASSERT_OK_AND_ASSIGN(uint64_t id3, m_->NewSliceId());
  std::vector<Slice> repl{Slice{id3, 1000, 0, 1000, 0}};
  EXPECT_ERRNO(m_->ReplaceSlices(f.ino, 0, {s0[0]}, repl), EAGAIN);
  ASSERT_OK(m_->ReplaceSlices(f.ino, 0, s0, repl));
  ASSERT_OK_AND_ASSIGN(auto sc, m_->Read(f.ino, 0));
  EXPECT_EQ(sc, repl);
  EXPECT_EQ(PendingIds(), (std::set<uint64_t>{id1, id2}));
  ASSERT_OK(m_->ConfirmSliceDeletes({id1, id2}));
  EXPECT_TRUE(PendingIds().empty());
  std::set<uint64_t> live;
  ASSERT_OK(m_->ListSlices([&](Ino, uint32_t, const Slice& s) {
    live.insert(s.id);
    return Status::Ok();
  }));
  EXPECT_EQ(live, std::set<uint64_t>{id3});

  // unlink frees everything
  ASSERT_OK(m_->Unlink(root_, kRootIno, "f"));
  EXPECT_EQ(PendingIds(), std::set<uint64_t>{id3});
  ExpectClean();
}

TEST_P(MetaTest, ReadDirPaginatesSmall) {
  Entry d = MkDir(kRootIno, "d");
  std::set<std::string> want;
  for (int i = 0; i < 50; ++i) {
    std::string n = "n" + std::to_string(i);
    if (i % 5 == 0) MkDir(d.ino, n);
    else MkFile(d.ino, n);
    want.insert(n);
  }
  std::set<std::string> got;
  std::string after;
  std::string prev;
  for (;;) {
    ASSERT_OK_AND_ASSIGN(auto page, m_->ReadDir(root_, d.ino, after, 7, true));
    if (page.empty()) break;
    EXPECT_LE(page.size(), 7u);
    for (const auto& e : page) {
      EXPECT_GT(e.name, prev);
      prev = e.name;
      got.insert(e.name);
      EXPECT_EQ(e.attr.nlink, S_ISDIR(e.attr.mode) ? 2u : 1u);
    }
    after = page.back().name;
  }
  EXPECT_EQ(got, want);
  Entry f = MkFile(kRootIno, "file");
  EXPECT_ERRNO(m_->ReadDir(root_, f.ino, "", 10, false), ENOTDIR);
  EXPECT_ERRNO(m_->OpenDir(root_, f.ino), ENOTDIR);
  Entry priv = MkDir(kRootIno, "priv", 0700, &alice_);
  EXPECT_ERRNO(m_->OpenDir(bob_, priv.ino), EACCES);
}

// A directory of 100,000 entries (built through Load, the fast path), listed
// page by page: every name once, in order.
TEST_P(MetaTest, ReadDirHundredThousandEntries) {
  constexpr int kN = 100000;
  constexpr Ino kDir = 1000;
  // The dump text is assembled by hand: building it as a JSON tree costs more
  // than the whole listing.
  auto inode = [](Ino ino, uint32_t mode, uint32_t nlink, uint64_t size, Ino parent) {
    return "{\"ino\":" + std::to_string(ino) + ",\"mode\":" + std::to_string(mode) +
           ",\"uid\":0,\"gid\":0,\"nlink\":" + std::to_string(nlink) + ",\"size\":" +
           std::to_string(size) + ",\"parent\":" + std::to_string(parent) + "}";
  };
  std::string text =
      "{\"format\":{\"name\":\"test\",\"storage\":\"mem://\",\"trash_days\":0},"
      "\"counters\":{\"nextinode\":" + std::to_string(2000 + kN) +
      ",\"nextslice\":0,\"nextsession\":0,\"usedspace\":8192,\"inodes\":" + std::to_string(kN + 2) +
      "},\"inodes\":[" + inode(kRootIno, S_IFDIR | 0777, 3, 4096, kRootIno) + "," +
      inode(kTrashIno, S_IFDIR | 0555, 2, 4096, kRootIno) + "," + inode(kDir, S_IFDIR | 0755, 2, 4096, kRootIno);
  text.reserve(kN * 160);
  for (int i = 0; i < kN; ++i) text += "," + inode(2000 + i, S_IFREG | 0644, 1, 0, kDir);
  text += "],\"entries\":[[1,\"big\"," + std::to_string(kDir) + ",4]";
  for (int i = 0; i < kN; ++i) {
    text += ",[" + std::to_string(kDir) + ",\"file" + std::to_string(i) + "\"," + std::to_string(2000 + i) + ",8]";
  }
  text += "],\"chunks\":[]}";
  ASSERT_OK(m_->Destroy());
  std::istringstream in(text);
  ASSERT_OK(m_->Load(in));
  ASSERT_OK_AND_ASSIGN(Attr root, m_->GetAttr(kRootIno));
  EXPECT_EQ(root.nlink, 3u);

  std::vector<bool> seen(kN, false);
  std::string after, prev;
  size_t total = 0, pages = 0;
  for (;;) {
    ASSERT_OK_AND_ASSIGN(auto page, m_->ReadDir(root_, kDir, after, 1000, false));
    if (page.empty()) break;
    ++pages;
    for (const auto& e : page) {
      ASSERT_GT(e.name, prev);
      prev = e.name;
      int i = std::stoi(e.name.substr(4));
      ASSERT_FALSE(seen[i]);
      seen[i] = true;
      ASSERT_EQ(e.ino, static_cast<Ino>(2000 + i));
      ++total;
    }
    after = page.back().name;
  }
  EXPECT_EQ(total, static_cast<size_t>(kN));
  EXPECT_EQ(pages, static_cast<size_t>(kN / 1000));
  ASSERT_OK_AND_ASSIGN(Entry e, m_->Lookup(root_, kDir, "file77777"));
  EXPECT_EQ(e.ino, 2000u + 77777);
  EXPECT_ERRNO(m_->Rmdir(root_, kRootIno, "big"), ENOTEMPTY);
}

TEST_P(MetaTest, Xattrs) {
  Entry f = MkFile(kRootIno, "f", 0644, &alice_);
  std::string bin("v\0\xff", 3);
  ASSERT_OK(m_->SetXattr(alice_, f.ino, "user.a", bin, 0));
  ASSERT_OK_AND_ASSIGN(std::string v, m_->GetXattr(alice_, f.ino, "user.a"));
  EXPECT_EQ(v, bin);
  EXPECT_ERRNO(m_->SetXattr(alice_, f.ino, "user.a", "x", kXattrCreate), EEXIST);
  EXPECT_ERRNO(m_->SetXattr(alice_, f.ino, "user.b", "x", kXattrReplace), ENODATA);
  ASSERT_OK(m_->SetXattr(alice_, f.ino, "user.b", "x", kXattrCreate));
  EXPECT_ERRNO(m_->SetXattr(bob_, f.ino, "user.c", "x", 0), EACCES);
  ASSERT_OK_AND_ASSIGN(auto names, m_->ListXattr(alice_, f.ino));
  EXPECT_EQ(names, (std::vector<std::string>{"user.a", "user.b"}));
  ASSERT_OK(m_->RemoveXattr(alice_, f.ino, "user.a"));
  EXPECT_ERRNO(m_->GetXattr(alice_, f.ino, "user.a"), ENODATA);
  EXPECT_ERRNO(m_->RemoveXattr(alice_, f.ino, "user.a"), ENODATA);
}

// POSIX ACLs (acl(5)): setfacl sets the mode's bits (group = mask), chmod
// sets the mask, only the owner may set one, a directory's default ACL is
// inherited by new files and subdirectories in place of the umask.
TEST_P(MetaTest, PosixAcls) {
  using acl::Acl;
  auto pack = [](std::vector<acl::Entry> es) { return acl::Encode(Acl{std::move(es)}); };
  constexpr uint32_t kNo = 0xffffffffu;
  Entry f = MkFile(kRootIno, "f", 0600, &alice_);
  std::string a = pack({{acl::kUserObj, 6, kNo},
                        {acl::kUser, 6, 2000},
                        {acl::kGroupObj, 0, kNo},
                        {acl::kMask, 6, kNo},
                        {acl::kOther, 0, kNo}});
  EXPECT_ERRNO(m_->SetXattr(bob_, f.ino, std::string(acl::kAccess), a, 0), EPERM);
  ASSERT_OK(m_->SetXattr(alice_, f.ino, std::string(acl::kAccess), a, 0));
  ASSERT_OK_AND_ASSIGN(Attr at, m_->GetAttr(f.ino));
  EXPECT_EQ(at.mode & 07777, 0660u);
  ASSERT_OK_AND_ASSIGN(std::string got, m_->GetXattr(bob_, f.ino, std::string(acl::kAccess)));
  EXPECT_EQ(got, a);
  Attr in;
  in.mode = 0640;
  ASSERT_OK(m_->SetAttr(alice_, f.ino, kSetMode, in).status());
  ASSERT_OK_AND_ASSIGN(got, m_->GetXattr(alice_, f.ino, std::string(acl::kAccess)));
  ASSERT_OK_AND_ASSIGN(Acl parsed, acl::Parse(got));
  EXPECT_EQ(parsed.ModeBits(), 0640u);
  bool mask_r = false;
  for (const auto& e : parsed.entries) mask_r |= e.tag == acl::kMask && e.perm == 4;
  EXPECT_TRUE(mask_r);
  // Through a mount whose kernel evaluates ACLs: bob's named entry (rw,
  // mask r--) was checked by the kernel; the engine still refuses what the
  // mode's group and other bits both refuse (a chmod another mount made).
  Context bob_k = bob_;
  bob_k.kernel_checked_acl = true;
  EXPECT_OK(m_->Access(bob_k, f.ino, R_OK));
  EXPECT_ERRNO(m_->Access(bob_k, f.ino, W_OK), EACCES);
  in.mode = 0600;
  ASSERT_OK(m_->SetAttr(alice_, f.ino, kSetMode, in).status());
  EXPECT_ERRNO(m_->Access(bob_k, f.ino, R_OK), EACCES);
  in.mode = 0640;
  ASSERT_OK(m_->SetAttr(alice_, f.ino, kSetMode, in).status());
  // Malformed ACLs and default ACLs on files.
  EXPECT_ERRNO(m_->SetXattr(alice_, f.ino, std::string(acl::kAccess), "xx", 0), EINVAL);
  EXPECT_ERRNO(m_->SetXattr(alice_, f.ino, std::string(acl::kAccess),
                            pack({{acl::kUserObj, 6, kNo},
                                  {acl::kUser, 6, 5},
                                  {acl::kGroupObj, 0, kNo},
                                  {acl::kOther, 0, kNo}}),
                            0),
               EINVAL);
  EXPECT_ERRNO(m_->SetXattr(alice_, f.ino, std::string(acl::kDefault), a, 0), EACCES);
  // A minimal ACL is the mode alone.
  ASSERT_OK(m_->SetXattr(
      alice_, f.ino, std::string(acl::kAccess),
      pack({{acl::kUserObj, 7, kNo}, {acl::kGroupObj, 5, kNo}, {acl::kOther, 1, kNo}}), 0));
  ASSERT_OK_AND_ASSIGN(at, m_->GetAttr(f.ino));
  EXPECT_EQ(at.mode & 07777, 0751u);
  EXPECT_ERRNO(m_->GetXattr(alice_, f.ino, std::string(acl::kAccess)), ENODATA);
  // Inheritance: umask 077 is replaced by the default ACL.
  Entry d = MkDir(kRootIno, "d", 0755, &alice_);
  std::string def = pack({{acl::kUserObj, 7, kNo},
                          {acl::kUser, 7, 2000},
                          {acl::kGroupObj, 5, kNo},
                          {acl::kMask, 7, kNo},
                          {acl::kOther, 0, kNo}});
  ASSERT_OK(m_->SetXattr(alice_, d.ino, std::string(acl::kDefault), def, 0));
  ASSERT_OK_AND_ASSIGN(Entry c, m_->Mknod(alice_, d.ino, "c", S_IFREG | 0666, 077, 0));
  EXPECT_EQ(c.attr.mode & 07777, 0660u);
  ASSERT_OK_AND_ASSIGN(got, m_->GetXattr(alice_, c.ino, std::string(acl::kAccess)));
  EXPECT_EQ(got, pack({{acl::kUserObj, 6, kNo},
                       {acl::kUser, 7, 2000},
                       {acl::kGroupObj, 5, kNo},
                       {acl::kMask, 6, kNo},
                       {acl::kOther, 0, kNo}}));
  EXPECT_ERRNO(m_->GetXattr(alice_, c.ino, std::string(acl::kDefault)), ENODATA);
  ASSERT_OK_AND_ASSIGN(Entry sub, m_->Mkdir(alice_, d.ino, "sub", 0777, 077));
  EXPECT_EQ(sub.attr.mode & 07777, 0770u);
  ASSERT_OK_AND_ASSIGN(got, m_->GetXattr(alice_, sub.ino, std::string(acl::kDefault)));
  EXPECT_EQ(got, def);
  // Without a default ACL the umask applies.
  ASSERT_OK_AND_ASSIGN(Entry plain, m_->Mknod(alice_, kRootIno, "plain", S_IFREG | 0666, 077, 0));
  EXPECT_EQ(plain.attr.mode & 07777, 0600u);
  ExpectClean();
}

TEST_P(MetaTest, LocksHoldAcrossClients) {
  Entry f = MkFile(kRootIno, "f");
  auto other = Second();
  // flock
  ASSERT_OK(m_->Flock(root_, f.ino, 1, F_RDLCK, false));
  ASSERT_OK(other->Flock(root_, f.ino, 1, F_RDLCK, false));
  EXPECT_ERRNO(other->Flock(root_, f.ino, 2, F_WRLCK, false), EAGAIN);
  ASSERT_OK(m_->Flock(root_, f.ino, 1, F_UNLCK, false));
  EXPECT_ERRNO(other->Flock(root_, f.ino, 2, F_WRLCK, false), EAGAIN);  // its own read lock (owner 1)
  ASSERT_OK(other->Flock(root_, f.ino, 1, F_WRLCK, false));             // upgrade by the holder
  EXPECT_ERRNO(m_->Flock(root_, f.ino, 1, F_RDLCK, false), EAGAIN);
  // a blocked waiter gets it once released
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    EXPECT_OK(m_->Flock(root_, f.ino, 7, F_WRLCK, true));
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(got.load());
  ASSERT_OK(other->Flock(root_, f.ino, 1, F_UNLCK, false));
  waiter.join();
  EXPECT_TRUE(got.load());
  ASSERT_OK(m_->Flock(root_, f.ino, 7, F_UNLCK, false));

  // POSIX ranges
  ASSERT_OK(m_->Setlk(root_, f.ino, 1, false, LockRange{F_WRLCK, 0, 99, 11}));
  ASSERT_OK(other->Setlk(root_, f.ino, 1, false, LockRange{F_WRLCK, 100, 199, 22}));
  EXPECT_ERRNO(other->Setlk(root_, f.ino, 1, false, LockRange{F_RDLCK, 50, 60, 22}), EAGAIN);
  LockRange q{F_RDLCK, 90, 95, 0};
  ASSERT_OK(other->Getlk(root_, f.ino, 1, &q));
  EXPECT_EQ(q.type, static_cast<uint32_t>(F_WRLCK));
  EXPECT_EQ(q.start, 0u);
  EXPECT_EQ(q.end, 99u);
  EXPECT_EQ(q.pid, 11u);
  // unlock the middle: [0,49] and [61,99] stay locked
  ASSERT_OK(m_->Setlk(root_, f.ino, 1, false, LockRange{F_UNLCK, 50, 60, 11}));
  ASSERT_OK(other->Setlk(root_, f.ino, 1, false, LockRange{F_RDLCK, 50, 60, 22}));
  EXPECT_ERRNO(other->Setlk(root_, f.ino, 1, false, LockRange{F_RDLCK, 45, 50, 22}), EAGAIN);
  q = LockRange{F_WRLCK, 300, UINT64_MAX, 0};
  ASSERT_OK(other->Getlk(root_, f.ino, 1, &q));
  EXPECT_EQ(q.type, static_cast<uint32_t>(F_UNLCK));
  // closing a session drops its locks
  ASSERT_OK(m_->CloseSession());
  ASSERT_OK(other->Setlk(root_, f.ino, 1, false, LockRange{F_WRLCK, 0, 99, 22}));
  ASSERT_OK(other->CloseSession());
}

TEST_P(MetaTest, UnlinkedOpenFileIsSustainedUntilClose) {
  Entry f = MkFile(kRootIno, "f");
  ASSERT_OK_AND_ASSIGN(uint64_t id, m_->NewSliceId());
  ASSERT_OK(m_->Write(f.ino, 0, 0, Slice{id, 10, 0, 10, 0}, 1));
  ASSERT_OK(m_->Open(root_, f.ino, O_RDWR).status());
  ASSERT_OK(m_->Unlink(root_, kRootIno, "f"));
  EXPECT_ERRNO(m_->Lookup(root_, kRootIno, "f"), ENOENT);
  ASSERT_OK_AND_ASSIGN(Attr a, m_->GetAttr(f.ino));  // still readable through the handle
  EXPECT_EQ(a.nlink, 0u);
  ASSERT_OK_AND_ASSIGN(auto s, m_->Read(f.ino, 0));
  EXPECT_EQ(s.size(), 1u);
  EXPECT_TRUE(PendingIds().empty());
  ExpectClean();
  ASSERT_OK(m_->Close(f.ino));
  EXPECT_ERRNO(m_->GetAttr(f.ino), ENOENT);
  EXPECT_EQ(PendingIds(), std::set<uint64_t>{id});

  // a client that dies with an unlinked open file: another client cleans up
  auto dying = Second();
  Entry g = MkFile(kRootIno, "g");
  ASSERT_OK(dying->Open(root_, g.ino, O_RDONLY).status());
  ASSERT_OK(dying->Unlink(root_, kRootIno, "g"));
  ASSERT_OK(m_->GetAttr(g.ino).status());
  ASSERT_OK(m_->Heartbeat());
  ASSERT_OK_AND_ASSIGN(auto sessions, m_->ListSessions());
  EXPECT_EQ(sessions.size(), 2u);
  ASSERT_OK_AND_ASSIGN(int cleaned, m_->CleanStaleSessions(0));
  EXPECT_EQ(cleaned, 1);
  EXPECT_ERRNO(m_->GetAttr(g.ino), ENOENT);
  ExpectClean();
}

TEST_P(MetaTest, OnlyTheLastCloseOfAnUnlinkedFileFreesIt) {
  Entry f = MkFile(kRootIno, "f");
  ASSERT_OK(m_->Open(root_, f.ino, O_RDONLY).status());
  ASSERT_OK(m_->Close(f.ino));  // opened and closed before the unlink: nothing sustained
  ASSERT_OK(m_->Open(root_, f.ino, O_RDONLY).status());
  ASSERT_OK(m_->Open(root_, f.ino, O_RDWR).status());
  ASSERT_OK(m_->Unlink(root_, kRootIno, "f"));
  ASSERT_OK(m_->Close(f.ino));
  ASSERT_OK(m_->GetAttr(f.ino).status());  // one handle still open
  ASSERT_OK(m_->Close(f.ino));
  EXPECT_ERRNO(m_->GetAttr(f.ino), ENOENT);
  // reopened inode numbers and files never unlinked while open need no sustain
  Entry g = MkFile(kRootIno, "g");
  ASSERT_OK(m_->Open(root_, g.ino, O_RDONLY).status());
  ASSERT_OK(m_->Close(g.ino));
  ASSERT_OK(m_->Unlink(root_, kRootIno, "g"));
  EXPECT_ERRNO(m_->GetAttr(g.ino), ENOENT);
  ExpectClean();
}

TEST_P(MetaTest, TrashKeepsDeletedFiles) {
  Format f;
  f.name = "test";
  f.trash_days = 1;
  ASSERT_OK(m_->Init(f, false));
  Entry file = MkFile(kRootIno, "f");
  ASSERT_OK_AND_ASSIGN(uint64_t id, m_->NewSliceId());
  ASSERT_OK(m_->Write(file.ino, 0, 0, Slice{id, 10, 0, 10, 0}, 1));
  ASSERT_OK(m_->Unlink(root_, kRootIno, "f"));
  ASSERT_OK_AND_ASSIGN(Entry trash, m_->Lookup(root_, kRootIno, ".trash"));
  EXPECT_EQ(trash.ino, kTrashIno);
  ASSERT_OK_AND_ASSIGN(auto items, m_->ReadDir(root_, kTrashIno, "", 100, true));
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].ino, file.ino);
  ASSERT_OK_AND_ASSIGN(auto rootlist, m_->ReadDir(root_, kRootIno, "", 100, false));
  EXPECT_TRUE(rootlist.empty());
  ExpectClean();
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::system_clock::now().time_since_epoch()).count();
  ASSERT_OK_AND_ASSIGN(int n, m_->CleanTrash(now));
  EXPECT_EQ(n, 0);
  ASSERT_OK_AND_ASSIGN(n, m_->CleanTrash(now + 2 * 86400 * 1000000000ll));
  EXPECT_EQ(n, 1);
  EXPECT_ERRNO(m_->GetAttr(file.ino), ENOENT);
  EXPECT_EQ(PendingIds(), std::set<uint64_t>{id});
  ExpectClean();
}

TEST_P(MetaTest, CheckFindsAndRepairsInjectedDamage) {
  Entry d = MkDir(kRootIno, "d");
  Entry f = MkFile(d.ino, "f");
  ExpectClean();
  auto kv = RawKV();
  // wrong nlink, a dangling entry, an orphan chunk
  Attr bad = f.attr;
  bad.nlink = 5;
  ASSERT_OK(kv->Txn(
      [&](KvTxn& t) {
        t.Set(codec::AttrKey(f.ino), codec::EncodeAttr(bad));
        t.Set(codec::DentKey(d.ino, "ghost"), codec::EncodeDent(S_IFREG, 777777));
        t.Set(codec::ChunkKey(888888, 0), codec::EncodeSlices({Slice{5, 10, 0, 10, 0}}));
        t.Set(codec::kInodes, "99");
        return Status::Ok();
      },
      false));
  ASSERT_OK_AND_ASSIGN(auto problems, m_->Check(CheckOptions{}));
  ASSERT_EQ(problems.size(), 4u);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find("nlink is 5"), std::string::npos) << all;
  EXPECT_NE(all.find("dangling"), std::string::npos) << all;
  EXPECT_NE(all.find("chunk 0"), std::string::npos) << all;
  EXPECT_NE(all.find("counters: 99 inodes"), std::string::npos) << all;
  ASSERT_OK_AND_ASSIGN(problems, m_->Check(CheckOptions{true}));
  EXPECT_EQ(problems.size(), 4u);
  ASSERT_OK_AND_ASSIGN(StatFs s, m_->StatFS(root_, kRootIno));
  EXPECT_EQ(s.used_inodes, 3u);
  ExpectClean();
  ASSERT_OK_AND_ASSIGN(Attr a, m_->GetAttr(f.ino));
  EXPECT_EQ(a.nlink, 1u);
}

TEST_P(MetaTest, DumpLoadRoundTrip) {
  Entry d = MkDir(kRootIno, "dir");
  Entry f = MkFile(d.ino, "file");
  ASSERT_OK(m_->Write(f.ino, 0, 0, Slice{7, 100, 0, 100, 0}, 1));
  ASSERT_OK(m_->Write(f.ino, 1, 5, Slice{8, 100, 10, 50, 0}, 2));
  ASSERT_OK(m_->Symlink(root_, kRootIno, "ln", "dir/file").status());
  ASSERT_OK(m_->Link(root_, f.ino, kRootIno, "hard").status());
  ASSERT_OK(m_->SetXattr(root_, f.ino, "user.k", std::string("\x01\x02", 2), 0));
  ASSERT_OK(m_->Mknod(root_, d.ino, std::string("bin\xff\xfe", 5), S_IFIFO | 0600, 0, 0).status());
  std::ostringstream a;
  ASSERT_OK(m_->Dump(a));

  ASSERT_OK_AND_ASSIGN(auto other, OpenMeta(Url(1)));
  ASSERT_OK(other->Destroy());
  std::istringstream in(a.str());
  ASSERT_OK(other->Load(in));
  std::ostringstream b;
  ASSERT_OK(other->Dump(b));
  EXPECT_EQ(a.str(), b.str());
  ASSERT_OK_AND_ASSIGN(Entry e, other->Lookup(root_, d.ino, std::string("bin\xff\xfe", 5)));
  EXPECT_TRUE(S_ISFIFO(e.attr.mode));
  ASSERT_OK_AND_ASSIGN(auto problems, other->Check(CheckOptions{}));
  EXPECT_TRUE(problems.empty());
  // loading over a formatted volume, or garbage, is refused
  std::istringstream again(a.str());
  EXPECT_STATUS_CODE(other->Load(again), StatusCode::kAlreadyExists);
  ASSERT_OK(other->Destroy());
  std::istringstream junk("{\"format\": 3");
  EXPECT_STATUS_CODE(other->Load(junk), StatusCode::kInvalidArgument);
  ASSERT_OK(other->Destroy());
}

// ---- the entry cache (MetaEngine::EnableCache) ----------------------------------

uint64_t TxnsOf(MetaEngine& m) {
  auto c = m.Transactions();
  return c.read + c.write;
}

// N creates in a directory this client made, each preceded by the lookup the
// kernel sends first (ENOENT), then N lookups and N stats of them, then N
// unlinks: with the cache, lookups and stats of known names cost no
// transaction (one counter read at most); creates and unlinks one each, and
// a lookup of a missing name still one (absence is never served from the
// cache). Without it every lookup and stat is a transaction of its own.
TEST_P(MetaTest, CachedLookupsAndStatsCostNoTransactions) {
  m_->EnableCache(60);
  constexpr int kN = 200;
  Entry d = MkDir(kRootIno, "d");
  const uint64_t t0 = TxnsOf(*m_);
  for (int i = 0; i < kN; ++i) {
    const std::string name = "f" + std::to_string(i);
    EXPECT_ERRNO(m_->Lookup(root_, d.ino, name), ENOENT);
    ASSERT_OK_AND_ASSIGN(Entry e, m_->Create(root_, d.ino, name, 0644, 0, O_RDWR));
    ASSERT_OK(m_->Close(e.ino));
  }
  const uint64_t creates = TxnsOf(*m_) - t0;
  EXPECT_LE(creates, 2 * kN + 5u) << "transactions for " << kN << " lookups + creates + closes";
  const uint64_t t1 = TxnsOf(*m_);
  std::vector<Entry> found;
  for (int i = 0; i < kN; ++i) {
    ASSERT_OK_AND_ASSIGN(Entry e, m_->Lookup(root_, d.ino, "f" + std::to_string(i)));
    ASSERT_OK_AND_ASSIGN(Attr a, m_->GetAttr(e.ino));
    EXPECT_TRUE(S_ISREG(a.mode));
    found.push_back(e);
  }
  EXPECT_LE(TxnsOf(*m_) - t1, 2u) << "transactions for " << kN
                                  << " lookups + stats of cached names";
  EXPECT_GE(m_->Transactions().cached, 2u * kN);  // the lookups and stats of known names
  const uint64_t t2 = TxnsOf(*m_);
  for (int i = 0; i < kN; ++i) {
    ASSERT_OK(m_->Lookup(root_, d.ino, "f" + std::to_string(i)).status());
    ASSERT_OK(m_->Unlink(root_, d.ino, "f" + std::to_string(i)));
    EXPECT_ERRNO(m_->Lookup(root_, d.ino, "f" + std::to_string(i)), ENOENT);
  }
  EXPECT_LE(TxnsOf(*m_) - t2, 2 * kN + 5u)
      << "transactions for " << kN << " lookups + unlinks + lookups of the removed names";
  ASSERT_OK_AND_ASSIGN(Attr dir, m_->GetAttr(d.ino));
  EXPECT_EQ(dir.nlink, 2u);
  ExpectClean();
}

// A name this client found missing, then created by a writer without a
// session (as `strata fs clone`, `rmr` or `load` write), is found at once,
// however long the check interval: absence is never answered from the cache.
TEST_P(MetaTest, CacheNeverAnswersAbsenceWhenASessionlessWriterCreates) {
  m_->EnableCache(3600);
  Entry d = MkDir(kRootIno, "d");
  EXPECT_ERRNO(m_->Lookup(root_, d.ino, "made"), ENOENT);
  auto r = OpenMeta(url_);
  ASSERT_TRUE(r.has_value());
  std::unique_ptr<MetaEngine> tool = std::move(*r);  // no NewSession
  ASSERT_OK(tool->Mknod(root_, d.ino, "made", S_IFREG | 0644, 0, 0).status());
  ASSERT_OK(m_->Lookup(root_, d.ino, "made").status());
  ExpectClean();
}

// This client's own changes show at once through its cache, whatever the
// check interval: renames, unlinks, chmod, a slice commit's new length,
// links, rmdir.
TEST_P(MetaTest, CacheShowsOwnChangesAtOnce) {
  m_->EnableCache(3600);
  Entry d = MkDir(kRootIno, "d");
  Entry a = MkFile(d.ino, "a");
  Entry b = MkFile(d.ino, "b");
  ASSERT_OK(m_->Lookup(root_, d.ino, "a").status());
  ASSERT_OK(m_->Lookup(root_, d.ino, "b").status());
  ASSERT_OK(m_->Rename(root_, d.ino, "a", d.ino, "b", 0));
  EXPECT_ERRNO(m_->Lookup(root_, d.ino, "a"), ENOENT);
  ASSERT_OK_AND_ASSIGN(Entry e, m_->Lookup(root_, d.ino, "b"));
  EXPECT_EQ(e.ino, a.ino);
  EXPECT_ERRNO(m_->GetAttr(b.ino), ENOENT);
  Attr in;
  in.mode = 0600;
  ASSERT_OK(m_->SetAttr(root_, a.ino, kSetMode, in).status());
  ASSERT_OK(m_->Write(a.ino, 0, 100, Slice{7, 50, 0, 50, 0}, 5));
  ASSERT_OK_AND_ASSIGN(Attr got, m_->GetAttr(a.ino));
  EXPECT_EQ(got.mode & 07777, 0600u);
  EXPECT_EQ(got.size, 150u);
  ASSERT_OK(m_->Link(root_, a.ino, kRootIno, "hard").status());
  ASSERT_OK_AND_ASSIGN(got, m_->GetAttr(a.ino));
  EXPECT_EQ(got.nlink, 2u);
  ASSERT_OK(m_->Unlink(root_, d.ino, "b"));
  EXPECT_ERRNO(m_->Lookup(root_, d.ino, "b"), ENOENT);
  ASSERT_OK(m_->Rmdir(root_, kRootIno, "d"));
  EXPECT_ERRNO(m_->Lookup(root_, kRootIno, "d"), ENOENT);
  ASSERT_OK_AND_ASSIGN(e, m_->Lookup(root_, kRootIno, "hard"));
  EXPECT_EQ(e.attr.nlink, 1u);
  ExpectClean();
}

// Another client's creates, renames over a looked-up name, unlinks, chmods
// and slice commits show through the cache once the check interval has
// passed (the cache had the old answers: names absent, the old inode, the
// old attributes), also in a directory this client created. DropCaches shows
// them at once.
TEST_P(MetaTest, CacheSeesOtherClientsChangesAfterTheInterval) {
  constexpr auto kInterval = std::chrono::milliseconds(50);
  m_->EnableCache(0.05);
  auto other = Second();
  Entry d = MkDir(kRootIno, "d");  // made here
  Entry tgt = MkFile(d.ino, "tgt");
  EXPECT_ERRNO(m_->Lookup(root_, d.ino, "new"), ENOENT);
  ASSERT_OK(m_->Lookup(root_, d.ino, "tgt").status());
  ASSERT_OK(m_->GetAttr(tgt.ino).status());
  auto settle = [&] { std::this_thread::sleep_for(kInterval * 3); };

  ASSERT_OK_AND_ASSIGN(Entry made, other->Create(root_, d.ino, "new", 0644, 0, O_RDWR));
  ASSERT_OK(other->Close(made.ino));
  ASSERT_OK_AND_ASSIGN(Entry src, other->Mknod(root_, d.ino, "src", S_IFREG | 0644, 0, 0));
  settle();
  ASSERT_OK_AND_ASSIGN(Entry e, m_->Lookup(root_, d.ino, "new"));
  EXPECT_EQ(e.ino, made.ino);
  ASSERT_OK(m_->Lookup(root_, d.ino, "src").status());
  // A name found missing is read from the engine each time: the other's
  // create shows at once, as without the cache.
  EXPECT_ERRNO(m_->Lookup(root_, d.ino, "late"), ENOENT);
  ASSERT_OK(other->Mknod(root_, d.ino, "late", S_IFREG | 0644, 0, 0).status());
  ASSERT_OK(m_->Lookup(root_, d.ino, "late").status());

  ASSERT_OK(m_->Lookup(root_, d.ino, "tgt").status());
  ASSERT_OK(other->Rename(root_, d.ino, "src", d.ino, "tgt", 0));
  settle();
  ASSERT_OK_AND_ASSIGN(e, m_->Lookup(root_, d.ino, "tgt"));
  EXPECT_EQ(e.ino, src.ino) << "rename over a name looked up here";
  EXPECT_ERRNO(m_->Lookup(root_, d.ino, "src"), ENOENT);
  EXPECT_ERRNO(m_->GetAttr(tgt.ino), ENOENT);

  Attr in;
  in.mode = 0600;
  ASSERT_OK(other->SetAttr(root_, src.ino, kSetMode, in).status());
  ASSERT_OK(other->Write(src.ino, 0, 0, Slice{9, 42, 0, 42, 0}, 5));
  settle();
  ASSERT_OK_AND_ASSIGN(Attr got, m_->GetAttr(src.ino));
  EXPECT_EQ(got.mode & 07777, 0600u);
  EXPECT_EQ(got.size, 42u);

  ASSERT_OK(other->Unlink(root_, d.ino, "tgt"));
  ASSERT_OK(other->Mknod(root_, d.ino, "tgt", S_IFREG | 0644, 0, 0).status());
  settle();
  ASSERT_OK_AND_ASSIGN(e, m_->Lookup(root_, d.ino, "tgt"));
  EXPECT_NE(e.ino, src.ino) << "unlink + re-create of a name looked up here";

  // DropCaches (what the mount does after answering ESTALE): at once.
  m_->EnableCache(3600);
  ASSERT_OK(m_->Lookup(root_, d.ino, "new").status());
  ASSERT_OK(other->Unlink(root_, d.ino, "new"));
  m_->DropCaches();
  EXPECT_ERRNO(m_->Lookup(root_, d.ino, "new"), ENOENT);
}

// Clients without the cache pay a transaction for every lookup and stat
// (what the counters above are compared with).
TEST_P(MetaTest, WithoutTheCacheEveryLookupIsATransaction) {
  Entry f = MkFile(kRootIno, "f");
  const uint64_t t0 = TxnsOf(*m_);
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK(m_->Lookup(root_, kRootIno, "f").status());
    ASSERT_OK(m_->GetAttr(f.ino).status());
  }
  EXPECT_EQ(TxnsOf(*m_) - t0, 20u);
  EXPECT_EQ(m_->Transactions().cached, 0u);
}

// Two clients and two threads each create files in one directory and append
// slices to one shared file; optimistic retries must lose nothing.
TEST_P(MetaTest, ConcurrentWritersLoseNothing) {
  Entry d = MkDir(kRootIno, "d");
  Entry shared = MkFile(kRootIno, "shared");
  auto other = Second();
  constexpr int kPerWorker = 60;
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    MetaEngine* eng = (w % 2 == 0) ? m_.get() : other.get();
    threads.emplace_back([&, eng, w] {
      for (int i = 0; i < kPerWorker; ++i) {
        std::string name = "w" + std::to_string(w) + "_" + std::to_string(i);
        EXPECT_OK(eng->Mknod(root_, d.ino, name, S_IFREG | 0644, 0, 0).status());
        uint32_t pos = static_cast<uint32_t>((w * kPerWorker + i) * 10);
        EXPECT_OK(eng->Write(shared.ino, 0, pos, Slice{static_cast<uint64_t>(1 + w * 1000 + i), 10, 0, 10, 0}, 1));
      }
    });
  }
  // a reader alongside: every lookup of the shared file succeeds, sizes only grow
  std::atomic<bool> done{false};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!done.load()) {
      auto e = other->Lookup(root_, kRootIno, "shared");
      EXPECT_OK(e);
      if (!e.has_value()) break;
      EXPECT_GE(e->attr.size, last);
      last = e->attr.size;
    }
  });
  for (auto& t : threads) t.join();
  done = true;
  reader.join();
  size_t n = 0;
  std::string after;
  for (;;) {
    ASSERT_OK_AND_ASSIGN(auto page, m_->ReadDir(root_, d.ino, after, 100, false));
    if (page.empty()) break;
    n += page.size();
    after = page.back().name;
  }
  EXPECT_EQ(n, 4u * kPerWorker);
  ASSERT_OK_AND_ASSIGN(auto slices, m_->Read(shared.ino, 0));
  EXPECT_EQ(slices.size(), 4u * kPerWorker);
  ASSERT_OK_AND_ASSIGN(Attr a, m_->GetAttr(shared.ino));
  EXPECT_EQ(a.size, 4u * kPerWorker * 10);
  ASSERT_OK_AND_ASSIGN(StatFs s, m_->StatFS(root_, kRootIno));
  EXPECT_EQ(s.used_inodes, 3u + 4 * kPerWorker);
  ASSERT_OK(m_->Sync());
  ExpectClean();
}

TEST_P(MetaTest, SummaryCounts) {
  Entry d = MkDir(kRootIno, "d");
  Entry f = MkFile(d.ino, "f");
  ASSERT_OK(m_->Write(f.ino, 0, 0, Slice{1, 5000, 0, 5000, 0}, 1));
  MkDir(d.ino, "e");
  ASSERT_OK_AND_ASSIGN(Summary s, m_->GetSummary(root_, kRootIno));
  EXPECT_EQ(s.dirs, 3u);
  EXPECT_EQ(s.files, 1u);
  EXPECT_EQ(s.length, 5000u);
  ASSERT_OK_AND_ASSIGN(StatFs st, m_->StatFS(root_, kRootIno));
  EXPECT_EQ(st.used_space, 3 * 4096u + 8192u);
}

TEST_P(MetaTest, CapacityAndInodeLimits) {
  Format f;
  f.name = "test";
  f.capacity = 4096 + 8192;  // the root directory counts 4096
  f.inodes = 3;
  ASSERT_OK(m_->Init(f, false));
  Entry a = MkFile(kRootIno, "a");
  ASSERT_OK(m_->Write(a.ino, 0, 0, Slice{1, 8192, 0, 8192, 0}, 1));
  EXPECT_ERRNO(m_->Write(a.ino, 0, 8192, Slice{2, 10, 0, 10, 0}, 1), ENOSPC);
  ASSERT_OK(m_->Write(a.ino, 0, 100, Slice{3, 10, 0, 10, 0}, 1));  // an overwrite needs no space
  Attr in;
  in.size = 1 << 20;
  EXPECT_ERRNO(m_->SetAttr(root_, a.ino, kSetSize, in), ENOSPC);
  EXPECT_ERRNO(m_->Fallocate(root_, a.ino, 0, 0, 1 << 20), ENOSPC);
  MkFile(kRootIno, "b");
  EXPECT_ERRNO(m_->Mknod(root_, kRootIno, "c", S_IFREG | 0644, 0, 0), ENOSPC);
  ASSERT_OK_AND_ASSIGN(StatFs s, m_->StatFS(root_, kRootIno));
  EXPECT_EQ(s.total_space, 4096u + 8192u);
  EXPECT_EQ(s.avail_space, 0u);
  EXPECT_EQ(s.avail_inodes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, MetaTest, ::testing::Values("sqlite", "redis", "postgres"),
                         [](const auto& info) { return info.param; });

// Redis drops every client connection (restart, idle timeout): the next
// operations reconnect instead of failing.
TEST(MetaRedisTest, ReconnectsAfterDroppedConnections) {
  ASSERT_TRUE(RedisServer::Get().ok()) << "redis-server did not start";
  ASSERT_OK_AND_ASSIGN(auto m, OpenMeta("redis://127.0.0.1:" + std::to_string(RedisServer::Get().port()) + "/2"));
  ASSERT_OK(m->Destroy());
  Format f;
  f.name = "reconnect";
  ASSERT_OK(m->Init(f, false));
  ASSERT_OK(m->NewSession(SessionInfo{}).status());
  Context root;
  ASSERT_OK(m->Mknod(root, kRootIno, "before", S_IFREG | 0644, 0, 0).status());
  std::string cmd = "redis-cli -p " + std::to_string(RedisServer::Get().port()) +
                    " CLIENT KILL TYPE normal > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  ASSERT_OK(m->Mknod(root, kRootIno, "after", S_IFREG | 0644, 0, 0).status());
  ASSERT_OK(m->Lookup(root, kRootIno, "before").status());
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  ASSERT_OK(m->NewSliceId().status());
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  ASSERT_OK_AND_ASSIGN(auto sessions, m->ListSessions());
  EXPECT_EQ(sessions.size(), 1u);
  ASSERT_OK(m->Destroy());
}

// kill -9 of a process committing to SQLite: every acknowledged operation is
// there after reopening, and fsck finds nothing.
TEST(MetaCrashTest, SqliteSurvivesKill9) {
  TempDir dir("fsmeta-crash");
  std::string url = "sqlite3://" + dir.Join("meta.db");
  {
    ASSERT_OK_AND_ASSIGN(auto m, OpenMeta(url));
    Format f;
    f.name = "crash";
    f.trash_days = 0;
    ASSERT_OK(m->Init(f, false));
  }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    auto m = OpenMeta(url);
    if (!m) _exit(2);
    Context root;
    (void)(*m)->NewSession(SessionInfo{});
    auto d = (*m)->Mkdir(root, kRootIno, "d", 0755, 0);
    if (!d) _exit(3);
    for (uint32_t i = 0;; ++i) {
      std::string name = "f" + std::to_string(i);
      auto e = (*m)->Mknod(root, d->ino, name, S_IFREG | 0644, 0, 0);
      if (!e) _exit(4);
      if (!(*m)->Write(e->ino, 0, 0, Slice{i + 1, 100, 0, 100, 0}, 1).ok()) _exit(5);
      if (i % 3 == 0 && i > 0) {
        if (!(*m)->Unlink(root, d->ino, "f" + std::to_string(i - 1)).ok()) _exit(6);
      }
      if (write(fds[1], &i, sizeof(i)) != sizeof(i)) _exit(7);
    }
  }
  close(fds[1]);
  uint32_t last = 0, v;
  int acks = 0;
  while (acks < 150 && read(fds[0], &v, sizeof(v)) == sizeof(v)) {
    last = v;
    ++acks;
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  ASSERT_EQ(acks, 150) << "child exited early, status " << status;

  ASSERT_OK_AND_ASSIGN(auto m, OpenMeta(url));
  Context root;
  ASSERT_OK_AND_ASSIGN(Entry d, m->Lookup(root, kRootIno, "d"));
  for (uint32_t i = 0; i <= last; ++i) {
    bool unlinked = (i + 1) % 3 == 0 && i + 1 <= last;  // f(i) removed when f(i+1) was created
    auto e = m->Lookup(root, d.ino, "f" + std::to_string(i));
    if (i == last && (i + 1) % 3 == 0) continue;  // the unacked next step may have removed it
    if (unlinked) {
      EXPECT_ERRNO(e, ENOENT);
    } else {
      ASSERT_OK(e) << "f" << i;
      ASSERT_OK_AND_ASSIGN(auto s, m->Read(e->ino, 0));
      ASSERT_EQ(s.size(), 1u);
      EXPECT_EQ(s[0].id, i + 1);
      EXPECT_EQ(e->attr.size, 100u);
    }
  }
  ASSERT_OK_AND_ASSIGN(auto problems, m->Check(CheckOptions{}));
  for (const auto& p : problems) ADD_FAILURE() << "fsck after kill -9: " << p;
}

}  // namespace
}  // namespace strata::fsmeta
