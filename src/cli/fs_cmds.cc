// strata fs ... — Strata FS, a POSIX filesystem over object storage, from the
// command line: volume lifecycle (format, status, destroy), the FUSE mount,
// and maintenance (gc, fsck, dump/load, warmup, bench).
#include "cli/fs_cmds.h"
#include "cli/fs_admin_cmds.h"
#include "cli/fs_objbench.h"
#include "cli/exit_codes.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include <strata/core/strings.h>
#include <strata/cache/cached_object_store.h>
#include <strata/core/clock.h>
#include <strata/core/http_server.h>
#include <strata/core/log.h>
#include <strata/core/metrics.h>
#include <strata/fs/compression.h>
#include <strata/fs/encryption.h>
#include <strata/fs/fuse_mount.h>
#include <strata/fs/volume.h>
#include <strata/fsmeta/meta_engine.h>
#include <strata/objstore/object_store.h>
#include <strata/server/server.h>

namespace strata::cli {
namespace {

// Seconds since t0, a MonotonicNanos() reading.
double Since(int64_t t0) { return static_cast<double>(MonotonicNanos() - t0) / 1e9; }

int Fail(std::string_view cmd, const Status& st) {
  fmt::print(stderr, "strata fs {}: {}\n", cmd, st.ToString());
  return ExitCodeFor(st);
}

std::string Human(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string NewUuid() {
  std::random_device rd;
  std::mt19937_64 g((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(NowUnixNanos()));
  uint64_t a = g(), b = g();
  a = (a & ~0xF000ull) | 0x4000ull;                   // version 4
  b = (b & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;  // variant
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xFFFF, a & 0xFFFF,
                     b >> 48, b & 0xFFFFFFFFFFFFull);
}

Result<uint64_t> Size(std::string_view what, const std::string& s) {
  auto r = ParseByteSize(s);
  if (!r) return Status::InvalidArgument(fmt::format("{}: \"{}\" is not a size (try 4M, 512MiB, 10G)", what, s));
  return *r;
}

// A mount records its pid in a file named after the mount point, so `umount`
// can wait until the process has committed everything and exited (a second
// mount of a file:// volume needs the first one gone).
std::string PidFileFor(const std::string& mountpoint) {
  char real[PATH_MAX];
  std::string path = realpath(mountpoint.c_str(), real) ? real : mountpoint;
  std::string dir = access("/run", W_OK) == 0 ? "/run/strata-fs" : "/tmp/strata-fs-run";
  mkdir(dir.c_str(), 0755);
  return fmt::format("{}/{:016x}.pid", dir, std::hash<std::string>{}(path));
}

// ---------------------------------------------------------------------------

struct FormatArgs {
  std::string meta, name, storage, block_size = "4M", compress = "none";
  int trash_days = 1;
  std::string capacity = "0";
  std::string encrypt_key_file;  // fs/encryption.h
  bool force = false;
};

int CmdFormat(const FormatArgs& a) {
  fs::Compression comp;
  if (!fs::ParseCompression(a.compress, &comp))
    return Fail("format", Status::InvalidArgument("--compress must be none, lz4 or zstd"));
  auto bs = Size("--block-size", a.block_size);
  if (!bs) return Fail("format", bs.error());
  if (*bs < 64 * 1024 || *bs > 64ull << 20 || (*bs & (*bs - 1)) != 0)
    return Fail("format", Status::InvalidArgument("--block-size must be a power of two from 64K to 64M"));
  auto cap = Size("--capacity", a.capacity);
  if (!cap) return Fail("format", cap.error());
  if (a.name.empty() || a.name.find('/') != std::string::npos)
    return Fail("format", Status::InvalidArgument("the volume NAME must be non-empty and contain no '/'"));
  // The store must work before the volume points at it.
  auto store = objstore::OpenObjectStore(a.storage);
  if (!store) return Fail("format", store.error().WithContext("opening --storage " + a.storage));
  std::string probe = a.name + "/.strata-format-probe";
  Status st = (*store)->PutBytes(probe, "ok").status();
  if (st.ok()) st = (*store)->GetBytes(probe).status();
  if (st.ok()) st = (*store)->Delete(probe);
  if (!st.ok()) return Fail("format", st.WithContext("the storage does not accept writes"));
  auto meta = fsmeta::OpenMeta(a.meta);
  if (!meta) return Fail("format", meta.error());
  fsmeta::Format f;
  auto old = (*meta)->LoadFormat();
  f.uuid = old ? old->uuid : NewUuid();
  f.name = a.name;
  f.storage = a.storage;
  f.block_size = static_cast<uint32_t>(*bs);
  f.compress = std::string(fs::CompressionName(comp));
  f.trash_days = a.trash_days;
  f.capacity = *cap;
  if (!a.encrypt_key_file.empty()) {
    // Init keeps an existing volume's settings unless forced: the key would be silently dropped.
    if (old && !a.force)
      return Fail("format", Status::InvalidArgument(fmt::format(
                                "volume \"{}\" exists: encryption is chosen when a volume is created (or with --force)",
                                old->name)));
    auto material = fs::ReadKeyFile(a.encrypt_key_file);
    if (!material) return Fail("format", material.error());
    st = fs::SetupEncryption(*material, &f);
    if (!st.ok()) return Fail("format", st.WithContext("--encrypt-key-file " + a.encrypt_key_file));
  }
  st = (*meta)->Init(f, a.force);
  if (!st.ok()) return Fail("format", st);
  if (!f.encrypt.empty())
    fmt::print("Blocks are encrypted ({}); mount needs --encrypt-key-file. Keep the key file safe: without it the data is lost.\n",
               f.encrypt);
  fmt::print("Formatted volume \"{}\" (uuid {}): metadata {}, data {}, blocks of {}, compression {}, trash {} day(s)\n",
             f.name, f.uuid, a.meta, a.storage, Human(f.block_size), f.compress, f.trash_days);
  return 0;
}

// ---------------------------------------------------------------------------

struct MountArgs {
  std::string meta, mountpoint;
  bool background = false, writeback = false, read_only = false, no_allow_other = false;
  bool writeback_cache = false;                         // the kernel's (FUSE writeback_cache)
  bool writeback_sync = false;      // --writeback-sync: the default, said explicitly
  bool writeback_no_fsync = false;  // --writeback: stage without fsync (fsync syncs)
  std::string writeback_limit = "1G";                   // --writeback: staged bytes at most
  double upload_delay_s = 0;                            // --writeback: hold staged blocks this long
  std::string cache_dir, cache_size = "10G", ram_cache = "1G", buffer_size = "300M";
  int max_uploads = 20;
  uint32_t prefetch = 8;
  double attr_timeout = 1.0, entry_timeout = 1.0;
  double meta_cache = 0.5;  // the mount's entry cache (MetaEngine::EnableCache); 0: off
  std::string log_file, log_level = "info";
  std::string metrics = "127.0.0.1:9567";
  std::string encrypt_key_file;  // encrypted volumes (fs/encryption.h)
};

constexpr log::Logger kCliLog("fs");

// Serves GET /metrics (Prometheus text) for this mount process. The default
// address moves up to the next free port (several mounts on one machine, as
// JuiceFS does); an explicit one must be free. "none" (or "") disables it.
std::unique_ptr<http::Server> StartMetrics(const std::string& address) {
  if (address.empty() || address == "none") return nullptr;
  const bool is_default = address == MountArgs().metrics;
  std::string host;
  int port = 0;
  if (Status st = server::ParseHostPort(address, host, port); !st.ok()) {
    kCliLog.Warn("--metrics: {}; not serving metrics", st.message());
    return nullptr;
  }
  for (int attempt = 0; attempt < (is_default ? 32 : 1); ++attempt) {
    http::ServerOptions o;
    o.name = "fs-metrics";
    o.bind_address = host;
    o.port = port + attempt;
    o.threads = 2;
    auto srv = std::make_unique<http::Server>(o, [](http::Request& req, http::ResponseWriter& w) {
      if (req.path == "/metrics") {
        w.AddHeader("Content-Type", "text/plain; version=0.0.4");
        (void)w.Send(metrics::Registry::Global().ExportPrometheus());
      } else {
        w.SetStatus(404);
        w.AddHeader("Content-Type", "text/plain");
        (void)w.Send("not found: try /metrics\n");
      }
    });
    Status st = srv->Start();
    if (st.ok()) {
      kCliLog.Info("metrics on http://{}:{}/metrics", host, srv->port());
      return srv;
    }
    if (!is_default) kCliLog.Warn("--metrics {}: {}; not serving metrics", address, st.ToString());
  }
  if (is_default) kCliLog.Warn("no free port from {} up: not serving metrics", address);
  return nullptr;
}

int ServeForeground(const MountArgs& a, int ready_fd) {
  auto report = [&](const std::string& msg) {
    if (ready_fd >= 0) {
      ssize_t n = write(ready_fd, msg.data(), msg.size());
      (void)n;
      close(ready_fd);
      ready_fd = -1;
    }
  };
  fs::VolumeOptions vo;
  vo.cache_dir = a.cache_dir;
  auto cs = Size("--cache-size", a.cache_size);
  auto rc = Size("--ram-cache", a.ram_cache);
  auto bs = Size("--buffer-size", a.buffer_size);
  for (auto* r : {&cs, &rc, &bs}) {
    if (!*r) {
      report("E" + r->error().ToString());
      return Fail("mount", r->error());
    }
  }
  vo.cache_size = *cs;
  vo.ram_cache_size = *rc;
  vo.buffer_size = *bs;
  vo.max_uploads = std::max(1, a.max_uploads);
  vo.prefetch = a.prefetch;
  vo.read_only = a.read_only;
  vo.writeback = a.writeback;
  vo.writeback_sync = !a.writeback_no_fsync;
  if ((a.upload_delay_s > 0 || a.writeback_no_fsync || a.writeback_sync) && !a.writeback) {
    Status bad = Status::InvalidArgument(
        "--upload-delay, --writeback-sync and --writeback-no-fsync apply to --writeback: add "
        "--writeback");
    report("E" + bad.ToString());
    return Fail("mount", bad);
  }
  if (a.writeback_sync && a.writeback_no_fsync) {
    Status bad =
        Status::InvalidArgument("--writeback-sync and --writeback-no-fsync exclude each other");
    report("E" + bad.ToString());
    return Fail("mount", bad);
  }
  auto wl = Size("--writeback-limit", a.writeback_limit);
  if (!wl) {
    report("E" + wl.error().ToString());
    return Fail("mount", wl.error());
  }
  vo.writeback_limit = *wl;
  vo.writeback_upload_delay_ms = static_cast<int64_t>(std::max(0.0, a.upload_delay_s) * 1000);
  vo.encrypt_key_file = a.encrypt_key_file;
  auto vol = fs::Volume::Open(a.meta, vo);
  if (!vol) {
    report("E" + vol.error().ToString());
    return Fail("mount", vol.error());
  }
  std::string pidfile = PidFileFor(a.mountpoint);
  fs::MountOptions mo;
  mo.mountpoint = a.mountpoint;
  mo.read_only = a.read_only;
  mo.writeback = a.writeback_cache;
  mo.allow_other = !a.no_allow_other;
  mo.attr_timeout = a.attr_timeout;
  mo.entry_timeout = a.entry_timeout;
  mo.meta_cache = a.meta_cache;
  bool bg = ready_fd >= 0;
  std::unique_ptr<http::Server> metrics_server = StartMetrics(a.metrics);
  Status st = fs::ServeMount(vol->get(), mo, [&] {
    if (FILE* f = std::fopen(pidfile.c_str(), "w")) {
      std::fprintf(f, "%d\n", static_cast<int>(getpid()));
      std::fclose(f);
    }
    if (bg) {
      report("OK");
    } else {
      fmt::print("Volume \"{}\" mounted on {} (Ctrl-C or `strata fs umount {}` to unmount)\n",
                 (*vol)->format().name, a.mountpoint, a.mountpoint);
      std::fflush(stdout);
    }
  });
  std::remove(pidfile.c_str());
  if (!st.ok()) {
    report("E" + st.ToString());
    return Fail("mount", st);
  }
  return 0;
}

int CmdMount(const MountArgs& a) {
  log::SetLevel(log::ParseLevel(a.log_level));
  struct stat st;
  if (stat(a.mountpoint.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Fail("mount", Status::NotFound(fmt::format("mount point {} is not a directory", a.mountpoint)));
  if (!a.background) return ServeForeground(a, -1);
  // Fork before any thread exists; the child mounts and reports through a pipe.
  int p[2];
  if (pipe(p) != 0) return Fail("mount", Status::FromErrno(errno, "pipe"));
  pid_t pid = fork();
  if (pid < 0) return Fail("mount", Status::FromErrno(errno, "fork"));
  if (pid == 0) {
    close(p[0]);
    setsid();
    int devnull = open("/dev/null", O_RDWR);
    int logfd = a.log_file.empty() ? devnull : open(a.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (logfd < 0) logfd = devnull;
    dup2(devnull, 0);
    dup2(logfd, 1);
    dup2(logfd, 2);
    if (chdir("/") != 0) {
    }
    _exit(ServeForeground(a, p[1]));
  }
  close(p[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof(buf))) > 0) msg.append(buf, static_cast<size_t>(n));
  close(p[0]);
  if (msg == "OK") {
    fmt::print("Volume mounted on {} (pid {}); `strata fs umount {}` unmounts it\n", a.mountpoint, pid,
               a.mountpoint);
    return 0;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  fmt::print(stderr, "strata fs mount: {}\n", msg.empty() ? "the mount process exited early" : msg.substr(1));
  return kExitSomeFailed;
}

// ---------------------------------------------------------------------------

// Whether the mount process is still running. A zombie counts as gone: a
// foreground mount started by a script exits, but stays a zombie until that
// script reaps it, which it may only do after `umount` returns.
bool MountProcessRunning(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  std::string stat;
  if (FILE* f = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r")) {
    char buf[512];
    size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    stat.assign(buf, n);
  }
  // "pid (comm) S ...": the state follows the last ')'.
  size_t close = stat.rfind(')');
  if (close != std::string::npos && close + 2 < stat.size()) {
    char state = stat[close + 2];
    if (state == 'Z' || state == 'X') return false;
  }
  return true;
}

int CmdUmount(const std::string& mountpoint, bool lazy, int wait_s) {
  std::string pidfile = PidFileFor(mountpoint);
  pid_t mount_pid = 0;
  if (FILE* f = std::fopen(pidfile.c_str(), "r")) {
    int p = 0;
    if (std::fscanf(f, "%d", &p) == 1) mount_pid = p;
    std::fclose(f);
  }
  std::vector<const char*> argv = {"fusermount3", "-u"};
  if (lazy) argv.push_back("-z");
  argv.push_back(mountpoint.c_str());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    execvp("fusermount3", const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0)
    return Fail("umount", Status::FromErrno(errno, "running fusermount3"));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fmt::print(stderr, "strata fs umount: fusermount3 -u {} failed (busy? try --lazy)\n", mountpoint);
    return kExitSomeFailed;
  }
  // Wait for the mount process to commit what it buffered and exit.
  if (mount_pid > 0) {
    auto deadline = MonotonicNanos() + int64_t{wait_s} * 1000000000;
    while (MountProcessRunning(mount_pid) && MonotonicNanos() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (MountProcessRunning(mount_pid)) {
      fmt::print(stderr, "strata fs umount: unmounted, but mount process {} is still running after {} s\n",
                 mount_pid, wait_s);
      return kExitSomeFailed;
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------

Result<std::unique_ptr<fsmeta::MetaEngine>> OpenFormatted(const std::string& url, fsmeta::Format* f) {
  STRATA_ASSIGN_OR_RETURN(auto meta, fsmeta::OpenMeta(url));
  auto fr = meta->LoadFormat();
  if (!fr) return fr.error().WithContext(fmt::format("{} holds no formatted volume", url));
  *f = *fr;
  return meta;
}

int CmdStatus(const std::string& url) {
  fsmeta::Format f;
  auto meta = OpenFormatted(url, &f);
  if (!meta) return Fail("status", meta.error());
  fmt::print("Volume:      {}\nUUID:        {}\nStorage:     {}\nBlock size:  {}\nCompression: {}\nTrash days:  {}\n",
             f.name, f.uuid, f.storage, Human(f.block_size), f.compress, f.trash_days);
  fmt::print("Encryption:  {}\n", f.encrypt.empty() ? "none" : f.encrypt + (f.encrypt_salt.empty() ? " (raw key)" : " (passphrase)"));
  fsmeta::Context ctx;
  auto sf = (*meta)->StatFS(ctx, fsmeta::kRootIno);
  if (sf) {
    fmt::print("Used:        {} in {} inodes (capacity {})\n", Human(sf->used_space), sf->used_inodes,
               Human(sf->total_space));
  }
  auto sessions = (*meta)->ListSessions();
  if (sessions) {
    fmt::print("Sessions:    {}\n", sessions->size());
    for (const auto& s : *sessions) {
      fmt::print("  sid {} host {} pid {} mount {} (heartbeat {:.0f} s ago)\n", s.sid, s.host, s.pid,
                 s.mount_point, (NowUnixNanos() - s.heartbeat_ns) / 1e9);
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------

int CmdInfo(const std::vector<std::string>& paths, const std::string& meta_url) {
  std::unique_ptr<fsmeta::MetaEngine> meta;
  fsmeta::Format f;
  if (!meta_url.empty()) {
    auto m = OpenFormatted(meta_url, &f);
    if (!m) return Fail("info", m.error());
    meta = std::move(*m);
  }
  int rc = 0;
  for (const auto& p : paths) {
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) {
      fmt::print(stderr, "strata fs info: {}: {}\n", p, std::strerror(errno));
      rc = kExitNotFound;
      continue;
    }
    fmt::print("{}:\n  inode: {}\n  mode:  {:o}\n  size:  {} ({})\n  links: {}\n", p, st.st_ino, st.st_mode,
               st.st_size, Human(static_cast<uint64_t>(st.st_size)), st.st_nlink);
    if (!meta) continue;
    fsmeta::Context ctx;
    if (S_ISDIR(st.st_mode)) {
      auto s = meta->GetSummary(ctx, st.st_ino);
      if (s) fmt::print("  files: {}\n  dirs:  {}\n  bytes: {} ({})\n", s->files, s->dirs, s->length, Human(s->length));
      continue;
    }
    if (!S_ISREG(st.st_mode)) continue;
    uint64_t chunks = (static_cast<uint64_t>(st.st_size) + fsmeta::kChunkSize - 1) / fsmeta::kChunkSize;
    fmt::print("  chunks:\n");
    for (uint64_t c = 0; c < chunks; c++) {
      auto sl = meta->Read(st.st_ino, static_cast<uint32_t>(c));
      if (!sl) {
        fmt::print("    {}: {}\n", c, sl.error().ToString());
        continue;
      }
      for (const auto& s : *sl) {
        fmt::print("    chunk {} pos {} len {}: slice {} (size {}, off {}){}\n", c, s.pos, s.len, s.id, s.size,
                   s.off, s.id == 0 ? " hole" : "");
      }
    }
  }
  return rc;
}

// ---------------------------------------------------------------------------

struct ObjScan {
  std::map<uint64_t, std::vector<std::pair<uint32_t, uint32_t>>> blocks;  // id -> (index, len)
  std::map<uint64_t, int64_t> newest;                                     // id -> newest block mtime
  uint64_t bytes = 0, objects = 0;
};

Status ScanObjects(fs::Volume* v, ObjScan* out) {
  return v->store()->ListAll(v->ChunksPrefix(), [&](const objstore::ObjectInfo& o) {
    uint64_t id;
    uint32_t idx, len;
    if (!v->ParseBlockKey(o.key, &id, &idx, &len)) return Status::Ok();
    out->blocks[id].emplace_back(idx, len);
    out->newest[id] = std::max(out->newest[id], o.mtime_ns);
    out->bytes += o.size;
    out->objects++;
    return Status::Ok();
  });
}

Result<std::unique_ptr<fs::Volume>> OpenVolumeForMaintenance(const std::string& url) {
  fs::VolumeOptions vo;
  vo.ram_cache_size = 64ull << 20;
  vo.prefetch = 0;
  vo.no_key_needed = true;  // none of them reads or writes block contents
  return fs::Volume::Open(url, vo);
}

int CmdGc(const std::string& url, bool del, int64_t min_age_s) {
  auto v = OpenVolumeForMaintenance(url);
  if (!v) return Fail("gc", v.error());
  fs::Volume* vol = v->get();
  size_t pending = 0;
  if (del) {
    for (;;) {
      auto n = vol->ProcessPendingDeletes(1000);
      if (!n) return Fail("gc", n.error());
      pending += *n;
      if (*n == 0) break;
    }
  }
  std::unordered_set<uint64_t> live;
  Status st = vol->meta()->ListSlices([&](fsmeta::Ino, uint32_t, const fsmeta::Slice& s) {
    if (s.id != 0) live.insert(s.id);
    return Status::Ok();
  });
  if (!st.ok()) return Fail("gc", st);
  if (!del) {
    auto pend = vol->meta()->PendingSliceDeletes(1000000);
    if (pend) {
      for (const auto& r : *pend) live.insert(r.id);  // counted below as pending, not as leaked
      pending = pend->size();
    }
  }
  ObjScan scan;
  st = ScanObjects(vol, &scan);
  if (!st.ok()) return Fail("gc", st);
  uint64_t leaked = 0, leaked_bytes = 0, young = 0, deleted = 0;
  int64_t now = NowUnixNanos();
  for (auto& [id, blocks] : scan.blocks) {
    if (live.count(id)) continue;
    if (now - scan.newest[id] < min_age_s * 1000000000ll) {
      young++;  // maybe a write still being committed by a live mount
      continue;
    }
    leaked++;
    for (auto& [idx, len] : blocks) leaked_bytes += len;
    if (del) {
      for (auto& [idx, len] : blocks) {
        Status d = vol->store()->Delete(vol->BlockKey(id, idx, len));
        if (!d.ok()) return Fail("gc", d);
        deleted++;
      }
    }
  }
  fmt::print("Objects: {} ({}) in {} slices; {} slices referenced\n", scan.objects, Human(scan.bytes),
             scan.blocks.size(), live.size());
  fmt::print("Leaked slices (no reference, older than {} s): {} ({}){}\n", min_age_s, leaked, Human(leaked_bytes),
             del ? fmt::format(", {} objects deleted", deleted) : ", run with --delete to remove them");
  fmt::print("Freed slices {}: {}\n", del ? "deleted" : "waiting for deletion", pending);
  if (young) fmt::print("Unreferenced but recent slices skipped: {}\n", young);
  return 0;
}

int CmdFsck(const std::string& url, bool repair, const std::vector<std::string>& cache_dirs) {
  auto v = OpenVolumeForMaintenance(url);
  if (!v) return Fail("fsck", v.error());
  fs::Volume* vol = v->get();
  fsmeta::CheckOptions co;
  co.repair = repair;
  auto problems = vol->meta()->Check(co);
  if (!problems) return Fail("fsck", problems.error());
  ObjScan scan;
  Status st = ScanObjects(vol, &scan);
  if (!st.ok()) return Fail("fsck", st);
  // Blocks a writeback mount on this machine staged and has not uploaded yet
  // are not missing: the mount (or the next one on that cache directory)
  // uploads them.
  std::unordered_set<std::string> staged;
  for (const auto& d : cache_dirs) {
    for (auto& k : vol->StagedKeys(d)) staged.insert(std::move(k));
  }
  uint64_t staged_refs = 0;
  std::vector<std::string> missing;
  uint64_t slices = 0;
  std::unordered_set<uint64_t> checked;
  st = vol->meta()->ListSlices([&](fsmeta::Ino ino, uint32_t chunk, const fsmeta::Slice& s) {
    if (s.id == 0 || !checked.insert(s.id).second) return Status::Ok();
    slices++;
    auto it = scan.blocks.find(s.id);
    uint32_t bs = vol->format().block_size;
    uint32_t nblocks = s.size == 0 ? 0 : (s.size - 1) / bs + 1;
    for (uint32_t i = 0; i < nblocks; i++) {
      uint32_t len = vol->BlockLen(s.size, i);
      bool found = it != scan.blocks.end() &&
                   std::find(it->second.begin(), it->second.end(), std::make_pair(i, len)) != it->second.end();
      if (!found && staged.count(vol->BlockKey(s.id, i, len))) {
        staged_refs++;
      } else if (!found) {
        missing.push_back(fmt::format("inode {} chunk {}: object {} is missing", ino, chunk,
                                      vol->BlockKey(s.id, i, len)));
      }
    }
    return Status::Ok();
  });
  if (!st.ok()) return Fail("fsck", st);
  for (const auto& p : *problems) fmt::print("{}\n", p);
  for (const auto& m : missing) fmt::print("{}\n", m);
  if (staged_refs)
    fmt::print("{} referenced blocks are staged by a writeback mount and not uploaded yet (other machines cannot read them until then)\n",
               staged_refs);
  size_t n = problems->size() + missing.size();
  fmt::print("Checked metadata and {} slices ({} objects): {}\n", slices, scan.objects,
             n == 0 ? "no problems found" : fmt::format("{} problem(s){}", n, repair ? " (repaired where possible)" : ""));
  return n == 0 ? 0 : kExitSomeFailed;
}

// ---------------------------------------------------------------------------

int CmdDump(const std::string& url, const std::string& file) {
  auto meta = fsmeta::OpenMeta(url);
  if (!meta) return Fail("dump", meta.error());
  Status st;
  if (file.empty() || file == "-") {
    st = (*meta)->Dump(std::cout);
    std::cout.flush();
  } else {
    std::string tmp = file + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) return Fail("dump", Status::IOError("cannot write " + tmp));
      st = (*meta)->Dump(out);
      out.flush();
      if (st.ok() && !out) st = Status::IOError("writing " + tmp + " failed (disk full?)");
    }
    if (st.ok() && std::rename(tmp.c_str(), file.c_str()) != 0) st = Status::FromErrno(errno, "rename " + tmp);
    if (!st.ok()) std::remove(tmp.c_str());
    if (st.ok()) fmt::print(stderr, "Metadata of {} dumped to {}\n", url, file);
  }
  if (!st.ok()) return Fail("dump", st);
  return 0;
}

int CmdLoad(const std::string& url, const std::string& file) {
  auto meta = fsmeta::OpenMeta(url);
  if (!meta) return Fail("load", meta.error());
  std::ifstream in(file, std::ios::binary);
  if (!in) return Fail("load", Status::NotFound("cannot read " + file));
  Status st = (*meta)->Load(in);
  if (!st.ok()) return Fail("load", st);
  fmt::print("Metadata loaded into {} from {}\n", url, file);
  return 0;
}

int CmdDestroy(const std::string& url, bool yes, bool force) {
  auto v = OpenVolumeForMaintenance(url);
  if (!v) return Fail("destroy", v.error());
  fs::Volume* vol = v->get();
  auto sessions = vol->meta()->ListSessions();
  if (sessions && !sessions->empty() && !force) {
    return Fail("destroy", Status::PreconditionFailed(fmt::format(
                               "volume \"{}\" has {} active session(s) (mounted?); unmount first or pass --force",
                               vol->format().name, sessions->size())));
  }
  if (!yes) {
    return Fail("destroy", Status::InvalidArgument(fmt::format(
                               "this deletes every file of volume \"{}\" and its objects in {}; pass --yes to confirm",
                               vol->format().name, vol->format().storage)));
  }
  std::vector<std::string> keys;
  uint64_t deleted = 0;
  Status st = vol->store()->ListAll(vol->format().name + "/", [&](const objstore::ObjectInfo& o) {
    keys.push_back(o.key);
    if (keys.size() >= 1000) {
      auto r = vol->store()->DeleteMany(keys);
      if (!r) return r.error();
      deleted += keys.size();
      keys.clear();
    }
    return Status::Ok();
  });
  if (st.ok() && !keys.empty()) {
    auto r = vol->store()->DeleteMany(keys);
    if (!r) st = r.error();
    deleted += keys.size();
  }
  if (!st.ok()) return Fail("destroy", st);
  st = vol->meta()->Destroy();
  if (!st.ok()) return Fail("destroy", st);
  fmt::print("Volume \"{}\" destroyed ({} objects deleted)\n", vol->format().name, deleted);
  return 0;
}

// ---------------------------------------------------------------------------

Status WalkFiles(const std::string& path, std::vector<std::string>* out) {
  std::error_code ec;
  std::filesystem::file_status s = std::filesystem::symlink_status(path, ec);
  if (ec) return Status::NotFound(fmt::format("{}: {}", path, ec.message()));
  if (std::filesystem::is_regular_file(s)) {
    out->push_back(path);
    return Status::Ok();
  }
  if (!std::filesystem::is_directory(s)) return Status::Ok();
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) out->push_back(it->path().string());
  }
  if (ec) return Status::IOError(fmt::format("walking {}: {}", path, ec.message()));
  return Status::Ok();
}

int CmdWarmup(const std::vector<std::string>& paths, int threads) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    Status st = WalkFiles(p, &files);
    if (!st.ok()) return Fail("warmup", st);
  }
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<int> errors{0};
  auto t0 = MonotonicNanos();
  std::vector<std::thread> ts;
  for (int i = 0; i < std::max(1, threads); i++) {
    ts.emplace_back([&] {
      std::string buf(1 << 20, '\0');
      for (size_t k; (k = next++) < files.size();) {
        int fd = open(files[k].c_str(), O_RDONLY);
        if (fd < 0) {
          errors++;
          continue;
        }
        ssize_t n;
        while ((n = read(fd, buf.data(), buf.size())) > 0) bytes += static_cast<uint64_t>(n);
        if (n < 0) errors++;
        close(fd);
      }
    });
  }
  for (auto& t : ts) t.join();
  double s = Since(t0);
  fmt::print("Warmed {} files, {} in {:.2f} s ({:.1f} MiB/s){}\n", files.size(), Human(bytes), s,
             bytes / 1048576.0 / std::max(s, 1e-9), errors ? fmt::format(", {} errors", errors.load()) : "");
  return errors ? kExitSomeFailed : 0;
}

struct BenchArgs {
  std::string path, big_size = "1G", block = "1M";
  int small_files = 1000;
  std::string small_size = "128K";
};

Status WriteFileAll(const std::string& path, const std::string& data, bool do_fsync) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      close(fd);
      return Status::FromErrno(errno, "write " + path);
    }
    off += static_cast<size_t>(n);
  }
  if (do_fsync && fsync(fd) != 0) {
    close(fd);
    return Status::FromErrno(errno, "fsync " + path);
  }
  if (close(fd) != 0) return Status::FromErrno(errno, "close " + path);
  return Status::Ok();
}

int CmdBench(const BenchArgs& a) {
  auto big = Size("--big-file-size", a.big_size);
  auto blk = Size("--block-size", a.block);
  auto small = Size("--small-file-size", a.small_size);
  if (!big) return Fail("bench", big.error());
  if (!blk || *blk == 0) return Fail("bench", Status::InvalidArgument("--block-size must be > 0"));
  if (!small) return Fail("bench", small.error());
  std::string dir = a.path + fmt::format("/__strata_bench_{}", getpid());
  if (mkdir(dir.c_str(), 0755) != 0) return Fail("bench", Status::FromErrno(errno, "mkdir " + dir));
  auto cleanup = [&] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  std::string buf(*blk, '\0');
  std::mt19937_64 rng(42);
  for (size_t i = 0; i + 8 <= buf.size(); i += 8) {
    uint64_t x = rng();
    std::memcpy(buf.data() + i, &x, 8);
  }
  // Big file: sequential write, then read.
  std::string bigf = dir + "/bigfile";
  auto t0 = MonotonicNanos();
  int fd = open(bigf.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    cleanup();
    return Fail("bench", Status::FromErrno(errno, "open " + bigf));
  }
  for (uint64_t done = 0; done < *big;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), *big - done));
    ssize_t w = write(fd, buf.data(), n);
    if (w <= 0) {
      close(fd);
      cleanup();
      return Fail("bench", Status::FromErrno(errno, "write " + bigf));
    }
    done += static_cast<uint64_t>(w);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    cleanup();
    return Fail("bench", Status::FromErrno(errno, "fsync/close " + bigf));
  }
  double ws = Since(t0);
  fd = open(bigf.c_str(), O_RDONLY);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  t0 = MonotonicNanos();
  uint64_t got = 0;
  ssize_t r;
  while ((r = read(fd, buf.data(), buf.size())) > 0) got += static_cast<uint64_t>(r);
  close(fd);
  double rs = Since(t0);
  if (got != *big) {
    cleanup();
    return Fail("bench", Status::Corruption(fmt::format("read back {} of {} bytes", got, *big)));
  }
  fmt::print("Big file   {}: write {:8.1f} MiB/s ({:.2f} s), read {:8.1f} MiB/s ({:.2f} s)\n", Human(*big),
             *big / 1048576.0 / ws, ws, *big / 1048576.0 / rs, rs);
  // Small files: write, read, stat.
  std::string sdata = buf.substr(0, std::min<size_t>(*small, buf.size()));
  if (sdata.size() < *small) sdata.resize(*small, 'x');
  t0 = MonotonicNanos();
  for (int i = 0; i < a.small_files; i++) {
    Status st = WriteFileAll(fmt::format("{}/small_{}", dir, i), sdata, false);
    if (!st.ok()) {
      cleanup();
      return Fail("bench", st);
    }
  }
  double sw = Since(t0);
  t0 = MonotonicNanos();
  for (int i = 0; i < a.small_files; i++) {
    std::string p = fmt::format("{}/small_{}", dir, i);
    int f = open(p.c_str(), O_RDONLY);
    if (f < 0) {
      cleanup();
      return Fail("bench", Status::FromErrno(errno, "open " + p));
    }
    while (read(f, buf.data(), buf.size()) > 0) {
    }
    close(f);
  }
  double sr = Since(t0);
  t0 = MonotonicNanos();
  for (int i = 0; i < a.small_files; i++) {
    struct stat st;
    if (stat(fmt::format("{}/small_{}", dir, i).c_str(), &st) != 0) {
      cleanup();
      return Fail("bench", Status::FromErrno(errno, "stat"));
    }
  }
  double ss = Since(t0);
  fmt::print("Small files {} x {}: write {:8.1f} files/s, read {:8.1f} files/s, stat {:8.1f} files/s\n",
             a.small_files, Human(*small), a.small_files / sw, a.small_files / sr, a.small_files / ss);
  t0 = MonotonicNanos();
  cleanup();
  fmt::print("Cleanup {:.2f} s\n", Since(t0));
  return 0;
}

