// Collection snapshots beyond create and list: recover from a local archive
// (PUT .../snapshots/recover {"location": "file:///..."}) and from an
// uploaded one (POST .../snapshots/upload, multipart/form-data with the
// archive in the "snapshot" field). The archive is a POSIX tar of the
// snapshot directory (CollectionManager::SnapshotArchive).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <strata/core/checksum.h>
#include <strata/core/clock.h>
#include <strata/core/file_util.h>
#include <strata/core/strings.h>

#include "qdrant/errors.h"
#include "qdrant/json_convert.h"
#include "qdrant/operations.h"

namespace strata::qdrant {
namespace {

namespace fs = std::filesystem;

bool IStartsWith(std::string_view s, std::string_view prefix) {
  return StartsWith(ToLower(s.substr(0, prefix.size())), prefix);
}

std::string Hex(std::string_view raw) {
  std::string out;
  for (unsigned char c : raw) out += fmt::format("{:02x}", c);
  return out;
}

Result<std::string> Sha256Hex(const std::string& path, uint64_t offset, uint64_t length) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  auto h = Hasher::Create(ChecksumAlgorithm::kSha256);
  std::vector<char> buf(1 << 20);
  uint64_t done = 0;
  Status st;
  while (done < length && st.ok()) {
    const size_t n = size_t(std::min<uint64_t>(buf.size(), length - done));
    st = PreadFull(fd, buf.data(), n, offset + done, path);
    if (st.ok()) h->Update(buf.data(), n);
    done += n;
  }
  ::close(fd);
  if (!st.ok()) return st;
  return Hex(h->Digest());
}

// Qdrant's priority: which copy wins. One node holds one copy, so the
// snapshot's data is what the collection gets; "replica" (keep the local
// data over the snapshot's) has no meaning here and is refused.
Status CheckPriority(std::string_view p) {
  if (p.empty() || p == "snapshot" || p == "no_sync") return Status::Ok();
  if (p == "replica")
    return Status::InvalidArgument(
        "priority \"replica\" is not supported: a single-node collection has no other replica; "
        "use \"snapshot\"");
  return Status::InvalidArgument(
      fmt::format("unknown priority \"{}\" (snapshot, replica, no_sync)", p));
}

Status Recover(vector::CollectionManager& mgr, const std::string& name, const std::string& path,
               uint64_t offset, uint64_t length, const std::string& checksum) {
  if (!checksum.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::string got, Sha256Hex(path, offset, length));
    if (ToLower(checksum) != got)
      return Status::InvalidArgument(
          fmt::format("Snapshot checksum mismatch: expected {}, got {}", ToLower(checksum), got));
  }
  return mgr.RecoverFromArchive(path, offset, length, name).status();
}

// The value of a query parameter, percent-decoded ("" when absent).
std::string QueryValue(std::string_view query, std::string_view name) {
  for (auto part : Split(query, '&')) {
    size_t eq = part.find('=');
    if (part.substr(0, eq) != name || eq == std::string_view::npos) continue;
    auto v = UriDecode(part.substr(eq + 1));
    return v ? *v : std::string();
  }
  return {};
}

// Finds `needle` in the file from `from`, scanning in chunks.
Result<uint64_t> FindInFile(int fd, const std::string& path, uint64_t size, uint64_t from,
                            std::string_view needle) {
  std::string buf;
  const size_t chunk = 1 << 20;
  uint64_t at = from;
  while (at < size) {
    const size_t n = size_t(std::min<uint64_t>(chunk + needle.size(), size - at));
    buf.resize(n);
    STRATA_RETURN_IF_ERROR(PreadFull(fd, buf.data(), n, at, path));
    size_t p = buf.find(needle);
    if (p != std::string::npos) return at + p;
    if (at + n >= size) break;
    at += chunk;
  }
  return Status::InvalidArgument("the multipart body has no closing boundary");
}

// The byte range of the "snapshot" file part of a multipart/form-data body.
Result<std::pair<uint64_t, uint64_t>> SnapshotPart(const std::string& path,
                                                   std::string_view content_type) {
  const size_t b = content_type.find("boundary=");
  if (!IStartsWith(content_type, "multipart/form-data") || b == std::string_view::npos)
    return Status::InvalidArgument(
        "upload a snapshot as multipart/form-data with the archive in the \"snapshot\" field");
  std::string boundary(Trim(content_type.substr(b + 9)));
  if (auto semi = boundary.find(';'); semi != std::string::npos) boundary.resize(semi);
  if (boundary.size() >= 2 && boundary.front() == '"')
    boundary = boundary.substr(1, boundary.size() - 2);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  uint64_t at = 0;
  Result<std::pair<uint64_t, uint64_t>> out =
      Status::InvalidArgument("the multipart body has no \"snapshot\" file field");
  while (at < size) {
    std::string head(size_t(std::min<uint64_t>(64 << 10, size - at)), '\0');
    if (Status st = PreadFull(fd, head.data(), head.size(), at, path); !st.ok()) {
      out = st;
      break;
    }
    const std::string open = "--" + boundary + "\r\n";
    if (head.compare(0, open.size(), open) != 0) break;  // the closing "--boundary--"
    const size_t end = head.find("\r\n\r\n");
    if (end == std::string::npos) {
      out = Status::InvalidArgument("a multipart part has no end of headers");
      break;
    }
    const std::string headers = ToLower(head.substr(open.size(), end - open.size()));
    const uint64_t data = at + end + 4;
    auto stop = FindInFile(fd, path, size, data, "\r\n--" + boundary);
    if (!stop) {
      out = stop.error();
      break;
    }
    if (headers.find("name=\"snapshot\"") != std::string::npos) {
      out = std::make_pair(data, *stop - data);
      break;
    }
    at = *stop + 2;
  }
  ::close(fd);
  return out;
}

}  // namespace

