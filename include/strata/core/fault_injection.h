// Faults at the file layer, for tests: core's WriteAll and PwriteAll (the
// write path of the object engine's data files, the vector WAL, segments and
// indexes, Parquet files, cache checkpoints and atomic replaces) consult this
// before each write, so a test can make a chosen write fail as a full disk
// (ENOSPC) or a failing device (EIO) does, optionally after writing part of
// the buffer (a short write, as Linux does when the disk fills mid-write).
// Disarmed, a write pays one relaxed atomic load. Thread-safe.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::fault {

struct WriteFault {
  std::string path_contains;  // only writes whose path / description contains this ("": all)
  int skip = 0;               // matching writes that succeed before the first fault
  int err = ENOSPC;           // errno the failing write reports
  size_t written_first = 0;   // bytes really written before the failure (a short write)
  int times = -1;             // faults to inject, then disarm (-1: until ClearFaults)
};

// Arms one write fault (replacing any armed one).
void InjectWriteFault(WriteFault f);
// Disarms; the disk is healthy again.
void ClearFaults();
// Faults injected since the process started (tests check they hit).
uint64_t FaultsInjected();

namespace internal {
// For file_util: 0 to write normally, or the errno to fail with after
// writing *written_first bytes (at most n).
int OnWrite(std::string_view what, size_t n, size_t* written_first);
}  // namespace internal

}  // namespace strata::fault
