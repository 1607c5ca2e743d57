// The console APIs that read engines directly rather than through a frontend:
// an FS volume's format and sessions (its metadata engine opened read-only in
// spirit: no session registered, nothing written), the vector filter check
// (the engine's own parsers, so the console shows what the engine understood),
// and the training data path of this host: `strata warm` progress files and
// local checkpoint directories (read only; admin only, as they name paths).
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/cache/checkpoint.h>
#include <strata/cache/warmer.h>
#include <strata/core/clock.h>
#include <strata/core/file_util.h>
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

constexpr std::string_view kProgressFile = "warm.progress.json";
constexpr size_t kMaxProgressBytes = 64 * 1024;
constexpr size_t kMaxSubdirs = 1000;  // one level below a configured directory

// The subdirectories of `dir` (not following links), sorted.
std::vector<std::string> Subdirs(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* de = ::readdir(d)) {
    std::string name = de->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::lstat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.push_back(name);
    if (out.size() >= kMaxSubdirs) break;
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool IsDir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string ThisHost() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

// One warm job's progress file, as the console shows it: the file's fields
// plus what the server can tell about the writer (still alive, silent).
nlohmann::json WarmJobJson(const std::string& cache_dir, const std::string& file,
                           const cache::WarmProgress& p, int64_t now_us, const std::string& host) {
  nlohmann::json j = nlohmann::json::parse(cache::WarmProgressJson(p));
  j.erase("format");
  j["cache_dir"] = cache_dir;
  j["file"] = file;
  const double age_s = static_cast<double>(now_us - p.updated_us) / 1e6;
  j["age_s"] = age_s;
  // A process of this host can be asked directly; one of another host only
  // by how long its file has been silent.
  nlohmann::json alive = nullptr;
  if (!p.host.empty() && p.host == host && p.pid > 0)
    alive = ::kill(static_cast<pid_t>(p.pid), 0) == 0 || errno == EPERM;
  j["alive"] = alive;
  const double silent_after_s = std::max(10.0, 3.0 * static_cast<double>(p.interval_ms) / 1000);
  std::string status = p.state;
  if (p.state == "running" && alive.is_boolean() && !alive.get<bool>())
    status = "gone";  // exited without a final write: killed
  else if (p.state == "running" && age_s > silent_after_s)
    status = "silent";
  j["status"] = status;
  j["silent_after_s"] = silent_after_s;
  j["fraction"] = p.objects_total
                      ? static_cast<double>(p.objects_done) / static_cast<double>(p.objects_total)
                      : 1.0;
  return j;
}

void AddWarmJob(const std::string& cache_dir, nlohmann::json& jobs, nlohmann::json& errors,
                int64_t now_us, const std::string& host) {
  const std::string file = cache_dir + "/" + std::string(kProgressFile);
  struct stat st;
  if (::stat(file.c_str(), &st) != 0) return;
  if (st.st_size > static_cast<off_t>(kMaxProgressBytes)) {
    errors.push_back({{"file", file}, {"message", "too large for a warmer progress file"}});
    return;
  }
  auto text = ReadFileToString(file);
  if (!text.ok()) {
    errors.push_back({{"file", file}, {"message", text.error().ToString()}});
    return;
  }
  auto p = cache::ParseWarmProgress(*text);
  if (!p.ok()) {
    errors.push_back({{"file", file}, {"message", p.error().message()}});
    return;
  }
  jobs.push_back(WarmJobJson(cache_dir, file, *p, now_us, host));
}

bool HoldsSteps(const std::string& dir) {
  for (const auto& name : Subdirs(dir))
    if (StartsWith(name, "step-") || StartsWith(name, ".step-")) return true;
  return false;
}

nlohmann::json RunJson(const std::string& dir, const std::vector<cache::LocalCheckpointEntry>& es) {
  nlohmann::json steps = nlohmann::json::array();
  uint64_t bytes = 0;
  for (const auto& e : es) {
    if (e.state == cache::LocalCheckpointEntry::State::kComplete) bytes += e.bytes;
    steps.push_back({{"step", e.step},
                     {"state", cache::LocalCheckpointStateName(e.state)},
                     {"upload_pending", e.upload_pending},
                     {"bytes", e.bytes},
                     {"files", e.files},
                     {"created", e.created},
                     {"mtime_us", e.mtime_us},
                     {"name", e.name},
                     {"note", e.note}});
  }
  return {{"dir", dir}, {"complete_bytes", bytes}, {"steps", std::move(steps)}};
}

// False (and the error written) unless a GET by an admin user.
bool AdminGet(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u,
              std::string_view what) {
  if (req.method != "GET") {
    SendError(w, 405, "MethodNotAllowed", fmt::format("{} are read with GET", what));
    return false;
  }
  if (!u.admin) {
    SendError(w, 403, "AccessDenied",
              fmt::format("{} are read from this server's local disk and name its paths: that "
                          "needs an admin user",
                          what));
    return false;
  }
  return true;
}

}  // namespace

void Console::Impl::WarmJobs(http::Request& req, http::ResponseWriter& w, const ConsoleUser& u) {
  if (!AdminGet(req, w, u, "warm jobs")) return;
  const int64_t now_us = NowUnixNanos() / 1000;
  const std::string host = ThisHost();
  nlohmann::json jobs = nlohmann::json::array(), errors = nlohmann::json::array(),
                 dirs = nlohmann::json::array();
  for (const auto& dir : opts.warm_dirs) {
    const bool exists = IsDir(dir);
    dirs.push_back({{"dir", dir}, {"exists", exists}});
    if (!exists) continue;
    AddWarmJob(dir, jobs, errors, now_us, host);
    for (const auto& sub : Subdirs(dir)) AddWarmJob(dir + "/" + sub, jobs, errors, now_us, host);
  }
  SendJson(w, 200,
           nlohmann::json{{"now_us", now_us},
                          {"host", host},
                          {"dirs", std::move(dirs)},
                          {"jobs", std::move(jobs)},
                          {"errors", std::move(errors)}}
               .dump());
}

void Console::Impl::LocalCheckpoints(http::Request& req, http::ResponseWriter& w,
                                     const ConsoleUser& u) {
  if (!AdminGet(req, w, u, "local checkpoints")) return;
  nlohmann::json runs = nlohmann::json::array(), dirs = nlohmann::json::array();
  for (const auto& dir : opts.checkpoint_dirs) {
    nlohmann::json d = {{"dir", dir}, {"exists", IsDir(dir)}};
    std::vector<std::string> run_dirs;
    if (HoldsSteps(dir)) {
      run_dirs.push_back(dir);
    } else {
      for (const auto& sub : Subdirs(dir))
        if (HoldsSteps(dir + "/" + sub)) run_dirs.push_back(dir + "/" + sub);
    }
    for (const auto& rd : run_dirs) {
      auto es = cache::ScanLocalCheckpoints(rd);
      if (!es.ok()) {
        d["error"] = es.error().ToString();
        continue;
      }
      runs.push_back(RunJson(rd, *es));
    }
    dirs.push_back(std::move(d));
  }
  SendJson(
      w, 200,
      nlohmann::json{{"host", ThisHost()}, {"dirs", std::move(dirs)}, {"runs", std::move(runs)}}
          .dump());
}

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
