// _strata._features: the feature store's C++ (src/features) for strata.features.
//
// A thin adapter: repositories are loaded, planned and applied by the same
// code as `strata features plan/apply` (Python definitions arrive as YAML/JSON
// documents, see DefinitionDocument); training sets are built by
// GetHistoricalFeatures in-process, with the GIL released; the online store
// is opened once per OnlineStore object and served by the same
// Materialize / WriteToOnlineStore / GetOnlineFeatures as the feature server.
//
// Frames cross as a list of columns, each a tuple
//   (name, kind, unit, utc, values, valid)
// kind: bool int32 int64 float double string binary timestamp date; unit: ms us
// ns (timestamps); values: a numpy array of the kind's dtype (bool: uint8,
// timestamp: int64 counts of `unit`, date: int32 days) or, for strings and
// binaries, a list of str/bytes/None; valid: a uint8 numpy array (1 = present)
// or None (all present; for strings None items are NULL). Columns coming back
// own their numpy buffers (no copy on the way out).
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <strata/features/historical.h>
#include <strata/features/io.h>
#include <strata/features/online.h>
#include <strata/features/parquet.h>
#include <strata/features/repo.h>
#include <strata/features/table.h>

#include "py_register.h"

namespace py = pybind11;

namespace strata::python {
namespace {

using namespace strata::features;  // NOLINT

// Errors raise strata.Error and its subclasses (RaiseStatus, strata_py.cc).
[[noreturn]] void Raise(const Status& st) { RaiseStatus(st); }

void Check(const Status& st) {
  if (!st.ok()) Raise(st);
}

template <class T>
T Unwrap(Result<T>&& r) {
  if (!r.ok()) Raise(r.error());
  return std::move(*r);
}

// Runs fn without the GIL and raises its error with it.
template <class T, class F>
T NoGil(F&& fn) {
  Result<T> r = Status::Internal("unset");
  {
    py::gil_scoped_release nogil;
    r = fn();
  }
  return Unwrap(std::move(r));
}

// ---------------------------------------------------------------------------
// Frames

Result<DataType> KindType(const std::string& kind, const std::string& unit, bool utc) {
  if (kind == "timestamp") {
    TimeUnit u = TimeUnit::kMicro;
    if (unit == "ms")
      u = TimeUnit::kMilli;
    else if (unit == "ns")
      u = TimeUnit::kNano;
    else if (unit != "us")
      return Status::InvalidArgument(fmt::format("timestamp unit \"{}\" (use ms, us or ns)", unit));
    return DataType::Timestamp(u, utc);
  }
  if (kind == "bool") return DataType::Bool();
  if (kind == "int32") return DataType::Int32();
  if (kind == "int64") return DataType::Int64();
  if (kind == "float") return DataType::Float();
  if (kind == "double") return DataType::Double();
  if (kind == "string") return DataType::String();
  if (kind == "binary") return DataType::Binary();
  if (kind == "date") return DataType::Date();
  return Status::InvalidArgument(
      fmt::format("column kind \"{}\" is not one of bool int32 int64 float double "
                  "string binary timestamp date",
                  kind));
}

std::string KindName(const DataType& t) {
  switch (t.id) {
    case TypeId::kBool:
      return "bool";
    case TypeId::kInt32:
      return "int32";
    case TypeId::kInt64:
      return "int64";
    case TypeId::kFloat:
      return "float";
    case TypeId::kDouble:
      return "double";
    case TypeId::kString:
      return "string";
    case TypeId::kBinary:
      return "binary";
    case TypeId::kTimestamp:
      return "timestamp";
    case TypeId::kDate:
      return "date";
  }
  return "?";
}

const char* UnitName(TimeUnit u) {
  return u == TimeUnit::kMilli ? "ms" : u == TimeUnit::kNano ? "ns" : "us";
}

template <class T>
void CopyNumbers(const py::handle& values, size_t* rows, std::vector<T>* out) {
  auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(values);
  if (!a) throw py::type_error("column values must be a numpy array");
  if (a.ndim() != 1) throw py::value_error("column values must be one-dimensional");
  *rows = static_cast<size_t>(a.shape(0));
  out->resize(*rows);
  if (*rows) std::memcpy(out->data(), a.data(), *rows * sizeof(T));
}

Column StringsFrom(const DataType& type, const py::handle& values, const std::string& name) {
  Column c(type);
  for (const py::handle item : py::reinterpret_borrow<py::sequence>(values)) {
    if (item.is_none()) {
      c.AppendNull();
    } else if (type.id == TypeId::kString && py::isinstance<py::str>(item)) {
      c.AppendString(item.cast<std::string>());
    } else if (py::isinstance<py::bytes>(item)) {
      c.AppendString(std::string(item.cast<py::bytes>()));
    } else {
      throw py::type_error(fmt::format("column \"{}\" ({}) holds a {}", name, KindName(type),
                                       std::string(py::str(item.get_type().attr("__name__")))));
    }
  }
  return c;
}

Column ColumnFrom(const std::string& name, const DataType& type, const py::handle& values,
                  const py::handle& valid) {
  Column c(type);
  size_t rows = 0;
  switch (type.id) {
    case TypeId::kString:
    case TypeId::kBinary:
      c = StringsFrom(type, values, name);
      rows = c.size();
      break;
    case TypeId::kBool:
      CopyNumbers(values, &rows, &c.values<uint8_t>());
      break;
    case TypeId::kInt32:
    case TypeId::kDate:
      CopyNumbers(values, &rows, &c.values<int32_t>());
      break;
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      CopyNumbers(values, &rows, &c.values<int64_t>());
      break;
    case TypeId::kFloat:
      CopyNumbers(values, &rows, &c.values<float>());
      break;
    case TypeId::kDouble:
      CopyNumbers(values, &rows, &c.values<double>());
      break;
  }
  if (type.is_string_like()) {
    if (!valid.is_none()) {
      std::vector<uint8_t> v;
      size_t n = 0;
      CopyNumbers(valid, &n, &v);
      if (n != rows)
        throw py::value_error(
            fmt::format("column \"{}\": {} validity flags for {} rows", name, n, rows));
      for (size_t i = 0; i < n; ++i) c.validity()[i] &= v[i] ? 1 : 0;
    }
    return c;
  }
  if (valid.is_none()) {
    c.validity().assign(rows, 1);
  } else {
    size_t n = 0;
    CopyNumbers(valid, &n, &c.validity());
    if (n != rows)
      throw py::value_error(
          fmt::format("column \"{}\": {} validity flags for {} rows", name, n, rows));
    for (uint8_t& b : c.validity()) b = b ? 1 : 0;
  }
  return c;
}

Table TableFrom(const py::list& cols) {
  Table t;
  for (const py::handle h : cols) {
    auto tup = h.cast<py::tuple>();
    if (tup.size() != 6)
      throw py::value_error("a column is (name, kind, unit, utc, values, valid)");
    const auto name = tup[0].cast<std::string>();
    const DataType type = Unwrap(
        KindType(tup[1].cast<std::string>(), tup[2].cast<std::string>(), tup[3].cast<bool>()));
    Column c = ColumnFrom(name, type, tup[4], tup[5]);
    Check(t.AddColumn(Field{name, type, true}, std::move(c))
              .WithContext(fmt::format("column \"{}\"", name)));
  }
  return t;
}

// A numpy array that owns `v` (moved to the heap, freed with the array).
template <class T>
py::array Owned(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(static_cast<py::ssize_t>(heap->size()), heap->data(), owner);
}

py::object ValuesOf(Column& c) {
  switch (c.type().id) {
    case TypeId::kBool:
      return Owned(std::move(c.values<uint8_t>()));
    case TypeId::kInt32:
    case TypeId::kDate:
      return Owned(std::move(c.values<int32_t>()));
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      return Owned(std::move(c.values<int64_t>()));
    case TypeId::kFloat:
      return Owned(std::move(c.values<float>()));
    case TypeId::kDouble:
      return Owned(std::move(c.values<double>()));
    case TypeId::kString:
    case TypeId::kBinary:
      break;
  }
  py::list out(c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.IsNull(i)) {
      out[i] = py::none();
      continue;
    }
    const std::string_view s = c.StringAt(i);
    if (c.type().id == TypeId::kBinary) {
      out[i] = py::bytes(s.data(), s.size());
    } else {
      PyObject* u = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
      if (!u) throw py::error_already_set();
      out[i] = py::reinterpret_steal<py::object>(u);
    }
  }
  return std::move(out);
}

py::list TableTo(Table&& t) {
  py::list out;
  for (size_t i = 0; i < t.num_columns(); ++i) {
    const Field& f = t.field(i);
    Column& c = t.column(i);
    py::object values = ValuesOf(c);
    out.append(py::make_tuple(f.name, KindName(f.type), UnitName(f.type.unit), f.type.utc, values,
                              Owned(std::move(c.validity()))));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Repositories

std::vector<DefinitionDocument> Docs(const std::vector<std::pair<std::string, std::string>>& docs) {
  std::vector<DefinitionDocument> out;
  for (const auto& [file, text] : docs) out.push_back({file, text});
  return out;
}

const char* ChangeKind(PlanChange::Kind k) {
  switch (k) {
    case PlanChange::kCreate:
      return "create";
    case PlanChange::kUpdate:
      return "update";
    case PlanChange::kUnchanged:
      return "unchanged";
    case PlanChange::kNotInRepo:
      return "not_in_repo";
  }
  return "?";
}

using Changes = std::vector<std::tuple<std::string, std::string, std::string, std::string>>;

// plan / apply of the repository's YAML plus `docs`, as `strata features plan/apply` does.
Changes PlanOrApply(const std::string& dir,
                    const std::vector<std::pair<std::string, std::string>>& docs,
                    bool check_sources, bool apply) {
  const std::vector<DefinitionDocument> extra = Docs(docs);
  auto changes = NoGil<std::vector<PlanChange>>([&]() -> Result<std::vector<PlanChange>> {
    STRATA_ASSIGN_OR_RETURN(FeatureRepo repo, LoadFeatureRepo(dir, extra));
    if (check_sources) {
      STRATA_RETURN_IF_ERROR(CheckSources(repo));
      InferEntityTypes(&repo);
    }
    return apply ? ApplyRepo(repo) : PlanRepo(repo);
  });
  Changes out;
  for (const PlanChange& c : changes)
    out.emplace_back(ChangeKind(c.kind), c.object, c.name, c.detail);
  return out;
}

// The repository's config with the applied definitions (the registry).
Result<FeatureRepo> LoadApplied(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(FeatureRepo repo, LoadFeatureRepo(dir));
  std::error_code ec;
  if (!std::filesystem::exists(repo.config.registry_path, ec)) {
    return Status::PreconditionFailed(
        fmt::format("no registry at {}: apply the definitions first (FeatureStore.apply or `strata "
                    "features apply --repo {}`)",
                    repo.config.registry_path, dir));
  }
  STRATA_ASSIGN_OR_RETURN(FeatureRepo reg, LoadRegistry(repo.config.registry_path));
  reg.config = repo.config;
  return reg;
}

py::dict ConfigDict(const std::string& dir) {
  const FeatureRepo repo = NoGil<FeatureRepo>([&] { return LoadFeatureRepo(dir); });
  const RepoConfig& c = repo.config;
  py::dict d;
  d["project"] = c.project;
  d["repo_dir"] = c.repo_dir;
  d["registry_path"] = c.registry_path;
  d["online_store"] = c.online_store;
  d["online_path"] = c.online_path;
  d["redis_connection"] = c.redis_connection;
  d["entity_key_serialization_version"] = c.entity_key_serialization_version;
  return d;
}

Result<std::vector<FeatureProjection>> Projections(const FeatureRepo& reg,
                                                   const std::vector<std::string>& refs,
                                                   const std::string& service) {
  if (!service.empty()) return ResolveService(reg, service);
  return ResolveFeatureRefs(reg, refs);
}

py::tuple Historical(const std::string& dir, const py::list& entity_cols,
                     const std::vector<std::string>& refs, const std::string& service,
                     bool full_feature_names, const std::string& timestamp_column,
                     int64_t memory_budget, const std::string& spill_dir) {
  const Table entities = TableFrom(entity_cols);
  HistoricalOptions opt;
  opt.full_feature_names = full_feature_names;
  opt.entity_timestamp_column = timestamp_column;
  if (memory_budget > 0) opt.memory_budget_bytes = memory_budget;
  opt.spill_dir = spill_dir;
  HistoricalStats stats;
  Table out = NoGil<Table>([&]() -> Result<Table> {
    STRATA_ASSIGN_OR_RETURN(FeatureRepo reg, LoadApplied(dir));
    STRATA_ASSIGN_OR_RETURN(auto projections, Projections(reg, refs, service));
    return GetHistoricalFeatures(reg, entities, projections, opt, &stats);
  });
  py::dict st;
  st["feature_rows_read"] = stats.feature_rows_read;
  st["feature_rows_kept"] = stats.feature_rows_kept;
  st["partitions"] = stats.partitions;
  st["spilled_bytes"] = stats.spilled_bytes;
  st["matched"] = stats.matched;
  return py::make_tuple(TableTo(std::move(out)), st);
}

py::list ReadTable(const std::string& path, const std::vector<std::string>& columns) {
  return TableTo(NoGil<Table>([&] { return ReadTableFile(path, columns); }));
}

void WriteTable(const std::string& path, const py::list& cols, const std::string& codec) {
  const Table t = TableFrom(cols);
  NoGil<bool>([&]() -> Result<bool> {
    ParquetWriteOptions opt;
    STRATA_ASSIGN_OR_RETURN(opt.codec, ParseParquetCodec(codec));
    STRATA_RETURN_IF_ERROR(WriteTableFile(path, t, opt));
    return true;
  });
}

// ---------------------------------------------------------------------------
// The online store

OnlineValue ScalarFrom(const py::handle& v, const std::string& key) {
  if (v.is_none()) return OnlineValue::Null();
  if (py::isinstance<py::bool_>(v))
    return OnlineValue{OnlineValue::kBool, v.cast<bool>() ? 1 : 0, 0, {}};
  if (py::isinstance<py::int_>(v)) return OnlineValue::Int(v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return OnlineValue::Double(v.cast<double>());
  if (py::isinstance<py::str>(v)) return OnlineValue::String(v.cast<std::string>());
  if (py::isinstance<py::bytes>(v))
    return OnlineValue{OnlineValue::kBytes, 0, 0, std::string(v.cast<py::bytes>())};
  throw py::type_error(
      fmt::format("entity \"{}\": a {} is not an entity value (use int, str, bytes, float or bool)",
                  key, std::string(py::str(v.get_type().attr("__name__")))));
}

py::object ScalarTo(const OnlineValue& v, const py::object& epoch, const py::object& timedelta) {
  switch (v.kind) {
    case OnlineValue::kNull:
      return py::none();
    case OnlineValue::kBool:
      return py::bool_(v.i != 0);
    case OnlineValue::kInt:
      return py::int_(v.i);
    case OnlineValue::kDouble:
      return py::float_(v.d);
    case OnlineValue::kString:
      return py::str(v.s);
    case OnlineValue::kBytes:
      return py::bytes(v.s);
    case OnlineValue::kTimestamp:
      return epoch + timedelta(py::arg("microseconds") = v.i);
  }
  return py::none();
}

class PyOnline {
 public:
  explicit PyOnline(std::string dir) : dir_(std::move(dir)) {
    store_ = NoGil<std::unique_ptr<OnlineStore>>([&]() -> Result<std::unique_ptr<OnlineStore>> {
      STRATA_ASSIGN_OR_RETURN(FeatureRepo repo, LoadFeatureRepo(dir_));
      return OpenOnlineStore(repo.config);
    });
  }

  py::dict Materialize(std::optional<int64_t> start_us, int64_t end_us,
                       const std::vector<std::string>& views) {
    OnlineStore* store = Store();
    MaterializeStats st;
    NoGil<bool>([&]() -> Result<bool> {
      STRATA_ASSIGN_OR_RETURN(FeatureRepo reg, LoadApplied(dir_));
      MaterializeOptions opt;
      opt.views = views;
      if (start_us) {
        opt.start_us = *start_us;
        opt.end_us = end_us;
        STRATA_RETURN_IF_ERROR(features::Materialize(&reg, store, opt, &st));
      } else {
        STRATA_RETURN_IF_ERROR(MaterializeIncremental(&reg, store, end_us, opt, &st));
      }
      return true;
    });
    py::dict d;
    d["views"] = st.views;
    d["rows_scanned"] = st.rows_scanned;
    d["rows_in_window"] = st.rows_in_window;
    d["entities_written"] = st.entities_written;
    return d;
  }

  void Write(const std::string& view, const py::list& cols) {
    OnlineStore* store = Store();
    const Table rows = TableFrom(cols);
    NoGil<bool>([&]() -> Result<bool> {
      STRATA_ASSIGN_OR_RETURN(FeatureRepo reg, LoadApplied(dir_));
      STRATA_RETURN_IF_ERROR(WriteToOnlineStore(reg, store, view, rows));
      return true;
    });
  }

  py::tuple Get(const std::vector<std::string>& refs, const std::string& service,
                const py::list& entity_cols, bool full_feature_names) {
    OnlineStore* store = Store();
    std::vector<std::pair<std::string, std::vector<OnlineValue>>> entities;
    for (const py::handle h : entity_cols) {
      auto tup = h.cast<py::tuple>();
      const auto key = tup[0].cast<std::string>();
      std::vector<OnlineValue> vals;
      for (const py::handle v : tup[1].cast<py::sequence>()) vals.push_back(ScalarFrom(v, key));
      entities.emplace_back(key, std::move(vals));
    }
    OnlineResponse r = NoGil<OnlineResponse>([&]() -> Result<OnlineResponse> {
      STRATA_ASSIGN_OR_RETURN(FeatureRepo reg, LoadApplied(dir_));
      STRATA_ASSIGN_OR_RETURN(auto projections, Projections(reg, refs, service));
      return GetOnlineFeatures(reg, store, projections, entities, full_feature_names, NowMicros());
    });
    const py::module_ dt = py::module_::import("datetime");
    const py::object epoch =
        dt.attr("datetime")(1970, 1, 1, py::arg("tzinfo") = dt.attr("timezone").attr("utc"));
    const py::object timedelta = dt.attr("timedelta");
    py::list cols;
    for (const OnlineResponse::Column& c : r.columns) {
      py::list values, ts;
      for (const OnlineValue& v : c.values) values.append(ScalarTo(v, epoch, timedelta));
      for (int64_t us : c.event_ts_us) ts.append(epoch + timedelta(py::arg("microseconds") = us));
      cols.append(py::make_tuple(values, py::cast(c.statuses), ts));
    }
    return py::make_tuple(py::cast(r.names), cols);
  }

  void Close() {
    py::gil_scoped_release nogil;
    store_.reset();
  }

 private:
  OnlineStore* Store() {
    if (!store_) throw py::value_error("the online store is closed");
    return store_.get();
  }

  std::string dir_;
  std::unique_ptr<OnlineStore> store_;
};

}  // namespace

void RegisterFeatures(py::module_& m) {

  py::module_ f =
      m.def_submodule("_features", "The feature store's C++ core (see strata.features)");
  f.def(
      "plan",
      [](const std::string& dir, const std::vector<std::pair<std::string, std::string>>& docs,
         bool check_sources) { return PlanOrApply(dir, docs, check_sources, false); },
      py::arg("repo_dir"), py::arg("docs"), py::arg("check_sources") = true,
      "What apply would change: [(kind, object, name, detail)]");
  f.def(
      "apply",
      [](const std::string& dir, const std::vector<std::pair<std::string, std::string>>& docs,
         bool check_sources) { return PlanOrApply(dir, docs, check_sources, true); },
      py::arg("repo_dir"), py::arg("docs"), py::arg("check_sources") = true,
      "Validates the repository plus docs and writes the registry: [(kind, object, name, detail)]");
  f.def("config", &ConfigDict, py::arg("repo_dir"),
        "feature_store.yaml as a dict (paths absolute)");
  f.def("historical", &Historical, py::arg("repo_dir"), py::arg("entities"), py::arg("features"),
        py::arg("service"), py::arg("full_feature_names"), py::arg("timestamp_column"),
        py::arg("memory_budget"), py::arg("spill_dir"), "Point-in-time join: (columns, stats)");
  f.def("read_table", &ReadTable, py::arg("path"), py::arg("columns") = std::vector<std::string>{},
        "A Parquet or CSV file (local or s3://) as columns");
  f.def("write_table", &WriteTable, py::arg("path"), py::arg("columns"), py::arg("codec") = "zstd",
        "Writes columns as Parquet or CSV (by the extension; local or s3://)");
  py::class_<PyOnline>(f, "OnlineStore",
                       "The repository's online store, open (RocksDB: locked) until close()")
      .def(py::init<std::string>(), py::arg("repo_dir"))
      .def("materialize", &PyOnline::Materialize, py::arg("start_us"), py::arg("end_us"),
           py::arg("views"))
      .def("write", &PyOnline::Write, py::arg("view"), py::arg("columns"))
      .def("get", &PyOnline::Get, py::arg("features"), py::arg("service"), py::arg("entities"),
           py::arg("full_feature_names"))
      .def("close", &PyOnline::Close);
}

}  // namespace strata::python
