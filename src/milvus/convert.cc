// Milvus protocol messages <-> engine values (convert.h).
#include "milvus/convert.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace strata::milvus {

using json = nlohmann::json;
using pb::schema::FieldData;
using pb::schema::ScalarField;

namespace {

constexpr size_t kMaxTopK = 16384;  // Milvus's limit on topk and limit + offset

std::string ParamValue(const pb::common::KeyValuePair& kv) { return kv.value(); }

Result<int64_t> ParseInt(const std::string& what, const std::string& v) {
  int64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size())
    return Status::InvalidArgument(fmt::format("{} must be an integer, got \"{}\"", what, v));
  return x;
}

// Rows of one scalar column, checked against the field's type.
size_t ScalarRows(const ScalarField& s) {
  switch (s.data_case()) {
    case ScalarField::kBoolData:
      return s.bool_data().data_size();
    case ScalarField::kIntData:
      return s.int_data().data_size();
    case ScalarField::kLongData:
      return s.long_data().data_size();
    case ScalarField::kFloatData:
      return s.float_data().data_size();
    case ScalarField::kDoubleData:
      return s.double_data().data_size();
    case ScalarField::kStringData:
      return s.string_data().data_size();
    case ScalarField::kJsonData:
      return s.json_data().data_size();
    case ScalarField::kArrayData:
      return s.array_data().data_size();
    default:
      return 0;
  }
}

ScalarField::DataCase ExpectedCase(DataType t) {
  switch (t) {
    case DataType::kBool:
      return ScalarField::kBoolData;
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
      return ScalarField::kIntData;
    case DataType::kInt64:
      return ScalarField::kLongData;
    case DataType::kFloat:
      return ScalarField::kFloatData;
    case DataType::kDouble:
      return ScalarField::kDoubleData;
    case DataType::kVarChar:
      return ScalarField::kStringData;
    case DataType::kJson:
      return ScalarField::kJsonData;
    case DataType::kArray:
      return ScalarField::kArrayData;
    default:
      return ScalarField::DATA_NOT_SET;
  }
}

Status CheckIntRange(const FieldMeta& f, int64_t v, size_t row) {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  if (f.type == DataType::kInt8) lo = -128, hi = 127;
  if (f.type == DataType::kInt16) lo = -32768, hi = 32767;
  if (f.type == DataType::kInt32) lo = INT32_MIN, hi = INT32_MAX;
  if (v < lo || v > hi) {
    return Status::InvalidArgument(fmt::format("value {} of field {} (row {}) is out of {} range",
                                               v, f.name, row, DataTypeName(f.type)));
  }
  return Status::Ok();
}

Result<json> ArrayValue(const FieldMeta& f, const ScalarField& elems, size_t row);

// One value of a scalar column as JSON (the row's payload value).
Result<json> ScalarValue(const FieldMeta& f, const ScalarField& s, size_t i) {
  switch (s.data_case()) {
    case ScalarField::kBoolData:
      return json(s.bool_data().data(i));
    case ScalarField::kIntData: {
      STRATA_RETURN_IF_ERROR(CheckIntRange(f, s.int_data().data(i), i));
      return json(s.int_data().data(i));
    }
    case ScalarField::kLongData:
      return json(s.long_data().data(i));
    case ScalarField::kFloatData: {
      const float v = s.float_data().data(i);
      if (!std::isfinite(v))
        return Status::InvalidArgument(fmt::format("field {} (row {}) is NaN or Inf", f.name, i));
      return json(v);
    }
    case ScalarField::kDoubleData: {
      const double v = s.double_data().data(i);
      if (!std::isfinite(v))
        return Status::InvalidArgument(fmt::format("field {} (row {}) is NaN or Inf", f.name, i));
      return json(v);
    }
    case ScalarField::kStringData: {
      const std::string& v = s.string_data().data(i);
      if (v.size() > f.max_length) {
        return Status::InvalidArgument(
            fmt::format("the length ({}) of {}th VarChar {} exceeds max length ({})", v.size(), i,
                        f.name, f.max_length));
      }
      return json(v);
    }
    case ScalarField::kArrayData:
      return ArrayValue(f, s.array_data().data(i), i);
    case ScalarField::kJsonData: {
      json v = json::parse(s.json_data().data(i), nullptr, false);
      if (v.is_discarded()) {
        return Status::InvalidArgument(
            fmt::format("field {} (row {}) is not valid JSON", f.name, i));
      }
      return v;
    }
    default:
      return Status::InvalidArgument(fmt::format("field {} has no data", f.name));
  }
}

// One row of an ARRAY column: its elements (of the element type, at most
// max_capacity) as a JSON array.
Result<json> ArrayValue(const FieldMeta& f, const ScalarField& elems, size_t row) {
  FieldMeta e = f;
  e.type = f.element_type;
  if (elems.data_case() != ExpectedCase(e.type) && ScalarRows(elems) > 0) {
    return Status::InvalidArgument(fmt::format("array field {} (row {}): elements must be {}",
                                               f.name, row, DataTypeName(e.type)));
  }
  const size_t n = ScalarRows(elems);
  if (n > f.max_capacity) {
    return Status::InvalidArgument(
        fmt::format("array field {} (row {}): {} elements exceed max_capacity {}", f.name, row, n,
                    f.max_capacity));
  }
  json out = json::array();
  for (size_t k = 0; k < n; ++k) {
    STRATA_ASSIGN_OR_RETURN(json v, ScalarValue(e, elems, k));
    out.push_back(std::move(v));
  }
  return out;
}