Result<json> RecoverSnapshot(vector::CollectionManager& mgr, const std::string& name,
                             const json& b) {
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (it.key() != "location" && it.key() != "priority" && it.key() != "checksum" &&
        it.key() != "api_key")
      return Status::InvalidArgument(
          fmt::format("snapshot recover: field \"{}\" is not supported", it.key()));
  }
  const json* loc = Field(b, "location");
  if (loc == nullptr || !loc->is_string())
    return Status::InvalidArgument("snapshot recover needs \"location\": \"file:///path\"");
  if (Field(b, "api_key") != nullptr)
    return Status::InvalidArgument("api_key applies to http locations, which are not supported");
  const json* pr = Field(b, "priority");
  STRATA_RETURN_IF_ERROR(
      CheckPriority(pr != nullptr && pr->is_string() ? pr->get<std::string>() : ""));
  std::string where = loc->get<std::string>();
  if (IStartsWith(where, "http://") || IStartsWith(where, "https://"))
    return Status::InvalidArgument(
        "http(s) snapshot locations are not supported: download the file and send it to "
        "POST /collections/{name}/snapshots/upload, or give a file:// path");
  if (StartsWith(where, "file://")) where = where.substr(7);
  // Local archives are read from the server's own snapshot directory only.
  std::error_code ec;
  const fs::path snaps = fs::weakly_canonical(mgr.root() + "/.snapshots", ec);
  const fs::path file = fs::weakly_canonical(where, ec);
  const std::string rel = fs::relative(file, snaps, ec).generic_string();
  if (ec || rel.empty() || StartsWith(rel, ".."))
    return Status::InvalidArgument(
        fmt::format("snapshot location {} is outside the server's snapshot directory {}", where,
                    snaps.string()));
  if (!fs::is_regular_file(file, ec))
    return Status::NotFound(fmt::format("Snapshot file {} does not exist", file.string()));
  const json* sum = Field(b, "checksum");
  STRATA_RETURN_IF_ERROR(
      Recover(mgr, name, file.string(), 0, fs::file_size(file, ec),
              sum != nullptr && sum->is_string() ? sum->get<std::string>() : ""));
  return json(true);
}

Result<json> UploadSnapshot(vector::CollectionManager& mgr, const std::string& name,
                            http::Request& req, std::string_view query, uint64_t max_bytes) {
  for (auto part : Split(query, '&')) {
    std::string_view k = part.substr(0, part.find('='));
    if (!k.empty() && k != "wait" && k != "priority" && k != "checksum")
      return Status::InvalidArgument(
          fmt::format("snapshot upload: parameter \"{}\" is not supported", k));
  }
  STRATA_RETURN_IF_ERROR(CheckPriority(QueryValue(query, "priority")));
  std::error_code ec;
  fs::create_directories(mgr.root() + "/.uploads", ec);
  const std::string tmp = fmt::format("{}/.uploads/{}-{}", mgr.root(), name, NowUnixNanos());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, "create " + tmp);
  std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  Status st;
  while (st.ok()) {
    auto n = req.ReadBody(buf.data(), buf.size());
    if (!n) {
      st = ProtocolError(400, "cannot read the upload: " + n.error().message());
      break;
    }
    if (*n == 0) break;
    total += *n;
    if (total > max_bytes) {
      st = ProtocolError(413, fmt::format("the upload is larger than {} bytes", max_bytes));
      break;
    }
    st = WriteAll(fd, buf.data(), *n, tmp);
  }
  ::close(fd);
  auto done = [&](Result<json> r) {
    fs::remove(tmp, ec);
    return r;
  };
  if (!st.ok()) return done(st);
  auto ct = req.Header("content-type");
  auto part = SnapshotPart(tmp, ct ? *ct : std::string_view());
  if (!part) return done(part.error());
  Status rs = Recover(mgr, name, tmp, part->first, part->second, QueryValue(query, "checksum"));
  fs::remove(tmp, ec);
  if (!rs.ok()) return rs;
  return json(true);
}

}  // namespace strata::qdrant
