// strata fs quota|summary|config — the volume administration commands that
// JuiceFS users know (`juicefs quota`, `juicefs summary`, `juicefs config`),
// working on the metadata engine directly (META_URL), with or without mounts.
#include "cli/fs_admin_cmds.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <strata/core/clock.h>
#include <strata/core/http_client.h>
#include <strata/core/strings.h>
#include <strata/fsmeta/meta_engine.h>

#include "cli/exit_codes.h"

namespace strata::cli {
namespace {

int Fail(std::string_view cmd, const Status& st) {
  fmt::print(stderr, "strata fs {}: {}\n", cmd, st.ToString());
  return ExitCodeFor(st);
}

std::string Human(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes < 0 ? -bytes : bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  const char* sign = bytes < 0 ? "-" : "";
  return u == 0 ? fmt::format("{}{} B", sign, v) : fmt::format("{}{:.1f} {}", sign, v, units[u]);
}

Result<std::unique_ptr<fsmeta::MetaEngine>> Open(const std::string& url) {
  STRATA_ASSIGN_OR_RETURN(auto meta, fsmeta::OpenMeta(url));
  auto f = meta->LoadFormat();
  if (!f) return f.error().WithContext(fmt::format("{} holds no formatted volume", url));
  return meta;
}

fsmeta::Context RootCtx() {
  fsmeta::Context c;
  c.check_permission = false;
  return c;
}

// The inode of PATH inside the volume ("/" or "" is the root).
Result<fsmeta::Ino> Resolve(fsmeta::MetaEngine& m, const std::string& path) {
  fsmeta::Ino ino = fsmeta::kRootIno;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string name = path.substr(i, j - i);
    i = j + 1;
    if (name.empty() || name == ".") continue;
    auto e = m.Lookup(RootCtx(), ino, name);
    if (!e) return e.error().WithContext(fmt::format("path {}", path));
    ino = e->ino;
  }
  return ino;
}

// ---- quota --------------------------------------------------------------------

struct QuotaArgs {
  std::string meta, path;
  std::string capacity, inodes;
  bool repair = false, strict = false;
};

std::string Limit(uint64_t v, bool bytes) {
  if (v == 0) return "unlimited";
  return bytes ? Human(static_cast<int64_t>(v)) : std::to_string(v);
}

void PrintQuotas(const std::vector<std::pair<std::string, fsmeta::Quota>>& rows) {
  fmt::print("{:<30} {:>12} {:>12} {:>6} {:>12} {:>12} {:>6}\n", "PATH", "SIZE", "USED", "USE%",
             "INODES", "IUSED", "IUSE%");
  for (const auto& [path, q] : rows) {
    auto pct = [](int64_t used, uint64_t max) {
      if (max == 0) return std::string("-");
      return fmt::format("{}%", static_cast<int64_t>(100.0 * static_cast<double>(used) /
                                                     static_cast<double>(max)));
    };
    fmt::print("{:<30} {:>12} {:>12} {:>6} {:>12} {:>12} {:>6}\n", path, Limit(q.max_space, true),
               Human(q.used_space), pct(q.used_space, q.max_space), Limit(q.max_inodes, false),
               q.used_inodes, pct(q.used_inodes, q.max_inodes));
  }
}

// The path of directory `ino` from the root, following parent pointers.
std::string PathOf(fsmeta::MetaEngine& m, fsmeta::Ino ino) {
  std::vector<std::string> parts;
  for (int depth = 0; ino != fsmeta::kRootIno && depth < 1000; ++depth) {
    auto a = m.GetAttr(ino);
    if (!a || a->parent == 0) return fmt::format("<inode {}>", ino);
    std::string name;
    std::string after;
    bool found = false;
    while (!found) {
      auto page = m.ReadDir(RootCtx(), a->parent, after, 1000, false);
      if (!page || page->empty()) break;
      for (const auto& e : *page) {
        if (e.ino == ino) {
          name = e.name;
          found = true;
          break;
        }
      }
      after = page->back().name;
    }
    if (!found) return fmt::format("<inode {}>", ino);
    parts.push_back(name);
    ino = a->parent;
  }
  std::string p;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) p += "/" + *it;
  return p.empty() ? "/" : p;
}

