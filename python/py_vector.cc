// strata.vector's native half (python/strata/vector.py is the rest): the
// engine's Collection (include/strata/vector/collection.h) and the embedded
// Milvus API (include/strata/milvus/embedded.h).
//
// Arrays come in through the buffer protocol and are read in place: vectors
// must be float32 and C-contiguous, ids uint64 (vector.py converts other
// inputs, and warns when that costs a copy of the vectors). Batch calls run
// with the GIL released; the result arrays are allocated with it and filled
// without it.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <strata/milvus/embedded.h>
#include <strata/vector/collection.h>
#include <strata/vector/distance.h>

#include "py_register.h"

namespace py = pybind11;

namespace strata::python {
namespace {

using vector::Collection;

template <class T>
T Unwrap(Result<T>&& r) {
  if (!r.ok()) RaiseStatus(r.error());
  return std::move(*r);
}

void Check(const Status& st) {
  if (!st.ok()) RaiseStatus(st);
}

bool CContiguous(const py::buffer_info& bi) {
  py::ssize_t expect = bi.itemsize;
  for (py::ssize_t i = bi.ndim - 1; i >= 0; --i) {
    if (bi.shape[i] > 1 && bi.strides[i] != expect) return false;
    expect *= bi.shape[i];
  }
  return true;
}

// A (n, d) float32 C-contiguous buffer, read in place.
struct Matrix {
  const float* data = nullptr;
  size_t rows = 0;
  size_t dim = 0;
  py::buffer_info info;  // keeps the view (and so the memory) alive
};

Matrix MatrixArg(const py::buffer& b, const char* what) {
  Matrix m;
  m.info = b.request();
  if (m.info.format != py::format_descriptor<float>::format() || m.info.itemsize != 4) {
    throw py::type_error(std::string(what) + " must be float32 (got format '" + m.info.format +
                         "')");
  }
  if (m.info.ndim != 2) throw py::value_error(std::string(what) + " must be 2-D (n, dim)");
  if (!CContiguous(m.info)) throw py::value_error(std::string(what) + " must be C-contiguous");
  m.data = static_cast<const float*>(m.info.ptr);
  m.rows = static_cast<size_t>(m.info.shape[0]);
  m.dim = static_cast<size_t>(m.info.shape[1]);
  return m;
}

std::vector<vector::PointId> IdsArg(const py::buffer& b) {
  py::buffer_info bi = b.request();
  if (bi.format != py::format_descriptor<uint64_t>::format() && bi.format != "L" &&
      bi.format != "Q") {
    throw py::type_error("ids must be uint64 (got format '" + bi.format + "')");
  }
  if (bi.itemsize != 8 || bi.ndim != 1 || !CContiguous(bi))
    throw py::value_error("ids must be a 1-D contiguous uint64 array");
  const auto* p = static_cast<const uint64_t*>(bi.ptr);
  std::vector<vector::PointId> out(static_cast<size_t>(bi.shape[0]));
  for (size_t i = 0; i < out.size(); ++i) out[i] = vector::PointId::Number(p[i]);
  return out;
}

// filter: None, a Milvus-style expression (str) or Qdrant's JSON filter (a
// str starting with '{', as vector.py passes a dict).
std::optional<vector::Filter> FilterArg(const std::optional<std::string>& text) {
  if (!text || text->empty()) return std::nullopt;
  if ((*text)[0] == '{') return Unwrap(vector::ParseQdrantFilter(*text));
  return Unwrap(vector::ParseFilterExpression(*text));
}

// Each method copies the shared_ptr under the GIL, so close() from another
// thread never frees a collection a call is using.
struct PyCollection {
  std::shared_ptr<Collection> c;

