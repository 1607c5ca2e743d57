#include "objstore/record.h"

#include <cstring>
#include <random>

#include <strata/core/coding.h>
#include <strata/core/strings.h>

namespace strata::objstore {
namespace {

// Version 2 of bucket, object and upload records appends a map (bucket
// configs, object internal metadata); version 3 of object records appends the
// version fields to the summary (order, id, delete marker); version 4 appends
// the storage class to it. Older records still decode (as unversioned objects:
// order 0, the null version; STANDARD).
constexpr uint8_t kBucketVersion = 2;
constexpr uint8_t kObjectVersion = 4;
constexpr uint8_t kUploadVersion = 4;  // the summary's layout is the object's of the same version
bool KnownVersion(uint8_t v, uint8_t current) { return v >= 1 && v <= current; }
constexpr uint8_t kPartVersion = 1;
constexpr uint8_t kMaxAlgorithm = static_cast<uint8_t>(ChecksumAlgorithm::kMd5);

class Encoder {
 public:
  explicit Encoder(std::string* out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void Varint(uint64_t v) { PutVarint64(out_, v); }
  void Bytes(std::string_view s) {
    Varint(s.size());
    out_->append(s.data(), s.size());
  }
  void Map(const std::map<std::string, std::string>& m) {
    Varint(m.size());
    for (const auto& [k, v] : m) {
      Bytes(k);
      Bytes(v);
    }
  }

 private:
  std::string* out_;
};

class Decoder {
 public:
  explicit Decoder(std::string_view in) : p_(in.data()), end_(in.data() + in.size()) {}
  bool ok() const { return ok_; }
  bool done() const { return p_ == end_; }
  uint8_t U8() {
    if (p_ == end_) return Fail(), 0;
    return static_cast<uint8_t>(*p_++);
  }
  uint64_t Varint() {
    uint64_t v = 0;
    const char* next = DecodeVarint64(p_, end_, &v);
    if (next == nullptr) return Fail(), 0;
    p_ = next;
    return v;
  }
  std::string_view Bytes() {
    uint64_t n = Varint();
    if (!ok_ || n > static_cast<uint64_t>(end_ - p_)) return Fail(), std::string_view();
    std::string_view s(p_, n);
    p_ += n;
    return s;
  }
  void Str(std::string* out) {
    std::string_view s = Bytes();
    if (out) out->assign(s.data(), s.size());
  }
  void Map(std::map<std::string, std::string>* m) {
    uint64_t n = Varint();
    if (m) m->clear();
    for (uint64_t i = 0; i < n && ok_; ++i) {
      std::string_view k = Bytes();
      std::string_view v = Bytes();
      if (m && ok_) m->emplace(std::string(k), std::string(v));
    }
  }
  ChecksumAlgorithm Algorithm() {
    uint8_t a = U8();
    if (a > kMaxAlgorithm) return Fail(), ChecksumAlgorithm::kNone;
    return static_cast<ChecksumAlgorithm>(a);
  }
  void Fail() { ok_ = false; p_ = end_; }