int CmdQuota(const std::string& op, const QuotaArgs& a) {
  auto m = Open(a.meta);
  if (!m) return Fail("quota", m.error());
  fsmeta::MetaEngine& meta = **m;
  if (op == "ls") {
    auto qs = meta.ListQuotas();
    if (!qs) return Fail("quota ls", qs.error());
    std::vector<std::pair<std::string, fsmeta::Quota>> rows;
    for (const auto& q : *qs) rows.emplace_back(PathOf(meta, q.ino), q);
    std::sort(rows.begin(), rows.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    PrintQuotas(rows);
    return 0;
  }
  fsmeta::Ino ino = 0;
  if (!a.path.empty()) {
    auto r = Resolve(meta, a.path);
    if (!r) return Fail("quota " + op, r.error());
    ino = *r;
  } else if (op != "check") {
    fmt::print(stderr, "strata fs quota {}: --path DIR is required\n", op);
    return kExitUsage;
  }
  if (op == "set") {
    if (a.capacity.empty() && a.inodes.empty()) {
      fmt::print(stderr, "strata fs quota set: give --capacity and/or --inodes\n");
      return kExitUsage;
    }
    uint64_t cap = 0, inodes = 0;
    auto old = meta.GetQuota(ino);
    if (old) {  // an option not given keeps its limit
      cap = old->max_space;
      inodes = old->max_inodes;
    }
    if (!a.capacity.empty()) {
      auto v = ParseByteSize(a.capacity);
      if (!v) {
        fmt::print(stderr,
                   "strata fs quota set: --capacity \"{}\" is not a size (try 10G, 512MiB; 0: "
                   "unlimited)\n",
                   a.capacity);
        return kExitUsage;
      }
      cap = *v;
    }
    if (!a.inodes.empty()) {
      char* end = nullptr;
      unsigned long long v = std::strtoull(a.inodes.c_str(), &end, 10);
      if (a.inodes[0] == '-' || end == a.inodes.c_str() || *end != '\0') {
        fmt::print(stderr, "strata fs quota set: --inodes \"{}\" is not a number (0: unlimited)\n",
                   a.inodes);
        return kExitUsage;
      }
      inodes = v;
    }
    Status st = meta.SetQuota(ino, cap, inodes);
    if (!st.ok()) return Fail("quota set", st);
  } else if (op == "delete") {
    Status st = meta.DeleteQuota(ino);
    if (!st.ok()) return Fail("quota delete", st);
    fmt::print("quota of {} deleted\n", a.path);
    return 0;
  } else if (op == "check") {
    auto lines = meta.CheckQuotas(ino, a.repair);
    if (!lines) return Fail("quota check", lines.error());
    for (const auto& l : *lines) fmt::print("{}\n", l);
    if (lines->empty()) fmt::print("quota usage is consistent\n");
    return lines->empty() || a.repair ? 0 : kExitSomeFailed;
  }
  auto q = meta.GetQuota(ino);
  if (!q) return Fail("quota " + op, q.error());
  PrintQuotas({{a.path, *q}});
  return 0;
}

// ---- summary ------------------------------------------------------------------

struct SummaryArgs {
  std::string meta, path = "/";
  int depth = 2, entries = 10;
};

struct Node {
  std::string path;
  fsmeta::Summary s;
  std::vector<Node> children;  // only down to the requested depth, biggest first
};

Status Summarize(fsmeta::MetaEngine& m, fsmeta::Ino ino, const fsmeta::Attr& attr,
                 const std::string& path, int depth, int entries, Node* out) {
  out->path = path;
  if (!S_ISDIR(attr.mode)) {
    out->s.files = 1;
    out->s.length = S_ISREG(attr.mode) ? attr.size : 0;
    out->s.size = S_ISREG(attr.mode) ? (attr.size + 4095) / 4096 * 4096 : 0;
    return Status::Ok();
  }
  if (depth <= 0) {
    STRATA_ASSIGN_OR_RETURN(out->s, m.GetSummary(RootCtx(), ino));
    return Status::Ok();
  }
  out->s.dirs = 1;
  out->s.size = 4096;
  std::string after;
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(auto page, m.ReadDir(RootCtx(), ino, after, 1000, true));
    if (page.empty()) break;
    after = page.back().name;
    for (const auto& e : page) {
      Node child;
      STRATA_RETURN_IF_ERROR(Summarize(m, e.ino, e.attr, (path == "/" ? "" : path) + "/" + e.name,
                                       depth - 1, entries, &child));
      out->s.files += child.s.files;
      out->s.dirs += child.s.dirs;
      out->s.length += child.s.length;
      out->s.size += child.s.size;
      out->children.push_back(std::move(child));
    }
  }
  std::sort(out->children.begin(), out->children.end(), [](const Node& x, const Node& y) {
    return x.s.size != y.s.size ? x.s.size > y.s.size : x.path < y.path;
  });
  if (entries >= 0 && out->children.size() > static_cast<size_t>(entries)) {
    Node others;
    others.path = (path == "/" ? "" : path) + "/...";
    for (size_t i = static_cast<size_t>(entries); i < out->children.size(); ++i) {
      const auto& c = out->children[i].s;
      others.s.files += c.files;
      others.s.dirs += c.dirs;
      others.s.length += c.length;
      others.s.size += c.size;
    }
    out->children.resize(static_cast<size_t>(entries));
    out->children.push_back(std::move(others));
  }
  return Status::Ok();
}

