// Strata's BM25 helper routes (vector/bm25.h does the work): fill a sparse
// field from a text payload field, and encode a text as a query or document
// sparse vector. Strata-specific, so under /strata/ and .../strata/.
#include <algorithm>

#include <fmt/format.h>

#include <strata/vector/bm25.h>

#include "qdrant/json_convert.h"
#include "qdrant/operations.h"

namespace strata::qdrant {
namespace {

Status CheckKeys(const json& b, std::initializer_list<const char*> keys, const char* what) {
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; })) {
      std::string list;
      for (const char* k : keys) list += std::string(list.empty() ? "" : ", ") + k;
      return Status::InvalidArgument(
          fmt::format("{}: unknown field \"{}\" (fields: {})", what, it.key(), list));
    }
  }
  return Status::Ok();
}

Result<std::string> Text(const json& b, const char* key, const char* what) {
  const json* v = Field(b, key);
  if (v == nullptr || !v->is_string())
    return Status::InvalidArgument(fmt::format("{} needs \"{}\": a string", what, key));
  return v->get<std::string>();
}

Result<vector::Bm25Options> Options(const json& b) {
  vector::Bm25Options o;
  for (const char* k : {"k1", "b"}) {
    const json* v = Field(b, k);
    if (v == nullptr) continue;
    if (!v->is_number()) return Status::InvalidArgument(fmt::format("{} must be a number", k));
    (std::string_view(k) == "k1" ? o.k1 : o.b) = v->get<float>();
  }
  if (o.k1 < 0 || o.b < 0 || o.b > 1)
    return Status::InvalidArgument("BM25 needs k1 >= 0 and 0 <= b <= 1");
  return o;
}

}  // namespace

Result<json> Bm25Index(vector::Collection& c, const json& b, bool wait) {
  constexpr const char* kWhat = "strata/bm25";
  STRATA_RETURN_IF_ERROR(CheckKeys(b, {"text_field", "using", "k1", "b"}, kWhat));
  STRATA_ASSIGN_OR_RETURN(std::string field, Text(b, "text_field", kWhat));
  STRATA_ASSIGN_OR_RETURN(std::string name, Text(b, "using", kWhat));
  STRATA_ASSIGN_OR_RETURN(vector::Bm25Options o, Options(b));
  vector::WriteOptions wo;
  wo.wait = wait;
  STRATA_ASSIGN_OR_RETURN(auto r, vector::Bm25IndexField(c, field, name, o, wo));
  return json{{"points", r.points}, {"avg_len", r.avg_len}, {"operation_id", r.operation}};
}

Result<json> Bm25Encode(const json& b) {
  constexpr const char* kWhat = "strata/bm25/encode";
  STRATA_RETURN_IF_ERROR(CheckKeys(b, {"text", "kind", "avg_len", "k1", "b"}, kWhat));
  STRATA_ASSIGN_OR_RETURN(std::string text, Text(b, "text", kWhat));
  std::string kind = "query";
  if (Field(b, "kind") != nullptr) {
    STRATA_ASSIGN_OR_RETURN(kind, Text(b, "kind", kWhat));
  }
  if (kind == "query") {
    for (const char* k : {"avg_len", "k1", "b"}) {
      if (Field(b, k) != nullptr)
        return Status::InvalidArgument(
            fmt::format("{}: \"{}\" applies to kind \"document\" only", kWhat, k));
    }
    return SparseToJson(vector::Bm25QueryVector(text));
  }
  if (kind != "document")
    return Status::InvalidArgument(
        fmt::format("{}: kind is \"query\" or \"document\", not \"{}\"", kWhat, kind));
  const json* al = Field(b, "avg_len");
  if (al == nullptr || !al->is_number() || al->get<double>() <= 0)
    return Status::InvalidArgument(fmt::format(
        "{}: a document vector needs \"avg_len\" (> 0), the corpus's average tokens per document",
        kWhat));
  STRATA_ASSIGN_OR_RETURN(vector::Bm25Options o, Options(b));
  return SparseToJson(vector::Bm25DocumentVector(text, al->get<double>(), o));
}

}  // namespace strata::qdrant