// One ARRAY row for output: a ScalarField of the element type.
void ArrayToScalar(DataType t, const json* v, ScalarField* out) {
  const bool ok = v != nullptr && v->is_array();
  switch (t) {
    case DataType::kBool: {
      auto* d = out->mutable_bool_data();
      if (ok)
        for (const auto& x : *v) d->add_data(x.is_boolean() && x.get<bool>());
      break;
    }
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32: {
      auto* d = out->mutable_int_data();
      if (ok)
        for (const auto& x : *v) d->add_data(x.is_number() ? x.get<int32_t>() : 0);
      break;
    }
    case DataType::kInt64: {
      auto* d = out->mutable_long_data();
      if (ok)
        for (const auto& x : *v) d->add_data(x.is_number() ? x.get<int64_t>() : 0);
      break;
    }
    case DataType::kFloat: {
      auto* d = out->mutable_float_data();
      if (ok)
        for (const auto& x : *v) d->add_data(x.is_number() ? x.get<float>() : 0.f);
      break;
    }
    case DataType::kDouble: {
      auto* d = out->mutable_double_data();
      if (ok)
        for (const auto& x : *v) d->add_data(x.is_number() ? x.get<double>() : 0.0);
      break;
    }
    default: {
      auto* d = out->mutable_string_data();
      if (ok)
        for (const auto& x : *v) d->add_data(x.is_string() ? x.get<std::string>() : "");
      break;
    }
  }
}

Status AddScalarColumn(const FieldMeta& f, const FieldData& fd, uint32_t n,
                       std::vector<json>* rows) {
  if (fd.field_case() != FieldData::kScalars || fd.scalars().data_case() != ExpectedCase(f.type)) {
    return Status::InvalidArgument(
        fmt::format("field {}: expected {} data, the request carries another type", f.name,
                    DataTypeName(f.type)));
  }
  const ScalarField& s = fd.scalars();
  const bool has_valid = fd.valid_data_size() > 0;
  if (has_valid && !f.nullable && f.default_json.empty()) {
    return Status::InvalidArgument(
        fmt::format("field {} is not nullable but the request has null rows", f.name));
  }
  if (has_valid && static_cast<uint32_t>(fd.valid_data_size()) != n) {
    return Status::InvalidArgument(
        fmt::format("field {}: {} validity flags for {} rows", f.name, fd.valid_data_size(), n));
  }
  // With validity flags the SDKs send either one value per row or only the
  // valid ones; both are accepted.
  size_t valid = 0;
  if (has_valid) {
    for (int i = 0; i < fd.valid_data_size(); ++i) valid += fd.valid_data(i) ? 1 : 0;
  }
  const size_t have = ScalarRows(s);
  const bool compact = has_valid && have == valid && have != n;
  if (!compact && have != n) {
    return Status::InvalidArgument(fmt::format(
        "the num_rows ({}) of field data does not match the passed num_rows ({}) for field {}",
        have, n, f.name));
  }
  size_t src = 0;
  for (uint32_t r = 0; r < n; ++r) {
    if (has_valid && !fd.valid_data(r)) {  // null: the default value, if any
      (*rows)[r][f.name] = f.default_json.empty() ? json(nullptr) : json::parse(f.default_json);
      if (!compact) ++src;
      continue;
    }
    STRATA_ASSIGN_OR_RETURN((*rows)[r][f.name], ScalarValue(f, s, src));
    ++src;
  }
  return Status::Ok();
}

// The float32 values of a vector column: FloatVector as given, the
// half-precision types (2 bytes per element) converted.
Result<std::vector<float>> VectorColumnValues(const FieldMeta& f,
                                              const pb::schema::VectorField& v) {
  using VF = pb::schema::VectorField;
  const VF::DataCase want = f.type == DataType::kFloat16Vector    ? VF::kFloat16Vector
                            : f.type == DataType::kBFloat16Vector ? VF::kBfloat16Vector
                                                                  : VF::kFloatVector;
  if (v.data_case() != want) {
    return Status::InvalidArgument(
        fmt::format("field {}: expected {} data, the request carries another type", f.name,
                    DataTypeName(f.type)));
  }
  if (want == VF::kFloatVector) {
    return std::vector<float>(v.float_vector().data().begin(), v.float_vector().data().end());
  }
  const std::string& b = want == VF::kFloat16Vector ? v.float16_vector() : v.bfloat16_vector();
  if (b.size() % 2 != 0) {
    return Status::InvalidArgument(
        fmt::format("field {}: {} data must be 2 bytes per element", f.name, DataTypeName(f.type)));
  }
  std::vector<float> out(b.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint16_t h = static_cast<uint16_t>(static_cast<uint8_t>(b[2 * i]) |
                                             (static_cast<uint8_t>(b[2 * i + 1]) << 8));
    out[i] = want == VF::kFloat16Vector ? HalfToFloat(h) : BFloat16ToFloat(h);
  }
  return out;
}

Status AddVectorColumn(const FieldMeta& f, const FieldData& fd, uint32_t n,
                       std::vector<vector::Point>* points) {
  if (fd.field_case() != FieldData::kVectors) {
    return Status::InvalidArgument(
        fmt::format("field {}: expected {} data, the request carries another type", f.name,
                    DataTypeName(f.type)));
  }
  const auto& v = fd.vectors();
  if (v.dim() != 0 && v.dim() != f.dim) {
    return Status::InvalidArgument(fmt::format(
        "the dim ({}) of field data({}) is not equal to schema dim ({})", v.dim(), f.name, f.dim));
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<float> data, VectorColumnValues(f, v));
  const size_t have = data.size();
  if (have != static_cast<size_t>(n) * f.dim && have % f.dim == 0 && v.dim() == f.dim) {
    return Status::InvalidArgument(fmt::format(
        "the num_rows ({}) of field data does not match the passed num_rows ({}) for field {}",
        have / f.dim, n, f.name));
  }
  if (have != static_cast<size_t>(n) * f.dim) {
    return Status::InvalidArgument(
        fmt::format("the dim ({}) of field data({}) is not equal to schema dim ({})",
                    n ? data.size() / n : 0, f.name, f.dim));
  }
  for (uint32_t r = 0; r < n; ++r) {
    vector::NamedVector nv;
    nv.name = f.name;
    nv.values.assign(data.begin() + size_t(r) * f.dim, data.begin() + size_t(r + 1) * f.dim);
    (*points)[r].vectors.push_back(std::move(nv));
  }
  return Status::Ok();
}