void PrintNode(const Node& n) {
  fmt::print("{:<40} {:>12} {:>8} {:>8}\n", n.path, Human(static_cast<int64_t>(n.s.size)), n.s.dirs,
             n.s.files);
  for (const auto& c : n.children) PrintNode(c);
}

int CmdSummary(const SummaryArgs& a) {
  auto m = Open(a.meta);
  if (!m) return Fail("summary", m.error());
  auto ino = Resolve(**m, a.path);
  if (!ino) return Fail("summary", ino.error());
  auto attr = (*m)->GetAttr(*ino);
  if (!attr) return Fail("summary", attr.error());
  Node root;
  Status st = Summarize(**m, *ino, *attr, a.path.empty() ? "/" : a.path, a.depth, a.entries, &root);
  if (!st.ok()) return Fail("summary", st);
  fmt::print("{:<40} {:>12} {:>8} {:>8}\n", "PATH", "SIZE", "DIRS", "FILES");
  PrintNode(root);
  return 0;
}

// ---- config -------------------------------------------------------------------

struct ConfigArgs {
  std::string meta;
  std::optional<int> trash_days;
  std::string capacity, inodes, storage, block_size, compress;
};

int CmdConfig(const ConfigArgs& a) {
  auto m = Open(a.meta);
  if (!m) return Fail("config", m.error());
  auto f = (*m)->LoadFormat();
  if (!f) return Fail("config", f.error());
  fsmeta::Format nf = *f;
  // Data already written is cut into blocks of this size and compressed so;
  // changing either would make it unreadable.
  if (!a.block_size.empty()) {
    fmt::print(stderr,
               "strata fs config: the block size cannot change after format (the data is stored in "
               "blocks of {} bytes); create a new volume and copy the files\n",
               f->block_size);
    return kExitUsage;
  }
  if (!a.compress.empty()) {
    fmt::print(stderr,
               "strata fs config: the compression cannot change after format (blocks are stored "
               "with \"{}\"); "
               "create a new volume and copy the files\n",
               f->compress);
    return kExitUsage;
  }
  bool changed = false;
  if (a.trash_days) {
    if (*a.trash_days < 0) {
      fmt::print(stderr, "strata fs config: --trash-days must be >= 0\n");
      return kExitUsage;
    }
    changed |= nf.trash_days != *a.trash_days;
    nf.trash_days = *a.trash_days;
  }
  if (!a.capacity.empty()) {
    auto v = ParseByteSize(a.capacity);
    if (!v) {
      fmt::print(stderr, "strata fs config: --capacity \"{}\" is not a size (0: unlimited)\n",
                 a.capacity);
      return kExitUsage;
    }
    changed |= nf.capacity != *v;
    nf.capacity = *v;
  }
  if (!a.inodes.empty()) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(a.inodes.c_str(), &end, 10);
    if (a.inodes[0] == '-' || end == a.inodes.c_str() || *end != '\0') {
      fmt::print(stderr, "strata fs config: --inodes \"{}\" is not a number (0: unlimited)\n",
                 a.inodes);
      return kExitUsage;
    }
    changed |= nf.inodes != v;
    nf.inodes = v;
  }
  bool storage_changed = false;
  if (!a.storage.empty() && a.storage != nf.storage) {
    nf.storage = a.storage;
    storage_changed = changed = true;
  }
  if (changed) {
    // Without force, Init keeps everything but the tunables; a new storage URL
    // (new credentials or endpoint of the same bucket) needs the full rewrite.
    Status st = (*m)->Init(nf, storage_changed);
    if (!st.ok()) return Fail("config", st);
  }
  fmt::print(
      "Volume:      {}\nStorage:     {}\nBlock size:  {}\nCompression: {}\nTrash days:  "
      "{}\nCapacity:    {}\n"
      "Inodes:      {}\n",
      nf.name, nf.storage, nf.block_size, nf.compress, nf.trash_days,
      nf.capacity ? Human(static_cast<int64_t>(nf.capacity)) : "unlimited",
      nf.inodes ? std::to_string(nf.inodes) : "unlimited");
  if (changed) fmt::print("(changed; running mounts apply it when remounted)\n");
  return 0;
}