  std::shared_ptr<Collection> Get() const {
    if (!c) RaiseStatus(Status::Unavailable("the collection is closed"));
    return c;
  }
};

vector::IndexParams IndexArg(uint32_t dim, const std::string& metric, const std::string& index,
                             const py::dict& params) {
  vector::IndexParams p;
  p.dim = dim;
  p.metric = Unwrap(vector::ParseMetric(metric));
  p.type = Unwrap(vector::ParseIndexType(index));
  for (auto [k, v] : params) {
    const std::string key = py::str(k);
    if (key == "m" || key == "M") {
      p.hnsw_m = v.cast<uint32_t>();
    } else if (key == "ef_construction" || key == "efConstruction") {
      p.hnsw_ef_construction = v.cast<uint32_t>();
    } else if (key == "sq8") {
      p.hnsw_sq8 = v.cast<bool>();
    } else if (key == "nlist") {
      p.ivf_nlist = v.cast<uint32_t>();
    } else if (key == "pq_m") {
      p.pq_m = v.cast<uint32_t>();
    } else if (key == "diskann_r") {
      p.diskann_r = v.cast<uint32_t>();
    } else if (key == "diskann_l") {
      p.diskann_l = v.cast<uint32_t>();
    } else if (key == "seed") {
      p.seed = v.cast<uint64_t>();
    } else {
      throw py::value_error("index parameter \"" + key +
                            "\" is not supported (supported: m, ef_construction, sq8, nlist, "
                            "pq_m, diskann_r, diskann_l, seed)");
    }
  }
  return p;
}

std::shared_ptr<PyCollection> CreateCollection(const std::string& dir, const std::string& name,
                                               uint32_t dim, const std::string& metric,
                                               const std::string& index, const py::dict& params,
                                               const py::dict& payload_schema,
                                               size_t segment_rows) {
  vector::CollectionSchema schema;
  schema.vectors.push_back({"", IndexArg(dim, metric, index, params)});
  for (auto [k, v] : payload_schema) {
    vector::PayloadFieldSchema f;
    f.name = py::str(k);
    f.type = Unwrap(vector::ParsePayloadType(py::str(v).cast<std::string>()));
    schema.payload.push_back(f);
  }
  vector::CollectionOptions opts;
  if (segment_rows != 0) opts.segment_rows = segment_rows;
  Result<std::unique_ptr<Collection>> r = Status::Internal("unset");
  {
    py::gil_scoped_release nogil;
    r = Collection::Create(dir, name, schema, opts);
  }
  auto out = std::make_shared<PyCollection>();
  out->c = Unwrap(std::move(r));
  return out;
}

std::shared_ptr<PyCollection> OpenCollection(const std::string& dir) {
  Result<std::unique_ptr<Collection>> r = Status::Internal("unset");
  {
    py::gil_scoped_release nogil;
    r = Collection::Open(dir);
  }
  auto out = std::make_shared<PyCollection>();
  out->c = Unwrap(std::move(r));
  return out;
}

// upsert(ids uint64 (n,), vectors float32 (n, d), payloads: list of JSON
// texts or None, wait): the points are built from the buffers with the GIL
// released (the engine keeps its own copy of each vector).
size_t Upsert(PyCollection& self, const py::buffer& ids_b, const py::buffer& vec_b,
              const std::optional<std::vector<std::string>>& payloads, bool wait) {
  auto c = self.Get();
  std::vector<vector::PointId> ids = IdsArg(ids_b);
  Matrix v = MatrixArg(vec_b, "vectors");
  if (v.rows != ids.size()) {
    throw py::value_error("ids and vectors differ in length: " + std::to_string(ids.size()) +
                          " ids, " + std::to_string(v.rows) + " vectors");
  }
  if (payloads && payloads->size() != ids.size()) {
    throw py::value_error("payloads must have one entry per id");
  }
  Status st;
  {
    py::gil_scoped_release nogil;
    std::vector<vector::Point> points(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      points[i].id = ids[i];
      points[i].vectors.push_back(
          {"", std::vector<float>(v.data + i * v.dim, v.data + (i + 1) * v.dim)});
      if (payloads) points[i].payload = (*payloads)[i];
    }
    vector::WriteOptions wo;
    wo.wait = wait;
    st = c->Upsert(points, wo);
  }
  Check(st);
  return ids.size();
}

struct SearchArgs {
  size_t k = 10;
  std::optional<std::string> filter;
  uint32_t ef = 0;
  uint32_t nprobe = 0;
  bool exact = false;
};

// search(queries float32 (n, d), k, ...) -> (ids int64 (n, k), scores float32
// (n, k)); rows with fewer than k hits are padded with id -1 and score NaN.
py::tuple Search(PyCollection& self, const py::buffer& q_b, const SearchArgs& a) {
  auto c = self.Get();
  Matrix q = MatrixArg(q_b, "queries");
  if (a.k == 0) throw py::value_error("k must be at least 1");
  std::optional<vector::Filter> filter = FilterArg(a.filter);
  const std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(q.rows),
                                       static_cast<py::ssize_t>(a.k)};
  py::array_t<int64_t> ids(shape);
  py::array_t<float> scores(shape);
  int64_t* id_out = ids.mutable_data();
  float* score_out = scores.mutable_data();
  Status st;
  {
    py::gil_scoped_release nogil;
    std::vector<vector::SearchRequest> reqs(q.rows);
    for (size_t i = 0; i < q.rows; ++i) {
      auto& r = reqs[i];
      r.vector.assign(q.data + i * q.dim, q.data + (i + 1) * q.dim);
      r.limit = a.k;
      r.filter = filter;
      r.ef = a.ef;
      r.nprobe = a.nprobe;
      r.exact = a.exact;
    }
    auto res = c->SearchBatch(reqs);
    if (res.ok()) {
      for (size_t i = 0; i < q.rows; ++i) {
        const auto& hits = (*res)[i];
        for (size_t j = 0; j < a.k; ++j) {
          const bool real = j < hits.size();
          id_out[i * a.k + j] = real ? static_cast<int64_t>(hits[j].record.id.hi) : -1;
          score_out[i * a.k + j] = real ? hits[j].score : std::numeric_limits<float>::quiet_NaN();
        }
      }
    } else {
      st = res.error();
    }
  }
  Check(st);
  return py::make_tuple(ids, scores);
}

// get(ids) -> list of (id, payload JSON text, vector as float32 array or None).
py::list Get(PyCollection& self, const py::buffer& ids_b, bool with_vectors) {
  auto c = self.Get();
  std::vector<vector::PointId> ids = IdsArg(ids_b);
  Result<std::vector<vector::Record>> r = Status::Internal("unset");
  {
    py::gil_scoped_release nogil;
    r = c->Get(ids, true, with_vectors);
  }
  auto recs = Unwrap(std::move(r));
  py::list out;
  for (const auto& rec : recs) {
    py::object vec = py::none();
    if (with_vectors && !rec.vectors.empty()) {
      const auto& v = rec.vectors[0].values;
      py::array_t<float> a(static_cast<py::ssize_t>(v.size()));
      std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(float));
      vec = a;
    }
    out.append(py::make_tuple(rec.id.hi, rec.payload, vec));
  }
  return out;
}

