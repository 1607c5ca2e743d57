// ServeMount: one FUSE session for a Volume. Registers the mount's session,
// mounts, runs the multithreaded loop with a housekeeping thread (heartbeat,
// queued object deletes, stale sessions, trash, atimes, idle buffers), and at
// the end commits buffered writes and closes the session.
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <strata/core/clock.h>
#include <strata/core/metrics.h>
#include <strata/fs/fuse_mount.h>

#include "fs/data_io.h"
#include "fs/fuse_fs.h"

namespace strata::fs {
namespace {

using namespace fusefs;  // NOLINT: the adapter's private parts

// Heartbeat, queued object deletes, trash and stale sessions, until stopped.
class Housekeeper {
 public:
  // `on_tick` runs on every tick (about every 2 s) on the housekeeping thread.
  Housekeeper(Volume* v, bool read_only, std::function<void()> on_tick)
      : v_(v), read_only_(read_only), on_tick_(std::move(on_tick)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Housekeeper() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void Run() {
    int tick = 0;
    std::unique_lock<std::mutex> lk(mu_);
    while (!cv_.wait_for(lk, std::chrono::seconds(2), [&] { return stop_; })) {
      lk.unlock();
      tick++;
      if (on_tick_) on_tick_();
      if (tick % 5 == 0) {
        Status st = v_->meta()->Heartbeat();
        if (!st.ok()) kLog.Warn("heartbeat: {}", st.ToString());
      }
      if (!read_only_) {
        auto n = v_->ProcessPendingDeletes(1000);
        if (!n) kLog.Warn("deleting freed slices: {}", n.error().ToString());
        if (tick % 30 == 1) {
          auto c = v_->meta()->CleanStaleSessions(300);
          if (!c) kLog.Warn("cleaning stale sessions: {}", c.error().ToString());
        }
        if (tick % 1800 == 1) {
          auto t = v_->meta()->CleanTrash(NowUnixNanos());
          if (!t) kLog.Warn("cleaning trash: {}", t.error().ToString());
        }
      }
      lk.lock();
    }
  }

  Volume* v_;
  bool read_only_;
  std::function<void()> on_tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

// Raises the kernel readahead of the new mount (FUSE starts at 128 KiB) so a
// sequential reader sends requests of up to 1 MiB and several at a time: fewer
// round trips through FUSE per byte. Best effort (needs root and sysfs). The
// mount's device number comes from mountinfo, since a stat of the mount point
// would wait for this very process.
void RaiseReadahead(const std::string& real_mountpoint, unsigned kb) {
  FILE* f = std::fopen("/proc/self/mountinfo", "r");
  if (!f) return;
  char line[4096];
  std::string dev;
  while (std::fgets(line, sizeof(line), f)) {
    char majmin[64], root[1024], mnt[2048];
    if (std::sscanf(line, "%*s %*s %63s %1023s %2047s", majmin, root, mnt) == 3 &&
        real_mountpoint == mnt) {
      dev = majmin;  // the last match is the newest mount on that path
    }
  }
  std::fclose(f);
  if (dev.empty()) return;
  std::string path = "/sys/class/bdi/" + dev + "/read_ahead_kb";
  FILE* out = std::fopen(path.c_str(), "w");
  if (!out) return;
  std::fprintf(out, "%u\n", kb);
  std::fclose(out);
}

}  // namespace

// The data layer of the live mount, for the buffered-bytes gauge (a callback
// gauge cannot be removed, so it reads through this; null when unmounted).
static std::atomic<DataIO*> g_mounted_data{nullptr};

Status ServeMount(Volume* volume, const MountOptions& options,
                  const std::function<void()>& on_ready) {
  FuseFs fs(volume, options);
  (void)Metrics();
  static std::once_flag gauge_once;
  std::call_once(gauge_once, [] {
    metrics::Registry::Global().AddCallbackGauge(
        "strata_fs_buffered_bytes", "Bytes written through the mount and not yet committed", [] {
          DataIO* d = g_mounted_data.load();
          return d ? static_cast<double>(d->buffered_bytes()) : 0.0;
        });
  });
  g_mounted_data = volume->data();
  struct ClearData {
    ~ClearData() { g_mounted_data = nullptr; }
  } clear_data;
  fuse_lowlevel_ops ops = MakeOps();
  std::string fsname = options.fsname.empty() ? "strata:" + volume->format().name : options.fsname;
  std::string o = fmt::format("fsname={},subtype=strata,default_permissions", fsname);
  if (options.allow_other) o += ",allow_other";
  if (options.read_only) o += ",ro";
  std::vector<std::string> argv_s = {"strata", "-o", o};
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  fuse_session* se = fuse_session_new(&args, &ops, sizeof(ops), &fs);
  if (!se) return Status::Internal("fuse_session_new failed (see the message above)");
  fs.se_ = se;

  fsmeta::SessionInfo si;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  si.host = host;
  si.mount_point = options.mountpoint;
  si.version = "strata 0.1.0";
  si.pid = static_cast<uint32_t>(getpid());
  auto sid = volume->meta()->NewSession(si);
  if (!sid) {
    fuse_session_destroy(se);
    return sid.error().WithContext("registering the mount session");
  }
  volume->meta()->EnableCache(options.meta_cache);
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    (void)volume->meta()->CloseSession();
    return Status::Internal("cannot install signal handlers");
  }
  char real[PATH_MAX];
  std::string real_mountpoint =
      realpath(options.mountpoint.c_str(), real) ? real : options.mountpoint;
  if (fuse_session_mount(se, options.mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    (void)volume->meta()->CloseSession();
    return Status::IOError(fmt::format(
        "cannot mount on {} (does it exist, and is /dev/fuse usable?)", options.mountpoint));
  }
  kLog.Info("volume {} mounted on {}", volume->format().name, options.mountpoint);
  RaiseReadahead(real_mountpoint, 4096);
  int rc;
  {
    Housekeeper hk(volume, options.read_only, [&fs] {
      fs.WriteAtimes();
      fs.data_->TrimBuffers();
    });
    if (on_ready) on_ready();
    fuse_loop_config* cfg = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(cfg, 0);
    fuse_loop_cfg_set_max_threads(cfg, static_cast<unsigned>(std::max(2, options.max_threads)));
    fuse_loop_cfg_set_idle_threads(cfg, 16);
    rc = fuse_session_loop_mt(se, cfg);
    fuse_loop_cfg_destroy(cfg);
  }
  Status flushed = volume->data()->FlushAll();
  // Writeback: unmount uploads what is staged (as JuiceFS does), so the
  // volume is whole in the object store for every other mount; what cannot
  // be uploaded stays staged for the next mount of this cache directory.
  if (uint64_t n = volume->StagedBlocks(); n > 0) {
    kLog.Info("uploading {} staged blocks ({} bytes) before unmounting", n, volume->StagedBytes());
    Status drained = volume->DrainWriteback();
    if (!drained.ok()) kLog.Warn("{}", drained.ToString());
  }
  fs.WriteAtimes();
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  Status closed = volume->meta()->CloseSession();
  kLog.Info("volume {} unmounted from {}", volume->format().name, options.mountpoint);
  if (!flushed.ok()) return flushed.WithContext("committing buffered writes at unmount");
  if (!closed.ok()) return closed.WithContext("closing the session");
  if (rc < 0 && rc != -EINTR)
    return Status::IOError(fmt::format("FUSE loop ended with {}", std::strerror(-rc)));
  return Status::Ok();
}

}  // namespace strata::fs