// ---- rmr ----------------------------------------------------------------------

struct RmrArgs {
  std::vector<std::string> args;
  std::string meta;
};

// Removes one tree given as (parent inode, name); prints and returns the exit code.
int RemoveOne(fsmeta::MetaEngine& m, const std::string& shown, fsmeta::Ino parent,
              const std::string& name, std::optional<uint64_t> expect_ino) {
  fsmeta::Context ctx;
  ctx.uid = static_cast<uint32_t>(geteuid());
  ctx.gid = static_cast<uint32_t>(getegid());
  ctx.pid = static_cast<uint32_t>(getpid());
  if (expect_ino) {
    // The path's parent inode number names a directory of this volume only if
    // the path is on a mount of it: the entry must be the very inode lstat saw.
    auto e = m.Lookup(ctx, parent, name);
    if (!e || e->ino != *expect_ino) {
      fmt::print(stderr, "strata fs rmr: {}: not on a mount of this volume (--meta)\n", shown);
      return kExitUsage;
    }
  }
  const int64_t t0 = MonotonicNanos();
  auto n = m.RemoveTree(ctx, parent, name);
  if (!n) return Fail("rmr " + shown, n.error());
  fmt::print("{}: {} entries removed in {:.2f} s\n", shown, *n,
             static_cast<double>(MonotonicNanos() - t0) / 1e9);
  return 0;
}