// mount's --writeback options (the JuiceFS meaning: background uploads from
// a local stage) and --writeback-cache (the kernel's page cache writeback).
void AddWritebackFlags(CLI::App* m, MountArgs* ma) {
  m->add_flag("--writeback", ma->writeback,
              "Upload in the background: close returns once the data is staged durably in "
              "--cache-dir (needed) and the metadata committed; staged blocks survive a crash "
              "of the mount and are uploaded by the next one");
  m->add_option("--writeback-limit", ma->writeback_limit,
                "Bytes staged at most with --writeback; beyond, writes upload synchronously")
      ->capture_default_str();
  m->add_flag("--writeback-sync", ma->writeback_sync,
              "With --writeback: fdatasync each staged block before its commit, so a closed "
              "file survives a power loss (the default; the flag says it explicitly)");
  m->add_flag("--writeback-no-fsync", ma->writeback_no_fsync,
              "With --writeback: stage without fdatasync; a close then survives a crash of "
              "the mount but not a power loss, until an fsync (a syncfs of the stage's disk) "
              "or the upload");
  m->add_option("--upload-delay", ma->upload_delay_s,
                "With --writeback: seconds a staged block waits before its upload (a file deleted meanwhile is "
                "never uploaded; unmount uploads at once)")
      ->capture_default_str();
  m->add_flag("--writeback-cache", ma->writeback_cache,
              "Kernel writeback cache (faster small writes; weaker close-to-open)");
}

