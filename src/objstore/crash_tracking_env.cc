#include "objstore/crash_tracking_env.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <strata/core/fault_injection.h>
#include <strata/core/file_util.h>
#include <strata/objstore/rocksdb_env.h>

namespace strata::objstore::internal {
namespace {

// Forwards to the real file; tells the tracker what each append replaces and
// when the file is durable. A second descriptor on the file gives the tracker
// its inode (RocksDB's own is private to its file class).
class TrackedFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  TrackedFile(std::unique_ptr<rocksdb::FSWritableFile> f, const std::string& path)
      : FSWritableFileOwnerWrapper(std::move(f)),
        path_(path),
        fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) override {
    Before(static_cast<int64_t>(target()->GetFileSize(o, dbg)), data.size());
    if (rocksdb::IOStatus f = WriteFault(data, o, dbg); !f.ok()) return f;
    return target()->Append(data, o, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& v,
                           rocksdb::IODebugContext* dbg) override {
    Before(static_cast<int64_t>(target()->GetFileSize(o, dbg)), data.size());
    if (rocksdb::IOStatus f = WriteFault(data, o, dbg); !f.ok()) return f;
    return target()->Append(data, o, v, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& o,
                                     rocksdb::IODebugContext* dbg) override {
    Before(static_cast<int64_t>(offset), data.size());
    if (rocksdb::IOStatus f = WriteFault(data, o, dbg, offset); !f.ok()) return f;
    return target()->PositionedAppend(data, offset, o, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& o,
                                     const rocksdb::DataVerificationInfo& v,
                                     rocksdb::IODebugContext* dbg) override {
    Before(static_cast<int64_t>(offset), data.size());
    if (rocksdb::IOStatus f = WriteFault(data, o, dbg, offset); !f.ok()) return f;
    return target()->PositionedAppend(data, offset, o, v, dbg);
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus f = Injected(); !f.ok()) return f;
    const fault::internal::SyncMark mark = Mark();
    return After(target()->Sync(o, dbg), mark);
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus f = Injected(); !f.ok()) return f;
    const fault::internal::SyncMark mark = Mark();
    return After(target()->Fsync(o, dbg), mark);
  }
  // RangeSync (sync_file_range) makes nothing durable: not reported.

 private:
  // An injected write failure (core/fault_injection.h): the part a full disk
  // takes is written, then the error as the device reports it.
  rocksdb::IOStatus WriteFault(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* dbg, int64_t offset = -1) {
    size_t first = 0;
    const int err = fault::internal::OnWrite(path_, data.size(), &first);
    if (err == 0) return rocksdb::IOStatus::OK();
    if (first > 0) {
      const rocksdb::Slice part(data.data(), first);
      rocksdb::IOStatus s = offset < 0 ? target()->Append(part, o, dbg)
                                       : target()->PositionedAppend(part, uint64_t(offset), o, dbg);
      if (!s.ok()) return s;
    }
    const std::string msg = "write " + path_;
    if (err == ENOSPC) return rocksdb::IOStatus::NoSpace(msg, std::strerror(err));
    return rocksdb::IOStatus::IOError(msg, std::strerror(err));
  }
  // An injected fsync failure (core/fault_injection.h), as the device reports it.
  rocksdb::IOStatus Injected() {
    const int err = fault::internal::OnSync(fd_.valid() ? fd_.get() : -1, path_);
    if (err == 0) return rocksdb::IOStatus::OK();
    return rocksdb::IOStatus::IOError("fsync " + path_, std::strerror(err));
  }
  void Before(int64_t offset, size_t n) {
    if (fd_.valid()) fault::internal::BeforeWrite(fd_.get(), offset, n);
  }
  fault::internal::SyncMark Mark() {
    return fd_.valid() ? fault::internal::BeforeSync(fd_.get()) : fault::internal::SyncMark{};
  }
  rocksdb::IOStatus After(rocksdb::IOStatus s, fault::internal::SyncMark mark) {
    if (s.ok() && fd_.valid()) fault::internal::AfterSync(fd_.get(), mark);
    return s;
  }
  std::string path_;
  UniqueFd fd_;
};

class TrackingFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  const char* Name() const override { return "StrataCrashTracking"; }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& fo,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    return Wrap(f, target()->NewWritableFile(f, fo, r, dbg), r);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& fo,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override {
    return Wrap(f, target()->ReopenWritableFile(f, fo, r, dbg), r);
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& fo,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override {
    return Wrap(f, target()->ReuseWritableFile(f, old, fo, r, dbg), r);
  }

 private:
  static rocksdb::IOStatus Wrap(const std::string& f, rocksdb::IOStatus s,
                                std::unique_ptr<rocksdb::FSWritableFile>* r) {
    if (s.ok()) *r = std::make_unique<TrackedFile>(std::move(*r), f);
    return s;
  }
};

}  // namespace

rocksdb::Env* CrashTrackingEnv() {
  static rocksdb::Env* env =
      rocksdb::NewCompositeEnv(std::make_shared<TrackingFileSystem>(rocksdb::FileSystem::Default()))
          .release();
  return env;
}

}  // namespace strata::objstore::internal

namespace strata::objstore {
rocksdb::Env* FileSeamRocksDbEnv() { return internal::CrashTrackingEnv(); }
}  // namespace strata::objstore