size_t Delete(PyCollection& self, const py::buffer& ids_b, bool wait) {
  auto c = self.Get();
  std::vector<vector::PointId> ids = IdsArg(ids_b);
  size_t deleted = 0;
  Status st;
  {
    py::gil_scoped_release nogil;
    vector::WriteOptions wo;
    wo.wait = wait;
    st = c->Delete(ids, wo, &deleted);
  }
  Check(st);
  return deleted;
}

size_t Count(PyCollection& self, const std::optional<std::string>& filter) {
  auto c = self.Get();
  auto f = FilterArg(filter);
  Result<size_t> r = Status::Internal("unset");
  {
    py::gil_scoped_release nogil;
    r = c->Count(f);
  }
  return Unwrap(std::move(r));
}

py::dict Info(PyCollection& self) {
  auto c = self.Get();
  vector::CollectionInfo i = c->Info();
  const auto& idx = i.schema.vectors.at(0).index;
  py::dict d;
  d["name"] = i.name;
  d["dim"] = idx.dim;
  d["metric"] = std::string(vector::MetricName(idx.metric));
  d["index"] = std::string(vector::IndexTypeName(idx.type));
  d["points"] = i.points;
  d["indexed_points"] = i.indexed_points;
  d["segments"] = i.segments;
  d["memory_bytes"] = i.memory_bytes;
  d["disk_bytes"] = i.disk_bytes;
  return d;
}

