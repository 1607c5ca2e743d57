// JSON <-> protocol conversions of the Milvus REST API (rest_convert.h).
#include "milvus/rest_convert.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include <strata/core/strings.h>

#include "milvus/convert.h"
#include "milvus/errors.h"

namespace strata::milvus {

using json = nlohmann::json;
namespace pbs = ::milvus::proto::schema;
namespace pbc = ::milvus::proto::common;

void Fail(int32_t code, std::string message) { throw RestFailure{code, std::move(message)}; }

const json* FindKey(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it != obj.end()) return &*it;
  for (auto i = obj.begin(); i != obj.end(); ++i) {
    if (IEquals(i.key(), key)) return &*i;
  }
  return nullptr;
}

pbs::DataType DataTypeFromName(const std::string& name) {
  pbs::DataType t;
  if (!pbs::DataType_Parse(name, &t) || t == pbs::None) {
    Fail(kCodeParameterInvalid,
         fmt::format("invalid parameter, data type {} is invalid(case sensitive).", name));
  }
  return t;
}

std::string DataTypeToName(pbs::DataType t) { return pbs::DataType_Name(t); }

namespace {

[[noreturn]] void BadRow(size_t row, const std::string& field, const std::string& why) {
  Fail(
      kCodeInvalidInsertData,
      fmt::format("fail to deal the insert data, error: entity {}: field {}: {}", row, field, why));
}

uint32_t TypeParamUint(const pbs::FieldSchema& f, const char* key) {
  for (const auto& kv : f.type_params()) {
    if (kv.key() == key) {
      auto v = ParseUint64(kv.value());
      return v ? static_cast<uint32_t>(*v) : 0;
    }
  }
  return 0;
}

int64_t AsInt(const json& v, size_t row, const std::string& field) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {  // Milvus accepts numbers sent as strings (int64 beyond 2^53)
    const std::string& s = v.get_ref<const std::string&>();
    int64_t out = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc() && p == s.data() + s.size()) return out;
  }
  BadRow(row, field, fmt::format("expected an integer, got {}", v.dump()));
}

double AsNumber(const json& v, size_t row, const std::string& field) {
  if (v.is_number()) return v.get<double>();
  BadRow(row, field, fmt::format("expected a number, got {}", v.dump()));
}

// One ARRAY row: its elements as a ScalarField of the element type.
void ArrayRow(pbs::DataType et, const json& v, size_t row, const std::string& name,
              pbs::ScalarField* out) {
  if (!v.is_array()) BadRow(row, name, "expected an array");
  for (const json& e : v) {
    switch (et) {
      case pbs::Bool:
        if (!e.is_boolean()) BadRow(row, name, "expected bool elements");
        out->mutable_bool_data()->add_data(e.get<bool>());
        break;
      case pbs::Int8:
      case pbs::Int16:
      case pbs::Int32:
        out->mutable_int_data()->add_data(static_cast<int32_t>(AsInt(e, row, name)));
        break;
      case pbs::Int64:
        out->mutable_long_data()->add_data(AsInt(e, row, name));
        break;
      case pbs::Float:
        out->mutable_float_data()->add_data(static_cast<float>(AsNumber(e, row, name)));
        break;
      case pbs::Double:
        out->mutable_double_data()->add_data(AsNumber(e, row, name));
        break;
      case pbs::VarChar:
      case pbs::String:
        if (!e.is_string()) BadRow(row, name, "expected string elements");
        out->mutable_string_data()->add_data(e.get<std::string>());
        break;
      default:
        BadRow(row, name, "ARRAY of " + DataTypeToName(et) + " is not supported");
    }
  }
}

