// Encryption at rest (fs/encryption.h): the block seal on its own (round
// trip, wrong key, altered bytes, another object's key), the key check of a
// formatted volume (raw key and passphrase), and a Volume over an in-memory
// store: no plaintext in any object, reads back with the key, EIO-class
// errors (never wrong bytes) for an altered or moved block.
#include <fcntl.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include <strata/core/aead.h>
#include <strata/fs/encryption.h>
#include <strata/fs/volume.h>
#include <strata/objstore/object_store.h>

#include "fs/data_io.h"
#include "testutil/testutil.h"

namespace strata::fs {
namespace {

const std::string kKey(32, 'k');
const std::string kOtherKey(32, 'K');

TEST(SealTest, RoundTripAndFreshNonce) {
  std::string plain = "block bytes \x01\x02\x00 end";
  ASSERT_OK_AND_ASSIGN(std::string a, SealBlock(kKey, "vol/chunks/0/0/1_0_20", plain));
  ASSERT_OK_AND_ASSIGN(std::string b, SealBlock(kKey, "vol/chunks/0/0/1_0_20", plain));
  EXPECT_EQ(a.size(), plain.size() + kSealOverhead);
  EXPECT_NE(a, b);  // a random nonce per seal
  EXPECT_EQ(a.find(plain), std::string::npos);
  ASSERT_OK_AND_ASSIGN(std::string out, OpenBlock(kKey, "vol/chunks/0/0/1_0_20", a));
  EXPECT_EQ(out, plain);
  ASSERT_OK_AND_ASSIGN(std::string empty, SealBlock(kKey, "k", ""));
  ASSERT_OK_AND_ASSIGN(std::string back, OpenBlock(kKey, "k", empty));
  EXPECT_EQ(back, "");
}

TEST(SealTest, WrongKeyTamperedMovedOrShortFail) {
  ASSERT_OK_AND_ASSIGN(std::string s, SealBlock(kKey, "a/chunks/0/0/7_0_5", "hello"));
  EXPECT_EQ(OpenBlock(kOtherKey, "a/chunks/0/0/7_0_5", s).error().code(), StatusCode::kCorruption);
  EXPECT_FALSE(OpenBlock(kKey, "a/chunks/0/0/7_1_5", s).has_value());  // another object's key
  for (size_t i = 0; i < s.size(); i++) {  // any altered byte: nonce, ciphertext or tag
    std::string t = s;
    t[i] ^= 0x01;
    EXPECT_FALSE(OpenBlock(kKey, "a/chunks/0/0/7_0_5", t).has_value()) << "byte " << i;
  }
  EXPECT_FALSE(OpenBlock(kKey, "a/chunks/0/0/7_0_5", s.substr(0, kSealOverhead - 1)).has_value());
  EXPECT_FALSE(OpenBlock(kKey, "a/chunks/0/0/7_0_5", s.substr(0, s.size() - 1)).has_value());
}

TEST(KeyCheckTest, RawKey) {
  fsmeta::Format f;
  f.uuid = "uuid-1";
  ASSERT_OK(SetupEncryption(kKey, &f));
  EXPECT_EQ(f.encrypt, "aes-256-gcm");
  EXPECT_EQ(f.encrypt_salt, "");
  EXPECT_FALSE(f.encrypt_check.empty());
  EXPECT_EQ(f.encrypt_check.find("6b6b6b6b"), std::string::npos);  // not the key in hex
  ASSERT_OK_AND_ASSIGN(std::string bk, DeriveBlockKey(f, kKey));
  EXPECT_EQ(bk.size(), crypto::kAes256KeyBytes);
  EXPECT_NE(bk, kKey);  // derived, not the raw key
  EXPECT_EQ(DeriveBlockKey(f, kOtherKey).error().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(DeriveBlockKey(f, "a passphrase instead").error().code(),
            StatusCode::kPermissionDenied);
  // The same key on another volume gives another block key.
  fsmeta::Format g;
  g.uuid = "uuid-2";
  ASSERT_OK(SetupEncryption(kKey, &g));
  ASSERT_OK_AND_ASSIGN(std::string bk2, DeriveBlockKey(g, kKey));
  EXPECT_NE(bk, bk2);
  fsmeta::Format plain;
  plain.uuid = "u";
  EXPECT_FALSE(DeriveBlockKey(plain, kKey).has_value());
}

TEST(KeyCheckTest, Passphrase) {
  fsmeta::Format f;
  f.uuid = "uuid-1";
  ASSERT_OK(SetupEncryption("correct horse battery staple\n", &f));
  EXPECT_EQ(f.encrypt_salt.size(), 32u);
  ASSERT_OK_AND_ASSIGN(std::string a, DeriveBlockKey(f, "correct horse battery staple\n"));
  ASSERT_OK_AND_ASSIGN(std::string b,
                       DeriveBlockKey(f, "correct horse battery staple"));  // newline ignored
  EXPECT_EQ(a, b);
  EXPECT_EQ(DeriveBlockKey(f, "correct horse battery stapler").error().code(),
            StatusCode::kPermissionDenied);
  fsmeta::Format g;
  g.uuid = "uuid-1";
  EXPECT_EQ(SetupEncryption("short", &g).code(), StatusCode::kInvalidArgument);
}

std::string Pattern(size_t n) {
  std::string s;
  while (s.size() < n) s += "STRATA-PLAINTEXT-PATTERN-0123456789|";
  s.resize(n);
  return s;
}

class EncryptedVolumeTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    url_ = "sqlite3://" + dir_.Join("meta.db");
    keep_ =
        *objstore::OpenObjectStore("mem://enc-test-" + std::to_string(getpid()) + "-" + GetParam());
    key_file_ = dir_.Join("key");
    std::ofstream(key_file_, std::ios::binary) << kKey;
    wrong_file_ = dir_.Join("wrong");
    std::ofstream(wrong_file_, std::ios::binary) << kOtherKey;
    auto meta = fsmeta::OpenMeta(url_);
    ASSERT_TRUE(meta.has_value()) << meta.error().ToString();
    fsmeta::Format f;
    f.name = "ev";
    f.uuid = "uuid-ev";
    f.storage = keep_->url();
    f.block_size = 64 * 1024;
    f.compress = GetParam();
    f.trash_days = 0;
    ASSERT_OK(SetupEncryption(kKey, &f));
    ASSERT_OK((*meta)->Init(f, false));
  }