// BINARY_VECTOR rows: dim/8 bytes each, bit j of a row is bit 7 - j%8 of
// byte j/8 (numpy.packbits order, as pymilvus packs), unpacked to 0/1.
void UnpackBits(const char* bytes, uint32_t dim, std::vector<float>* out) {
  out->resize(dim);
  for (uint32_t j = 0; j < dim; ++j) {
    (*out)[j] = static_cast<float>((static_cast<uint8_t>(bytes[j / 8]) >> (7 - j % 8)) & 1);
  }
}

Status AddBinaryColumn(const FieldMeta& f, const FieldData& fd, uint32_t n,
                       std::vector<vector::Point>* points) {
  if (fd.field_case() != FieldData::kVectors ||
      fd.vectors().data_case() != pb::schema::VectorField::kBinaryVector) {
    return Status::InvalidArgument(fmt::format(
        "field {}: expected BinaryVector data, the request carries another type", f.name));
  }
  const auto& v = fd.vectors();
  if (v.dim() != 0 && v.dim() != f.dim) {
    return Status::InvalidArgument(fmt::format(
        "the dim ({}) of field data({}) is not equal to schema dim ({})", v.dim(), f.name, f.dim));
  }
  const std::string& b = v.binary_vector();
  const size_t row = f.dim / 8;
  if (b.size() != size_t(n) * row) {
    return Status::InvalidArgument(fmt::format(
        "field {}: {} bytes of binary vectors for {} rows of dim {} (expected {} bytes, dim/8 "
        "per row)",
        f.name, b.size(), n, f.dim, size_t(n) * row));
  }
  for (uint32_t r = 0; r < n; ++r) {
    vector::NamedVector nv;
    nv.name = f.name;
    UnpackBits(b.data() + size_t(r) * row, f.dim, &nv.values);
    (*points)[r].vectors.push_back(std::move(nv));
  }
  return Status::Ok();
}

Status AddSparseColumn(const FieldMeta& f, const FieldData& fd, uint32_t n,
                       std::vector<vector::Point>* points) {
  if (fd.field_case() != FieldData::kVectors ||
      fd.vectors().data_case() != pb::schema::VectorField::kSparseFloatVector) {
    return Status::InvalidArgument(fmt::format(
        "field {}: expected SparseFloatVector data, the request carries another type", f.name));
  }
  const auto& rows = fd.vectors().sparse_float_vector().contents();
  if (static_cast<uint32_t>(rows.size()) != n) {
    return Status::InvalidArgument(fmt::format(
        "the num_rows ({}) of field data does not match the passed num_rows ({}) for field {}",
        rows.size(), n, f.name));
  }
  for (uint32_t r = 0; r < n; ++r) {
    auto sv = ParseSparseRow(rows.Get(static_cast<int>(r)));
    if (!sv) {
      return Status::InvalidArgument(
          fmt::format("field {} (row {}): {}", f.name, r, sv.error().message()));
    }
    (*points)[r].sparse.push_back(vector::NamedSparseVector{f.name, std::move(*sv)});
  }
  return Status::Ok();
}

Status AddDynamicColumn(const CollectionMeta& m, const FieldData& fd, uint32_t n,
                        std::vector<json>* rows) {
  if (!m.enable_dynamic) {
    return Status::InvalidArgument(
        "the collection has no dynamic field: enable_dynamic_field is false, so only schema "
        "fields are accepted");
  }
  if (fd.field_case() != FieldData::kScalars || !fd.scalars().has_json_data() ||
      static_cast<uint32_t>(fd.scalars().json_data().data_size()) != n) {
    return Status::InvalidArgument("the dynamic field ($meta) must carry one JSON object per row");
  }
  for (uint32_t r = 0; r < n; ++r) {
    json obj = json::parse(fd.scalars().json_data().data(r), nullptr, false);
    if (obj.is_discarded() || !obj.is_object()) {
      return Status::InvalidArgument(
          fmt::format("the dynamic field ($meta) of row {} is not a JSON object", r));
    }
    for (auto& [k, v] : obj.items()) {
      if (m.Field(k) != nullptr) {
        return Status::InvalidArgument(
            fmt::format("dynamic key \"{}\" of row {} is also a schema field", k, r));
      }
      if (k == kPartitionKey) {
        return Status::InvalidArgument(
            fmt::format("dynamic key \"{}\" of row {} is reserved by Strata", k, r));
      }
      (*rows)[r][k] = std::move(v);
    }
  }
  return Status::Ok();
}

json PayloadOf(const vector::Record& r) {
  json p = json::parse(r.payload.empty() ? std::string_view("{}") : std::string_view(r.payload),
                       nullptr, false);
  return p.is_object() ? p : json::object();
}

// FieldSchema.default_value as JSON text; the value's kind must be the
// field's (int_data for INT8-32, long_data for INT64, ...).
Result<std::string> DefaultToJson(const pb::schema::FieldSchema& f) {
  using VF = pb::schema::ValueField;
  const auto& v = f.default_value();
  const auto t = static_cast<DataType>(f.data_type());
  auto mismatch = [&]() {
    return Status::InvalidArgument(
        fmt::format("type (field {}) of default value does not match the field's type {}", f.name(),
                    DataTypeName(t)));
  };
  switch (v.data_case()) {
    case VF::kBoolData:
      if (t != DataType::kBool) return mismatch();
      return json(v.bool_data()).dump();
    case VF::kIntData:
      if (t != DataType::kInt8 && t != DataType::kInt16 && t != DataType::kInt32) return mismatch();
      return json(v.int_data()).dump();
    case VF::kLongData:
      if (t != DataType::kInt64) return mismatch();
      return json(v.long_data()).dump();
    case VF::kFloatData:
      if (t != DataType::kFloat) return mismatch();
      return json(v.float_data()).dump();
    case VF::kDoubleData:
      if (t != DataType::kDouble) return mismatch();
      return json(v.double_data()).dump();
    case VF::kStringData:
      if (t != DataType::kVarChar) return mismatch();
      return json(v.string_data()).dump();
    default:
      return Status::InvalidArgument(fmt::format(
          "default value of field {} has no value, or bytes (not supported)", f.name()));
  }
}