// Bytes of a binary or half-precision vector: a base64 string, or an array
// of bytes (binary) / floats (half precision, converted).
std::string VectorBytes(const pbs::FieldSchema& f, const json& v, size_t row) {
  const uint32_t dim = TypeParamUint(f, "dim");
  const bool binary = f.data_type() == pbs::BinaryVector;
  const size_t want = binary ? dim / 8 : size_t{dim} * 2;
  std::string out;
  if (v.is_string()) {
    auto b = Base64Decode(v.get_ref<const std::string&>());
    if (!b) BadRow(row, f.name(), "not valid base64");
    out = std::move(*b);
  } else if (v.is_array()) {
    for (const json& e : v) {
      if (binary) {
        const int64_t x = AsInt(e, row, f.name());
        if (x < 0 || x > 255) BadRow(row, f.name(), "binary vector bytes are 0..255");
        out.push_back(static_cast<char>(x));
      } else {
        const float x = static_cast<float>(AsNumber(e, row, f.name()));
        const uint16_t h =
            f.data_type() == pbs::Float16Vector ? FloatToHalf(x) : FloatToBFloat16(x);
        out.push_back(static_cast<char>(h & 0xff));
        out.push_back(static_cast<char>(h >> 8));
      }
    }
  } else {
    BadRow(row, f.name(), "expected a vector (array or base64 string)");
  }
  if (out.size() != want) {
    BadRow(row, f.name(),
           fmt::format("the dim ({}) of the vector does not match the schema's dim ({})",
                       binary ? out.size() * 8 : out.size() / 2, dim));
  }
  return out;
}

// A sparse vector, {"index": value, ...} or {"indices": [...], "values":
// [...]}, as Milvus's row bytes: (uint32 index, float32 value) pairs, little
// endian, by ascending index. *max_index: the largest index seen.
std::string SparseBytes(const json& v, size_t row, const std::string& name, int64_t* max_index) {
  if (!v.is_object()) BadRow(row, name, "expected a sparse vector object");
  std::map<uint32_t, float> m;
  const json* idx = FindKey(v, "indices");
  const json* val = FindKey(v, "values");
  if (idx != nullptr && val != nullptr) {
    if (!idx->is_array() || !val->is_array() || idx->size() != val->size()) {
      BadRow(row, name, "indices and values must be arrays of one length");
    }
    for (size_t i = 0; i < idx->size(); ++i) {
      const int64_t k = AsInt((*idx)[i], row, name);
      if (k < 0 || k > UINT32_MAX - 1) BadRow(row, name, "sparse index out of range");
      m[static_cast<uint32_t>(k)] = static_cast<float>(AsNumber((*val)[i], row, name));
    }
  } else {
    for (auto it = v.begin(); it != v.end(); ++it) {
      auto k = ParseUint64(it.key());
      if (!k || *k > UINT32_MAX - 1) BadRow(row, name, "sparse index \"" + it.key() + "\"");
      m[static_cast<uint32_t>(*k)] = static_cast<float>(AsNumber(it.value(), row, name));
    }
  }
  std::string out;
  for (auto [k, x] : m) {
    char b[8];
    std::memcpy(b, &k, 4);
    std::memcpy(b + 4, &x, 4);
    out.append(b, 8);
    *max_index = std::max<int64_t>(*max_index, k);
  }
  return out;
}

// Appends row `row`'s value v of field f to its column fd.
void AppendValue(const pbs::FieldSchema& f, const json& v, size_t row, pbs::FieldData* fd,
                 int64_t* sparse_max) {
  const std::string& name = f.name();
  // mutable_scalars() / mutable_vectors() select the oneof (clearing the
  // other): ask for the one this type uses only.
  const bool vector_type = f.data_type() >= pbs::BinaryVector;
  pbs::ScalarField* s = vector_type ? nullptr : fd->mutable_scalars();
  switch (f.data_type()) {
    case pbs::Bool:
      if (!v.is_boolean()) BadRow(row, name, "expected true or false");
      s->mutable_bool_data()->add_data(v.get<bool>());
      return;
    case pbs::Int8:
    case pbs::Int16:
    case pbs::Int32:
      s->mutable_int_data()->add_data(static_cast<int32_t>(AsInt(v, row, name)));
      return;
    case pbs::Int64:
      s->mutable_long_data()->add_data(AsInt(v, row, name));
      return;
    case pbs::Float:
      s->mutable_float_data()->add_data(static_cast<float>(AsNumber(v, row, name)));
      return;
    case pbs::Double:
      s->mutable_double_data()->add_data(AsNumber(v, row, name));
      return;
    case pbs::VarChar:
    case pbs::String:
      if (!v.is_string()) BadRow(row, name, "expected a string");
      s->mutable_string_data()->add_data(v.get<std::string>());
      return;
    case pbs::JSON:
      s->mutable_json_data()->add_data(v.dump());
      return;
    case pbs::Array: {
      pbs::ArrayArray* a = s->mutable_array_data();
      a->set_element_type(f.element_type());
      ArrayRow(f.element_type(), v, row, name, a->add_data());
      return;
    }
    default:
      break;
  }
  pbs::VectorField* vec = fd->mutable_vectors();
  const uint32_t dim = TypeParamUint(f, "dim");
  switch (f.data_type()) {
    case pbs::FloatVector: {
      if (!v.is_array()) BadRow(row, name, "expected an array of floats");
      if (v.size() != dim) {
        BadRow(row, name,
               fmt::format("the dim ({}) of the vector does not match the schema's dim ({})",
                           v.size(), dim));
      }
      vec->set_dim(dim);
      for (const json& e : v) {
        vec->mutable_float_vector()->add_data(static_cast<float>(AsNumber(e, row, name)));
      }
      return;
    }
    case pbs::BinaryVector:
      vec->set_dim(dim);
      vec->mutable_binary_vector()->append(VectorBytes(f, v, row));
      return;
    case pbs::Float16Vector:
      vec->set_dim(dim);
      vec->mutable_float16_vector()->append(VectorBytes(f, v, row));
      return;
    case pbs::BFloat16Vector:
      vec->set_dim(dim);
      vec->mutable_bfloat16_vector()->append(VectorBytes(f, v, row));
      return;
    case pbs::SparseFloatVector:
      vec->mutable_sparse_float_vector()->add_contents(SparseBytes(v, row, name, sparse_max));
      return;
    default:
      BadRow(row, name, DataTypeToName(f.data_type()) + " fields cannot be written over REST");
  }
}