  Result<std::unique_ptr<Volume>> Open(const std::string& key_file, bool no_key_needed = false) {
    VolumeOptions vo;
    vo.ram_cache_size = 4 << 20;
    vo.encrypt_key_file = key_file;
    vo.no_key_needed = no_key_needed;
    return Volume::Open(url_, vo);
  }

  // Writes `data` to a new file "f" and commits it; returns its inode.
  fsmeta::Ino WriteFile(Volume* v, const std::string& data) {
    auto e = v->meta()->Create(ctx_, fsmeta::kRootIno, "f", S_IFREG | 0644, 022, O_RDWR);
    EXPECT_TRUE(e.has_value()) << e.error().ToString();
    EXPECT_OK(v->data()->Write(e->ino, 0, data));
    EXPECT_OK(v->data()->Flush(e->ino));
    return e->ino;
  }

  std::map<std::string, std::string> Objects() {
    std::map<std::string, std::string> out;
    EXPECT_OK(keep_->ListAll("ev/chunks/", [&](const objstore::ObjectInfo& o) {
      out[o.key] = *keep_->GetBytes(o.key);
      return Status::Ok();
    }));
    return out;
  }

  testing::TempDir dir_;
  std::string url_, key_file_, wrong_file_;
  std::unique_ptr<objstore::ObjectStore> keep_;
  fsmeta::Context ctx_;
};

TEST_P(EncryptedVolumeTest, RefusesMissingOrWrongKey) {
  auto none = Open("");
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(none.error().ToString().find("--encrypt-key-file"), std::string::npos)
      << none.error().ToString();
  auto wrong = Open(wrong_file_);
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(wrong.error().ToString().find("wrong encryption key"), std::string::npos);
  EXPECT_FALSE(Open(dir_.Join("no-such-key")).has_value());
  ASSERT_TRUE(Open(key_file_).has_value());
}

TEST_P(EncryptedVolumeTest, NoPlaintextStoredAndReadsBack) {
  const std::string data = Pattern(200000);  // 4 blocks, the last one short
  fsmeta::Ino ino;
  {
    ASSERT_OK_AND_ASSIGN(auto v, Open(key_file_));
    ino = WriteFile(v.get(), data);
  }
  auto objs = Objects();
  ASSERT_EQ(objs.size(), 4u);
  for (auto& [k, body] : objs) {
    EXPECT_EQ(body.find("STRATA-PLAINTEXT"), std::string::npos) << k;
    if (GetParam() == "none") {
      uint64_t id;
      uint32_t idx, len;
      ASSERT_OK_AND_ASSIGN(auto v, Open("", true));
      ASSERT_TRUE(v->ParseBlockKey(k, &id, &idx, &len));
      EXPECT_EQ(body.size(), len + kSealOverhead) << k;
    }
  }
  ASSERT_OK_AND_ASSIGN(auto v, Open(key_file_));  // fresh caches: the reads decrypt what is stored
  std::string out(data.size(), '\0');
  ASSERT_OK_AND_ASSIGN(size_t n, v->data()->Read(ino, 0, out.size(), out.data(), data.size()));
  EXPECT_EQ(n, data.size());
  EXPECT_EQ(out, data);
  // A part of one block, and across two.
  std::string part(1000, '\0');
  ASSERT_OK(v->data()->Read(ino, 65000, part.size(), part.data(), data.size()).status());
  EXPECT_EQ(part, data.substr(65000, 1000));
}

TEST_P(EncryptedVolumeTest, TamperedOrMovedBlockFailsNeverWrongBytes) {
  const std::string data = Pattern(150000);
  fsmeta::Ino ino;
  {
    ASSERT_OK_AND_ASSIGN(auto v, Open(key_file_));
    ino = WriteFile(v.get(), data);
  }
  auto objs = Objects();
  ASSERT_EQ(objs.size(), 3u);
  auto it = objs.begin();
  const std::string k0 = it->first, b0 = it->second;
  ++it;
  const std::string k1 = it->first;
  auto read = [&](uint64_t off, size_t len) -> Status {
    auto v = Open(key_file_);
    if (!v) return v.error();
    std::string out(len, '\0');
    auto n = (*v)->data()->Read(ino, off, len, out.data(), data.size());
    if (!n) return n.error();
    EXPECT_EQ(out, data.substr(off, len)) << "a read that succeeds must return the right bytes";
    return Status::Ok();
  };
  // Both keys are blocks 0 and 1 of one slice (same length, 64 KiB): find which is which.
  ASSERT_OK(read(0, 100));
  std::string t = b0;
  t[t.size() / 2] ^= 0x40;
  ASSERT_OK(keep_->PutBytes(k0, t).status());
  Status st = read(0, 100);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  // Block 0's (valid) object under block 1's key: the key is the associated data.
  ASSERT_OK(keep_->PutBytes(k0, b0).status());
  ASSERT_OK(keep_->PutBytes(k1, b0).status());
  ASSERT_OK(read(0, 100));
  EXPECT_FALSE(read(65536, 100).ok());
}

TEST_P(EncryptedVolumeTest, MaintenanceOpenWithoutKeyCannotTouchBlocks) {
  ASSERT_OK_AND_ASSIGN(auto v, Open("", true));
  auto e = v->meta()->Create(ctx_, fsmeta::kRootIno, "f", S_IFREG | 0644, 022, O_RDWR);
  ASSERT_TRUE(e.has_value());
  ASSERT_OK(v->data()->Write(e->ino, 0, Pattern(1000)));
  Status st = v->data()->Flush(e->ino);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(Objects().empty());
}

TEST_P(EncryptedVolumeTest, SettingsSurviveReloadAndDumpLoad) {
  ASSERT_OK_AND_ASSIGN(auto v, Open(key_file_));
  const fsmeta::Format f = v->format();
  EXPECT_EQ(f.encrypt, "aes-256-gcm");
  EXPECT_FALSE(f.encrypt_check.empty());
  std::stringstream dump;
  ASSERT_OK(v->meta()->Dump(dump));
  v.reset();
  std::string url2 = "sqlite3://" + dir_.Join("meta2.db");
  {
    auto m2 = fsmeta::OpenMeta(url2);
    ASSERT_TRUE(m2.has_value());
    ASSERT_OK((*m2)->Load(dump));
    ASSERT_OK_AND_ASSIGN(fsmeta::Format g, (*m2)->LoadFormat());
    EXPECT_EQ(g.encrypt, f.encrypt);
    EXPECT_EQ(g.encrypt_salt, f.encrypt_salt);
    EXPECT_EQ(g.encrypt_check, f.encrypt_check);
  }
  VolumeOptions vo;
  EXPECT_FALSE(Volume::Open(url2, vo).has_value());  // the loaded volume still wants its key
  vo.encrypt_key_file = key_file_;
  EXPECT_TRUE(Volume::Open(url2, vo).has_value());
}

INSTANTIATE_TEST_SUITE_P(Compression, EncryptedVolumeTest, ::testing::Values("none", "zstd"));

TEST(PlainVolumeTest, KeyFileForAPlainVolumeIsRefused) {
  testing::TempDir dir;
  std::string url = "sqlite3://" + dir.Join("meta.db");
  auto keep = *objstore::OpenObjectStore("mem://plain-enc-test-" + std::to_string(getpid()));
  auto meta = fsmeta::OpenMeta(url);
  ASSERT_TRUE(meta.has_value());
  fsmeta::Format f;
  f.name = "pv";
  f.uuid = "u";
  f.storage = keep->url();
  f.block_size = 64 * 1024;
  ASSERT_OK((*meta)->Init(f, false));
  std::string kf = dir.Join("key");
  std::ofstream(kf, std::ios::binary) << kKey;
  VolumeOptions vo;
  vo.encrypt_key_file = kf;
  auto v = Volume::Open(url, vo);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::fs
