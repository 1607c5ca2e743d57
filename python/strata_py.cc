// _strata: the pybind11 extension behind the `strata` Python package
// (python/strata/__init__.py adds the pure-Python parts: the file objects,
// ShardDataset and the PyTorch checkpoint helpers).
//
// A thin adapter at the edge: every call maps to one ObjectStore /
// CachedObjectStore / Warmer / CheckpointManager call, and the GIL is released
// for the whole of it (py::gil_scoped_release), so Python threads and
// DataLoader workers overlap their I/O. A non-OK Status becomes a
// strata.Error (an OSError); kNotFound a strata.NotFoundError (also a
// FileNotFoundError), kInvalidArgument a strata.InvalidArgumentError (also a
// ValueError), kAlreadyExists a strata.AlreadyExistsError (FileExistsError),
// kPreconditionFailed a strata.PreconditionFailedError.
//
// Lifetimes: a wrapping store (cache, fault injection), a reader, a writer, a
// warmer or a checkpoint manager holds a reference to the store it uses, so
// Python may drop the store object first.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <strata/cache/cached_object_store.h>
#include <strata/cache/checkpoint.h>
#include <strata/cache/warmer.h>
#include <strata/core/log.h>
#include <strata/core/strings.h>
#include <strata/objstore/fault_injection.h>
#include <strata/objstore/object_store.h>

#include "py_register.h"

namespace py = pybind11;

namespace strata::python {
namespace {

using objstore::ObjectInfo;
using objstore::ObjectStore;

PyObject* g_error = nullptr;
PyObject* g_not_found = nullptr;
PyObject* g_invalid = nullptr;
PyObject* g_exists = nullptr;
PyObject* g_precondition = nullptr;
PyObject* g_not_supported = nullptr;

[[noreturn]] void Raise(const Status& st) {
  PyObject* type = g_error;
  switch (st.code()) {
    case StatusCode::kNotFound:
      type = g_not_found;
      break;
    case StatusCode::kInvalidArgument:
      type = g_invalid;
      break;
    case StatusCode::kAlreadyExists:
      type = g_exists;
      break;
    case StatusCode::kPreconditionFailed:
      type = g_precondition;
      break;
    case StatusCode::kNotSupported:
      type = g_not_supported;
      break;
    default:
      break;
  }
  PyErr_SetString(type, st.ToString().c_str());
  throw py::error_already_set();
}

void Check(const Status& st) {
  if (!st.ok()) Raise(st);
}

template <class T>
T Unwrap(Result<T>&& r) {
  if (!r.ok()) Raise(r.error());
  return std::move(*r);
}

// An int, or a string such as "512M" / "10GiB".
uint64_t ByteSize(const py::handle& v, const char* what) {
  if (py::isinstance<py::int_>(v)) {
    const long long n = v.cast<long long>();
    if (n < 0) throw py::value_error(std::string(what) + " must not be negative");
    return static_cast<uint64_t>(n);
  }
  if (py::isinstance<py::str>(v)) {
    auto r = ParseByteSize(v.cast<std::string>());
    if (!r.ok()) throw py::value_error(std::string(what) + ": " + r.error().message());
    return *r;
  }
  throw py::type_error(std::string(what) + " must be an int or a size string such as \"512M\"");
}

std::string PathString(const py::handle& p) {
  return py::str(py::module_::import("os").attr("fspath")(p)).cast<std::string>();
}

// ---------------------------------------------------------------------------
// Stores

struct PyStore {
  virtual ~PyStore() = default;
  std::shared_ptr<ObjectStore> store;
  std::shared_ptr<PyStore> base;  // the wrapped store, kept alive
};

struct PyCached : PyStore {
  cache::CachedObjectStore* cache = nullptr;
};

struct PyFault : PyStore {
  objstore::FaultInjectionObjectStore* fault = nullptr;
};

std::shared_ptr<PyStore> OpenUrl(const std::string& url) {
  std::unique_ptr<ObjectStore> s;
  {
    py::gil_scoped_release nogil;
    auto r = objstore::OpenObjectStore(url);
    if (!r.ok()) {
      py::gil_scoped_acquire gil;
      Raise(r.error());
    }
    s = std::move(*r);
  }
  auto p = std::make_shared<PyStore>();
  p->store = std::move(s);
  return p;
}

// A store argument: a strata.ObjectStore or a URL string.
std::shared_ptr<PyStore> StoreArg(const py::handle& h) {
  if (py::isinstance<py::str>(h)) return OpenUrl(h.cast<std::string>());
  try {
    return h.cast<std::shared_ptr<PyStore>>();
  } catch (const py::cast_error&) {
    throw py::type_error("expected a strata.ObjectStore or a store URL string");
  }
}

bool IsCContiguous(const py::buffer_info& bi) {
  py::ssize_t expect = bi.itemsize;
  for (py::ssize_t i = bi.ndim - 1; i >= 0; --i) {
    if (bi.shape[i] > 1 && bi.strides[i] != expect) return false;
    expect *= bi.shape[i];
  }
  return true;
}

py::bytes Bytes(const std::string& s) { return py::bytes(s.data(), s.size()); }

std::string GetRange(ObjectStore* store, const std::string& key, uint64_t offset,
                     std::optional<uint64_t> length, std::optional<std::string> if_match = {}) {
  std::string out;
  Status st;
  {
    py::gil_scoped_release nogil;
    objstore::ReadOptions ro;
    ro.offset = offset;
    ro.length = length;
    ro.if_match = std::move(if_match);
    if (length) out.reserve(*length);
    st = store->Get(key, ro, [&](const char* d, size_t n) {
      out.append(d, n);
      return Status::Ok();
    });
  }
  Check(st);
  return out;
}

ObjectInfo PutBuffer(ObjectStore* store, const std::string& key, const py::buffer& data,
                     const std::string& content_type) {
  py::buffer_info bi = data.request();
  if (!IsCContiguous(bi)) throw py::value_error("put: the buffer must be C-contiguous");
  const std::string_view view(static_cast<const char*>(bi.ptr),
                              static_cast<size_t>(bi.size * bi.itemsize));
  Result<ObjectInfo> r = Status::Internal("unset");
  {
    py::gil_scoped_release nogil;
    objstore::StringSource src(view);
    objstore::WriteOptions wo;
    wo.content_type = content_type;
    wo.size = view.size();
    r = store->Put(key, src, wo);
  }
  return Unwrap(std::move(r));
}

std::vector<ObjectInfo> ListObjects(ObjectStore* store, const std::string& prefix, bool recursive,
                                    std::vector<std::string>* prefixes) {
  std::vector<ObjectInfo> out;
  Status st;
  {
    py::gil_scoped_release nogil;
    std::string token;
    do {
      auto page = store->List(prefix, recursive ? "" : "/", token, 1000);
      if (!page.ok()) {
        st = page.error();
        break;
      }
      for (auto& o : page->objects) out.push_back(std::move(o));
      if (prefixes)
        for (auto& p : page->common_prefixes) prefixes->push_back(std::move(p));
      token = page->next_token;
    } while (!token.empty());
  }
  Check(st);
  return out;
}

// ---------------------------------------------------------------------------
// Readers and writers (the io.RawIOBase classes in __init__.py wrap these)

// Reads one version of one object (the one current at open, or the warm
// shard's pinned version). Through a cache: the cache's reader (blocks,
// readahead). Otherwise ranged GETs pinned to the ETag, through a chunk
// buffer so the small reads of pickle/zip readers do not each cost a request.
class ReaderCore {
 public:
  ReaderCore(std::shared_ptr<PyStore> store, ObjectInfo info,
             std::unique_ptr<cache::CachedReader> cached, uint64_t chunk)
      : store_(std::move(store)),
        info_(std::move(info)),
        cached_(std::move(cached)),
        chunk_(std::max<uint64_t>(chunk, 4096)) {}

