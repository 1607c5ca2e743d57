// Fuzzes the sealed segment file reader of the vector engine
// (vector/segment.h SegmentFile::Open: the 64-byte "STRSEG01" header, field
// table, offsets, ids, versions and payloads, then every field's CRC). The
// input is the whole .dat file, written to a temporary file that Open maps.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "vector/segment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp ? tmp : "/tmp") + "/strata_fuzz_segment_" + std::to_string(getpid()) +
           ".dat";
  }();
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd < 0) return 0;
  size_t off = 0;
  while (off < size) {
    ssize_t w = ::write(fd, data + off, size - off);
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
  ::close(fd);
  auto f = strata::vector::internal::SegmentFile::Open(path);
  if (f.has_value()) {
    const auto& s = **f;
    if (s.ids.size() != s.rows() || s.versions.size() != s.rows() || s.payloads.size() != s.rows())
      __builtin_trap();
    for (size_t i = 0; i < s.fields().size(); ++i) (void)s.VerifyField(i);
  }
  return 0;
}
