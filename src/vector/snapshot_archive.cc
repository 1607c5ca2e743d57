#include "vector/snapshot_archive.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include <strata/core/file_util.h>

namespace strata::vector::internal {
namespace {

namespace fs = std::filesystem;
constexpr size_t kBlock = 512;

void Octal(char* field, size_t width, uint64_t v) {
  std::string s = fmt::format("{:0{}o}", v, width - 1);
  std::memcpy(field, s.data(), std::min(s.size(), width - 1));
  field[width - 1] = '\0';
}

std::string Header(const std::string& name, uint64_t size, bool dir) {
  std::string h(kBlock, '\0');
  std::memcpy(h.data(), name.data(), name.size());
  Octal(&h[100], 8, dir ? 0755 : 0644);
  Octal(&h[108], 8, 0);
  Octal(&h[116], 8, 0);
  Octal(&h[124], 12, size);
  Octal(&h[136], 12, 0);
  h[156] = dir ? '5' : '0';
  std::memcpy(&h[257], "ustar", 6);
  std::memcpy(&h[263], "00", 2);
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  Octal(&h[148], 7, sum);
  h[155] = ' ';
  return h;
}

Result<uint64_t> ParseOctal(const char* p, size_t n) {
  uint64_t v = 0;
  size_t i = 0;
  while (i < n && (p[i] == ' ' || p[i] == '\0')) ++i;
  for (; i < n && p[i] >= '0' && p[i] <= '7'; ++i) v = v * 8 + uint64_t(p[i] - '0');
  for (; i < n; ++i) {
    if (p[i] != ' ' && p[i] != '\0') return Status::Corruption("bad octal field in the archive");
  }
  return v;
}

bool SafePath(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  for (const auto& part : fs::path(p)) {
    if (part == "..") return false;
  }
  return true;
}

}  // namespace

Status WriteSnapshotArchive(const std::string& dir, const std::string& out) {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) entries.push_back(e.path());
  if (ec) return Status::IOError(fmt::format("cannot list {}: {}", dir, ec.message()));
  std::sort(entries.begin(), entries.end());
  const std::string tmp = out + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + tmp);
  auto fail = [&](Status st) {
    AbandonTempFile(fd, tmp);
    return st;
  };
  std::vector<char> buf(1 << 20);
  for (const auto& p : entries) {
    const bool is_dir = fs::is_directory(p, ec);
    std::string rel = fs::relative(p, dir, ec).generic_string();
    if (is_dir) rel += "/";
    if (rel.size() >= 100)
      return fail(Status::NotSupported(fmt::format("snapshot path {} is too long", rel)));
    const uint64_t size = is_dir ? 0 : fs::file_size(p, ec);
    if (ec)
      return fail(Status::IOError(fmt::format("cannot stat {}: {}", p.string(), ec.message())));
    std::string h = Header(rel, size, is_dir);
    if (Status w = WriteAll(fd, h.data(), h.size(), tmp); !w.ok()) return fail(w);
    if (is_dir) continue;
    int in = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) return fail(Status::FromErrno(errno, "open " + p.string()));
    uint64_t done = 0;
    Status st;
    while (done < size && st.ok()) {
      auto n =
          PreadUpTo(in, buf.data(), std::min<uint64_t>(buf.size(), size - done), done, p.string());
      if (!n) {
        st = n.error();
      } else if (*n == 0) {
        st = Status::IOError(fmt::format("{} shrank while archiving", p.string()));
      } else {
        st = WriteAll(fd, buf.data(), *n, tmp);
        done += *n;
      }
    }
    ::close(in);
    if (!st.ok()) return fail(st);
    const size_t pad = (kBlock - size % kBlock) % kBlock;
    if (Status w = WriteAll(fd, std::string(pad, '\0').data(), pad, tmp); !w.ok()) return fail(w);
  }
  const std::string end(2 * kBlock, '\0');
  Status st = WriteAll(fd, end.data(), end.size(), tmp);
  if (!st.ok()) return fail(st);
  return CommitTempFile(fd, tmp, out);
}

Status ExtractSnapshotArchive(const std::string& path, uint64_t offset, uint64_t length,
                              const std::string& dest) {
  std::error_code ec;
  if (fs::exists(dest, ec)) return Status::AlreadyExists(fmt::format("{} already exists", dest));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  fs::create_directories(dest, ec);
  auto fail = [&](Status st) {
    ::close(fd);
    fs::remove_all(dest, ec);
    return st;
  };
  std::vector<char> buf(1 << 20);
  uint64_t at = 0;
  bool ended = false;
  while (at + kBlock <= length) {
    char h[kBlock];
    if (Status r = PreadFull(fd, h, kBlock, offset + at, path); !r.ok()) return fail(r);
    at += kBlock;
    if (std::all_of(h, h + kBlock, [](char c) { return c == '\0'; })) {
      ended = true;
      break;
    }
    unsigned sum = 0;
    for (size_t i = 0; i < kBlock; ++i)
      sum += (i >= 148 && i < 156) ? unsigned(' ') : static_cast<unsigned char>(h[i]);
    auto stored = ParseOctal(h + 148, 8);
    if (!stored || *stored != sum)
      return fail(Status::Corruption("the snapshot archive has a damaged header (bad checksum)"));
    std::string name(h, strnlen(h, 100));
    std::string prefix(h + 345, strnlen(h + 345, 155));
    if (!prefix.empty()) name = prefix + "/" + name;
    auto size = ParseOctal(h + 124, 12);
    if (!size) return fail(size.error());
    const char type = h[156];
    if (!SafePath(name))
      return fail(Status::InvalidArgument(
          fmt::format("the snapshot archive has an unsafe path \"{}\"", name)));
    const std::string target = dest + "/" + name;
    if (type == '5') {
      fs::create_directories(target, ec);
      continue;
    }
    if (type != '0' && type != '\0')
      return fail(Status::InvalidArgument(fmt::format(
          "the snapshot archive entry \"{}\" is not a regular file or directory", name)));
    if (at + *size > length) return fail(Status::Corruption("the snapshot archive is truncated"));
    fs::create_directories(fs::path(target).parent_path(), ec);
    int out = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) return fail(Status::FromErrno(errno, "create " + target));
    uint64_t done = 0;
    Status st;
    while (done < *size && st.ok()) {
      const size_t n = size_t(std::min<uint64_t>(buf.size(), *size - done));
      st = PreadFull(fd, buf.data(), n, offset + at + done, path);
      if (st.ok()) st = WriteAll(out, buf.data(), n, target);
      done += n;
    }
    if (st.ok() && ::fsync(out) != 0) st = Status::FromErrno(errno, "fsync " + target);
    ::close(out);
    if (!st.ok()) return fail(st);
    at += (*size + kBlock - 1) / kBlock * kBlock;
  }
  ::close(fd);
  if (!ended) {
    fs::remove_all(dest, ec);
    return Status::Corruption("the snapshot archive is truncated (no end marker)");
  }
  return Status::Ok();
}

}  // namespace strata::vector::internal
