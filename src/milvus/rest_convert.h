// The JSON <-> protocol mapping of the Milvus REST API (rest.h): row-shaped
// JSON entities into the column-shaped FieldData of an InsertRequest, query
// and search results back into rows, query vectors into a PlaceholderGroup,
// exprParams into expression template values. Milvus's REST conventions:
// int64 values are JSON strings unless the client sends
// Accept-Type-Allow-Int64: true; binary and half-precision vectors are
// base64 strings on output (arrays of bytes / floats accepted on input);
// sparse vectors are {"index": value} objects; a search hit carries the
// primary key as "id" and its score as "distance".
//
// Errors are thrown as RestFailure (a Milvus code and message) and caught
// by RestHandler::Dispatch; nothing here is visible outside src/milvus.
#pragma once

#include <cstdint>
#include <string>

#include <google/protobuf/map.h>
#include <google/protobuf/repeated_field.h>
#include <nlohmann/json.hpp>

#include "common.pb.h"
#include "schema.pb.h"

namespace strata::milvus {

// Milvus's codes of the REST layer itself (merr, "high-level restful api").
inline constexpr int32_t kCodeNeedAuthenticate = 1800;
inline constexpr int32_t kCodeIncorrectParameterFormat = 1801;
inline constexpr int32_t kCodeMissingRequiredParameters = 1802;
inline constexpr int32_t kCodeInvalidInsertData = 1804;
inline constexpr int32_t kCodeCheckPrimaryKey = 1806;

struct RestFailure {
  int32_t code;
  std::string message;
};
[[noreturn]] void Fail(int32_t code, std::string message);

// Go's encoding/json matches keys case-insensitively (Milvus's request
// structs are decoded that way): an exact match first, then any case.
const nlohmann::json* FindKey(const nlohmann::json& obj, std::string_view key);

using FieldDataList = google::protobuf::RepeatedPtrField<::milvus::proto::schema::FieldData>;

// `rows` (a JSON array of objects) as one column per schema field, with
// valid_data flags for nullable / defaulted fields, the dynamic field's keys
// gathered into "$meta", and an auto_id primary key left out when no row
// gives it. Returns the number of rows. Code 1804 (invalid insert data) for
// a row that does not fit the schema.
uint32_t RowsToColumns(const ::milvus::proto::schema::CollectionSchema& schema,
                       const nlohmann::json& rows, FieldDataList* out);

// Rows [begin, begin + count) of result columns: each column's value, the
// dynamic field's keys merged into the row; with ids, "id" and with scores
// "distance".
nlohmann::json ColumnsToRows(const FieldDataList& cols, const ::milvus::proto::schema::IDs* ids,
                             const google::protobuf::RepeatedField<float>* scores, size_t begin,
                             size_t count, bool allow_int64);
// The number of rows in result columns (0 for none).
size_t ColumnRows(const FieldDataList& cols);

// The query vectors `data` (a JSON array of vectors) for vector field f, as
// a serialized PlaceholderGroup; sets *nq.
std::string QueryVectors(const ::milvus::proto::schema::FieldSchema& f, const nlohmann::json& data,
                         int64_t* nq);

// exprParams {"name": value} as expression template values.
void TemplateParams(
    const nlohmann::json& params,
    google::protobuf::Map<std::string, ::milvus::proto::schema::TemplateValue>* out);

// Milvus's data type names ("Int64", "FloatVector", ...) both ways
// (case-sensitive, as Milvus); Fail 1100 for an unknown name.
::milvus::proto::schema::DataType DataTypeFromName(const std::string& name);
std::string DataTypeToName(::milvus::proto::schema::DataType t);

}  // namespace strata::milvus