 private:
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

Status Bad(std::string_view what) {
  return Status::Corruption("metadata record (" + std::string(what) + ") is malformed");
}

// A sealed piece is its kind with this bit set, then the plain fields, then the nonce.
constexpr uint8_t kSealedKindBit = 0x80;

void EncodePiece(Encoder& e, const Piece& p) {
  e.U8(p.sealed ? (p.kind | kSealedKindBit) : p.kind);
  if (p.kind == Piece::kInline) {
    e.Bytes(p.data);
  } else if (p.kind == Piece::kBlob) {
    e.Bytes(p.file.Raw());
    e.Varint(p.length);
  } else {
    e.Bytes(p.file.Raw());
    e.Varint(p.length);
    e.Varint(p.block_size);
  }
  if (p.sealed) e.Varint(p.nonce);
}

bool DecodePlainPiece(Decoder& d, uint8_t kind, Piece* p) {
  if (kind == Piece::kInline) {
    p->kind = Piece::kInline;
    p->data = d.Bytes();
    p->length = p->data.size();
    return d.ok();
  }
  if (kind != Piece::kFile && kind != Piece::kBlob) return false;
  p->kind = static_cast<Piece::Kind>(kind);
  std::string_view raw = d.Bytes();
  if (raw.size() != p->file.bytes.size()) return false;
  std::memcpy(p->file.bytes.data(), raw.data(), raw.size());
  p->length = d.Varint();
  if (kind == Piece::kBlob) return d.ok();
  uint64_t bs = d.Varint();
  if (bs == 0 || bs > UINT32_MAX) return false;
  p->block_size = static_cast<uint32_t>(bs);
  return d.ok();
}

bool DecodePiece(Decoder& d, Piece* p) {
  const uint8_t kind = d.U8();
  p->sealed = (kind & kSealedKindBit) != 0;
  if (!DecodePlainPiece(d, kind & ~kSealedKindBit, p)) return false;
  if (!p->sealed) return true;
  if (p->kind == Piece::kInline) {
    if (p->length < 16) return false;  // the tag
    p->length -= 16;
  }
  p->nonce = d.Varint();
  return d.ok();
}

// Summary part of the object record: what a listing reads.
void EncodeSummary(Encoder& e, const ObjectMeta& m) {
  e.Varint(m.size);
  e.Varint(static_cast<uint64_t>(m.mtime_ns));
  e.Bytes(m.etag);
  e.Bytes(m.owner);
  e.U8(static_cast<uint8_t>(m.checksum_algorithm));
  e.U8(m.checksum_composite ? 1 : 0);
  e.Varint(m.version_order);
  e.Bytes(m.version_id);
  e.U8(m.delete_marker ? 1 : 0);
  e.Bytes(m.storage_class);
}

void DecodeSummary(Decoder& d, ObjectMeta* m, uint8_t version) {
  m->size = d.Varint();
  m->mtime_ns = static_cast<int64_t>(d.Varint());
  d.Str(&m->etag);
  d.Str(&m->owner);
  m->checksum_algorithm = d.Algorithm();
  m->checksum_composite = d.U8() != 0;
  if (version >= 3) {
    m->version_order = d.Varint();
    d.Str(&m->version_id);
    m->delete_marker = d.U8() != 0;
  } else {
    m->version_order = 0;
    m->version_id.clear();
    m->delete_marker = false;
  }
  if (version >= 4)
    d.Str(&m->storage_class);
  else
    m->storage_class.clear();
}

void EncodeRest(Encoder& e, const ObjectMeta& m) {
  e.Bytes(m.content_type);
  e.Bytes(m.checksum);
  e.Map(m.headers);
  e.Map(m.user_meta);
  e.Map(m.tags);
  e.Varint(m.parts.size());
  for (const PartSummary& p : m.parts) {
    e.Varint(static_cast<uint64_t>(p.number));
    e.Varint(p.size);
    e.Bytes(p.etag);
    e.Bytes(p.checksum);
  }
  e.Map(m.internal);
}

// m may be null: the fields are skipped. version: the record's.
void DecodeRest(Decoder& d, ObjectMeta* m, uint8_t version) {
  d.Str(m ? &m->content_type : nullptr);
  d.Str(m ? &m->checksum : nullptr);
  d.Map(m ? &m->headers : nullptr);
  d.Map(m ? &m->user_meta : nullptr);
  d.Map(m ? &m->tags : nullptr);
  uint64_t n = d.Varint();
  if (n > 100000) return d.Fail();
  if (m) {
    m->parts.clear();
    m->parts.reserve(n);
  }
  for (uint64_t i = 0; i < n && d.ok(); ++i) {
    PartSummary p;
    p.number = static_cast<int>(d.Varint());
    p.size = d.Varint();
    d.Str(m ? &p.etag : nullptr);
    d.Str(m ? &p.checksum : nullptr);
    if (m) m->parts.push_back(std::move(p));
  }
  if (version >= 2) d.Map(m ? &m->internal : nullptr);
}

}  // namespace

FileId FileId::Random() {
  thread_local std::mt19937_64 rng = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  FileId id;
  uint64_t a = rng(), b = rng();
  std::memcpy(id.bytes.data(), &a, 8);
  std::memcpy(id.bytes.data() + 8, &b, 8);
  return id;
}

std::string FileId::Hex() const { return HexEncode(Raw()); }

bool FileId::FromHex(std::string_view hex, FileId* out) {
  if (hex.size() != 32) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < 16; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

// ---- keys -------------------------------------------------------------------

std::string BucketKey(std::string_view bucket) {
  std::string k;
  k.reserve(1 + bucket.size());
  k.push_back(kBucketPrefix);
  k.append(bucket);
  return k;
}

std::string ObjectKeyPrefix(std::string_view bucket) {
  std::string k;
  k.reserve(2 + bucket.size());
  k.push_back(kObjectPrefix);
  k.append(bucket);
  k.push_back('\0');
  return k;
}

std::string ObjectKey(std::string_view bucket, std::string_view key) {
  std::string k;
  k.reserve(2 + bucket.size() + key.size());
  k.push_back(kObjectPrefix);
  k.append(bucket);
  k.push_back('\0');
  k.append(key);
  return k;
}

std::string UploadKeyPrefix(std::string_view bucket) {
  std::string k;
  k.push_back(kUploadPrefix);
  k.append(bucket);
  k.push_back('\0');
  return k;
}

std::string UploadKey(std::string_view bucket, std::string_view key, std::string_view upload_id) {
  std::string k = UploadKeyPrefix(bucket);
  k.append(key);
  k.push_back('\0');
  k.append(upload_id);
  return k;
}

std::string PartKeyPrefix(std::string_view upload_id) {
  std::string k;
  k.push_back(kPartPrefix);
  k.append(upload_id);
  k.push_back('\0');
  return k;
}

std::string PartKey(std::string_view upload_id, int part_number) {
  std::string k = PartKeyPrefix(upload_id);
  PutBigEndian32(&k, static_cast<uint32_t>(part_number));
  return k;
}

std::string GarbageKey(const FileId& id) {
  std::string k;
  k.reserve(17);
  k.push_back(kGarbagePrefix);
  k.append(id.Raw());
  return k;
}

std::string VersionKeyPrefix(std::string_view bucket) {
  std::string k;
  k.reserve(2 + bucket.size());
  k.push_back(kVersionPrefix);
  k.append(bucket);
  k.push_back('\0');
  return k;
}

std::string VersionKeyPrefix(std::string_view bucket, std::string_view key) {
  std::string k = VersionKeyPrefix(bucket);
  k.append(key);
  k.push_back('\0');
  return k;
}

std::string VersionKey(std::string_view bucket, std::string_view key, uint64_t order) {
  std::string k = VersionKeyPrefix(bucket, key);
  PutBigEndian64(&k, ~order);
  return k;
}

std::string NullVersionKey(std::string_view bucket, std::string_view key) {
  std::string k;
  k.push_back(kNullVersionPrefix);
  k.append(bucket);
  k.push_back('\0');
  k.append(key);
  return k;
}

std::string VersionIdFromOrder(uint64_t order) {
  std::string raw;
  PutBigEndian64(&raw, ~order);
  return HexEncode(raw);
}

bool OrderFromVersionId(std::string_view id, uint64_t* order) {
  if (id.size() != 16) return false;
  uint64_t v = 0;
  for (char c : id) {
    int n = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (n < 0) return false;
    v = v << 4 | static_cast<uint64_t>(n);
  }
  *order = ~v;
  return *order != 0;
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty()) {
    unsigned char c = static_cast<unsigned char>(s.back());
    if (c != 0xff) {
      s.back() = static_cast<char>(c + 1);
      return s;
    }
    s.pop_back();
  }
  return s;
}

// ---- values -----------------------------------------------------------------

void EncodeBucket(const BucketRecord& r, std::string* out) {
  Encoder e(out);
  e.U8(kBucketVersion);
  e.Varint(static_cast<uint64_t>(r.created_ns));
  e.Bytes(r.owner);
  e.U8(r.public_read ? 1 : 0);
  e.Map(r.configs);
}

Status DecodeBucket(std::string_view in, BucketRecord* r) {
  Decoder d(in);
  const uint8_t version = d.U8();
  if (!KnownVersion(version, kBucketVersion)) return Bad("bucket version");
  r->created_ns = static_cast<int64_t>(d.Varint());
  d.Str(&r->owner);
  r->public_read = d.U8() != 0;
  if (version >= 2) d.Map(&r->configs);
  return d.ok() ? Status::Ok() : Bad("bucket");
}

void EncodeObject(const ObjectMeta& meta, const std::vector<Piece>& pieces, std::string* out) {
  size_t estimate = 64 + meta.etag.size() + meta.owner.size() + meta.content_type.size();
  for (const Piece& p : pieces) estimate += p.kind == Piece::kInline ? p.data.size() + 6 : 36;
  out->reserve(out->size() + estimate);
  Encoder e(out);
  e.U8(kObjectVersion);
  EncodeSummary(e, meta);
  EncodeRest(e, meta);
  e.Varint(pieces.size());
  for (const Piece& p : pieces) EncodePiece(e, p);
}

Status DecodeObject(std::string_view in, ObjectMeta* meta, std::vector<Piece>* pieces) {
  Decoder d(in);
  const uint8_t version = d.U8();
  if (!KnownVersion(version, kObjectVersion)) return Bad("object version");
  DecodeSummary(d, meta, version);
  DecodeRest(d, meta, version);
  if (pieces) {
    uint64_t n = d.Varint();
    if (n > 1000000) return Bad("object pieces");
    pieces->clear();
    pieces->reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      Piece p;
      if (!DecodePiece(d, &p)) return Bad("object piece");
      pieces->push_back(p);
    }
  }
  return d.ok() ? Status::Ok() : Bad("object");
}

Status DecodeObjectSummary(std::string_view in, ObjectMeta* meta) {
  Decoder d(in);
  const uint8_t version = d.U8();
  if (!KnownVersion(version, kObjectVersion)) return Bad("object version");
  DecodeSummary(d, meta, version);
  return d.ok() ? Status::Ok() : Bad("object summary");
}

Status DecodeObjectPieces(std::string_view in, std::vector<Piece>* pieces) {
  Decoder d(in);
  const uint8_t version = d.U8();
  if (!KnownVersion(version, kObjectVersion)) return Bad("object version");
  ObjectMeta scratch;
  DecodeSummary(d, &scratch, version);
  DecodeRest(d, nullptr, version);
  uint64_t n = d.Varint();
  if (!d.ok() || n > 1000000) return Bad("object pieces");
  pieces->clear();
  pieces->reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    Piece p;
    if (!DecodePiece(d, &p)) return Bad("object piece");
    pieces->push_back(p);
  }
  return Status::Ok();
}

void EncodeUpload(const UploadRecord& r, std::string* out) {
  Encoder e(out);
  e.U8(kUploadVersion);
  e.Varint(static_cast<uint64_t>(r.initiated_ns));
  e.U8(static_cast<uint8_t>(r.checksum_algorithm));
  EncodeSummary(e, r.meta);
  EncodeRest(e, r.meta);
}

Status DecodeUpload(std::string_view in, UploadRecord* r) {
  Decoder d(in);
  const uint8_t version = d.U8();
  if (!KnownVersion(version, kUploadVersion)) return Bad("upload version");
  r->initiated_ns = static_cast<int64_t>(d.Varint());
  r->checksum_algorithm = d.Algorithm();
  DecodeSummary(d, &r->meta, version);
  DecodeRest(d, &r->meta, version);
  return d.ok() ? Status::Ok() : Bad("upload");
}

void EncodePart(const PartRecord& r, std::string* out) {
  out->reserve(out->size() + 64 + r.piece.data.size());
  Encoder e(out);
  e.U8(kPartVersion);
  e.Varint(r.size);
  e.Varint(static_cast<uint64_t>(r.mtime_ns));
  e.Bytes(r.etag);
  e.U8(static_cast<uint8_t>(r.checksum_algorithm));
  e.Bytes(r.checksum);
  EncodePiece(e, r.piece);
}

Status DecodePart(std::string_view in, PartRecord* r) {
  Decoder d(in);
  if (d.U8() != kPartVersion) return Bad("part version");
  r->size = d.Varint();
  r->mtime_ns = static_cast<int64_t>(d.Varint());
  d.Str(&r->etag);
  r->checksum_algorithm = d.Algorithm();
  d.Str(&r->checksum);
  if (!DecodePiece(d, &r->piece)) return Bad("part piece");
  return d.ok() ? Status::Ok() : Bad("part");
}

}  // namespace strata::objstore
