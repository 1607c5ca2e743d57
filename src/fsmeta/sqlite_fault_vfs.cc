#include "fsmeta/sqlite_fault_vfs.h"

#include <cerrno>
#include <cstddef>
#include <mutex>
#include <new>
#include <string>

#include <sqlite3.h>

#include <strata/core/fault_injection.h>

namespace strata::fsmeta {
namespace {

constexpr const char* kName = "strata-fault";
sqlite3_vfs* g_base = nullptr;  // set once, before registration

// Our file: the methods below, then the base VFS's file right after it.
struct File {
  sqlite3_file base;  // pMethods = &kMethods
  sqlite3_file* real;
  std::string name;
};

sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }

int Close(sqlite3_file* f) {
  File* p = reinterpret_cast<File*>(f);
  const int rc = p->real->pMethods ? p->real->pMethods->xClose(p->real) : SQLITE_OK;
  p->name.~basic_string();
  return rc;
}
int Read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), buf, n, off);
}
int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  File* p = reinterpret_cast<File*>(f);
  size_t first = 0;
  const int err = fault::internal::OnWrite(p->name, static_cast<size_t>(n), &first);
  if (err == 0) return p->real->pMethods->xWrite(p->real, buf, n, off);
  if (first > 0) (void)p->real->pMethods->xWrite(p->real, buf, static_cast<int>(first), off);
  return err == ENOSPC ? SQLITE_FULL : SQLITE_IOERR_WRITE;
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) {
  // A failed fsync is not retried (SQLite returns the error; the pager rolls
  // the transaction back and later writers overwrite its WAL frames).
  if (fault::internal::OnSync(-1, reinterpret_cast<File*>(f)->name) != 0) {
    return SQLITE_IOERR_FSYNC;
  }
  return Real(f)->pMethods->xSync(Real(f), flags);
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int l) { return Real(f)->pMethods->xLock(Real(f), l); }
int Unlock(sqlite3_file* f, int l) { return Real(f)->pMethods->xUnlock(Real(f), l); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), region, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int del) { return Real(f)->pMethods->xShmUnmap(Real(f), del); }
int Fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
  return Real(f)->pMethods->xFetch(Real(f), off, n, out);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return Real(f)->pMethods->xUnfetch(Real(f), off, p);
}

const sqlite3_io_methods kMethods = {
    3,
    Close,
    Read,
    Write,
    Truncate,
    Sync,
    FileSize,
    Lock,
    Unlock,
    CheckReservedLock,
    FileControl,
    SectorSize,
    DeviceCharacteristics,
    ShmMap,
    ShmLock,
    ShmBarrier,
    ShmUnmap,
    Fetch,
    Unfetch,
};

int Open(sqlite3_vfs* vfs, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  File* p = reinterpret_cast<File*>(f);
  p->base.pMethods = nullptr;
  p->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + sizeof(File));
  p->real->pMethods = nullptr;
  const int rc = g_base->xOpen(g_base, name, p->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    if (p->real->pMethods) p->real->pMethods->xClose(p->real);
    return rc;
  }
  new (&p->name) std::string(name ? name : "(temp)");
  // A base file without methods (the base VFS's choice) stays without ours.
  if (p->real->pMethods) {
    p->base.pMethods = &kMethods;
  } else {
    p->name.~basic_string();
  }
  (void)vfs;
  return SQLITE_OK;
}

}  // namespace

const char* FaultInjectingSqliteVfs() {
  static std::once_flag once;
  static const char* name = nullptr;
  std::call_once(once, [] {
    g_base = sqlite3_vfs_find(nullptr);
    if (g_base == nullptr) return;
    static sqlite3_vfs vfs = *g_base;
    vfs.zName = kName;
    vfs.szOsFile = static_cast<int>(sizeof(File)) + g_base->szOsFile;
    vfs.pNext = nullptr;
    vfs.xOpen = Open;
    if (sqlite3_vfs_register(&vfs, 0) == SQLITE_OK) name = kName;
  });
  return name;  // nullptr (the default VFS) if registration failed
}

}  // namespace strata::fsmeta