  static std::shared_ptr<ReaderCore> Open(std::shared_ptr<PyStore> store, const std::string& key,
                                          uint64_t chunk) {
    std::unique_ptr<cache::CachedReader> cached;
    Result<ObjectInfo> info = Status::Internal("unset");
    {
      py::gil_scoped_release nogil;
      if (auto* c = dynamic_cast<PyCached*>(store.get())) {
        auto r = c->cache->OpenReader(key);
        if (r.ok()) {
          cached = std::move(*r);
          info = cached->info();
        } else {
          info = r.error();
        }
      } else {
        info = store->store->Head(key);
      }
    }
    ObjectInfo i = Unwrap(std::move(info));
    return std::make_shared<ReaderCore>(std::move(store), std::move(i), std::move(cached), chunk);
  }

  const ObjectInfo& info() const { return info_; }

  // Up to n bytes at offset into dst; 0 at or past the end. GIL released by
  // caller; serialised (one chunk buffer / cache reader per file object).
  Status ReadAt(uint64_t offset, char* dst, size_t n, size_t* got) {
    std::lock_guard<std::mutex> lock(mu_);
    *got = 0;
    if (offset >= info_.size) return Status::Ok();
    n = static_cast<size_t>(std::min<uint64_t>(n, info_.size - offset));
    if (cached_) {
      while (*got < n) {
        auto r = cached_->ReadAt(offset + *got, dst + *got, n - *got);
        if (!r.ok()) return r.error();
        if (*r == 0) break;
        *got += *r;
      }
      return Status::Ok();
    }
    while (*got < n) {
      const uint64_t pos = offset + *got;
      if (pos >= buf_off_ && pos < buf_off_ + buf_.size()) {
        const size_t k = std::min<size_t>(n - *got, buf_off_ + buf_.size() - pos);
        std::memcpy(dst + *got, buf_.data() + (pos - buf_off_), k);
        *got += k;
        continue;
      }
      if (n - *got >= chunk_) {  // large reads go straight into the caller's buffer
        size_t w = *got;
        const size_t end = n;
        STRATA_RETURN_IF_ERROR(Fetch(pos, n - *got, [&](const char* d, size_t k) {
          if (w + k > end) return Status::Corruption("the backend returned more bytes than asked");
          std::memcpy(dst + w, d, k);
          w += k;
          return Status::Ok();
        }));
        if (w == *got) return Status::Corruption("object " + info_.key + " ended early");
        *got = w;
        continue;
      }
      buf_.clear();
      buf_off_ = pos;
      const uint64_t want = std::min<uint64_t>(chunk_, info_.size - pos);
      buf_.reserve(want);
      STRATA_RETURN_IF_ERROR(Fetch(pos, want, [&](const char* d, size_t k) {
        buf_.append(d, k);
        return Status::Ok();
      }));
      if (buf_.empty()) return Status::Corruption("object " + info_.key + " ended early");
    }
    return Status::Ok();
  }

 private:
  Status Fetch(uint64_t off, uint64_t len, const objstore::ByteSink& sink) {
    objstore::ReadOptions ro;
    ro.offset = off;
    ro.length = len;
    if (!info_.etag.empty()) ro.if_match = info_.etag;
    return store_->store->Get(info_.key, ro, sink);
  }

  std::shared_ptr<PyStore> store_;
  ObjectInfo info_;
  std::unique_ptr<cache::CachedReader> cached_;
  uint64_t chunk_;
  std::mutex mu_;
  std::string buf_;       // guarded by mu_
  uint64_t buf_off_ = 0;  // guarded by mu_
};

size_t ReadInto(ReaderCore& r, uint64_t offset, const py::buffer& b) {
  py::buffer_info bi = b.request(true);
  if (!IsCContiguous(bi)) throw py::value_error("readinto: the buffer must be C-contiguous");
  size_t got = 0;
  Status st;
  {
    py::gil_scoped_release nogil;
    st = r.ReadAt(offset, static_cast<char*>(bi.ptr), static_cast<size_t>(bi.size * bi.itemsize),
                  &got);
  }
  Check(st);
  return got;
}

// Buffers writes into parts; once the first part is full a multipart upload
// starts and every full part is uploaded in the background while Python keeps
// writing (up to kMaxInflight parts at once, so at most that many plus one
// part are held in memory; nothing holds the whole object). close() sends the
// rest: one PUT when everything fit in one part, else the last part and
// CompleteMultipart. abort() (or a failure) aborts the multipart upload, so a
// failed write leaves no object behind.
class WriterCore {
 public:
  static constexpr size_t kMaxInflight = 4;