void DefaultToProto(const FieldMeta& f, pb::schema::ValueField* v) {
  json d = json::parse(f.default_json, nullptr, false);
  switch (f.type) {
    case DataType::kBool:
      v->set_bool_data(d.get<bool>());
      break;
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
      v->set_int_data(d.get<int32_t>());
      break;
    case DataType::kInt64:
      v->set_long_data(d.get<int64_t>());
      break;
    case DataType::kFloat:
      v->set_float_data(d.get<float>());
      break;
    case DataType::kDouble:
      v->set_double_data(d.get<double>());
      break;
    case DataType::kVarChar:
      v->set_string_data(d.get<std::string>());
      break;
    default:
      break;
  }
}

}  // namespace

std::optional<std::string> FindKv(const KvList& kv, const std::string& key) {
  for (const auto& p : kv) {
    if (p.key() == key) return ParamValue(p);
  }
  return std::nullopt;
}

Result<CollectionMeta> MetaFromProto(const pb::schema::CollectionSchema& s) {
  CollectionMeta m;
  m.description = s.description();
  m.enable_dynamic = s.enable_dynamic_field();
  if (s.functions_size() > 0) {
    return Status::NotSupported("schema functions (BM25, text embedding) are not supported");
  }
  for (const auto& p : s.properties()) m.properties.emplace_back(p.key(), p.value());
  for (const auto& f : s.fields()) {
    if (f.is_dynamic()) continue;  // the SDKs may list $meta; enable_dynamic_field is what counts
    FieldMeta x;
    x.id = f.fieldid();
    x.name = f.name();
    x.description = f.description();
    x.type = static_cast<DataType>(f.data_type());
    x.primary = f.is_primary_key();
    x.auto_id = f.autoid() || (f.is_primary_key() && s.autoid());
    x.nullable = f.nullable();
    x.element_type = static_cast<DataType>(f.element_type());
    if (f.is_partition_key()) {
      return Status::NotSupported(
          fmt::format("partition key (field {}) is not supported by Strata yet", f.name()));
    }
    if (f.is_clustering_key()) {
      return Status::NotSupported(
          fmt::format("clustering key (field {}) is not supported by Strata", f.name()));
    }
    if (f.has_default_value()) {
      STRATA_ASSIGN_OR_RETURN(x.default_json, DefaultToJson(f));
    }
    for (const auto& kv : f.type_params()) {
      x.type_params.emplace_back(kv.key(), kv.value());
      if (kv.key() == "dim") {
        STRATA_ASSIGN_OR_RETURN(int64_t d, ParseInt("dim", kv.value()));
        x.dim = static_cast<uint32_t>(std::clamp<int64_t>(d, 0, UINT32_MAX));
      } else if (kv.key() == "max_length") {
        STRATA_ASSIGN_OR_RETURN(int64_t l, ParseInt("max_length", kv.value()));
        x.max_length = static_cast<uint32_t>(std::clamp<int64_t>(l, 0, UINT32_MAX));
      } else if (kv.key() == "max_capacity") {
        STRATA_ASSIGN_OR_RETURN(int64_t c, ParseInt("max_capacity", kv.value()));
        x.max_capacity = static_cast<uint32_t>(std::clamp<int64_t>(c, 0, UINT32_MAX));
      } else if (kv.key() != "mmap.enabled") {
        return Status::InvalidArgument(
            fmt::format("type param \"{}\" of field {} is not supported", kv.key(), f.name()));
      }
    }
    if (f.index_params_size() > 0) {
      return Status::InvalidArgument(fmt::format(
          "field {}: index params in the schema are not supported; use CreateIndex", f.name()));
    }
    m.fields.push_back(std::move(x));
  }
  STRATA_RETURN_IF_ERROR(ValidateMeta(&m));
  return m;
}

void MetaToProto(const CollectionMeta& m, const std::string& name,
                 pb::schema::CollectionSchema* s) {
  s->set_name(name);
  s->set_description(m.description);
  s->set_enable_dynamic_field(m.enable_dynamic);
  const FieldMeta* pk = m.Primary();
  s->set_autoid(pk != nullptr && pk->auto_id);
  for (const auto& [k, v] : m.properties) {
    auto* p = s->add_properties();
    p->set_key(k);
    p->set_value(v);
  }
  for (const auto& f : m.fields) {
    auto* x = s->add_fields();
    x->set_fieldid(f.id);
    x->set_name(f.name);
    x->set_description(f.description);
    x->set_data_type(static_cast<pb::schema::DataType>(f.type));
    x->set_is_primary_key(f.primary);
    x->set_autoid(f.auto_id);
    x->set_nullable(f.nullable);
    if (f.type == DataType::kArray) {
      x->set_element_type(static_cast<pb::schema::DataType>(f.element_type));
    }
    if (!f.default_json.empty()) DefaultToProto(f, x->mutable_default_value());
    for (const auto& [k, v] : f.type_params) {
      auto* p = x->add_type_params();
      p->set_key(k);
      p->set_value(v);
    }
  }
  if (m.enable_dynamic) {
    auto* x = s->add_fields();
    int64_t id = 100;
    for (const auto& f : m.fields) id = std::max(id, f.id + 1);
    x->set_fieldid(id);
    x->set_name("$meta");
    x->set_description("dynamic schema");
    x->set_data_type(pb::schema::JSON);
    x->set_is_dynamic(true);
  }
}

