// Transfer planning (transfer_plan.h), socket-free: filters and path rules,
// what sync copies, skips and deletes in each direction and comparison mode,
// --checksum content comparison against the in-memory store, and how cp
// expands local and object sources.
#include <sys/stat.h>

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <strata/objstore/object_store.h>
#include <strata/objstore/transfer_plan.h>

#include "testutil/testutil.h"

namespace strata::objstore {
namespace {

using strata::testing::TempDir;
using strata::testing::WriteFile;

constexpr int64_t kSec = 1'000'000'000;

// Records what a planner decided, in order.
struct RecordingSink final : TransferPlanSink {
  std::vector<TransferJob> jobs;
  std::vector<std::pair<TransferJob, Status>> rejected;
  std::vector<Status> errors;
  std::vector<std::pair<std::string, std::vector<std::string>>> deleted_objects;
  std::vector<std::string> deleted_files;

  void Transfer(TransferJob job) override { jobs.push_back(std::move(job)); }
  void Reject(const TransferJob& job, const Status& why) override {
    rejected.push_back({job, why});
  }
  void Error(const Status& status) override { errors.push_back(status); }
  void DeleteObjects(const std::string& bucket, std::vector<std::string> keys) override {
    deleted_objects.push_back({bucket, std::move(keys)});
  }
  void DeleteFile(const LocalFile& file) override { deleted_files.push_back(file.path); }

