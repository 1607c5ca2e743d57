#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include <strata/core/fault_injection.h>
#include <strata/core/file_sync.h>
#include <strata/core/file_util.h>

#include "testutil/testutil.h"

namespace strata {
namespace {

using ::strata::testing::ReadFileOrEmpty;
using ::strata::testing::TempDir;

TEST(FileUtilTest, WriteAllAndPreadFullRoundTrip) {
  TempDir dir;
  const std::string path = dir.Join("f");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + 3);
  ASSERT_OK(WriteAll(fd, data.data(), data.size(), path));
  ASSERT_OK(PwriteAll(fd, "XYZ", 3, 10, path));
  data.replace(10, 3, "XYZ");
  std::string back(data.size(), '\0');
  ASSERT_OK(PreadFull(fd, back.data(), back.size(), 0, path));
  EXPECT_EQ(back, data);
  // Past the end: PreadUpTo returns what is there, PreadFull calls it truncation.
  char tail[16];
  ASSERT_OK_AND_ASSIGN(size_t got, PreadUpTo(fd, tail, sizeof tail, data.size() - 5, path));
  EXPECT_EQ(got, 5u);
  Status st = PreadFull(fd, tail, sizeof tail, data.size() - 5, path);
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.ToString();
  ::close(fd);
}

TEST(FileUtilTest, ErrorsNameTheFile) {
  char c;
  Status st = PreadFull(-1, &c, 1, 0, "block 7");
  EXPECT_EQ(st.code(), StatusCode::kIOError);
  EXPECT_NE(st.message().find("block 7"), std::string::npos) << st.ToString();
  EXPECT_FALSE(WriteAll(-1, "x", 1, "y").ok());
  EXPECT_STATUS_CODE(FsyncDir("/nonexistent/dir"), StatusCode::kNotFound);
}

TEST(FileUtilTest, WriteFileAtomicReplacesWholeAndLeavesNoTemp) {
  TempDir dir;
  const std::string path = dir.Join("manifest");
  ASSERT_OK(WriteFileAtomic(path, "first"));
  EXPECT_EQ(ReadFileOrEmpty(path), "first");
  AtomicWriteOptions o;
  o.mode = 0600;
  ASSERT_OK(WriteFileAtomic(path, "second, longer", o));
  ASSERT_OK_AND_ASSIGN(std::string back, ReadFileToString(path));
  EXPECT_EQ(back, "second, longer");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(::access((path + ".tmp").c_str(), F_OK), 0) << "temp file left behind";
  // A target in a missing directory fails and creates nothing.
  EXPECT_FALSE(WriteFileAtomic(dir.Join("no/such/file"), "x").ok());
  EXPECT_STATUS_CODE(ReadFileToString(dir.Join("missing")), StatusCode::kNotFound);
}

TEST(FileUtilTest, FsyncParentDirOfBareAndNestedNames) {
  TempDir dir;
  EXPECT_OK(FsyncParentDir(dir.Join("x")));
  EXPECT_OK(FsyncParentDir("relative-name"));
  EXPECT_OK(FsyncParentDir("/etc"));
}

// The fault-injection seam: a short write puts exactly the bytes asked for on
// disk, then fails with the errno; skip, the path filter and times hold.
TEST(FileUtilTest, InjectedWriteFaults) {
  TempDir dir;
  const std::string path = dir.Join("f");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  const uint64_t before = fault::FaultsInjected();
  fault::InjectWriteFault(
      {.path_contains = "/f", .skip = 1, .err = ENOSPC, .written_first = 3, .times = 1});
  ASSERT_OK(WriteAll(fd, "one", 3, "elsewhere"));  // the filter does not match
  ASSERT_OK(WriteAll(fd, "two", 3, path));         // skipped
  Status st = WriteAll(fd, "three", 5, path);
  EXPECT_EQ(StatusCode::kResourceExhausted, st.code()) << st.ToString();
  EXPECT_NE(std::string::npos, st.ToString().find(path)) << st.ToString();
  EXPECT_EQ(before + 1, fault::FaultsInjected());
  ASSERT_OK(WriteAll(fd, "four", 4, path));  // times = 1: disarmed
  EXPECT_EQ("onetwothrfour", ReadFileOrEmpty(path));
  fault::InjectWriteFault({.err = EIO});
  st = PwriteAll(fd, "x", 1, 0, path);
  EXPECT_EQ(StatusCode::kIOError, st.code()) << st.ToString();
  EXPECT_EQ(StatusCode::kIOError, WriteAll(fd, "y", 1, path).code());
  fault::ClearFaults();
  ASSERT_OK(PwriteAll(fd, "x", 1, 0, path));
  EXPECT_EQ("xnetwothrfour", ReadFileOrEmpty(path));
  ::close(fd);
}

// fsync / fdatasync / directory fsync report an injected EIO naming the
// file; skip, path filter and times as for writes. While tracking un-synced
// writes, the failed file is modelled as Linux leaves it after a failed
// writeback: a later fsync that reports success does not make the bytes
// written before it durable (fsyncgate), so retry-and-pretend is caught.
TEST(FileUtilTest, InjectedSyncFaults) {
  TempDir dir;
  const std::string path = dir.Join("f");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  const uint64_t before = fault::FaultsInjected();
  fault::InjectSyncFault({.path_contains = "/f", .skip = 1, .err = EIO, .times = 1});
  ASSERT_OK(SyncFile(fd, "elsewhere"));  // the filter does not match
  ASSERT_OK(SyncFileData(fd, path));     // skipped
  Status st = SyncFile(fd, path);
  EXPECT_EQ(StatusCode::kIOError, st.code()) << st.ToString();
  EXPECT_NE(std::string::npos, st.ToString().find("fsync " + path)) << st.ToString();
  EXPECT_EQ(before + 1, fault::FaultsInjected());
  ASSERT_OK(SyncFile(fd, path));  // times = 1: disarmed
  fault::InjectSyncFault({});
  st = SyncFileData(fd, path);
  EXPECT_NE(std::string::npos, st.ToString().find("fdatasync " + path)) << st.ToString();
  st = FsyncDir(dir.path());
  EXPECT_NE(std::string::npos, st.ToString().find("fsync directory " + dir.path()))
      << st.ToString();
  fault::ClearFaults();
  ASSERT_OK(FsyncDir(dir.path()));
  ::close(fd);

  fault::TrackUnsyncedWrites(true);
  const std::string g = dir.Join("g");
  const int gd = ::open(g.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(gd, 0);
  ASSERT_OK(WriteAll(gd, "durable.", 8, g));
  ASSERT_OK(SyncFileData(gd, g));
  ASSERT_OK(WriteAll(gd, "lost.", 5, g));
  fault::InjectSyncFault({.path_contains = g, .times = 1});
  EXPECT_FALSE(SyncFileData(gd, g).ok());
  ASSERT_OK(WriteAll(gd, "later.", 6, g));
  ASSERT_OK(SyncFileData(gd, g));  // reports success, saves nothing
  ::close(gd);
  TempDir images;
  ASSERT_OK_AND_ASSIGN(auto stats, fault::WriteCrashImage(dir.path(), images.Join("i")));
  fault::TrackUnsyncedWrites(false);
  EXPECT_EQ("durable.", ReadFileOrEmpty(images.Join("i/g")));
  EXPECT_EQ(11u, stats.bytes_dropped);
}

}  // namespace
}  // namespace strata