Result<Rows> RowsFromFieldData(const CollectionMeta& m, const FieldDataList& fields,
                               uint32_t num_rows, bool insert,
                               const std::function<int64_t()>& new_id) {
  const FieldMeta* pk = m.Primary();
  if (num_rows == 0) return Status::InvalidArgument("num_rows should be greater than 0");
  Rows out;
  out.points.resize(num_rows);
  std::vector<json> payload(num_rows, json::object());
  std::set<std::string> seen;
  for (const auto& fd : fields) {
    if (!seen.insert(fd.field_name()).second) {
      return Status::InvalidArgument(
          fmt::format("duplicated field name {} in the request", fd.field_name()));
    }
    if (fd.is_dynamic() || fd.field_name() == "$meta") {
      STRATA_RETURN_IF_ERROR(AddDynamicColumn(m, fd, num_rows, &payload));
      continue;
    }
    const FieldMeta* f = m.Field(fd.field_name());
    if (f == nullptr) {
      return Status::InvalidArgument(
          fmt::format("field {} does not exist in the collection's schema", fd.field_name()));
    }
    if (f->primary && f->auto_id && insert) {
      return Status::InvalidArgument(fmt::format(
          "the primary key {} is auto_id: do not pass it, or create the collection with "
          "auto_id=false",
          f->name));
    }
    if (f->type == DataType::kSparseFloatVector) {
      STRATA_RETURN_IF_ERROR(AddSparseColumn(*f, fd, num_rows, &out.points));
    } else if (f->type == DataType::kBinaryVector) {
      STRATA_RETURN_IF_ERROR(AddBinaryColumn(*f, fd, num_rows, &out.points));
    } else if (IsFloatVectorType(f->type)) {
      STRATA_RETURN_IF_ERROR(AddVectorColumn(*f, fd, num_rows, &out.points));
    } else {
      STRATA_RETURN_IF_ERROR(AddScalarColumn(*f, fd, num_rows, &payload));
    }
  }
  for (const auto& f : m.fields) {
    if (seen.count(f.name)) continue;
    if (!f.default_json.empty()) {  // an omitted field takes its default value
      const json d = json::parse(f.default_json);
      for (auto& row : payload) row[f.name] = d;
      continue;
    }
    if (f.nullable) continue;
    if (f.primary && f.auto_id && insert) continue;
    return Status::InvalidArgument(fmt::format(
        "field {} is missing: the request must carry every field of the schema", f.name));
  }
  const bool int_pk = pk->type == DataType::kInt64;
  for (uint32_t r = 0; r < num_rows; ++r) {
    json& p = payload[r];
    if (pk->auto_id && insert) p[pk->name] = new_id();
    const json& key = p[pk->name];
    if (int_pk) {
      const int64_t v = key.get<int64_t>();
      out.points[r].id = IdOfInt(v);
      out.ids.mutable_int_id()->add_data(v);
    } else {
      const std::string& v = key.get_ref<const std::string&>();
      out.points[r].id = IdOfString(v);
      out.ids.mutable_str_id()->add_data(v);
    }
    out.points[r].payload = p.dump();
  }
  return out;
}