void SetEmptyScalars(const pbs::FieldSchema& f, pbs::FieldData* fd) {
  pbs::ScalarField* s = fd->mutable_scalars();
  switch (f.data_type()) {
    case pbs::Bool:
      s->mutable_bool_data();
      break;
    case pbs::Int8:
    case pbs::Int16:
    case pbs::Int32:
      s->mutable_int_data();
      break;
    case pbs::Int64:
      s->mutable_long_data();
      break;
    case pbs::Float:
      s->mutable_float_data();
      break;
    case pbs::Double:
      s->mutable_double_data();
      break;
    case pbs::JSON:
      s->mutable_json_data();
      break;
    case pbs::Array:
      s->mutable_array_data()->set_element_type(f.element_type());
      break;
    default:
      s->mutable_string_data();
      break;
  }
}

}  // namespace

uint32_t RowsToColumns(const pbs::CollectionSchema& schema, const json& rows, FieldDataList* out) {
  if (!rows.is_array() || rows.empty()) {
    Fail(kCodeMissingRequiredParameters,
         "missing required parameters, error: data must be a non-empty array of entities");
  }
  std::set<std::string, std::less<>> known;
  for (const auto& f : schema.fields()) {
    if (!f.is_dynamic() && f.name() != "$meta") known.insert(f.name());
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].is_object()) {
      Fail(kCodeInvalidInsertData,
           fmt::format("fail to deal the insert data, error: entity {} is not a JSON object", r));
    }
  }
  for (const auto& f : schema.fields()) {
    if (f.is_dynamic() || f.name() == "$meta" || f.is_function_output()) continue;
    bool given = false;
    for (const json& row : rows) {
      auto it = row.find(f.name());
      given |= it != row.end() && !it->is_null();
    }
    if (f.is_primary_key() && f.autoid() && !given) continue;
    pbs::FieldData* fd = out->Add();
    fd->set_type(f.data_type());
    fd->set_field_name(f.name());
    fd->set_field_id(f.fieldid());
    const bool optional = f.nullable() || f.has_default_value();
    int64_t sparse_max = -1;
    for (size_t r = 0; r < rows.size(); ++r) {
      auto it = rows[r].find(f.name());
      const bool present = it != rows[r].end() && !it->is_null();
      if (optional) fd->add_valid_data(present);
      if (!present) {
        if (optional) continue;
        BadRow(r, f.name(), "missing (the field is neither nullable nor has a default value)");
      }
      AppendValue(f, *it, r, fd, &sparse_max);
    }
    if (f.data_type() == pbs::SparseFloatVector) {
      fd->mutable_vectors()->mutable_sparse_float_vector()->set_dim(sparse_max + 1);
    }
    // A column of nulls only still needs its (empty) data of the right kind.
    if (fd->field_case() == pbs::FieldData::FIELD_NOT_SET) SetEmptyScalars(f, fd);
  }
  pbs::FieldData* meta = nullptr;
  for (size_t r = 0; r < rows.size(); ++r) {
    json extra = json::object();
    for (auto it = rows[r].begin(); it != rows[r].end(); ++it) {
      if (known.count(it.key()) == 0) extra[it.key()] = it.value();
    }
    if (!schema.enable_dynamic_field()) {
      if (!extra.empty()) {
        BadRow(r, extra.begin().key(),
               "not in the collection's schema, and the collection has no dynamic field");
      }
      continue;
    }
    if (meta == nullptr) {
      meta = out->Add();
      meta->set_type(pbs::JSON);
      meta->set_field_name("$meta");
      meta->set_is_dynamic(true);
      for (size_t i = 0; i < r; ++i) meta->mutable_scalars()->mutable_json_data()->add_data("{}");
    }
    meta->mutable_scalars()->mutable_json_data()->add_data(extra.dump());
  }
  return static_cast<uint32_t>(rows.size());
}

