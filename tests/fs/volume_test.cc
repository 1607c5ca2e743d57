// The data path over the real metadata engine (SQLite in a temp dir) and an
// in-memory object store: what the FUSE adapter does for write, truncate,
// punch hole and free, without a mount.
#include <strata/fs/volume.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <random>

#include <gtest/gtest.h>

#include <strata/objstore/object_store.h>

#include "fs/data_io.h"
#include "testutil/testutil.h"

namespace strata::fs {
namespace {

std::string Random(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(g());
  return s;
}

class VolumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = "sqlite3://" + dir_.Join("meta.db");
    // Keep the mem:// store alive across Volume opens.
    keep_ = *objstore::OpenObjectStore("mem://volume-test-" + std::to_string(getpid()));
    auto meta = fsmeta::OpenMeta(url_);
    ASSERT_TRUE(meta.has_value()) << meta.error().ToString();
    fsmeta::Format f;
    f.name = "vt";
    f.uuid = "u";
    f.storage = keep_->url();
    f.block_size = 64 * 1024;
    f.compress = "zstd";
    f.trash_days = 0;
    ASSERT_OK((*meta)->Init(f, false));
    VolumeOptions vo;
    vo.ram_cache_size = 4 << 20;
    auto v = Volume::Open(url_, vo);
    ASSERT_TRUE(v.has_value()) << v.error().ToString();
    vol_ = std::move(*v);
  }

  fsmeta::Ino NewFile(const std::string& name) {
    auto e = vol_->meta()->Create(ctx_, fsmeta::kRootIno, name, S_IFREG | 0644, 022, O_RDWR);
    EXPECT_TRUE(e.has_value()) << e.error().ToString();
    return e ? e->ino : 0;
  }

  std::string ReadAll(fsmeta::Ino ino) {
    auto a = vol_->meta()->GetAttr(ino);
    EXPECT_TRUE(a.has_value());
    std::string out(a->size, '\xee');
    auto n = vol_->data()->Read(ino, 0, out.size(), out.data(), a->size);
    EXPECT_TRUE(n.has_value()) << n.error().ToString();
    return out;
  }

  testing::TempDir dir_;
  std::string url_;
  std::unique_ptr<objstore::ObjectStore> keep_;
  std::unique_ptr<Volume> vol_;
  fsmeta::Context ctx_;
};

TEST_F(VolumeTest, WriteFlushTruncateExtendAndPunch) {
  fsmeta::Ino ino = NewFile("a");
  std::string d = Random(300000, 1);
  ASSERT_OK(vol_->data()->Write(ino, 0, d));
  ASSERT_OK(vol_->data()->Flush(ino));
  ASSERT_OK_AND_ASSIGN(auto attr, vol_->meta()->GetAttr(ino));
  EXPECT_EQ(attr.size, d.size());
  EXPECT_EQ(ReadAll(ino), d);

  fsmeta::Attr t;
  t.size = 100000;
  ASSERT_OK(vol_->meta()->SetAttr(ctx_, ino, fsmeta::kSetSize, t).status());
  vol_->data()->InvalidateSlices(ino);  // as the FUSE adapter does after a truncate
  EXPECT_EQ(ReadAll(ino), d.substr(0, 100000));
  t.size = 150000;  // extending exposes zeros, not the old bytes
  ASSERT_OK(vol_->meta()->SetAttr(ctx_, ino, fsmeta::kSetSize, t).status());
  vol_->data()->InvalidateSlices(ino);
  std::string want = d.substr(0, 100000) + std::string(50000, '\0');
  EXPECT_EQ(ReadAll(ino), want);

  ASSERT_OK(vol_->meta()->Fallocate(ctx_, ino, fsmeta::kFallocPunchHole | fsmeta::kFallocKeepSize, 1000, 5000));
  vol_->data()->InvalidateSlices(ino);
  std::fill(want.begin() + 1000, want.begin() + 6000, '\0');
  EXPECT_EQ(ReadAll(ino), want);

  // Overwrite across the punched range, uncommitted then committed.
  std::string o = Random(20000, 2);
  ASSERT_OK(vol_->data()->Write(ino, 500, o));
  want.replace(500, o.size(), o);
  std::string out(want.size(), '\0');
  ASSERT_OK_AND_ASSIGN(size_t n, vol_->data()->Read(ino, 0, out.size(), out.data(), want.size()));
  EXPECT_EQ(n, want.size());
  EXPECT_EQ(out, want);
  ASSERT_OK(vol_->data()->Flush(ino));
  EXPECT_EQ(ReadAll(ino), want);
}

TEST_F(VolumeTest, FreedFilesObjectsAreDeleted) {
  fsmeta::Ino ino = NewFile("b");
  ASSERT_OK(vol_->data()->Write(ino, 0, Random(200000, 3)));
  ASSERT_OK(vol_->data()->Flush(ino));
  size_t objects = 0;
  ASSERT_OK(vol_->store()->ListAll("vt/chunks/", [&](const objstore::ObjectInfo&) {
    objects++;
    return Status::Ok();
  }));
  EXPECT_EQ(objects, 4u);  // 200000 bytes in blocks of 64 KiB
  ASSERT_OK(vol_->meta()->Close(ino));  // Create opened it
  ASSERT_OK(vol_->meta()->Unlink(ctx_, fsmeta::kRootIno, "b"));
  ASSERT_OK_AND_ASSIGN(size_t freed, vol_->ProcessPendingDeletes());
  EXPECT_EQ(freed, 1u);
  objects = 0;
  ASSERT_OK(vol_->store()->ListAll("vt/chunks/", [&](const objstore::ObjectInfo&) {
    objects++;
    return Status::Ok();
  }));
  EXPECT_EQ(objects, 0u);
}

}  // namespace
}  // namespace strata::fs