int CmdRmr(const RmrArgs& a) {
  std::vector<std::string> paths = a.args;
  std::string url = a.meta;
  const bool volume_paths = !paths.empty() && paths[0].find("://") != std::string::npos;
  if (volume_paths) {
    url = paths[0];
    paths.erase(paths.begin());
  }
  if (url.empty() || paths.empty()) {
    fmt::print(
        stderr,
        "strata fs rmr: give META_URL /PATH/IN/VOLUME..., or PATH... on a mount with --meta URL\n");
    return kExitUsage;
  }
  auto m = Open(url);
  if (!m) return Fail("rmr", m.error());
  int rc = 0;
  for (const auto& p : paths) {
    int r;
    if (volume_paths) {
      std::filesystem::path vp(p);
      std::string name = vp.filename().string();
      auto parent = Resolve(**m, vp.parent_path().string());
      if (!parent) {
        r = Fail("rmr " + p, parent.error());
      } else if (name.empty() || name == "." || name == "..") {
        fmt::print(stderr, "strata fs rmr: {}: name a file or directory below the root\n", p);
        r = kExitUsage;
      } else {
        r = RemoveOne(**m, p, *parent, name, std::nullopt);
      }
    } else {
      std::filesystem::path lp = std::filesystem::absolute(p).lexically_normal();
      if (lp.filename().empty()) lp = lp.parent_path();
      struct stat st, pst;
      if (lstat(lp.c_str(), &st) != 0 || stat(lp.parent_path().c_str(), &pst) != 0) {
        fmt::print(stderr, "strata fs rmr: {}: {}\n", p, std::strerror(errno));
        r = kExitNotFound;
      } else {
        r = RemoveOne(**m, p, pst.st_ino, lp.filename().string(), static_cast<uint64_t>(st.st_ino));
      }
    }
    if (r != 0 && rc == 0) rc = r;
  }
  return rc;
}

// ---- clone ----------------------------------------------------------------------

struct CloneArgs {
  std::vector<std::string> args;
  std::string meta;
};

fsmeta::Context CallerCtx() {
  fsmeta::Context ctx;
  ctx.uid = static_cast<uint32_t>(geteuid());
  ctx.gid = static_cast<uint32_t>(getegid());
  ctx.pid = static_cast<uint32_t>(getpid());
  return ctx;
}

// Clones `ino` (attributes `a`) as `name` in `parent`: files and symlinks by
// CloneFile, directories as new directories whose entries are cloned.
Status CloneTree(fsmeta::MetaEngine& m, const fsmeta::Context& ctx, fsmeta::Ino ino,
                 const fsmeta::Attr& a, fsmeta::Ino parent, const std::string& name, uint64_t* n) {
  if (!S_ISDIR(a.mode)) {
    if (!S_ISREG(a.mode) && !S_ISLNK(a.mode))
      return Status::Ok();  // devices, fifos: skipped as by cp -r
    STRATA_RETURN_IF_ERROR(m.CloneFile(ctx, ino, parent, name).status());
    ++*n;
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(fsmeta::Entry d, m.Mkdir(ctx, parent, name, a.mode & 07777, 0));
  ++*n;
  std::string after;
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(auto page, m.ReadDir(ctx, ino, after, 1000, true));
    if (page.empty()) break;
    after = page.back().name;
    for (const auto& e : page)
      STRATA_RETURN_IF_ERROR(CloneTree(m, ctx, e.ino, e.attr, d.ino, e.name, n));
  }
  return Status::Ok();
}