namespace {

size_t ScalarCount(const pbs::ScalarField& s) {
  switch (s.data_case()) {
    case pbs::ScalarField::kBoolData:
      return s.bool_data().data_size();
    case pbs::ScalarField::kIntData:
      return s.int_data().data_size();
    case pbs::ScalarField::kLongData:
      return s.long_data().data_size();
    case pbs::ScalarField::kFloatData:
      return s.float_data().data_size();
    case pbs::ScalarField::kDoubleData:
      return s.double_data().data_size();
    case pbs::ScalarField::kStringData:
      return s.string_data().data_size();
    case pbs::ScalarField::kBytesData:
      return s.bytes_data().data_size();
    case pbs::ScalarField::kArrayData:
      return s.array_data().data_size();
    case pbs::ScalarField::kJsonData:
      return s.json_data().data_size();
    default:
      return 0;
  }
}

size_t ValueCount(const pbs::FieldData& c) {
  if (c.has_scalars()) return ScalarCount(c.scalars());
  if (!c.has_vectors()) return 0;
  const pbs::VectorField& v = c.vectors();
  const size_t dim = v.dim() > 0 ? static_cast<size_t>(v.dim()) : 1;
  switch (v.data_case()) {
    case pbs::VectorField::kFloatVector:
      return v.float_vector().data_size() / dim;
    case pbs::VectorField::kBinaryVector:
      return v.binary_vector().size() * 8 / dim;
    case pbs::VectorField::kFloat16Vector:
      return v.float16_vector().size() / 2 / dim;
    case pbs::VectorField::kBfloat16Vector:
      return v.bfloat16_vector().size() / 2 / dim;
    case pbs::VectorField::kSparseFloatVector:
      return v.sparse_float_vector().contents_size();
    default:
      return 0;
  }
}

json ArrayElements(const pbs::ScalarField& s, bool allow_int64) {
  json a = json::array();
  switch (s.data_case()) {
    case pbs::ScalarField::kBoolData:
      for (bool b : s.bool_data().data()) a.push_back(b);
      break;
    case pbs::ScalarField::kIntData:
      for (int32_t x : s.int_data().data()) a.push_back(x);
      break;
    case pbs::ScalarField::kLongData:
      for (int64_t x : s.long_data().data()) {
        a.push_back(allow_int64 ? json(x) : json(std::to_string(x)));
      }
      break;
    case pbs::ScalarField::kFloatData:
      for (float x : s.float_data().data()) a.push_back(x);
      break;
    case pbs::ScalarField::kDoubleData:
      for (double x : s.double_data().data()) a.push_back(x);
      break;
    case pbs::ScalarField::kStringData:
      for (const std::string& x : s.string_data().data()) a.push_back(x);
      break;
    default:
      break;
  }
  return a;
}

json SparseObject(const std::string& bytes) {
  json o = json::object();
  for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    uint32_t k;
    float x;
    std::memcpy(&k, bytes.data() + i, 4);
    std::memcpy(&x, bytes.data() + i + 4, 4);
    o[std::to_string(k)] = x;
  }
  return o;
}