template <class Fn>
void NoGil(PyCollection& self, Fn fn) {
  auto c = self.Get();
  Status st;
  {
    py::gil_scoped_release nogil;
    st = fn(*c);
  }
  Check(st);
}

void RegisterCollection(py::module_& m) {
  py::class_<PyCollection, std::shared_ptr<PyCollection>>(
      m, "_VectorCollection", "The engine's collection (strata.vector.Collection wraps it).")
      .def_static("create", &CreateCollection, py::arg("dir"), py::arg("name"), py::arg("dim"),
                  py::arg("metric"), py::arg("index"), py::arg("params"), py::arg("payload_schema"),
                  py::arg("segment_rows"))
      .def_static("open", &OpenCollection, py::arg("dir"))
      .def("upsert", &Upsert, py::arg("ids"), py::arg("vectors"), py::arg("payloads"),
           py::arg("wait"))
      .def(
          "search",
          [](PyCollection& self, const py::buffer& q, size_t k, std::optional<std::string> filter,
             uint32_t ef, uint32_t nprobe, bool exact) {
            return Search(self, q, SearchArgs{k, std::move(filter), ef, nprobe, exact});
          },
          py::arg("queries"), py::arg("k"), py::arg("filter"), py::arg("ef"), py::arg("nprobe"),
          py::arg("exact"))
      .def("get", &Get, py::arg("ids"), py::arg("with_vectors"))
      .def("delete", &Delete, py::arg("ids"), py::arg("wait"))
      .def("count", &Count, py::arg("filter"))
      .def("info", &Info)
      .def(
          "compact",
          [](PyCollection& s, bool seal) {
            NoGil(s, [&](Collection& c) { return c.Compact(seal); });
          },
          py::arg("seal_growing"))
      .def("wait_idle",
           [](PyCollection& s) { NoGil(s, [](Collection& c) { return c.WaitIdle(); }); })
      .def("close", [](PyCollection& s) {
        std::shared_ptr<Collection> c = std::move(s.c);
        if (!c) return;
        py::gil_scoped_release nogil;
        c->Close();
      });
}

// The embedded Milvus API: call(method, request bytes) -> response bytes.
struct PyMilvus {
  std::shared_ptr<milvus::Embedded> e;
};

void RegisterMilvus(py::module_& m) {
  py::class_<PyMilvus, std::shared_ptr<PyMilvus>>(
      m, "_MilvusEmbedded",
      "The Milvus API in-process over a directory (strata.vector.MilvusClient).")
      .def(py::init([](const std::string& root) {
             Result<std::unique_ptr<milvus::Embedded>> r = Status::Internal("unset");
             {
               py::gil_scoped_release nogil;
               r = milvus::Embedded::Open(root);
             }
             auto p = std::make_shared<PyMilvus>();
             p->e = Unwrap(std::move(r));
             return p;
           }),
           py::arg("root"))
      .def(
          "call",
          [](PyMilvus& self, const std::string& method, const py::bytes& request) {
            std::shared_ptr<milvus::Embedded> e = self.e;
            if (!e) RaiseStatus(Status::Unavailable("the MilvusClient is closed"));
            std::string_view in = request;  // the bytes object outlives the call
            Result<std::string> r = Status::Internal("unset");
            {
              py::gil_scoped_release nogil;
              r = e->Call(method, in);
            }
            std::string out = Unwrap(std::move(r));
            return py::bytes(out.data(), out.size());
          },
          py::arg("method"), py::arg("request"))
      .def_static("methods", &milvus::Embedded::Methods)
      .def("close", [](PyMilvus& self) {
        std::shared_ptr<milvus::Embedded> e = std::move(self.e);
        py::gil_scoped_release nogil;
        e.reset();
      });
}

}  // namespace

void RegisterVector(py::module_& m) {
  RegisterCollection(m);
  RegisterMilvus(m);
}

}  // namespace strata::python