int CmdClone(const CloneArgs& a) {
  std::vector<std::string> paths = a.args;
  std::string url = a.meta;
  const bool volume_paths = !paths.empty() && paths[0].find("://") != std::string::npos;
  if (volume_paths) {
    url = paths[0];
    paths.erase(paths.begin());
  }
  if (url.empty() || paths.size() != 2) {
    fmt::print(stderr,
               "strata fs clone: give META_URL /SRC /DST (volume paths), or SRC DST on a mount "
               "with --meta\n");
    return kExitUsage;
  }
  auto m = Open(url);
  if (!m) return Fail("clone", m.error());
  fsmeta::MetaEngine& meta = **m;
  fsmeta::Ino src = 0, dst_parent = 0;
  std::string dst_name;
  if (volume_paths) {
    auto s = Resolve(meta, paths[0]);
    if (!s) return Fail("clone " + paths[0], s.error());
    src = *s;
    std::filesystem::path dp(paths[1]);
    dst_name = dp.filename().string();
    auto p = Resolve(meta, dp.parent_path().string());
    if (!p) return Fail("clone " + paths[1], p.error());
    dst_parent = *p;
  } else {
    struct stat st, pst, dst;
    std::filesystem::path dp = std::filesystem::absolute(paths[1]).lexically_normal();
    if (lstat(paths[0].c_str(), &st) != 0 || stat(dp.parent_path().c_str(), &pst) != 0) {
      fmt::print(stderr, "strata fs clone: {}\n", std::strerror(errno));
      return kExitNotFound;
    }
    if (lstat(dp.c_str(), &dst) == 0) {
      fmt::print(stderr, "strata fs clone: {} already exists\n", paths[1]);
      return kExitConflict;
    }
    src = st.st_ino;
    dst_parent = pst.st_ino;
    dst_name = dp.filename().string();
    // Both inode numbers must be this volume's: the source's attributes must
    // match what lstat saw through the mount.
    auto sa = meta.GetAttr(src);
    auto pa = meta.GetAttr(dst_parent);
    if (!sa || !pa || sa->mode != st.st_mode || sa->size != static_cast<uint64_t>(st.st_size) ||
        !S_ISDIR(pa->mode)) {
      fmt::print(stderr, "strata fs clone: {} / {} are not on a mount of this volume (--meta)\n",
                 paths[0], paths[1]);
      return kExitUsage;
    }
  }
  if (dst_name.empty() || dst_name == "." || dst_name == "..") {
    fmt::print(stderr, "strata fs clone: the destination must name a new entry\n");
    return kExitUsage;
  }
  auto attr = meta.GetAttr(src);
  if (!attr) return Fail("clone", attr.error());
  uint64_t n = 0;
  const int64_t t0 = MonotonicNanos();
  Status st = CloneTree(meta, CallerCtx(), src, *attr, dst_parent, dst_name, &n);
  if (!st.ok()) {
    fmt::print(stderr, "strata fs clone: stopped after {} entries: {}\n", n, st.ToString());
    return ExitCodeFor(st);
  }
  fmt::print("{} -> {}: {} entries cloned in {:.2f} s\n", paths[0], paths[1], n,
             static_cast<double>(MonotonicNanos() - t0) / 1e9);
  return 0;
}

// ---- stats ----------------------------------------------------------------------

struct StatsArgs {
  std::string address = "127.0.0.1:9567";  // the mount's default --metrics
  double interval = 1;
  int count = 0;  // 0: until interrupted
};

struct OpSample {
  double count = 0, sum = 0;
};

// strata_fs_op_seconds_{count,sum}{op="..."} and the byte counters of a
// mount's /metrics page.
Result<std::map<std::string, OpSample>> Scrape(http::HttpClient& c, const std::string& address,
                                               double* rbytes, double* wbytes) {
  http::ClientRequest req;
  auto colon = address.rfind(':');
  if (colon == std::string::npos)
    return Status::InvalidArgument("address must be HOST:PORT: " + address);
  req.host = address.substr(0, colon);
  req.port = static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1));
  req.target = "/metrics";
  STRATA_ASSIGN_OR_RETURN(auto resp, c.Send(req));
  if (resp->status() != 200) {
    return Status::IOError(fmt::format("{}: /metrics answered {}", address, resp->status()));
  }
  STRATA_ASSIGN_OR_RETURN(std::string body, resp->ReadAll());
  std::map<std::string, OpSample> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    auto value = [&] { return std::atof(line.c_str() + line.rfind(' ') + 1); };
    if (line.rfind("strata_fs_read_bytes_total", 0) == 0) *rbytes = value();
    if (line.rfind("strata_fs_written_bytes_total", 0) == 0) *wbytes = value();
    // The metadata transactions behind those ops, and the lookups and stats
    // the mount's entry cache answered without one.
    if (line.rfind("strata_fsmeta_cached_total", 0) == 0) out["meta:cached"].count = value();
    for (const char* kind : {"read", "write"}) {
      const std::string l = fmt::format("{{kind=\"{}\"}} ", kind);
      if (line.rfind("strata_fsmeta_txn_seconds_count" + l, 0) == 0)
        out[fmt::format("meta:{}txn", kind)].count = value();
      if (line.rfind("strata_fsmeta_txn_seconds_sum" + l, 0) == 0)
        out[fmt::format("meta:{}txn", kind)].sum = value();
    }
    const bool is_count = line.rfind("strata_fs_op_seconds_count{", 0) == 0;
    const bool is_sum = line.rfind("strata_fs_op_seconds_sum{", 0) == 0;
    if (!is_count && !is_sum) continue;
    auto b = line.find("op=\"");
    if (b == std::string::npos) continue;
    auto e = line.find('"', b + 4);
    std::string op = line.substr(b + 4, e - b - 4);
    (is_count ? out[op].count : out[op].sum) = value();
  }
  if (out.empty())
    return Status::NotFound(address +
                            "/metrics has no strata_fs_op_seconds: not a Strata FS mount");
  return out;
}

