// Power loss under the object engine, simulated by core's fault-injection
// seam: with fault::TrackUnsyncedWrites on, the engine's data files and its
// RocksDB metadata report what they have synced, and WriteCrashImage copies
// the store as a power cut would leave it. Every acknowledged write survives,
// and a data file already renamed into data/ when the power went (before its
// commit) is removed at the next Open instead of leaking.
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include <strata/core/fault_injection.h>
#include <strata/objstore/local_engine.h>

#include "testutil/testutil.h"

namespace strata::objstore {
namespace {

namespace fs = std::filesystem;

class StringSource : public ByteSource {
 public:
  explicit StringSource(std::string data) : data_(std::move(data)) {}
  Result<size_t> Read(char* buf, size_t n) override {
    const size_t m = std::min({n, size_t{65536}, data_.size() - pos_});
    std::memcpy(buf, data_.data() + pos_, m);
    pos_ += m;
    return m;
  }

 private:
  std::string data_;
  size_t pos_ = 0;
};

class StringSink : public ChunkSink {
 public:
  Status WriteMemory(const char* data, size_t n) override {
    out.append(data, n);
    return Status::Ok();
  }
  Status WriteFile(int fd, uint64_t offset, uint64_t n) override {
    const size_t old = out.size();
    out.resize(old + n);
    if (::pread(fd, out.data() + old, n, static_cast<off_t>(offset)) != static_cast<ssize_t>(n)) {
      return Status::IOError("short pread in test sink");
    }
    return Status::Ok();
  }
  std::string out;
};

std::string Body(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 131 + (i >> 9));
  return s;
}

size_t FilesUnder(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) n += e.is_regular_file();
  return n;
}

class EnginePowerLossTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fault::TrackUnsyncedWrites(true);
    options_.data_dir = dir_.Join("store");
    options_.sync = true;
    ASSERT_OK_AND_ASSIGN(engine_, LocalEngine::Open(options_));
    ASSERT_OK(engine_->CreateBucket("b", "alice"));
  }
  void TearDown() override {
    engine_.reset();
    fault::TrackUnsyncedWrites(false);
  }
  Result<ObjectMeta> Put(LocalEngine& e, std::string_view key, std::string data,
                         PutOptions options = {}) {
    StringSource src(std::move(data));
    return e.PutObject("b", key, src, options);
  }
  Result<std::string> Get(LocalEngine& e, std::string_view key) {
    STRATA_ASSIGN_OR_RETURN(auto r, e.OpenObject("b", key));
    StringSink sink;
    STRATA_RETURN_IF_ERROR(r->Stream(0, UINT64_MAX, sink));
    return sink.out;
  }
  Result<std::unique_ptr<LocalEngine>> OpenImage() {
    EngineOptions o = options_;
    o.data_dir = image_;
    return LocalEngine::Open(o);
  }
  ::strata::testing::TempDir dir_;
  const std::string image_ = dir_.Join("after-power-loss");
  EngineOptions options_;
  std::unique_ptr<LocalEngine> engine_;
};

TEST_F(EnginePowerLossTest, AcknowledgedWritesSurvive) {
  const std::string tiny = "tiny", blob = Body(200 << 10, 'b'), big = Body(3 << 20, 'c');
  ASSERT_OK(Put(*engine_, "tiny", tiny).status());
  ASSERT_OK(Put(*engine_, "blob", Body(100, 'x')).status());
  ASSERT_OK(Put(*engine_, "blob", blob).status());  // overwrite: the old version goes
  ASSERT_OK(Put(*engine_, "big", big).status());
  ASSERT_OK(Put(*engine_, "gone", Body(1 << 20, 'g')).status());
  ASSERT_OK(engine_->DeleteObject("b", "gone"));
  ASSERT_OK_AND_ASSIGN(fault::CrashImageStats st,
                       fault::WriteCrashImage(options_.data_dir, image_));
  EXPECT_GT(st.files, 3u);
  ASSERT_OK_AND_ASSIGN(auto after, OpenImage());
  ASSERT_OK_AND_ASSIGN(std::string got, Get(*after, "tiny"));
  EXPECT_EQ(tiny, got);
  ASSERT_OK_AND_ASSIGN(got, Get(*after, "blob"));
  EXPECT_TRUE(got == blob);
  ASSERT_OK_AND_ASSIGN(got, Get(*after, "big"));
  EXPECT_TRUE(got == big);
  EXPECT_EQ(StatusCode::kNotFound, after->HeadObject("b", "gone").status().code());
  // Only the two live file-backed bodies remain (blob's 100 bytes were inline).
  EXPECT_EQ(2u, FilesUnder(image_ + "/data"));
}

// The power goes after the new data file is written, fsynced and renamed into
// data/, before the commit (PutOptions::before_commit runs exactly there).
TEST_F(EnginePowerLossTest, DataFileRenamedButNotCommittedIsRemovedAtOpen) {
  const std::string v1 = Body(1 << 20, 'a');
  ASSERT_OK(Put(*engine_, "k", v1).status());
  const size_t live_files = FilesUnder(options_.data_dir + "/data");
  ASSERT_EQ(1u, live_files);
  PutOptions o;
  Status image_status = Status::Internal("before_commit did not run");
  o.before_commit = [&](const WriteDigest&, ObjectMeta&) {
    EXPECT_EQ(live_files + 1, FilesUnder(options_.data_dir + "/data"));
    image_status = fault::WriteCrashImage(options_.data_dir, image_).status();
    return Status::Unavailable("power cut (test)");
  };
  auto r = Put(*engine_, "k", Body(1 << 20, 'q'), o);
  ASSERT_FALSE(r.ok());
  ASSERT_OK(image_status);
  ASSERT_EQ(live_files + 1, FilesUnder(image_ + "/data"));
  ASSERT_OK_AND_ASSIGN(auto after, OpenImage());
  EXPECT_EQ(1u, after->GetStats().orphans_removed_at_open);
  EXPECT_EQ(live_files, FilesUnder(image_ + "/data")) << "the uncommitted data file leaked";
  ASSERT_OK_AND_ASSIGN(std::string got, Get(*after, "k"));
  EXPECT_TRUE(got == v1);
}

}  // namespace
}  // namespace strata::objstore