// Value i (an index into the column's values) of column c.
json CellValue(const pbs::FieldData& c, size_t i, bool allow_int64) {
  if (c.has_scalars()) {
    const pbs::ScalarField& s = c.scalars();
    switch (s.data_case()) {
      case pbs::ScalarField::kBoolData:
        return s.bool_data().data(i);
      case pbs::ScalarField::kIntData:
        return s.int_data().data(i);
      case pbs::ScalarField::kLongData: {
        const int64_t x = s.long_data().data(i);
        return allow_int64 ? json(x) : json(std::to_string(x));
      }
      case pbs::ScalarField::kFloatData:
        return s.float_data().data(i);
      case pbs::ScalarField::kDoubleData:
        return s.double_data().data(i);
      case pbs::ScalarField::kStringData:
        return s.string_data().data(i);
      case pbs::ScalarField::kArrayData:
        return ArrayElements(s.array_data().data(i), allow_int64);
      case pbs::ScalarField::kJsonData:
        return json::parse(s.json_data().data(i), nullptr, /*allow_exceptions=*/false);
      default:
        return nullptr;
    }
  }
  const pbs::VectorField& v = c.vectors();
  const size_t dim = static_cast<size_t>(v.dim());
  switch (v.data_case()) {
    case pbs::VectorField::kFloatVector: {
      json a = json::array();
      for (size_t k = 0; k < dim; ++k) a.push_back(v.float_vector().data(i * dim + k));
      return a;
    }
    case pbs::VectorField::kBinaryVector:
      return Base64Encode(std::string_view(v.binary_vector()).substr(i * dim / 8, dim / 8));
    case pbs::VectorField::kFloat16Vector:
      return Base64Encode(std::string_view(v.float16_vector()).substr(i * dim * 2, dim * 2));
    case pbs::VectorField::kBfloat16Vector:
      return Base64Encode(std::string_view(v.bfloat16_vector()).substr(i * dim * 2, dim * 2));
    case pbs::VectorField::kSparseFloatVector:
      return SparseObject(v.sparse_float_vector().contents(static_cast<int>(i)));
    default:
      return nullptr;
  }
}

}  // namespace

size_t ColumnRows(const FieldDataList& cols) {
  if (cols.empty()) return 0;
  const pbs::FieldData& c = cols[0];
  if (c.valid_data_size() > 0) return static_cast<size_t>(c.valid_data_size());
  return ValueCount(c);
}