  WriterCore(std::shared_ptr<PyStore> store, std::string key, uint64_t part_size,
             std::string content_type)
      : store_(std::move(store)),
        key_(std::move(key)),
        part_size_(part_size),
        content_type_(std::move(content_type)) {
    if (part_size_ < (5ull << 20))
      throw py::value_error("part_size must be at least 5 MiB (the S3 minimum part size)");
  }
  ~WriterCore() {
    if (!done_) {
      py::gil_scoped_release nogil;
      AbortNoGil();
    }
  }

  size_t Write(const py::buffer& b) {
    if (done_) throw py::value_error("write to a closed strata object writer");
    py::buffer_info bi = b.request();
    if (!IsCContiguous(bi)) throw py::value_error("write: the buffer must be C-contiguous");
    const char* p = static_cast<const char*>(bi.ptr);
    const size_t n = static_cast<size_t>(bi.size * bi.itemsize);
    Status st;
    {
      py::gil_scoped_release nogil;
      pending_.append(p, n);
      written_ += n;
      while (st.ok() && pending_.size() >= part_size_) {
        std::string part = pending_.substr(0, part_size_);
        pending_.erase(0, part_size_);
        st = StartPart(std::move(part));
      }
      if (!st.ok()) AbortNoGil();
    }
    Check(st);
    return n;
  }

  ObjectInfo Close() {
    if (aborted_)
      Raise(
          Status::IOError("the upload of " + key_ + " failed or was aborted: nothing was stored"));
    if (done_) return info_;
    Result<ObjectInfo> r = Status::Internal("unset");
    {
      py::gil_scoped_release nogil;
      if (upload_id_.empty()) {
        objstore::StringSource src(pending_);
        objstore::WriteOptions wo;
        wo.content_type = content_type_;
        wo.size = pending_.size();
        r = store_->store->Put(key_, src, wo);
      } else {
        Status st = pending_.empty() ? Status::Ok() : StartPart(std::move(pending_));
        while (!inflight_.empty()) {
          Status s2 = Reap();
          if (st.ok()) st = s2;
        }
        if (st.ok())
          r = store_->store->CompleteMultipart(key_, upload_id_, parts_);
        else
          r = st;
      }
      if (!r.ok()) AbortNoGil();
    }
    if (!r.ok()) Raise(r.error());
    done_ = true;
    pending_.clear();
    pending_.shrink_to_fit();
    info_ = std::move(*r);
    return info_;
  }

  void Abort() {
    py::gil_scoped_release nogil;
    AbortNoGil();
  }

  uint64_t written() const { return written_; }
  bool done() const { return done_; }
  int parts() const { return static_cast<int>(parts_.size() + inflight_.size()); }

 private:
  struct Inflight {
    std::future<Result<objstore::UploadedPart>> result;
  };

  // Queues one part's upload (waiting for the oldest when kMaxInflight are out).
  Status StartPart(std::string data) {
    if (upload_id_.empty()) {
      objstore::WriteOptions wo;
      wo.content_type = content_type_;
      STRATA_ASSIGN_OR_RETURN(upload_id_, store_->store->CreateMultipart(key_, wo));
    }
    while (inflight_.size() >= kMaxInflight) STRATA_RETURN_IF_ERROR(Reap());
    const int number = next_part_++;
    auto buf = std::make_shared<std::string>(std::move(data));
    inflight_.push_back({std::async(
        std::launch::async, [store = store_->store, key = key_, id = upload_id_, number, buf] {
          objstore::StringSource src(*buf);
          return store->UploadPart(key, id, number, src, buf->size());
        })});
    return Status::Ok();
  }

  // Waits for the oldest part in flight (parts finish into parts_ in order).
  Status Reap() {
    auto r = inflight_.front().result.get();
    inflight_.pop_front();
    if (!r.ok()) return r.error();
    parts_.push_back(std::move(*r));
    return Status::Ok();
  }

  void AbortNoGil() {
    if (done_) return;
    done_ = true;
    aborted_ = true;
    while (!inflight_.empty()) (void)Reap();
    pending_.clear();
    if (!upload_id_.empty()) (void)store_->store->AbortMultipart(key_, upload_id_);
  }

  std::shared_ptr<PyStore> store_;
  std::string key_;
  uint64_t part_size_;
  std::string content_type_;
  std::string pending_;
  std::string upload_id_;
  int next_part_ = 1;
  std::deque<Inflight> inflight_;
  std::vector<objstore::UploadedPart> parts_;
  uint64_t written_ = 0;
  bool done_ = false;
  bool aborted_ = false;
  ObjectInfo info_;
};

// ---------------------------------------------------------------------------
// Warmer

struct PyWarmShard {
  std::shared_ptr<PyStore> store;
  cache::WarmShard shard;
  std::shared_ptr<ReaderCore> reader;  // made from shard.reader on first use
  std::optional<py::bytes> data;

  ReaderCore& Reader() {
    if (!reader) {
      if (!shard.reader) throw py::value_error("the shard's reader was already taken");
      reader = std::make_shared<ReaderCore>(store, shard.info, std::move(shard.reader), 0);
    }
    return *reader;
  }
  py::bytes Data() {
    if (data) return *data;
    ReaderCore& r = Reader();
    const uint64_t size = shard.info.size;
    PyObject* obj = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size));
    if (!obj) throw py::error_already_set();
    py::bytes b = py::reinterpret_steal<py::bytes>(obj);
    char* dst = PyBytes_AsString(obj);
    size_t got = 0;
    Status st;
    {
      py::gil_scoped_release nogil;
      st = r.ReadAt(0, dst, size, &got);
    }
    Check(st);
    if (got != size) Raise(Status::Corruption("shard " + shard.info.key + " ended early"));
    data = b;
    return b;
  }
};

class PyWarmer {
 public:
  PyWarmer(const std::shared_ptr<PyStore>& store, std::vector<std::string> order, size_t lookahead,
           int concurrency, std::string state_file) {
    auto cached = std::dynamic_pointer_cast<PyCached>(store);
    if (!cached)
      throw py::type_error(
          "strata.Warmer needs a strata.CachedObjectStore (wrap the store: "
          "strata.CachedObjectStore(store, ram_size=..., cache_dir=...))");
    store_ = cached;
    cache::WarmerOptions wo;
    wo.lookahead = lookahead;
    wo.concurrency = concurrency;
    wo.state_file = std::move(state_file);
    Result<std::unique_ptr<cache::Warmer>> r = Status::Internal("unset");
    {
      py::gil_scoped_release nogil;
      r = cache::Warmer::Start(cached->cache, std::move(order), wo);
    }
    warmer_ = Unwrap(std::move(r));
  }