// dump and load (kept out of RegisterFsCommands for its size).
void RegisterDumpLoad(CLI::App* fsc,
                      const std::function<std::function<void()>(std::function<int()>)>& wrap) {
  auto da = std::make_shared<std::pair<std::string, std::string>>();
  auto* d = fsc->add_subcommand("dump", "Write the volume's metadata as JSON (to FILE or stdout)");
  d->add_option("meta", da->first, "Metadata URL")->required();
  d->add_option("file", da->second, "Output file (default: stdout)");
  d->callback(wrap([da] { return CmdDump(da->first, da->second); }));

  auto la = std::make_shared<std::pair<std::string, std::string>>();
  auto* l = fsc->add_subcommand("load", "Restore metadata from a dump into an empty META_URL");
  l->add_option("meta", la->first, "Metadata URL (unformatted)")->required();
  l->add_option("file", la->second, "The JSON dump")->required();
  l->callback(wrap([la] { return CmdLoad(la->first, la->second); }));
}

}  // namespace

void RegisterFsCommands(CLI::App& app, int* exit_code) {
  auto wrap = [exit_code](std::function<int()> fn) {
    return [exit_code, fn = std::move(fn)] {
      try {
        *exit_code = fn();
      } catch (const std::exception& e) {
        fmt::print(stderr, "strata fs: internal error: {}\n", e.what());
        *exit_code = kExitSomeFailed;
      }
    };
  };
  auto* fsc = app.add_subcommand("fs", "Strata FS: a POSIX filesystem over object storage (FUSE)");
  fsc->require_subcommand(1);
  fsc->footer(
      "\nMetadata URLs: sqlite3:///path/to/meta.db (one machine), redis://HOST:PORT/DB or "
      "postgres://USER:PASSWORD@HOST:PORT/DB (many mounts).\nExample:\n"
      "  strata fs format sqlite3:///var/lib/strata/vol1.db vol1 --storage "
      "'file:///var/lib/strata/data?bucket=fs'\n"
      "  strata fs mount sqlite3:///var/lib/strata/vol1.db /mnt/vol1 --background --cache-dir "
      "/var/cache/strata\n"
      "  strata fs umount /mnt/vol1");

  auto fa = std::make_shared<FormatArgs>();
  auto* f = fsc->add_subcommand("format", "Create a volume: its metadata in META_URL, its data in --storage");
  f->add_option("meta", fa->meta, "Metadata URL: sqlite3://PATH, redis://... or postgres://...")
      ->required();
  f->add_option("name", fa->name, "Volume name (also the key prefix of its objects)")->required();
  f->add_option("--storage", fa->storage, "Object store URL for the data (s3://..., file://..., mem://...)")->required();
  f->add_option("--block-size", fa->block_size, "Size of each data object")->capture_default_str();
  f->add_option("--compress", fa->compress, "Block compression: none, lz4 or zstd")->capture_default_str();
  f->add_option("--trash-days", fa->trash_days, "Days deleted files stay in .trash (0: none)")->capture_default_str();
  f->add_option("--capacity", fa->capacity, "Capacity shown by df (0: unlimited)")->capture_default_str();
  f->add_option("--encrypt-key-file", fa->encrypt_key_file,
                "Encrypt blocks with AES-256-GCM: a file of exactly 32 bytes is the key, anything else a "
                "passphrase (PBKDF2); mount then needs the same file");
  f->add_flag("--force", fa->force, "Overwrite the settings of an existing volume");
  f->callback(wrap([fa] { return CmdFormat(*fa); }));

  auto ma = std::make_shared<MountArgs>();
  auto* m = fsc->add_subcommand("mount", "Mount a volume with FUSE (foreground unless --background)");
  m->add_option("meta", ma->meta, "Metadata URL of the volume")->required();
  m->add_option("mountpoint", ma->mountpoint, "An existing directory")->required();
  m->add_flag("-d,--background", ma->background, "Return once mounted; the mount runs on as a daemon");
  m->add_option("--cache-dir", ma->cache_dir, "Disk cache directory for data blocks (default: RAM only)");
  m->add_option("--cache-size", ma->cache_size, "Disk cache limit")->capture_default_str();
  m->add_option("--ram-cache", ma->ram_cache, "RAM cache for data blocks")->capture_default_str();
  m->add_option("--buffer-size", ma->buffer_size, "Write buffer for uncommitted data, whole mount")->capture_default_str();
  m->add_option("--max-uploads", ma->max_uploads, "Block uploads in parallel")->capture_default_str();
  m->add_option("--prefetch", ma->prefetch, "Blocks read ahead on sequential reads; also a file of one block is fetched when opened for reading (0: neither)")->capture_default_str();
  AddWritebackFlags(m, ma.get());
  m->add_option("--encrypt-key-file", ma->encrypt_key_file, "Key file of an encrypted volume (as given to format)");
  m->add_flag("--read-only", ma->read_only, "Mount read-only");
  m->add_flag("--no-allow-other", ma->no_allow_other, "Only the mounting user may access the mount");
  m->add_option("--attr-timeout", ma->attr_timeout, "Seconds the kernel caches attributes")->capture_default_str();
  m->add_option("--entry-timeout", ma->entry_timeout, "Seconds the kernel caches names")->capture_default_str();
  m->add_option("--meta-cache", ma->meta_cache,
                "Seconds the mount answers lookups and stats from its own entry cache before it "
                "checks the volume's change counter again (0: every lookup and stat is a "
                "metadata transaction)")
      ->capture_default_str();
  m->add_option("--log", ma->log_file, "Log file of a --background mount (default: none)");
  m->add_option("--metrics", ma->metrics,
                "Serve Prometheus metrics on HOST:PORT/metrics (the default moves to the next free port; none: off)")
      ->capture_default_str();
  m->add_option("--log-level", ma->log_level, "trace|debug|info|warn|error")->capture_default_str();
  m->footer("\nSIGTERM, SIGINT or `strata fs umount MOUNTPOINT` commits buffered writes and unmounts.");
  m->callback(wrap([ma] { return CmdMount(*ma); }));

  struct UmountArgs {
    std::string mountpoint;
    bool lazy = false;
    int wait = 60;
  };
  auto um = std::make_shared<UmountArgs>();
  auto* u = fsc->add_subcommand("umount", "Unmount (fusermount3 -u) and wait until the mount process has committed its writes and exited");
  u->add_option("mountpoint", um->mountpoint, "Mount point")->required();
  u->add_flag("--lazy", um->lazy, "Detach now even if busy (umount -l)");
  u->add_option("--wait", um->wait, "Seconds to wait for the mount process to exit")->capture_default_str();
  u->callback(wrap([um] { return CmdUmount(um->mountpoint, um->lazy, um->wait); }));

  auto meta_url = std::make_shared<std::string>();
  auto* s = fsc->add_subcommand("status", "Show a volume's settings, usage and mounted sessions");
  s->add_option("meta", *meta_url, "Metadata URL")->required();
  s->callback(wrap([meta_url] { return CmdStatus(*meta_url); }));

  auto ia = std::make_shared<std::pair<std::vector<std::string>, std::string>>();
  auto* i = fsc->add_subcommand("info", "Show inode, size and (with --meta) the chunks and slices of PATHs in a mount");
  i->add_option("paths", ia->first, "Files or directories inside a mount")->required();
  i->add_option("--meta", ia->second, "Metadata URL of the mounted volume (shows slices and directory summaries)")
      ->envname("STRATA_META_URL");
  i->callback(wrap([ia] { return CmdInfo(ia->first, ia->second); }));

  struct GcArgs {
    std::string meta;
    bool del = false;
    int64_t min_age = 3600;
  };
  auto ga = std::make_shared<GcArgs>();
  auto* g = fsc->add_subcommand("gc", "Find (and with --delete remove) objects no file references");
  g->add_option("meta", ga->meta, "Metadata URL")->required();
  g->add_flag("--delete", ga->del, "Delete leaked objects and the slices waiting for deletion");
  g->add_option("--min-age", ga->min_age, "Skip unreferenced objects younger than this (s): a live mount may still commit them")
      ->capture_default_str();
  g->callback(wrap([ga] { return CmdGc(ga->meta, ga->del, ga->min_age); }));

  struct FsckArgs {
    std::string meta;
    bool repair = false;
    std::vector<std::string> cache_dirs;
  };
  auto ca = std::make_shared<FsckArgs>();
  auto* c = fsc->add_subcommand("fsck", "Check metadata consistency and that every referenced object exists");
  c->add_option("meta", ca->meta, "Metadata URL")->required();
  c->add_flag("--repair", ca->repair, "Fix what can be fixed in the metadata");
  c->add_option("--cache-dir", ca->cache_dirs,
                "Cache directory of a --writeback mount on this machine: blocks staged there are not missing (repeatable)");
  c->callback(wrap([ca] { return CmdFsck(ca->meta, ca->repair, ca->cache_dirs); }));

  auto ba = std::make_shared<BenchArgs>();
  auto* b = fsc->add_subcommand("bench", "Measure a mount: big-file write/read and small-file write/read/stat");
  b->add_option("path", ba->path, "A directory inside the mount")->required();
  b->add_option("--big-file-size", ba->big_size, "Size of the big file")->capture_default_str();
  b->add_option("--block-size", ba->block, "Size of each read/write call")->capture_default_str();
  b->add_option("--small-files", ba->small_files, "Number of small files")->capture_default_str();
  b->add_option("--small-file-size", ba->small_size, "Size of each small file")->capture_default_str();
  b->callback(wrap([ba] { return CmdBench(*ba); }));

  auto wa = std::make_shared<std::pair<std::vector<std::string>, int>>();
  wa->second = 4;
  auto* w = fsc->add_subcommand("warmup", "Read files (directories recursively) through the mount into its cache");
  w->add_option("paths", wa->first, "Files or directories inside a mount")->required();
  w->add_option("--threads", wa->second, "Files read at once")->capture_default_str();
  w->callback(wrap([wa] { return CmdWarmup(wa->first, wa->second); }));

  RegisterDumpLoad(fsc, wrap);

  struct DestroyArgs {
    std::string meta;
    bool yes = false, force = false;
  };
  auto xa = std::make_shared<DestroyArgs>();
  auto* x = fsc->add_subcommand("destroy", "Delete a volume: every object of it and all its metadata");
  x->add_option("meta", xa->meta, "Metadata URL")->required();
  x->add_flag("--yes", xa->yes, "Confirm");
  x->add_flag("--force", xa->force, "Even with active sessions");
  x->callback(wrap([xa] { return CmdDestroy(xa->meta, xa->yes, xa->force); }));

  RegisterFsAdminCommands(fsc, wrap);  // quota, summary, config (fs_admin_cmds.cc)
  RegisterFsObjbench(fsc, wrap);       // fs_objbench.cc
  RegisterFsSync(fsc, wrap);           // fs_sync_cmd.cc
}

}  // namespace strata::cli