int CmdStats(const StatsArgs& a) {
  if (a.interval <= 0) {
    fmt::print(stderr, "strata fs stats: --interval must be > 0\n");
    return kExitUsage;
  }
  http::ClientOptions o;
  o.connect_timeout_ms = 3000;
  o.io_timeout_ms = 5000;
  http::HttpClient client(o);
  double rb0 = 0, wb0 = 0;
  auto prev = Scrape(client, a.address, &rb0, &wb0);
  if (!prev) return Fail("stats", prev.error());
  for (int round = 0; a.count == 0 || round < a.count; ++round) {
    const int64_t t0 = MonotonicNanos();
    std::this_thread::sleep_for(std::chrono::duration<double>(a.interval));
    double rb = 0, wb = 0;
    auto cur = Scrape(client, a.address, &rb, &wb);
    if (!cur) return Fail("stats", cur.error());
    const double dt = static_cast<double>(MonotonicNanos() - t0) / 1e9;
    fmt::print("{:<12} {:>10} {:>12}   (last {:.1f} s; read {:.1f} MiB/s, write {:.1f} MiB/s)\n",
               "OP", "OPS/S", "AVG LATENCY", dt, (rb - rb0) / dt / 1048576.0,
               (wb - wb0) / dt / 1048576.0);
    for (const auto& [op, s] : *cur) {
      const OpSample p = prev->count(op) ? prev->at(op) : OpSample{};
      const double n = s.count - p.count;
      if (n <= 0) continue;
      fmt::print("{:<12} {:>10.1f} {:>9.3f} ms\n", op, n / dt, (s.sum - p.sum) / n * 1000.0);
    }
    fmt::print("\n");
    std::fflush(stdout);
    prev = std::move(cur);
    rb0 = rb;
    wb0 = wb;
  }
  return 0;
}

}  // namespace