  std::optional<PyWarmShard> Next() {
    if (!warmer_) throw py::value_error("the warmer is closed");
    Result<std::optional<cache::WarmShard>> r = Status::Internal("unset");
    {
      py::gil_scoped_release nogil;
      r = warmer_->Next();
    }
    auto s = Unwrap(std::move(r));
    if (!s) return std::nullopt;
    PyWarmShard out;
    out.store = store_;
    out.shard = std::move(*s);
    return out;
  }

  void Close() {
    py::gil_scoped_release nogil;
    warmer_.reset();
  }

  cache::Warmer* get() {
    if (!warmer_) throw py::value_error("the warmer is closed");
    return warmer_.get();
  }

 private:
  std::shared_ptr<PyCached> store_;
  std::unique_ptr<cache::Warmer> warmer_;
};

// ---------------------------------------------------------------------------
// Checkpoints

class PyCheckpoints {
 public:
  PyCheckpoints(cache::CheckpointOptions o, std::shared_ptr<PyStore> remote) : remote_(remote) {
    if (remote_) o.store = remote_->store.get();
    Result<std::unique_ptr<cache::CheckpointManager>> r = Status::Internal("unset");
    {
      py::gil_scoped_release nogil;
      r = cache::CheckpointManager::Open(std::move(o));
    }
    m_ = Unwrap(std::move(r));
  }
  ~PyCheckpoints() {
    py::gil_scoped_release nogil;
    m_.reset();
  }

  cache::CheckpointManager* m() { return m_.get(); }
  std::shared_ptr<PyStore> remote() const { return remote_; }

 private:
  std::shared_ptr<PyStore> remote_;
  std::unique_ptr<cache::CheckpointManager> m_;
};

uint64_t StepArg(cache::CheckpointManager* m, const py::handle& step) {
  if (py::isinstance<py::str>(step)) {
    if (step.cast<std::string>() != "latest")
      throw py::value_error("step must be an int or \"latest\"");
    Result<std::optional<uint64_t>> r = Status::Internal("unset");
    {
      py::gil_scoped_release nogil;
      r = m->Latest();
    }
    auto latest = Unwrap(std::move(r));
    if (!latest) Raise(Status::NotFound("no checkpoint exists yet"));
    return *latest;
  }
  const long long s = step.cast<long long>();
  if (s < 0) throw py::value_error("step must not be negative");
  return static_cast<uint64_t>(s);
}

py::dict TierDict(const cache::TierStats& t) {
  py::dict d;
  d["name"] = t.name;
  d["capacity_bytes"] = t.capacity_bytes;
  d["used_bytes"] = t.used_bytes;
  d["blocks"] = t.blocks;
  d["hits"] = t.hits;
  d["misses"] = t.misses;
  d["evictions"] = t.evictions;
  d["fill_bytes"] = t.fill_bytes;
  d["admission_rejects"] = t.admission_rejects;
  d["corrupt_blocks"] = t.corrupt_blocks;
  return d;
}

PyObject* NewException(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  const std::string full = std::string("strata.") + name;
  PyObject* e = PyErr_NewExceptionWithDoc(full.c_str(), doc, bases.ptr(), nullptr);
  if (!e) throw py::error_already_set();
  m.add_object(name, py::handle(e));
  return e;
}

}  // namespace

void RaiseStatus(const Status& st) { Raise(st); }

}  // namespace strata::python

