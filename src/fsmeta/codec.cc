#include "fsmeta/codec.h"

#include <cerrno>
#include <cstring>

#include <strata/core/coding.h>

#include "fsmeta/kv.h"

namespace strata::fsmeta {

bool IsGroupedType(char type) {
  switch (type) {
    case 'D': case 'C': case 'X': case 'F': case 'L': case 'U': case 'H': case 'E': case 'Q': case 'P':
      return true;
    default: return false;
  }
}

namespace codec {

std::string EncodeAttr(const Attr& a) {
  std::string s(kAttrLen, '\0');
  char* p = s.data();
  EncodeFixed32(p, a.mode);
  EncodeFixed32(p + 4, a.uid);
  EncodeFixed32(p + 8, a.gid);
  EncodeFixed32(p + 12, a.nlink);
  EncodeFixed64(p + 16, a.size);
  EncodeFixed64(p + 24, a.rdev);
  EncodeFixed64(p + 32, static_cast<uint64_t>(a.atime_ns));
  EncodeFixed64(p + 40, static_cast<uint64_t>(a.mtime_ns));
  EncodeFixed64(p + 48, static_cast<uint64_t>(a.ctime_ns));
  EncodeFixed64(p + 56, a.parent);
  return s;
}

bool DecodeAttr(std::string_view s, Attr* a) {
  if (s.size() != kAttrLen) return false;
  const char* p = s.data();
  a->mode = DecodeFixed32(p);
  a->uid = DecodeFixed32(p + 4);
  a->gid = DecodeFixed32(p + 8);
  a->nlink = DecodeFixed32(p + 12);
  a->size = DecodeFixed64(p + 16);
  a->rdev = DecodeFixed64(p + 24);
  a->atime_ns = static_cast<int64_t>(DecodeFixed64(p + 32));
  a->mtime_ns = static_cast<int64_t>(DecodeFixed64(p + 40));
  a->ctime_ns = static_cast<int64_t>(DecodeFixed64(p + 48));
  a->parent = DecodeFixed64(p + 56);
  return true;
}

void AppendSlice(std::string* s, const Slice& sl) {
  char b[kSliceLen];
  EncodeFixed64(b, sl.id);
  EncodeFixed32(b + 8, sl.size);
  EncodeFixed32(b + 12, sl.off);
  EncodeFixed32(b + 16, sl.len);
  EncodeFixed32(b + 20, sl.pos);
  s->append(b, kSliceLen);
}

std::string EncodeSlices(const std::vector<Slice>& slices) {
  std::string s;
  s.reserve(slices.size() * kSliceLen);
  for (const auto& sl : slices) AppendSlice(&s, sl);
  return s;
}

bool DecodeSlices(std::string_view s, std::vector<Slice>* out) {
  out->clear();
  if (s.size() % kSliceLen != 0) return false;
  out->reserve(s.size() / kSliceLen);
  for (size_t i = 0; i < s.size(); i += kSliceLen) {
    const char* p = s.data() + i;
    Slice sl;
    sl.id = DecodeFixed64(p);
    sl.size = DecodeFixed32(p + 8);
    sl.off = DecodeFixed32(p + 12);
    sl.len = DecodeFixed32(p + 16);
    sl.pos = DecodeFixed32(p + 20);
    out->push_back(sl);
  }
  return true;
}

std::string EncodePlocks(const std::vector<PlockRange>& r) {
  std::string s;
  for (const auto& x : r) {
    char b[24];
    EncodeFixed32(b, x.type);
    EncodeFixed64(b + 4, x.start);
    EncodeFixed64(b + 12, x.end);
    EncodeFixed32(b + 20, x.pid);
    s.append(b, 24);
  }
  return s;
}

std::vector<PlockRange> DecodePlocks(std::string_view s) {
  std::vector<PlockRange> out;
  for (size_t i = 0; i + 24 <= s.size(); i += 24) {
    const char* p = s.data() + i;
    out.push_back({DecodeFixed32(p), DecodeFixed64(p + 4), DecodeFixed64(p + 12), DecodeFixed32(p + 20)});
  }
  return out;
}

}  // namespace codec
}  // namespace strata::fsmeta
