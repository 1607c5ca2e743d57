// The console APIs that read engines directly rather than through a frontend:
// an FS volume's format and sessions (its metadata engine opened read-only in
// spirit: no session registered, nothing written) and the vector filter check
// (the engine's own parsers, so the console shows what the engine understood).
#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/clock.h>
#include <strata/core/strings.h>
#include <strata/fsmeta/meta_engine.h>
#include <strata/vector/filter.h>

#include "console/console_internal.h"

namespace strata::console {
namespace {

// A mount heartbeats every 10 s and cleans sessions silent for 300 s
// (fs/fuse_mount.cc); the console calls them stale past the same mark.
constexpr int64_t kStaleAfterS = 300;

// OpenMeta creates a missing SQLite file; the console must not, so the file
// has to exist and be an SQLite database already.
Status CheckSqliteFile(const std::string& path) {
  if (path.empty() || path[0] != '/')
    return Status::InvalidArgument(
        "a sqlite3:// volume needs an absolute path: sqlite3:///DIR/meta.db");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return Status::NotFound(fmt::format("no volume file {} on the server's host", path));
  char head[16] = {};
  FILE* f = std::fopen(path.c_str(), "rb");
  size_t n = f ? std::fread(head, 1, sizeof(head), f) : 0;
  if (f) std::fclose(f);
  if (n != sizeof(head) || std::memcmp(head, "SQLite format 3", 16) != 0)
    return Status::InvalidArgument(fmt::format("{} is not an SQLite database", path));
  return Status::Ok();
}

nlohmann::json SessionsJson(const std::vector<fsmeta::SessionInfo>& sessions, int64_t now_ns) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : sessions) {
    const double age = static_cast<double>(now_ns - s.heartbeat_ns) / 1e9;
    out.push_back({{"sid", s.sid},
                   {"host", s.host},
                   {"pid", s.pid},
                   {"mount_point", s.mount_point},
                   {"version", s.version},
                   {"heartbeat_ns", s.heartbeat_ns},
                   {"heartbeat_age_s", age},
                   {"stale", age > kStaleAfterS}});
  }
  return out;
}

}  // namespace

void Console::Impl::FsVolume(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u) {
  if (req.method != "POST")
    return SendError(w, 405, "MethodNotAllowed", "read a volume with POST {\"url\"}");
  if (!u.admin)
    return SendError(w, 403, "AccessDenied",
                     "reading an FS volume opens its metadata engine from the server's host: "
                     "that needs an admin user");
  auto body = req.ReadAllBody(16 * 1024);
  nlohmann::json j;
  if (body) j = nlohmann::json::parse(*body, nullptr, false);
  if (!j.is_object() || !j.contains("url") || !j["url"].is_string())
    return SendError(w, 400, "BadRequest",
                     "expected {\"url\": \"sqlite3:///PATH\" | \"redis://HOST:PORT/DB\" | "
                     "\"postgres://USER:PASSWORD@HOST:PORT/DB\"}");
  const std::string url = j["url"];
  if (StartsWith(url, "sqlite3://")) {
    if (Status st = CheckSqliteFile(url.substr(10)); !st.ok())
      return SendError(w, st.code() == StatusCode::kNotFound ? 404 : 400, "NoSuchVolume",
                       st.message());
  }
  auto meta = fsmeta::OpenMeta(url);
  if (!meta.ok()) return SendError(w, 400, "VolumeUnreachable", meta.error().ToString());
  auto format = (*meta)->LoadFormat();
  if (!format.ok())
    return SendError(
        w, 404, "NoSuchVolume",
        "the metadata engine holds no formatted volume (`strata fs format` makes one): " +
            format.error().ToString());
  auto sessions = (*meta)->ListSessions();
  if (!sessions.ok()) return SendError(w, 502, "VolumeUnreadable", sessions.error().ToString());
  const int64_t now = NowUnixNanos();
  const fsmeta::Format& f = *format;
  nlohmann::json out = {{"volume",
                         {{"name", f.name},
                          {"uuid", f.uuid},
                          {"storage", f.storage},
                          {"block_size", f.block_size},
                          {"compress", f.compress},
                          {"trash_days", f.trash_days},
                          {"encrypt", f.encrypt}}},
                        {"now_ns", now},
                        {"stale_after_s", kStaleAfterS},
                        {"sessions", SessionsJson(*sessions, now)}};
  fsmeta::Context ctx;
  if (auto sf = (*meta)->StatFS(ctx, fsmeta::kRootIno); sf.ok())
    out["usage"] = {{"used_bytes", sf->used_space},
                    {"total_bytes", sf->total_space},
                    {"used_inodes", sf->used_inodes}};
  SendJson(w, 200, out.dump());
}

void Console::Impl::VectorFilter(http::Request& req, http::ResponseWriter& w) {
  if (req.method != "POST")
    return SendError(w, 405, "MethodNotAllowed", "check a filter with POST {\"type\", \"filter\"}");
  auto body = req.ReadAllBody(256 * 1024);
  nlohmann::json j;
  if (body) j = nlohmann::json::parse(*body, nullptr, false);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string() || !j.contains("filter") ||
      !j["filter"].is_string())
    return SendError(w, 400, "BadRequest",
                     "expected {\"type\": \"qdrant\" | \"milvus\", \"filter\": TEXT}");
  const std::string type = j["type"], text = j["filter"];
  if (type != "qdrant" && type != "milvus")
    return SendError(w, 400, "BadRequest", "type must be \"qdrant\" or \"milvus\"");
  auto f = type == "qdrant" ? vector::ParseQdrantFilter(text) : vector::ParseFilterExpression(text);
  if (!f.ok()) {
    // The parsers prefix their messages with "filter: " or "filter expression: ".
    std::string_view m = f.error().message();
    for (std::string_view p : {"filter expression: ", "filter: "})
      if (StartsWith(m, p)) m.remove_prefix(p.size());
    return SendError(
        w, 400, "InvalidFilter",
        fmt::format("{}: {}", type == "qdrant" ? "Qdrant JSON filter" : "Milvus expression", m));
  }
  SendJson(w, 200, nlohmann::json{{"type", type}, {"parsed", f->ToString()}}.dump());
}

}  // namespace strata::console