PYBIND11_MODULE(_strata, m) {
  using namespace strata;
  using namespace strata::python;
  m.doc() =
      "Strata's data path for Python: object stores, the tiered cache, the shard warmer "
      "and checkpoints (the C++ core; see the strata package)";

  g_error = NewException(m, "Error", py::make_tuple(py::handle(PyExc_OSError)),
                         "A Strata call failed (the message says what and why).");
  g_not_found = NewException(
      m, "NotFoundError", py::make_tuple(py::handle(g_error), py::handle(PyExc_FileNotFoundError)),
      "A key, bucket or checkpoint does not exist.");
  g_invalid = NewException(m, "InvalidArgumentError",
                           py::make_tuple(py::handle(g_error), py::handle(PyExc_ValueError)),
                           "An argument was rejected.");
  g_exists = NewException(m, "AlreadyExistsError",
                          py::make_tuple(py::handle(g_error), py::handle(PyExc_FileExistsError)),
                          "The thing to create exists already (e.g. a checkpoint step).");
  g_precondition = NewException(m, "PreconditionFailedError", py::make_tuple(py::handle(g_error)),
                                "The object changed (If-Match failed).");
  g_not_supported =
      NewException(m, "NotSupportedError",
                   py::make_tuple(py::handle(g_error), py::handle(PyExc_NotImplementedError)),
                   "Strata does not implement what was asked (nothing was changed).");
  RegisterVector(m);

  py::class_<ObjectInfo>(m, "ObjectInfo",
                         "One object: key, size, etag, mtime_ns, content_type, metadata")
      .def_readonly("key", &ObjectInfo::key)
      .def_readonly("size", &ObjectInfo::size)
      .def_readonly("etag", &ObjectInfo::etag)
      .def_readonly("mtime_ns", &ObjectInfo::mtime_ns)
      .def_readonly("content_type", &ObjectInfo::content_type)
      .def_readonly("metadata", &ObjectInfo::user_meta)
      .def(
          "__iter__",
          [](const ObjectInfo& i) { return py::iter(py::make_tuple(i.key, i.size, i.etag)); },
          "Unpacks as (key, size, etag).")
      .def("__repr__", [](const ObjectInfo& i) {
        return "ObjectInfo(key=" + py::repr(py::str(i.key)).cast<std::string>() +
               ", size=" + std::to_string(i.size) + ", etag='" + i.etag + "')";
      });

  py::class_<PyStore, std::shared_ptr<PyStore>>(m, "ObjectStore", R"doc(
An object store bucket named by a URL:
  file:///DIR?bucket=NAME      the local engine in-process
  s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT&access_key=..&secret_key=..
  mem://NAME                   in memory (shared by stores of the same NAME)
Every I/O call releases the GIL.)doc")
      .def(py::init(&OpenUrl), py::arg("url"))
      .def_property_readonly("url", [](PyStore& s) { return s.store->url(); })
      .def(
          "get",
          [](PyStore& s, const std::string& key, uint64_t offset, std::optional<uint64_t> length) {
            return Bytes(GetRange(s.store.get(), key, offset, length));
          },
          py::arg("key"), py::arg("offset") = 0, py::arg("length") = py::none(),
          "The object's bytes, or length bytes from offset (clipped at the end).")
      .def(
          "put",
          [](PyStore& s, const std::string& key, const py::buffer& data,
             const std::string& content_type) {
            return PutBuffer(s.store.get(), key, data, content_type);
          },
          py::arg("key"), py::arg("data"), py::arg("content_type") = "",
          "Stores a bytes-like object under key; returns its ObjectInfo.")
      .def(
          "head",
          [](PyStore& s, const std::string& key) {
            Result<ObjectInfo> r = Status::Internal("unset");
            {
              py::gil_scoped_release nogil;
              r = s.store->Head(key);
            }
            return Unwrap(std::move(r));
          },
          py::arg("key"))
      .def(
          "exists",
          [](PyStore& s, const std::string& key) {
            Result<ObjectInfo> r = Status::Internal("unset");
            {
              py::gil_scoped_release nogil;
              r = s.store->Head(key);
            }
            if (!r.ok() && r.error().IsNotFound()) return false;
            Unwrap(std::move(r));
            return true;
          },
          py::arg("key"))
      .def(
          "delete",
          [](PyStore& s, const std::string& key) {
            Status st;
            {
              py::gil_scoped_release nogil;
              st = s.store->Delete(key);
            }
            Check(st);
          },
          py::arg("key"), "Deletes key (a missing key is not an error).")
      .def(
          "list",
          [](PyStore& s, const std::string& prefix, bool recursive) {
            return ListObjects(s.store.get(), prefix, recursive, nullptr);
          },
          py::arg("prefix") = "", py::arg("recursive") = true,
          "Objects under prefix (ObjectInfo, ascending by key; each unpacks as (key, size, etag)). "
          "recursive=False stops at the next '/' (see list_prefixes).")
      .def(
          "list_prefixes",
          [](PyStore& s, const std::string& prefix) {
            std::vector<std::string> prefixes;
            ListObjects(s.store.get(), prefix, false, &prefixes);
            return prefixes;
          },
          py::arg("prefix") = "", "The 'directories' directly under prefix.")
      .def(
          "copy",
          [](PyStore& s, const std::string& src, const std::string& dst) {
            Result<ObjectInfo> r = Status::Internal("unset");
            {
              py::gil_scoped_release nogil;
              r = s.store->Copy(src, dst);
            }
            return Unwrap(std::move(r));
          },
          py::arg("src"), py::arg("dst"))
      .def(
          "rename",
          [](PyStore& s, const std::string& src, const std::string& dst) {
            Status st;
            {
              py::gil_scoped_release nogil;
              st = s.store->Rename(src, dst);
            }
            Check(st);
          },
          py::arg("src"), py::arg("dst"))
      .def(
          "_open_reader",
          [](const std::shared_ptr<PyStore>& s, const std::string& key, uint64_t chunk) {
            return ReaderCore::Open(s, key, chunk);
          },
          py::arg("key"), py::arg("chunk") = 8ull << 20)
      .def(
          "_open_writer",
          [](const std::shared_ptr<PyStore>& s, const std::string& key, const py::object& part_size,
             const std::string& content_type) {
            return std::make_shared<WriterCore>(s, key, ByteSize(part_size, "part_size"),
                                                content_type);
          },
          py::arg("key"), py::arg("part_size") = 8ull << 20, py::arg("content_type") = "")
      .def("__repr__", [](PyStore& s) { return "strata.ObjectStore('" + s.store->url() + "')"; });

  py::class_<PyCached, PyStore, std::shared_ptr<PyCached>>(m, "CachedObjectStore", R"doc(
A read cache in front of a store: a RAM tier (ram_size) and, with cache_dir, a
disk tier of cache_size real on-disk bytes. Block-granular (block_size), keyed
by key + ETag + block (a rewritten object is never served stale), crash-safe
block files, readahead. policy: "sieve" (default), "lru" or "priority" (the
Warmer's Belady policy). Sizes are ints or strings such as "10G".)doc")
      .def(py::init([](const py::object& base, const py::object& cache_dir,
                       const py::object& cache_size, const py::object& ram_size,
                       const std::string& policy, const py::object& block_size,
                       const std::string& admission, int64_t metadata_ttl_ms, bool readahead,
                       int fetch_threads, const std::string& name) {
             auto b = StoreArg(base);
             cache::CacheOptions o;
             o.block_size = ByteSize(block_size, "block_size");
             o.ram_capacity_bytes = ByteSize(ram_size, "ram_size");
             if (!cache_dir.is_none()) {
               cache::DiskTierOptions d;
               d.dir = PathString(cache_dir);
               d.capacity_bytes = ByteSize(cache_size, "cache_size");
               o.disk_tiers.push_back(d);
             }
             if (!cache::ParseEvictionPolicy(policy, &o.policy))
               throw py::value_error("policy must be \"sieve\", \"lru\" or \"priority\", not \"" +
                                     policy + "\"");
             if (admission == "all")
               o.admission = cache::AdmissionPolicy::kAll;
             else if (admission == "tinylfu")
               o.admission = cache::AdmissionPolicy::kTinyLfu;
             else
               throw py::value_error("admission must be \"tinylfu\" or \"all\"");
             o.metadata_ttl_ms = metadata_ttl_ms;
             o.readahead = readahead;
             o.fetch_threads = fetch_threads;
             o.name = name;
             Result<std::unique_ptr<cache::CachedObjectStore>> r = Status::Internal("unset");
             {
               py::gil_scoped_release nogil;
               r = cache::CachedObjectStore::Open(b->store.get(), std::move(o));
             }
             auto c = std::make_shared<PyCached>();
             c->cache = r.ok() ? r->get() : nullptr;
             c->store = std::shared_ptr<objstore::ObjectStore>(Unwrap(std::move(r)).release());
             c->base = b;
             return c;
           }),
           py::arg("base"), py::arg("cache_dir") = py::none(), py::arg("cache_size") = "10G",
           py::arg("ram_size") = "256M", py::arg("policy") = "sieve", py::arg("block_size") = "4M",
           py::arg("admission") = "tinylfu", py::arg("metadata_ttl_ms") = 0,
           py::arg("readahead") = true, py::arg("fetch_threads") = 16, py::arg("name") = "python")
      .def_property_readonly("base", [](PyCached& c) { return c.base; })
      .def(
          "prefetch",
          [](PyCached& c, const std::string& key) {
            Result<bool> r = Status::Internal("unset");
            {
              py::gil_scoped_release nogil;
              auto info = c.cache->Head(key);
              r = info.ok() ? c.cache->Prefetch(*info) : Result<bool>(info.error());
            }
            return Unwrap(std::move(r));
          },
          py::arg("key"), "Fetches every block of key; whether all are resident after.")
      .def(
          "is_resident",
          [](PyCached& c, const std::string& key) {
            Result<bool> r = Status::Internal("unset");
            {
              py::gil_scoped_release nogil;
              auto info = c.cache->Head(key);
              r = info.ok() ? Result<bool>(c.cache->IsResident(*info)) : Result<bool>(info.error());
            }
            return Unwrap(std::move(r));
          },
          py::arg("key"))
      .def(
          "invalidate", [](PyCached& c, const std::string& key) { c.cache->Invalidate(key); },
          py::arg("key"))
      .def("stats",
           [](PyCached& c) {
             const cache::CacheStats s = c.cache->stats();
             py::dict d;
             py::list tiers;
             for (const auto& t : s.tiers) tiers.append(TierDict(t));
             d["tiers"] = tiers;
             d["backend_gets"] = s.backend_gets;
             d["backend_bytes"] = s.backend_bytes;
             d["heads"] = s.heads;
             d["readahead_blocks"] = s.readahead_blocks;
             d["staged_hits"] = s.staged_hits;
             return d;
           })
      .def("__repr__",
           [](PyCached& c) { return "strata.CachedObjectStore('" + c.store->url() + "')"; });

  py::class_<PyFault, PyStore, std::shared_ptr<PyFault>>(m, "FaultInjectionStore", R"doc(
Wraps a store and makes it slow and unreliable on purpose: first-byte latency
per request, a bandwidth cap per stream and/or in total (bytes/s), injected
errors and dropped bodies. For tests and benchmarks.)doc")
      .def(py::init([](const py::object& base, double latency_ms, const py::object& bandwidth,
                       const py::object& total_bandwidth, double error_rate, double drop_rate,
                       uint64_t seed) {
             auto b = StoreArg(base);
             objstore::FaultOptions o;
             o.first_byte_latency_us = static_cast<int64_t>(latency_ms * 1000);
             o.stream_bytes_per_sec = ByteSize(bandwidth, "bandwidth");
             o.total_bytes_per_sec = ByteSize(total_bandwidth, "total_bandwidth");
             o.error_rate = error_rate;
             o.drop_rate = drop_rate;
             o.seed = seed;
             auto f = std::make_shared<PyFault>();
             auto owned = std::make_shared<objstore::FaultInjectionObjectStore>(b->store.get(), o);
             f->fault = owned.get();
             f->store = owned;
             f->base = b;
             return f;
           }),
           py::arg("base"), py::arg("latency_ms") = 0.0, py::arg("bandwidth") = 0,
           py::arg("total_bandwidth") = 0, py::arg("error_rate") = 0.0, py::arg("drop_rate") = 0.0,
           py::arg("seed") = 1)
      .def("stats",
           [](PyFault& f) {
             const auto s = f.fault->stats();
             py::dict d;
             d["requests"] = s.requests;
             d["errors"] = s.errors;
             d["drops"] = s.drops;
             d["bytes"] = s.bytes;
             return d;
           })
      .def(
          "set_faults",
          [](PyFault& f, double error_rate, double drop_rate) {
            auto o = f.fault->options();
            o.error_rate = error_rate;
            o.drop_rate = drop_rate;
            f.fault->SetOptions(o);
          },
          py::arg("error_rate") = 0.0, py::arg("drop_rate") = 0.0);

  py::class_<ReaderCore, std::shared_ptr<ReaderCore>>(m, "_ReaderCore")
      .def_property_readonly("info", &ReaderCore::info)
      .def_property_readonly("size", [](ReaderCore& r) { return r.info().size; })
      .def("readinto_at", &ReadInto, py::arg("offset"), py::arg("buffer"),
           "pread into a writable buffer; the number of bytes read (0 at the end).");

  py::class_<WriterCore, std::shared_ptr<WriterCore>>(m, "_WriterCore")
      .def("write", &WriterCore::Write)
      .def("close", &WriterCore::Close)
      .def("abort", &WriterCore::Abort)
      .def_property_readonly("written", &WriterCore::written)
      .def_property_readonly("done", &WriterCore::done)
      .def_property_readonly("parts", &WriterCore::parts);

  py::class_<PyWarmShard>(m, "WarmShard", "A shard the Warmer handed out, pinned to its version.")
      .def_property_readonly("key", [](PyWarmShard& s) { return s.shard.info.key; })
      .def_property_readonly("position", [](PyWarmShard& s) { return s.shard.position; })
      .def_property_readonly("size", [](PyWarmShard& s) { return s.shard.info.size; })
      .def_property_readonly("etag", [](PyWarmShard& s) { return s.shard.info.etag; })
      .def_property_readonly("was_cached", [](PyWarmShard& s) { return s.shard.was_cached; })
      .def_property_readonly("cached", [](PyWarmShard& s) { return s.shard.cached; })
      .def_property_readonly("wait_seconds", [](PyWarmShard& s) { return s.shard.wait_seconds; })
      .def_property_readonly("data", &PyWarmShard::Data, "The whole shard as bytes (read once).")
      .def("read", &PyWarmShard::Data, "The whole shard as bytes.")
      .def("_reader",
           [](PyWarmShard& s) {
             s.Reader();
             return s.reader;
           })
      .def("__repr__", [](PyWarmShard& s) {
        return "WarmShard(position=" + std::to_string(s.shard.position) + ", key='" +
               s.shard.info.key + "', size=" + std::to_string(s.shard.info.size) + ")";
      });

  py::class_<PyWarmer>(m, "_Warmer")
      .def(py::init<const std::shared_ptr<PyStore>&, std::vector<std::string>, size_t, int,
                    std::string>(),
           py::arg("store"), py::arg("order"), py::arg("lookahead") = 3, py::arg("concurrency") = 2,
           py::arg("state_file") = "")
      .def("next", &PyWarmer::Next)
      .def("close", &PyWarmer::Close)
      .def_property_readonly("position", [](PyWarmer& w) { return w.get()->position(); })
      .def("__len__", [](PyWarmer& w) { return w.get()->size(); })
      .def("stats", [](PyWarmer& w) {
        const auto s = w.get()->stats();
        py::dict d;
        d["handed_out"] = s.handed_out;
        d["hits"] = s.hits;
        d["fetched"] = s.fetched;
        d["uncached"] = s.uncached;
        d["wait_seconds"] = s.wait_seconds;
        return d;
      });

  m.def("epoch_order", &cache::EpochOrder, py::arg("keys"), py::arg("epochs"), py::arg("seed"),
        "The Warmer's order: each epoch a permutation of keys seeded by seed + epoch "
        "(seed 0: the list order), concatenated.");

  py::class_<cache::CheckpointFile>(m, "CheckpointFile")
      .def_readonly("name", &cache::CheckpointFile::name)
      .def_readonly("size", &cache::CheckpointFile::size)
      .def_readonly("crc32c", &cache::CheckpointFile::crc32c)
      .def_readonly("sha256", &cache::CheckpointFile::sha256)
      .def_readonly("etag", &cache::CheckpointFile::etag)
      .def("__repr__", [](const cache::CheckpointFile& f) {
        return "CheckpointFile('" + f.name + "', size=" + std::to_string(f.size) + ")";
      });

  py::class_<cache::CheckpointInfo>(m, "CheckpointInfo")
      .def_readonly("step", &cache::CheckpointInfo::step)
      .def_readonly("local", &cache::CheckpointInfo::local)
      .def_readonly("remote", &cache::CheckpointInfo::remote)
      .def_readonly("uploading", &cache::CheckpointInfo::uploading)
      .def_readonly("bytes", &cache::CheckpointInfo::bytes)
      .def_readonly("files", &cache::CheckpointInfo::files)
      .def("__repr__", [](const cache::CheckpointInfo& c) {
        return "CheckpointInfo(step=" + std::to_string(c.step) +
               ", local=" + (c.local ? "True" : "False") +
               ", remote=" + (c.remote ? "True" : "False") +
               ", uploading=" + (c.uploading ? "True" : "False") +
               ", bytes=" + std::to_string(c.bytes) + ")";
      });

  py::class_<cache::LoadedCheckpoint>(m, "LoadedCheckpoint")
      .def_readonly("step", &cache::LoadedCheckpoint::step)
      .def_readonly("dir", &cache::LoadedCheckpoint::dir)
      .def_readonly("from_remote", &cache::LoadedCheckpoint::from_remote)
      .def_readonly("files", &cache::LoadedCheckpoint::files)
      .def("path", &cache::LoadedCheckpoint::PathOf, py::arg("name"),
           "The local path of one file of the checkpoint.")
      .def("__repr__", [](const cache::LoadedCheckpoint& c) {
        return "LoadedCheckpoint(step=" + std::to_string(c.step) + ", dir='" + c.dir +
               "', from_remote=" + (c.from_remote ? "True" : "False") + ")";
      });

  py::class_<PyCheckpoints>(m, "CheckpointManager", R"doc(
Checkpoints saved to local_dir (fsynced; save returns then) and uploaded to the
remote store (a URL or an ObjectStore) in the background; a remote checkpoint is
published by its manifest, written last. keep_local / keep_remote keep the
newest N of each (0 = all).)doc")
      .def(py::init([](const py::object& local_dir, const py::object& remote,
                       const std::string& prefix, int keep_local, int keep_remote,
                       int upload_concurrency, const py::object& part_size, bool fsync,
                       bool resume) {
             cache::CheckpointOptions o;
             o.local_dir = PathString(local_dir);
             o.prefix = prefix;
             o.keep_local = keep_local;
             o.keep_remote = keep_remote;
             o.upload_concurrency = upload_concurrency;
             o.part_size = ByteSize(part_size, "part_size");
             o.multipart_threshold = o.part_size;
             o.fsync = fsync;
             o.resume = resume;
             std::shared_ptr<PyStore> store;
             if (!remote.is_none()) store = StoreArg(remote);
             return std::make_unique<PyCheckpoints>(std::move(o), store);
           }),
           py::arg("local_dir"), py::arg("remote") = py::none(), py::arg("prefix") = "",
           py::arg("keep_local") = 2, py::arg("keep_remote") = 0,
           py::arg("upload_concurrency") = 16, py::arg("part_size") = "16M",
           py::arg("fsync") = true, py::arg("resume") = true)
      .def_property_readonly("remote", &PyCheckpoints::remote)
      .def_property_readonly("local_dir",
                             [](PyCheckpoints& c) { return c.m()->options().local_dir; })
      .def(
          "save",
          [](PyCheckpoints& c, uint64_t step, const py::object& files) {
            // files: {name: path | bytes-like} or [path, ...] (named by basename).
            std::vector<cache::CheckpointItem> items;
            std::vector<py::buffer_info> held;  // keeps the bytes alive while the GIL is released
            auto add = [&](const std::string& name, const py::handle& v) {
              if (py::isinstance<py::buffer>(v) && !py::isinstance<py::str>(v)) {
                held.push_back(py::reinterpret_borrow<py::buffer>(v).request());
                const auto& bi = held.back();
                if (!IsCContiguous(bi))
                  throw py::value_error("save: the bytes of \"" + name + "\" must be C-contiguous");
                items.push_back(cache::CheckpointItem::Blob(
                    name, std::string_view(static_cast<const char*>(bi.ptr),
                                           static_cast<size_t>(bi.size * bi.itemsize))));
              } else {
                items.push_back(cache::CheckpointItem::File(name, PathString(v)));
              }
            };
            held.reserve(py::len(files));
            if (py::isinstance<py::dict>(files)) {
              for (auto kv : files.cast<py::dict>()) add(kv.first.cast<std::string>(), kv.second);
            } else {
              for (auto v : files) {
                const std::string p = PathString(v);
                add(std::filesystem::path(p).filename().string(), v);
              }
            }
            Status st;
            {
              py::gil_scoped_release nogil;
              st = c.m()->Save(step, items);
            }
            Check(st);
          },
          py::arg("step"), py::arg("files"),
          "Saves {name: path or bytes} (or a list of paths, named by basename) as checkpoint step; "
          "returns once durable locally, the upload continues in the background.")
      .def(
          "load",
          [](PyCheckpoints& c, const py::object& step, const py::object& dest,
             const std::string& source, int concurrency) {
            cache::LoadOptions lo;
            if (source == "auto")
              lo.source = cache::LoadOptions::Source::kAuto;
            else if (source == "local")
              lo.source = cache::LoadOptions::Source::kLocal;
            else if (source == "remote")
              lo.source = cache::LoadOptions::Source::kRemote;
            else
              throw py::value_error("source must be \"auto\", \"local\" or \"remote\"");
            lo.download_concurrency = concurrency;
            const uint64_t s = StepArg(c.m(), step);
            std::string dest_dir = dest.is_none() ? std::string() : PathString(dest);
            Result<cache::LoadedCheckpoint> r = Status::Internal("unset");
            {
              py::gil_scoped_release nogil;
              r = c.m()->Load(s, lo);
              if (r.ok() && !dest_dir.empty()) {
                std::error_code ec;
                for (const auto& f : r->files) {
                  const std::filesystem::path to = std::filesystem::path(dest_dir) / f.name;
                  std::filesystem::create_directories(to.parent_path(), ec);
                  if (!ec)
                    std::filesystem::copy_file(r->PathOf(f.name), to,
                                               std::filesystem::copy_options::overwrite_existing,
                                               ec);
                  if (ec) {
                    r = Status::IOError("copy " + f.name + " to " + dest_dir + ": " + ec.message());
                    break;
                  }
                }
                if (r.ok()) r->dir = dest_dir;
              }
            }
            return Unwrap(std::move(r));
          },
          py::arg("step") = "latest", py::arg("dest") = py::none(), py::arg("source") = "auto",
          py::arg("concurrency") = 16,
          "Loads a checkpoint (local copy if complete and verified, else a parallel download); "
          "with dest, the files are also copied there.")
      .def(
          "read_file",
          [](PyCheckpoints& c, const py::object& step, const std::string& name) {
            const uint64_t s = StepArg(c.m(), step);
            Result<std::string> r = Status::Internal("unset");
            {
              py::gil_scoped_release nogil;
              r = c.m()->ReadFile(s, name);
            }
            return Bytes(Unwrap(std::move(r)));
          },
          py::arg("step"), py::arg("name"))
      .def(
          "list",
          [](PyCheckpoints& c, bool remote) {
            Result<std::vector<cache::CheckpointInfo>> r = Status::Internal("unset");
            {
              py::gil_scoped_release nogil;
              r = c.m()->List(remote);
            }
            return Unwrap(std::move(r));
          },
          py::arg("remote") = true)
      .def("latest",
           [](PyCheckpoints& c) {
             Result<std::optional<uint64_t>> r = Status::Internal("unset");
             {
               py::gil_scoped_release nogil;
               r = c.m()->Latest();
             }
             return Unwrap(std::move(r));
           })
      .def(
          "wait",
          [](PyCheckpoints& c) {
            Status st;
            {
              py::gil_scoped_release nogil;
              st = c.m()->Wait();
            }
            Check(st);
          },
          "Waits for every queued upload; raises the first failure.")
      .def("retry",
           [](PyCheckpoints& c) {
             Status st;
             {
               py::gil_scoped_release nogil;
               st = c.m()->Retry();
             }
             Check(st);
           })
      .def(
          "remove",
          [](PyCheckpoints& c, const py::object& step, bool local, bool remote, bool force) {
            const uint64_t s = StepArg(c.m(), step);
            Status st;
            {
              py::gil_scoped_release nogil;
              st = c.m()->Remove(s, local, remote, force);
            }
            Check(st);
          },
          py::arg("step"), py::arg("local") = true, py::arg("remote") = true,
          py::arg("force") = false)
      .def_property_readonly("recovery_report",
                             [](PyCheckpoints& c) { return c.m()->recovery_report(); })
      .def("stats",
           [](PyCheckpoints& c) {
             const auto s = c.m()->stats();
             py::dict d;
             d["saves"] = s.saves;
             d["uploads"] = s.uploads;
             d["upload_failures"] = s.upload_failures;
             d["bytes_uploaded"] = s.bytes_uploaded;
             d["last_save_seconds"] = s.last_save_seconds;
             d["last_upload_seconds"] = s.last_upload_seconds;
             return d;
           })
      .def_static("step_name", &cache::CheckpointManager::StepName);

  // A library inside a training script stays quiet: warnings and errors only,
  // unless STRATA_LOG_LEVEL says otherwise (or set_log_level is called).
  auto set_level = [](const std::string& name) {
    static const char* kNames[] = {"trace", "debug", "info", "warn", "warning", "error", "off"};
    if (std::find(std::begin(kNames), std::end(kNames), name) == std::end(kNames))
      throw py::value_error("log level must be trace, debug, info, warn, error or off, not \"" +
                            name + "\"");
    log::SetLevel(log::ParseLevel(name));
  };
  const char* env_level = std::getenv("STRATA_LOG_LEVEL");
  try {
    set_level(env_level ? env_level : "warn");
  } catch (const py::value_error&) {
    set_level("warn");
  }
  m.def(
      "set_log_level", set_level, py::arg("level"),
      "Level of the C++ log lines on stderr: trace, debug, info, warn (the default), error, off.");

  m.def(
      "parse_size", [](const std::string& s) { return ByteSize(py::str(s), "size"); }, py::arg("s"),
      "\"512M\" -> 536870912 (binary multiples).");
  RegisterFeatures(m);  // python/py_features.cc: _strata._features
}