namespace {

// The SPARSE_FLOAT_VECTOR or BINARY_VECTOR column of records (dim: the
// largest index + 1 for sparse, the bits for binary).
Status OtherVectorsToFieldData(const FieldMeta& f,
                               const std::vector<const vector::Record*>& records,
                               pb::schema::VectorField* v) {
  if (f.type == DataType::kSparseFloatVector) {
    auto* sp = v->mutable_sparse_float_vector();
    int64_t dim = 0;
    for (const auto* r : records) {
      const vector::SparseVector* sv = nullptr;
      for (const auto& x : r->sparse) {
        if (x.name == f.name) sv = &x.vector;
      }
      static const vector::SparseVector kEmpty;
      if (sv == nullptr) sv = &kEmpty;  // a row inserted with no terms
      if (!sv->indices.empty()) dim = std::max<int64_t>(dim, int64_t(sv->indices.back()) + 1);
      sp->add_contents(SparseRowBytes(*sv));
    }
    sp->set_dim(dim);
    v->set_dim(dim);
    return Status::Ok();
  }
  v->set_dim(f.dim);
  std::string* b = v->mutable_binary_vector();
  for (const auto* r : records) {
    const vector::NamedVector* nv = nullptr;
    for (const auto& x : r->vectors) {
      if (x.name == f.name) nv = &x;
    }
    if (nv == nullptr || nv->values.size() != f.dim) {
      return Status::Internal(fmt::format("point {} has no vector {}", r->id.ToString(), f.name));
    }
    const size_t at = b->size();
    b->resize(at + f.dim / 8, '\0');
    for (uint32_t j = 0; j < f.dim; ++j) {
      if (nv->values[j] > 0.5f) (*b)[at + j / 8] |= static_cast<char>(1u << (7 - j % 8));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<vector::SparseVector> ParseSparseRow(const std::string& bytes) {
  if (bytes.size() % 8 != 0) {
    return Status::InvalidArgument(fmt::format(
        "a sparse row is pairs of uint32 index and float32 value (8 bytes each), got {} bytes",
        bytes.size()));
  }
  vector::SparseVector sv;
  const size_t n = bytes.size() / 8;
  sv.indices.resize(n);
  sv.values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(&sv.indices[i], bytes.data() + 8 * i, 4);
    std::memcpy(&sv.values[i], bytes.data() + 8 * i + 4, 4);
    if (sv.indices[i] == UINT32_MAX) {
      return Status::InvalidArgument("sparse vector index 4294967295 is out of range [0, 2^32-1)");
    }
    if (i > 0 && sv.indices[i] <= sv.indices[i - 1]) {
      return Status::InvalidArgument(
          "sparse vector indices must be unique and sorted in ascending order");
    }
    if (!std::isfinite(sv.values[i])) {
      return Status::InvalidArgument(
          fmt::format("sparse vector value at index {} is NaN or Inf", sv.indices[i]));
    }
  }
  return sv;
}

std::string SparseRowBytes(const vector::SparseVector& sv) {
  std::string out(sv.indices.size() * 8, '\0');
  for (size_t i = 0; i < sv.indices.size(); ++i) {
    std::memcpy(out.data() + 8 * i, &sv.indices[i], 4);
    std::memcpy(out.data() + 8 * i + 4, &sv.values[i], 4);
  }
  return out;
}

Result<OutputFields> ResolveOutputFields(const CollectionMeta& m,
                                         const google::protobuf::RepeatedPtrField<std::string>& req,
                                         bool with_primary) {
  OutputFields out;
  std::set<std::string> added;
  auto add = [&](const FieldMeta* f) {
    if (!added.insert(f->name).second) return;
    out.fields.push_back(f);
    out.names.push_back(f->name);
    if (IsVectorType(f->type)) out.with_vectors = true;
  };
  if (with_primary) add(m.Primary());
  for (const std::string& name : req) {
    if (name == "*") {
      for (const auto& f : m.fields) add(&f);
      if (m.enable_dynamic) out.all_dynamic = true;
    } else if (name == "$meta" && m.enable_dynamic) {
      out.all_dynamic = true;
    } else if (const FieldMeta* f = m.Field(name)) {
      add(f);
    } else if (name == "count(*)") {
      return Status::InvalidArgument("count(*) is only valid alone, in a query");
    } else if (m.enable_dynamic) {
      if (added.insert(name).second) {
        out.dynamic_keys.push_back(name);
        out.names.push_back(name);
      }
    } else {
      return Status::InvalidArgument(fmt::format("field {} not exist", name));
    }
  }
  return out;
}

Status RecordsToFieldData(const CollectionMeta& m, const OutputFields& out,
                          const std::vector<const vector::Record*>& records, FieldDataList* cols) {
  std::vector<json> payloads;
  payloads.reserve(records.size());
  for (const auto* r : records) payloads.push_back(PayloadOf(*r));
  for (const FieldMeta* f : out.fields) {
    FieldData* fd = cols->Add();
    fd->set_field_name(f->name);
    fd->set_field_id(f->id);
    fd->set_type(static_cast<pb::schema::DataType>(f->type));
    if (f->type == DataType::kSparseFloatVector || f->type == DataType::kBinaryVector) {
      STRATA_RETURN_IF_ERROR(OtherVectorsToFieldData(*f, records, fd->mutable_vectors()));
      continue;
    }
    if (IsFloatVectorType(f->type)) {
      auto* v = fd->mutable_vectors();
      v->set_dim(f->dim);
      std::string* half = f->type == DataType::kFloat16Vector    ? v->mutable_float16_vector()
                          : f->type == DataType::kBFloat16Vector ? v->mutable_bfloat16_vector()
                                                                 : nullptr;
      auto* data = half == nullptr ? v->mutable_float_vector()->mutable_data() : nullptr;
      for (const auto* r : records) {
        const vector::NamedVector* nv = nullptr;
        for (const auto& x : r->vectors) {
          if (x.name == f->name) nv = &x;
        }
        if (nv == nullptr || nv->values.size() != f->dim) {
          return Status::Internal(
              fmt::format("point {} has no vector {}", r->id.ToString(), f->name));
        }
        if (half == nullptr) {
          data->Add(nv->values.begin(), nv->values.end());
          continue;
        }
        for (float x : nv->values) {
          const uint16_t h =
              f->type == DataType::kFloat16Vector ? FloatToHalf(x) : FloatToBFloat16(x);
          half->push_back(static_cast<char>(h & 0xff));
          half->push_back(static_cast<char>(h >> 8));
        }
      }
      continue;
    }
    ScalarField* s = fd->mutable_scalars();
    for (size_t i = 0; i < records.size(); ++i) {
      const json* v = payloads[i].contains(f->name) ? &payloads[i][f->name] : nullptr;
      const bool valid = v != nullptr && !v->is_null();
      if (f->nullable) fd->add_valid_data(valid);
      switch (f->type) {
        case DataType::kBool:
          s->mutable_bool_data()->add_data(valid && v->is_boolean() && v->get<bool>());
          break;
        case DataType::kInt8:
        case DataType::kInt16:
        case DataType::kInt32:
          s->mutable_int_data()->add_data(valid && v->is_number() ? v->get<int32_t>() : 0);
          break;
        case DataType::kInt64:
          s->mutable_long_data()->add_data(valid && v->is_number() ? v->get<int64_t>() : 0);
          break;
        case DataType::kFloat:
          s->mutable_float_data()->add_data(valid && v->is_number() ? v->get<float>() : 0.f);
          break;
        case DataType::kDouble:
          s->mutable_double_data()->add_data(valid && v->is_number() ? v->get<double>() : 0.0);
          break;
        case DataType::kVarChar:
          s->mutable_string_data()->add_data(valid && v->is_string() ? v->get<std::string>() : "");
          break;
        case DataType::kJson:
          s->mutable_json_data()->add_data(valid ? v->dump() : "null");
          break;
        case DataType::kArray:
          s->mutable_array_data()->set_element_type(
              static_cast<pb::schema::DataType>(f->element_type));
          ArrayToScalar(f->element_type, valid ? v : nullptr, s->mutable_array_data()->add_data());
          break;
        default:
          return Status::Internal(fmt::format("field {} has an unsupported type", f->name));
      }
    }
  }
  if (out.all_dynamic || !out.dynamic_keys.empty()) {
    FieldData* fd = cols->Add();
    fd->set_field_name("$meta");
    fd->set_type(pb::schema::JSON);
    fd->set_is_dynamic(true);
    auto* data = fd->mutable_scalars()->mutable_json_data();
    for (const json& p : payloads) {
      json d = json::object();
      for (const auto& [k, v] : p.items()) {
        if (m.Field(k) != nullptr || k == kPartitionKey) continue;
        if (out.all_dynamic || std::find(out.dynamic_keys.begin(), out.dynamic_keys.end(), k) !=
                                   out.dynamic_keys.end()) {
          d[k] = v;
        }
      }
      data->add_data(d.dump());
    }
  }
  return Status::Ok();
}

void RecordIds(const CollectionMeta& m, const std::vector<const vector::Record*>& records,
               pb::schema::IDs* ids) {
  const FieldMeta* pk = m.Primary();
  if (pk->type == DataType::kInt64) {
    auto* d = ids->mutable_int_id();
    for (const auto* r : records) d->add_data(IntOfId(r->id));
    return;
  }
  auto* d = ids->mutable_str_id();
  for (const auto* r : records) {
    json p = PayloadOf(*r);
    d->add_data(p.contains(pk->name) && p[pk->name].is_string() ? p[pk->name].get<std::string>()
                                                                : "");
  }
}

Result<std::vector<std::vector<float>>> QueryVectors(const std::string& placeholder_group,
                                                     DataType field, uint32_t dim) {
  pb::common::PlaceholderGroup g;
  if (!g.ParseFromString(placeholder_group) || g.placeholders_size() != 1) {
    return Status::InvalidArgument("placeholder_group is not a PlaceholderGroup with one entry");
  }
  const auto& ph = g.placeholders(0);
  const auto want = static_cast<pb::common::PlaceholderType>(field);
  if (ph.type() != want) {
    return Status::NotSupported(fmt::format(
        "search by {} is not supported on a {} field: pass {} query vectors",
        pb::common::PlaceholderType_Name(ph.type()), DataTypeName(field), DataTypeName(field)));
  }
  std::vector<std::vector<float>> out;
  if (field == DataType::kBinaryVector) {
    for (const std::string& b : ph.values()) {
      if (b.size() * 8 != dim) {
        return Status::InvalidArgument(fmt::format(
            "the dimension of the query vector ({}) does not match the field's dimension ({})",
            b.size() * 8, dim));
      }
      UnpackBits(b.data(), dim, &out.emplace_back());
    }
    if (out.empty()) return Status::InvalidArgument("no query vector given");
    return out;
  }
  const size_t elem = field == DataType::kFloatVector ? sizeof(float) : 2;
  for (const std::string& b : ph.values()) {
    if (b.size() != size_t(dim) * elem) {
      return Status::InvalidArgument(fmt::format(
          "the dimension of the query vector ({}) does not match the field's dimension ({})",
          b.size() / elem, dim));
    }
    std::vector<float> v(dim);
    if (elem == sizeof(float)) {
      std::memcpy(v.data(), b.data(), b.size());
    } else {
      for (size_t i = 0; i < dim; ++i) {
        const uint16_t h = static_cast<uint16_t>(static_cast<uint8_t>(b[2 * i]) |
                                                 (static_cast<uint8_t>(b[2 * i + 1]) << 8));
        v[i] = field == DataType::kFloat16Vector ? HalfToFloat(h) : BFloat16ToFloat(h);
      }
    }
    out.push_back(std::move(v));
  }
  if (out.empty()) return Status::InvalidArgument("no query vector given");
  return out;
}

Result<std::vector<vector::SparseVector>> QuerySparseVectors(const std::string& placeholder_group) {
  pb::common::PlaceholderGroup g;
  if (!g.ParseFromString(placeholder_group) || g.placeholders_size() != 1) {
    return Status::InvalidArgument("placeholder_group is not a PlaceholderGroup with one entry");
  }
  const auto& ph = g.placeholders(0);
  if (ph.type() != pb::common::PlaceholderType::SparseFloatVector) {
    return Status::NotSupported(fmt::format(
        "search by {} is not supported on a SparseFloatVector field: pass sparse query vectors",
        pb::common::PlaceholderType_Name(ph.type())));
  }
  std::vector<vector::SparseVector> out;
  for (const std::string& b : ph.values()) {
    STRATA_ASSIGN_OR_RETURN(auto sv, ParseSparseRow(b));
    out.push_back(std::move(sv));
  }
  if (out.empty()) return Status::InvalidArgument("no query vector given");
  return out;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  float f = 0;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    f = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    f = man == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else {
    f = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  }
  uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  bits |= sign;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < std::ldexp(1.0f, -14)) {          // subnormal half: units of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  int e = 0;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  // 11 significant bits: round m * 2^11 to an integer in [1024, 2048].
  uint32_t sig = static_cast<uint32_t>(std::nearbyint(std::ldexp(m, 11)));
  if (sig == 2048) {
    sig = 1024;
    ++e;
  }
  const uint32_t exp = static_cast<uint32_t>(e - 1 + 15);
  if (exp >= 31) return sign | 0x7c00;
  return sign | static_cast<uint16_t>((exp << 10) | (sig & 0x3ff));
}

float BFloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

namespace {

// One key of search_params (top level, or inside "params"): the value as
// JSON (a top-level value that is not JSON is a string).
Status SetSearchParam(SearchParams& p, const std::string& k, const json& v) {
  auto as_uint = [&](uint32_t* out) -> Status {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 20))
      return Status::InvalidArgument(fmt::format("search param {} must be a positive integer", k));
    *out = v.get<uint32_t>();
    return Status::Ok();
  };
  auto as_float = [&](std::optional<float>* out) -> Status {
    if (!v.is_number()) return Status::InvalidArgument(fmt::format("{} must be a number", k));
    *out = v.get<float>();
    return Status::Ok();
  };
  auto as_bool = [&](bool* out) -> Status {
    if (v.is_boolean()) {
      *out = v.get<bool>();
    } else if (v.is_string() && (v == "true" || v == "True" || v == "false" || v == "False")) {
      *out = v == "true" || v == "True";
    } else {
      return Status::InvalidArgument(fmt::format("search param {} must be true or false", k));
    }
    return Status::Ok();
  };
  if (k == "ef") return as_uint(&p.ef);
  if (k == "nprobe") return as_uint(&p.nprobe);
  if (k == "search_list") return as_uint(&p.search_list);
  if (k == "drop_ratio_search") {
    STRATA_RETURN_IF_ERROR(as_float(&p.drop_ratio_search));
    if (!(*p.drop_ratio_search >= 0 && *p.drop_ratio_search < 1))
      return Status::InvalidArgument("drop_ratio_search must be in [0, 1)");
    return Status::Ok();
  }
  if (k == "radius") return as_float(&p.radius);
  if (k == "range_filter") return as_float(&p.range_filter);
  if (k == "group_by_field") {
    if (!v.is_string()) return Status::InvalidArgument("group_by_field must be a field name");
    p.group_by_field = v.get<std::string>();
    return Status::Ok();
  }
  if (k == "group_size" || k == "search_iter_batch_size") {
    uint32_t n = 0;
    STRATA_RETURN_IF_ERROR(as_uint(&n));
    if (n == 0 || n > kMaxTopK)
      return Status::InvalidArgument(fmt::format("{} must be in [1, {}]", k, kMaxTopK));
    (k == "group_size" ? p.group_size : p.iter_batch_size) = n;
    return Status::Ok();
  }
  if (k == "strict_group_size") return as_bool(&p.strict_group_size);
  if (k == "iterator") return as_bool(&p.iterator);
  if (k == "search_iter_v2") return as_bool(&p.iterator_v2);
  if (k == "search_iter_id") {
    if (!v.is_string()) return Status::InvalidArgument("search_iter_id must be a string token");
    p.iter_token = v.get<std::string>();
    return Status::Ok();
  }
  if (k == "search_iter_last_bound") return as_float(&p.iter_last_bound);
  // Consistency hints: every acknowledged write is already visible.
  if (k == "guarantee_timestamp" || k == "collection_id") return Status::Ok();
  if (k == "level") {
    return Status::NotSupported(fmt::format("search param {} is not supported by Strata", k));
  }
  return Status::InvalidArgument(fmt::format(
      "search param \"{}\" is not supported (supported: ef, nprobe, search_list, radius, "
      "range_filter, drop_ratio_search, group_by_field, group_size, strict_group_size and the "
      "iterator's)",
      k));
}

Status CheckSearchParams(const SearchParams& p) {
  if (p.offset + p.topk > kMaxTopK) {
    return Status::InvalidArgument(
        fmt::format("topk + offset should be in range [1, {}]", kMaxTopK));
  }
  if (p.range_filter && !p.radius) {
    return Status::InvalidArgument("range_filter needs radius: give both for a range search");
  }
  if (p.iterator_v2 && !p.group_by_field.empty()) {
    return Status::NotSupported("a search iterator cannot group results (group_by_field)");
  }
  if (p.iterator_v2 && p.iter_batch_size == 0) {
    return Status::InvalidArgument("search_iter_v2 needs search_iter_batch_size");
  }
  if (!p.iter_token.empty() && !p.iter_last_bound) {
    return Status::InvalidArgument("search_iter_id needs search_iter_last_bound");
  }
  return Status::Ok();
}

}  // namespace

Result<SearchParams> ParseSearchParams(const KvList& kv) {
  SearchParams p;
  for (const auto& e : kv) {
    const std::string& k = e.key();
    const std::string& v = e.value();
    if (k == "anns_field") {
      p.anns_field = v;
    } else if (k == "topk" || k == "limit") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v));
      if (n <= 0 || static_cast<size_t>(n) > kMaxTopK)
        return Status::InvalidArgument(
            fmt::format("topk [{}] is invalid, it should be in range [1, {}]", n, kMaxTopK));
      p.topk = static_cast<size_t>(n);
    } else if (k == "offset") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v));
      if (n < 0) return Status::InvalidArgument("offset must not be negative");
      p.offset = static_cast<size_t>(n);
    } else if (k == "metric_type") {
      p.metric = v;
    } else if (k == "round_decimal") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v));
      if (n < -1 || n > 6) return Status::InvalidArgument("round_decimal must be in [-1, 6]");
      p.round_decimal = static_cast<int>(n);
    } else if (k == "ignore_growing") {
      if (v != "false" && v != "False" && v != "0")
        return Status::NotSupported(
            "ignore_growing is not supported: Strata searches every segment");
    } else if (k == "params") {
      json j = json::parse(v, nullptr, false);
      if (j.is_discarded() || !j.is_object())
        return Status::InvalidArgument("search param \"params\" must be a JSON object");
      for (const auto& [pk, pv] : j.items()) STRATA_RETURN_IF_ERROR(SetSearchParam(p, pk, pv));
    } else if (k == "hints" && v.empty()) {
      continue;
    } else {
      json j = json::parse(v, nullptr, false);
      STRATA_RETURN_IF_ERROR(SetSearchParam(p, k, j.is_discarded() ? json(v) : j));
    }
  }
  STRATA_RETURN_IF_ERROR(CheckSearchParams(p));
  return p;
}

