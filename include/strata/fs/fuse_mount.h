// Mount: serves a Volume through the kernel's FUSE (libfuse3 low-level API,
// multithreaded loop) until it is unmounted (umount / fusermount3 -u) or the
// process gets SIGTERM, SIGINT or SIGHUP; then every buffered write is
// committed and the session closed.
//
// Consistency: attributes and entries are cached by the kernel for
// attr_timeout / entry_timeout seconds; open re-reads the attributes and keeps
// the kernel's page cache only when the file did not change since this mount
// last saw it (close-to-open); flush/fsync/close commit buffered writes.
// Lookups and stats that reach the mount are answered from its entry cache
// (meta_cache): another mount's namespace changes show here within
// meta_cache + entry_timeout seconds, this mount's at once.
#pragma once

#include <functional>
#include <string>

#include <strata/core/status.h>
#include <strata/fs/volume.h>

namespace strata::fs {

struct MountOptions {
  std::string mountpoint;
  bool read_only = false;
  bool writeback = false;       // kernel writeback cache (faster small writes, weaker close-to-open)
  bool allow_other = true;      // let other users in (root mounts for everyone)
  double attr_timeout = 1.0;    // seconds
  double entry_timeout = 1.0;   // seconds
  // The mount's entry cache (MetaEngine::EnableCache): lookups and stats the
  // kernel sends are answered without a metadata transaction while the
  // volume's change counter, read at most this many seconds ago, shows no
  // change by another client. 0: off.
  double meta_cache = 0.5;
  int max_threads = 64;         // FUSE worker threads
  std::string fsname;           // shown by mount(8); default "strata:<volume>"
};

// Blocks until unmounted. on_ready runs once the mount is live.
Status ServeMount(Volume* volume, const MountOptions& options, const std::function<void()>& on_ready);

}  // namespace strata::fs
