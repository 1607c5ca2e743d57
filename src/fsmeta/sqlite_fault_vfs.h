// Private to fsmeta: a SQLite VFS that forwards to the default one and lets
// core's fault-injection seam (core/fault_injection.h) fail chosen writes of
// the database, its WAL and journal files, as a full disk (ENOSPC:
// SQLITE_FULL) or a failing device (EIO: SQLITE_IOERR_WRITE) would, after
// writing part of the buffer. Disarmed it costs one call per write.
#pragma once

namespace strata::fsmeta {

// The name to pass to sqlite3_open_v2; registered on first use.
const char* FaultInjectingSqliteVfs();

}  // namespace strata::fsmeta