Result<QueryParams> ParseQueryParams(const KvList& kv) {
  QueryParams q;
  for (const auto& e : kv) {
    if (e.key() == "limit") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, ParseInt("limit", e.value()));
      if (n < 0) return Status::InvalidArgument("limit must not be negative");
      q.limit = static_cast<size_t>(n);
    } else if (e.key() == "offset") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, ParseInt("offset", e.value()));
      if (n < 0) return Status::InvalidArgument("offset must not be negative");
      q.offset = static_cast<size_t>(n);
    } else if (e.key() == "ignore_growing") {
      // True would hide rows not yet flushed; every row is always read here.
      if (e.value() != "false" && e.value() != "False" && e.value() != "0")
        return Status::NotSupported(
            "ignore_growing is not supported: Strata queries every segment");
    } else if (e.key() == "reduce_stop_for_best" || e.key() == "iterator" ||
               e.key() == "collection_id") {
      // Hints about how Milvus's query nodes merge results: nothing to do here.
      continue;
    } else {
      return Status::InvalidArgument(
          fmt::format("query param \"{}\" is not supported (supported: limit, offset)", e.key()));
    }
  }
  if (q.limit + q.offset > kMaxTopK) {
    return Status::InvalidArgument(fmt::format(
        "invalid max query result window, (offset+limit) should be in range [1, {}]", kMaxTopK));
  }
  return q;
}

}  // namespace strata::milvus