  std::vector<std::string> Keys() const {
    std::vector<std::string> out;
    for (const TransferJob& j : jobs)
      out.push_back(j.kind == TransferJob::kCopy ? j.dst_key : j.key);
    return out;
  }
  std::vector<std::string> Locals() const {
    std::vector<std::string> out;
    for (const TransferJob& j : jobs) out.push_back(j.local);
    return out;
  }
};

ObjectInfo Obj(std::string key, uint64_t size, int64_t mtime_s, std::string etag = "e") {
  ObjectInfo o;
  o.key = std::move(key);
  o.size = size;
  o.mtime_ns = mtime_s * kSec;
  o.etag = std::move(etag);
  return o;
}

LocalFile File(std::string rel, uint64_t size, int64_t mtime_s) {
  LocalFile f;
  f.path = "/src/" + rel;
  f.rel = std::move(rel);
  f.size = size;
  f.mtime_ns = mtime_s * kSec + 123;  // sub-second parts do not count
  return f;
}

TEST(TransferPlanTest, FilterLastMatchWins) {
  PathFilter f;
  EXPECT_TRUE(f.empty());
  EXPECT_TRUE(f.Included("anything"));
  f.Add(false, "*.tmp");
  f.Add(true, "keep/*.tmp");
  EXPECT_FALSE(f.empty());
  EXPECT_FALSE(f.Included("a.tmp"));
  EXPECT_FALSE(f.Included("dir/a.tmp"));  // '*' matches '/'
  EXPECT_TRUE(f.Included("keep/a.tmp"));
  EXPECT_TRUE(f.Included("a.txt"));
}

TEST(TransferPlanTest, PathRules) {
  EXPECT_EQ(JoinKey("", "a"), "a");
  EXPECT_EQ(JoinKey("p", "a"), "p/a");
  EXPECT_EQ(JoinKey("p/", "a"), "p/a");
  EXPECT_EQ(JoinPath("/d/", "a/b"), "/d/a/b");
  EXPECT_EQ(DirPrefix("a"), "a/");
  EXPECT_EQ(DirPrefix("a/"), "a/");
  EXPECT_EQ(DirPrefix(""), "");
  EXPECT_EQ(BaseName("a/b/"), "b");
  EXPECT_EQ(BaseName("b"), "b");
  EXPECT_EQ(SafeRel("a/b"), "a/b");
  for (const char* bad : {"", "a/", "/a", "../x", "a/../b", "a//b", "./a"}) {
    EXPECT_FALSE(SafeRel(bad)) << bad;
  }
  EXPECT_TRUE(HasWildcard("a*"));
  EXPECT_FALSE(HasWildcard("a/b"));
  EXPECT_EQ(LiteralPrefix("logs/2024-*.gz"), "logs/2024-");
  EXPECT_EQ(S3Url("b", "k"), "s3://b/k");
}

TEST(TransferPlanTest, CopyTargetPlacesIntoDirectoriesAndPrefixes) {
  CopyTarget one{true, "b", "dst.bin", false};
  EXPECT_EQ(one.For("src/a.bin", false), "dst.bin");
  EXPECT_EQ(one.For("x/y", true), "dst.bin/x/y");
  CopyTarget prefix{true, "b", "p/", false};
  EXPECT_EQ(prefix.For("src/a.bin", false), "p/a.bin");
  CopyTarget many{true, "b", "p", true};
  EXPECT_EQ(many.For("src/a.bin", false), "p/a.bin");
  TempDir dir;
  CopyTarget local{false, "", dir.path(), false};
  EXPECT_EQ(local.For("k/a.bin", false), dir.path() + "/a.bin");  // an existing directory
  CopyTarget local_file{false, "", dir.Join("out.bin"), false};
  EXPECT_EQ(local_file.For("k/a.bin", false), dir.Join("out.bin"));
}

TEST(TransferPlanTest, SyncUploadSkipsEqualObjectsAndCopiesChangedOnes) {
  const std::vector<LocalFile> files = {File("new.txt", 5, 100),    File("same.txt", 5, 100),
                                        File("older.txt", 5, 90),   File("newer.txt", 5, 110),
                                        File("resized.txt", 6, 90), File("skip.tmp", 1, 100)};
  const std::map<std::string, ObjectInfo> remote = {{"same.txt", Obj("p/same.txt", 5, 100)},
                                                    {"older.txt", Obj("p/older.txt", 5, 100)},
                                                    {"newer.txt", Obj("p/newer.txt", 5, 100)},
                                                    {"resized.txt", Obj("p/resized.txt", 5, 100)},
                                                    {"gone.txt", Obj("p/gone.txt", 1, 100)}};
  PathFilter filter;
  filter.Add(false, "*.tmp");

  RecordingSink sink;
  PlanSyncUpload(files, remote, "b", "p/", filter, {}, sink);
  EXPECT_EQ(sink.Keys(), (std::vector<std::string>{"p/new.txt", "p/newer.txt", "p/resized.txt"}));
  for (const TransferJob& j : sink.jobs) {
    EXPECT_EQ(j.kind, TransferJob::kUpload);
    EXPECT_EQ(j.bucket, "b");
    EXPECT_EQ(j.local, "/src/" + j.key.substr(2));
    EXPECT_FALSE(j.compare_local);
  }
  EXPECT_TRUE(sink.deleted_objects.empty());  // no --delete

  SyncOptions size_only;
  size_only.compare = SyncCompare::kSizeOnly;
  size_only.delete_extra = true;
  RecordingSink sized;
  PlanSyncUpload(files, remote, "b", "p/", filter, size_only, sized);
  EXPECT_EQ(sized.Keys(), (std::vector<std::string>{"p/new.txt", "p/resized.txt"}));
  ASSERT_EQ(sized.deleted_objects.size(), 1u);
  EXPECT_EQ(sized.deleted_objects[0].first, "b");
  EXPECT_EQ(sized.deleted_objects[0].second, (std::vector<std::string>{"p/gone.txt"}));
}

TEST(TransferPlanTest, SyncUploadWithChecksumComparesEqualSizesOnThePool) {
  const std::vector<LocalFile> files = {File("a", 5, 100), File("b", 6, 100)};
  const std::map<std::string, ObjectInfo> remote = {{"a", Obj("a", 5, 200)},
                                                    {"b", Obj("b", 5, 200)}};
  SyncOptions o;
  o.compare = SyncCompare::kChecksum;
  RecordingSink sink;
  PlanSyncUpload(files, remote, "b", "", PathFilter(), o, sink);
  ASSERT_EQ(sink.jobs.size(), 2u);
  ASSERT_TRUE(sink.jobs[0].compare_local);  // same size: hash it before deciding
  EXPECT_EQ(sink.jobs[0].compare_local->path, "/src/a");
  ASSERT_TRUE(sink.jobs[0].compare_remote);
  EXPECT_EQ(sink.jobs[0].compare_remote->key, "a");
  EXPECT_FALSE(sink.jobs[1].compare_local);  // sizes differ: just copy it
}

TEST(TransferPlanTest, SyncDownloadComparesMtimesAndDeletesExtraFiles) {
  const std::map<std::string, ObjectInfo> remote = {{"same", Obj("p/same", 3, 100)},
                                                    {"touched", Obj("p/touched", 3, 100)},
                                                    {"new", Obj("p/new", 3, 100)},
                                                    {"a/../../evil", Obj("p/a/../../evil", 1, 1)}};
  std::vector<LocalFile> local = {File("same", 3, 100), File("touched", 3, 99), File("extra", 1, 1),
                                  File("keep.tmp", 1, 1)};
  PathFilter filter;
  filter.Add(false, "*.tmp");
  SyncOptions o;
  o.delete_extra = true;
  RecordingSink sink;
  PlanSyncDownload(remote, "b", local, "/dst", filter, o, sink);
  EXPECT_EQ(sink.Locals(), (std::vector<std::string>{"/dst/new", "/dst/touched"}));
  for (const TransferJob& j : sink.jobs) {
    EXPECT_EQ(j.kind, TransferJob::kDownload);
    ASSERT_TRUE(j.info);
    EXPECT_EQ(j.info->key, j.key);
  }
  ASSERT_EQ(sink.rejected.size(), 1u);
  EXPECT_EQ(sink.rejected[0].first.key, "p/a/../../evil");
  EXPECT_EQ(sink.rejected[0].first.local, "");
  EXPECT_EQ(sink.rejected[0].second.code(), StatusCode::kInvalidArgument);
  // Only what SRC lacks and the filter covers.
  EXPECT_EQ(sink.deleted_files, (std::vector<std::string>{"/src/extra"}));
}

TEST(TransferPlanTest, SyncCopyComparesEtagsWithChecksum) {
  const std::map<std::string, ObjectInfo> src = {{"x", Obj("s/x", 4, 200, "e1")},
                                                 {"y", Obj("s/y", 4, 200, "e2")},
                                                 {"z", Obj("s/z", 4, 200, "e3")}};
  const std::map<std::string, ObjectInfo> dst = {{"x", Obj("d/x", 4, 300, "e1")},
                                                 {"y", Obj("d/y", 4, 300, "other")},
                                                 {"w", Obj("d/w", 4, 300, "e4")}};
  RecordingSink by_time;
  PlanSyncCopy(src, "sb", dst, "db", "d/", {}, by_time);
  EXPECT_EQ(by_time.Keys(), (std::vector<std::string>{"d/z"}));  // dst is newer for x and y
  EXPECT_EQ(by_time.jobs[0].bucket, "sb");
  EXPECT_EQ(by_time.jobs[0].key, "s/z");
  EXPECT_EQ(by_time.jobs[0].dst_bucket, "db");

  SyncOptions o;
  o.compare = SyncCompare::kChecksum;
  o.delete_extra = true;
  RecordingSink by_etag;
  PlanSyncCopy(src, "sb", dst, "db", "d/", o, by_etag);
  EXPECT_EQ(by_etag.Keys(), (std::vector<std::string>{"d/y", "d/z"}));
  ASSERT_EQ(by_etag.deleted_objects.size(), 1u);
  EXPECT_EQ(by_etag.deleted_objects[0].second, (std::vector<std::string>{"d/w"}));
}

class TransferPlanStoreTest : public ::testing::Test {
 protected:
  void Put(const std::string& key, const std::string& data) {
    ASSERT_TRUE(store_->PutBytes(key, data).ok()) << key;
  }