json ColumnsToRows(const FieldDataList& cols, const pbs::IDs* ids,
                   const google::protobuf::RepeatedField<float>* scores, size_t begin, size_t count,
                   bool allow_int64) {
  // Per column, the value index of each row: with validity flags the values
  // may be one per row or one per valid row (the SDKs' two forms).
  std::vector<std::vector<int64_t>> index(static_cast<size_t>(cols.size()));
  for (int j = 0; j < cols.size(); ++j) {
    const pbs::FieldData& c = cols[j];
    if (c.valid_data_size() == 0) continue;
    const bool compact = ValueCount(c) != static_cast<size_t>(c.valid_data_size());
    int64_t next = 0;
    for (int r = 0; r < c.valid_data_size(); ++r) {
      const bool valid = c.valid_data(r);
      index[j].push_back(valid ? (compact ? next : r) : -1);
      if (valid || !compact) ++next;
    }
  }
  json rows = json::array();
  for (size_t r = begin; r < begin + count; ++r) {
    json row = json::object();
    for (int j = 0; j < cols.size(); ++j) {
      const pbs::FieldData& c = cols[j];
      int64_t vi = static_cast<int64_t>(r);
      if (!index[j].empty()) vi = r < index[j].size() ? index[j][r] : -1;
      if (c.is_dynamic() || c.field_name() == "$meta") {
        if (vi < 0) continue;
        json m = CellValue(c, static_cast<size_t>(vi), allow_int64);
        if (m.is_object()) {
          for (auto it = m.begin(); it != m.end(); ++it) row[it.key()] = it.value();
        }
        continue;
      }
      row[c.field_name()] =
          vi < 0 ? json(nullptr) : CellValue(c, static_cast<size_t>(vi), allow_int64);
    }
    if (ids != nullptr) {
      if (ids->has_int_id() && r < static_cast<size_t>(ids->int_id().data_size())) {
        const int64_t x = ids->int_id().data(static_cast<int>(r));
        row["id"] = allow_int64 ? json(x) : json(std::to_string(x));
      } else if (ids->has_str_id() && r < static_cast<size_t>(ids->str_id().data_size())) {
        row["id"] = ids->str_id().data(static_cast<int>(r));
      }
    }
    if (scores != nullptr && r < static_cast<size_t>(scores->size())) {
      row["distance"] = (*scores)[static_cast<int>(r)];
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string QueryVectors(const pbs::FieldSchema& f, const json& data, int64_t* nq) {
  if (!data.is_array() || data.empty()) {
    Fail(kCodeMissingRequiredParameters,
         "missing required parameters, error: data must be a non-empty array of query vectors");
  }
  pbc::PlaceholderGroup g;
  pbc::PlaceholderValue* pv = g.add_placeholders();
  pv->set_tag("$0");
  const uint32_t dim = TypeParamUint(f, "dim");
  for (size_t q = 0; q < data.size(); ++q) {
    const json& v = data[q];
    auto bad = [&](const std::string& why) {
      Fail(kCodeIncorrectParameterFormat,
           fmt::format("can only accept json format request, error: query vector {}: {}", q, why));
    };
    switch (f.data_type()) {
      case pbs::FloatVector: {
        pv->set_type(pbc::PlaceholderType::FloatVector);
        if (!v.is_array()) bad("expected an array of floats");
        std::string bytes;
        for (const json& e : v) {
          if (!e.is_number()) bad("expected numbers");
          const float x = e.get<float>();
          bytes.append(reinterpret_cast<const char*>(&x), 4);
        }
        pv->add_values(std::move(bytes));
        break;
      }
      case pbs::BinaryVector:
      case pbs::Float16Vector:
      case pbs::BFloat16Vector:
        pv->set_type(f.data_type() == pbs::BinaryVector    ? pbc::PlaceholderType::BinaryVector
                     : f.data_type() == pbs::Float16Vector ? pbc::PlaceholderType::Float16Vector
                                                           : pbc::PlaceholderType::BFloat16Vector);
        try {
          pv->add_values(VectorBytes(f, v, q));
        } catch (const RestFailure& e) {
          bad(e.message);
        }
        break;
      case pbs::SparseFloatVector: {
        pv->set_type(pbc::PlaceholderType::SparseFloatVector);
        int64_t unused = -1;
        try {
          pv->add_values(SparseBytes(v, q, f.name(), &unused));
        } catch (const RestFailure& e) {
          bad(e.message);
        }
        break;
      }
      default:
        Fail(kCodeParameterInvalid, fmt::format("field {} ({}) is not a vector field", f.name(),
                                                DataTypeToName(f.data_type())));
    }
  }
  (void)dim;
  *nq = static_cast<int64_t>(data.size());
  return g.SerializeAsString();
}

namespace {

void ArrayTemplate(const json& a, pbs::TemplateArrayValue* out) {
  if (a.empty()) {
    out->mutable_long_data();
    return;
  }
  const json& first = a[0];
  for (const json& e : a) {
    if (first.is_boolean() && e.is_boolean()) {
      out->mutable_bool_data()->add_data(e.get<bool>());
    } else if (first.is_number_integer() && e.is_number_integer()) {
      out->mutable_long_data()->add_data(e.get<int64_t>());
    } else if (first.is_number() && e.is_number()) {
      out->mutable_double_data()->add_data(e.get<double>());
    } else if (first.is_string() && e.is_string()) {
      out->mutable_string_data()->add_data(e.get<std::string>());
    } else if (first.is_array() && e.is_array()) {
      ArrayTemplate(e, out->mutable_array_data()->add_data());
    } else {
      out->mutable_json_data()->add_data(e.dump());
    }
  }
}

}  // namespace

void TemplateParams(const json& params,
                    google::protobuf::Map<std::string, pbs::TemplateValue>* out) {
  if (params.is_null()) return;
  if (!params.is_object()) {
    Fail(kCodeIncorrectParameterFormat,
         "can only accept json format request, error: exprParams must be an object");
  }
  for (auto it = params.begin(); it != params.end(); ++it) {
    pbs::TemplateValue& t = (*out)[it.key()];
    const json& v = it.value();
    if (v.is_boolean()) {
      t.set_bool_val(v.get<bool>());
    } else if (v.is_number_integer()) {
      t.set_int64_val(v.get<int64_t>());
    } else if (v.is_number()) {
      t.set_float_val(v.get<double>());
    } else if (v.is_string()) {
      t.set_string_val(v.get<std::string>());
    } else if (v.is_array()) {
      ArrayTemplate(v, t.mutable_array_val());
    } else {
      Fail(kCodeIncorrectParameterFormat,
           fmt::format("can only accept json format request, error: exprParams.{} must be a "
                       "bool, number, string or array",
                       it.key()));
    }
  }
}

}  // namespace strata::milvus