void RegisterFsAdminCommands(
    CLI::App* fsc, const std::function<std::function<void()>(std::function<int()>)>& wrap) {
  auto* q = fsc->add_subcommand(
      "quota", "Directory quotas: limits on the space and inodes of a directory tree");
  q->require_subcommand(1);
  for (const char* op : {"set", "get", "delete", "ls", "check"}) {
    auto qa = std::make_shared<QuotaArgs>();
    std::string opname = op;
    const char* help = opname == "set"      ? "Set (or change) the quota of --path (EDQUOT past it)"
                       : opname == "get"    ? "Show the quota and usage of --path"
                       : opname == "delete" ? "Remove the quota of --path"
                       : opname == "ls"
                           ? "List every quota of the volume"
                           : "Recompute usage from the tree and report drift (--repair fixes it)";
    auto* c = q->add_subcommand(opname, help);
    c->add_option("meta", qa->meta, "Metadata URL")->required();
    if (opname != "ls") {
      c->add_option("--path", qa->path,
                    "Directory inside the volume, from its root (e.g. /projects/a)");
    }
    if (opname == "set") {
      c->add_option("--capacity", qa->capacity, "Space limit (e.g. 10G; 0: unlimited)");
      c->add_option("--inodes", qa->inodes, "Inode limit (0: unlimited)");
    }
    if (opname == "check") c->add_flag("--repair", qa->repair, "Store the recomputed usage");
    c->callback(wrap([opname, qa] { return CmdQuota(opname, *qa); }));
  }

  auto sa = std::make_shared<SummaryArgs>();
  auto* s = fsc->add_subcommand("summary",
                                "Size, directory and file counts of a tree, from the metadata");
  s->add_option("meta", sa->meta, "Metadata URL")->required();
  s->add_option("path", sa->path, "Directory inside the volume, from its root")
      ->capture_default_str();
  s->add_option("--depth", sa->depth, "Levels of subdirectories shown")->capture_default_str();
  s->add_option("--entries", sa->entries,
                "Biggest entries shown per directory (the rest summed as .../)")
      ->capture_default_str();
  s->callback(wrap([sa] { return CmdSummary(*sa); }));

  auto ra = std::make_shared<RmrArgs>();
  auto* r = fsc->add_subcommand(
      "rmr", "Remove directory trees in the metadata engine (much faster than rm -rf)");
  r->add_option("args", ra->args,
                "META_URL /PATH/IN/VOLUME..., or PATH... inside a mount (with --meta)")
      ->required();
  r->add_option("--meta", ra->meta, "Metadata URL of the mounted volume (for paths inside a mount)")
      ->envname("STRATA_META_URL");
  r->footer(
      "\nFiles go to the trash when the volume keeps one, as with rm. A mount may show removed\n"
      "names until its --entry-timeout passes.");
  r->callback(wrap([ra] { return CmdRmr(*ra); }));

  auto cla = std::make_shared<CloneArgs>();
  auto* cl = fsc->add_subcommand("clone",
                                 "Copy a file or tree in the metadata only (copy-on-write slices)");
  cl->add_option("args", cla->args,
                 "META_URL /SRC /DST (volume paths), or SRC DST inside a mount (with --meta)")
      ->required();
  cl->add_option("--meta", cla->meta,
                 "Metadata URL of the mounted volume (for paths inside a mount)")
      ->envname("STRATA_META_URL");
  cl->callback(wrap([cla] { return CmdClone(*cla); }));

  auto sta = std::make_shared<StatsArgs>();
  auto* st = fsc->add_subcommand(
      "stats",
      "Live per-operation counters of a mount: ops/s and latency per FUSE op, and the metadata "
      "transactions (meta:readtxn, meta:writetxn) and entry-cache answers (meta:cached) behind "
      "them");
  st->add_option("address", sta->address, "The mount's --metrics HOST:PORT")->capture_default_str();
  st->add_option("--interval", sta->interval, "Seconds between refreshes")->capture_default_str();
  st->add_option("--count", sta->count, "Refreshes before exiting (0: until interrupted)")
      ->capture_default_str();
  st->callback(wrap([sta] { return CmdStats(*sta); }));

  auto ca = std::make_shared<ConfigArgs>();
  auto* c = fsc->add_subcommand("config", "Show or change a volume's settings after format");
  c->add_option("meta", ca->meta, "Metadata URL")->required();
  c->add_option("--trash-days", ca->trash_days, "Days deleted files stay in .trash (0: none)");
  c->add_option("--capacity", ca->capacity, "Volume capacity (0: unlimited)");
  c->add_option("--inodes", ca->inodes, "Volume inode limit (0: unlimited)");
  c->add_option("--storage", ca->storage,
                "Object store URL (new credentials or endpoint; the same data)");
  c->add_option("--block-size", ca->block_size, "Refused: fixed at format");
  c->add_option("--compress", ca->compress, "Refused: fixed at format");
  c->callback(wrap([ca] { return CmdConfig(*ca); }));
}

}  // namespace strata::cli