  std::unique_ptr<ObjectStore> store_ = NewMemObjectStore("transfer-plan");
  TempDir dir_{"strata-transfer-plan-test"};
};

TEST_F(TransferPlanStoreTest, ListForSyncSkipsMarkersAndFilteredPaths) {
  Put("p/a", "1");
  Put("p/dir/", "");
  Put("p/dir/b", "22");
  Put("p/c.tmp", "3");
  Put("q/other", "4");
  PathFilter filter;
  filter.Add(false, "*.tmp");
  std::map<std::string, ObjectInfo> out;
  ASSERT_OK(ListForSync(*store_, "p/", filter, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out["a"].key, "p/a");
  EXPECT_EQ(out["dir/b"].size, 2u);
}

TEST_F(TransferPlanStoreTest, SameContentHashesTheLocalFile) {
  const std::string data = "the same bytes";
  Put("k", data);
  auto info = store_->Head("k");
  ASSERT_TRUE(info.ok());
  const std::string same = dir_.Join("same"), other = dir_.Join("other");
  ASSERT_TRUE(WriteFile(same, data));
  ASSERT_TRUE(WriteFile(other, "the other byte"));  // same size
  auto f = StatLocal(same);
  auto g = StatLocal(other);
  ASSERT_TRUE(f.ok() && g.ok());
  auto r = SameContent(*f, *info, *store_, "k", 8 << 20);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r);
  r = SameContent(*g, *info, *store_, "k", 8 << 20);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_FALSE(*r);
}

TEST_F(TransferPlanStoreTest, SameContentRecomputesAMultipartEtag) {
  // No stored checksum: only the multipart ETag can tell.
  constexpr uint64_t kPart = 5 << 20;
  std::string data(kPart + 1000, 'a');
  for (size_t i = 0; i < data.size(); i += 4096) data[i] = static_cast<char>(i / 4096);
  WriteOptions w;
  w.checksum = ChecksumAlgorithm::kNone;
  auto id = store_->CreateMultipart("big", w);
  ASSERT_TRUE(id.ok());
  std::vector<UploadedPart> parts;
  for (uint64_t off = 0, n = 1; off < data.size(); off += kPart, ++n) {
    const std::string_view piece = std::string_view(data).substr(off, kPart);
    StringSource src(piece);
    auto p = store_->UploadPart("big", *id, static_cast<int>(n), src, piece.size());
    ASSERT_TRUE(p.ok()) << p.error().ToString();
    parts.push_back(*p);
  }
  ASSERT_TRUE(store_->CompleteMultipart("big", *id, parts).ok());
  auto info = store_->Head("big");
  ASSERT_TRUE(info.ok());
  ASSERT_NE(info->etag.find('-'), std::string::npos);
  ASSERT_TRUE(info->checksum.empty());

  const std::string same = dir_.Join("same"), other = dir_.Join("other");
  ASSERT_TRUE(WriteFile(same, data));
  data[kPart + 10] = 'b';
  ASSERT_TRUE(WriteFile(other, data));
  auto f = StatLocal(same);
  auto g = StatLocal(other);
  ASSERT_TRUE(f.ok() && g.ok());
  auto r = SameContent(*f, *info, *store_, "big", kPart);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r);
  r = SameContent(*g, *info, *store_, "big", kPart);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_FALSE(*r);
}

TEST_F(TransferPlanStoreTest, CopyFromStoreExpandsPrefixesAndPatterns) {
  Put("logs/a.gz", "1");
  Put("logs/b.gz", "22");
  Put("logs/c.txt", "3");
  Put("logs/sub/", "");
  Put("logs/sub/d.gz", "4");
  PathFilter none;
  CopyTarget s3_dst{true, "dst", "backup/", false};

  RecordingSink tree;
  ASSERT_OK(PlanCopyFromStore(*store_, "src", "logs", /*recursive=*/true, s3_dst, none, tree));
  EXPECT_EQ(tree.Keys(), (std::vector<std::string>{"backup/a.gz", "backup/b.gz", "backup/c.txt",
                                                   "backup/sub/", "backup/sub/d.gz"}));
  EXPECT_EQ(tree.jobs[0].kind, TransferJob::kCopy);
  EXPECT_EQ(tree.jobs[1].size, 2u);
  ASSERT_TRUE(tree.jobs[1].info);

  RecordingSink pattern;
  ASSERT_OK(PlanCopyFromStore(*store_, "src", "logs/*.gz", false, s3_dst, none, pattern));
  EXPECT_EQ(pattern.Keys(),
            (std::vector<std::string>{"backup/a.gz", "backup/b.gz", "backup/sub/d.gz"}));

  // To a local directory: markers are skipped, not rejected.
  CopyTarget local{false, "", dir_.path(), false};
  RecordingSink down;
  ASSERT_OK(PlanCopyFromStore(*store_, "src", "logs/", true, local, none, down));
  EXPECT_EQ(down.Locals(), (std::vector<std::string>{dir_.Join("a.gz"), dir_.Join("b.gz"),
                                                     dir_.Join("c.txt"), dir_.Join("sub/d.gz")}));
  EXPECT_TRUE(down.rejected.empty());

  RecordingSink nothing;
  ASSERT_OK(PlanCopyFromStore(*store_, "src", "logs/*.zip", false, s3_dst, none, nothing));
  EXPECT_TRUE(nothing.jobs.empty());
  ASSERT_EQ(nothing.errors.size(), 1u);
  EXPECT_EQ(nothing.errors[0].code(), StatusCode::kNotFound);
  EXPECT_EQ(nothing.errors[0].message(), "no object matches s3://src/logs/*.zip");
}

TEST_F(TransferPlanStoreTest, CopyFromStoreOfOneKey) {
  Put("a.bin", "abc");
  CopyTarget local{false, "", dir_.path(), false};
  RecordingSink one;
  ASSERT_OK(PlanCopyFromStore(*store_, "b", "a.bin", false, local, PathFilter(), one));
  ASSERT_EQ(one.jobs.size(), 1u);
  EXPECT_EQ(one.jobs[0].kind, TransferJob::kDownload);
  EXPECT_EQ(one.jobs[0].local, dir_.Join("a.bin"));
  EXPECT_EQ(one.jobs[0].size, 3u);

  RecordingSink missing;
  ASSERT_OK(PlanCopyFromStore(*store_, "b", "nope", false, local, PathFilter(), missing));
  ASSERT_EQ(missing.rejected.size(), 1u);
  EXPECT_EQ(missing.rejected[0].first.key, "nope");
  EXPECT_EQ(missing.rejected[0].second.code(), StatusCode::kNotFound);

  RecordingSink prefix;
  ASSERT_OK(PlanCopyFromStore(*store_, "b", "dir/", false, local, PathFilter(), prefix));
  ASSERT_EQ(prefix.errors.size(), 1u);
  EXPECT_EQ(prefix.errors[0].message(), "s3://b/dir/ names a prefix (use --recursive)");
}

TEST_F(TransferPlanStoreTest, CopyFromLocalWalksDirectoriesAndGlobs) {
  ASSERT_EQ(::mkdir(dir_.Join("data").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(dir_.Join("data/sub").c_str(), 0755), 0);
  ASSERT_TRUE(WriteFile(dir_.Join("data/x.bin"), "x"));
  ASSERT_TRUE(WriteFile(dir_.Join("data/y.tmp"), "y"));
  ASSERT_TRUE(WriteFile(dir_.Join("data/sub/z.bin"), "zz"));
  PathFilter filter;
  filter.Add(false, "*.tmp");
  CopyTarget dst{true, "b", "up", false};

  RecordingSink tree;
  PlanCopyFromLocal(dir_.Join("data"), /*recursive=*/true, dst, filter, tree);
  EXPECT_EQ(tree.Keys(), (std::vector<std::string>{"up/sub/z.bin", "up/x.bin"}));
  EXPECT_EQ(tree.jobs[0].local, dir_.Join("data/sub/z.bin"));
  EXPECT_EQ(tree.jobs[0].size, 2u);

  RecordingSink not_recursive;
  PlanCopyFromLocal(dir_.Join("data"), false, dst, filter, not_recursive);
  EXPECT_TRUE(not_recursive.jobs.empty());
  ASSERT_EQ(not_recursive.errors.size(), 1u);
  EXPECT_EQ(not_recursive.errors[0].code(), StatusCode::kInvalidArgument);

  RecordingSink glob;
  PlanCopyFromLocal(dir_.Join("data/*.*"), false, dst, filter, glob);
  EXPECT_EQ(glob.Keys(), (std::vector<std::string>{"up/x.bin"}));  // y.tmp filtered by name

  RecordingSink missing;
  PlanCopyFromLocal(dir_.Join("nope"), false, dst, filter, missing);
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_EQ(missing.errors[0].code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace strata::objstore
