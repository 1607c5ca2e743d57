// The operations behind the Qdrant routes, one function each: a parsed JSON
// body in, the "result" JSON or a Status out (errors.h turns a Status into
// HTTP). collections.cc, points.cc, payload.cc and search.cc hold them; handler.cc routes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <strata/core/http_server.h>
#include <strata/core/result.h>
#include <strata/vector/collection.h>

#include "qdrant/json_convert.h"

namespace strata::qdrant {

using json = nlohmann::json;

// collections.cc
json CollectionInfoJson(const vector::Collection& c);
Result<json> CreateCollection(vector::CollectionManager& mgr, const std::string& name,
                              const json& b);
// PATCH /collections/{name}: applies and persists what it names; 400 for
// what has no equivalent here.
Result<json> UpdateCollection(vector::Collection& c, const json& b);
Result<json> CreateIndex(vector::Collection& c, const json& b);
// POST /collections/aliases {"actions": [...]}: all or none.
Result<json> UpdateAliases(vector::CollectionManager& mgr, const json& b);
// {"aliases": [{"alias_name", "collection_name"}]}, of one collection unless "".
json AliasesJson(const vector::CollectionManager& mgr, const std::string& collection);
json SnapshotJson(const vector::CollectionManager& mgr, const std::string& coll,
                  const std::string& snap);

// points.cc
// {"operation_id": op, "status": "completed" | "acknowledged"}
json UpdateResult(uint64_t op, bool wait);
Result<json> Upsert(vector::Collection& c, const json& b, bool wait);
Result<json> Delete(vector::Collection& c, const json& b, bool wait);
Result<json> UpdateVectors(vector::Collection& c, const json& b, bool wait);
Result<json> Retrieve(vector::Collection& c, const json& b);
Result<json> GetPoint(vector::Collection& c, const std::string& id_text);
Result<json> Scroll(vector::Collection& c, const json& b);
Result<json> Count(vector::Collection& c, const json& b);

// ordering.cc: a scroll whose body has "order_by"; facet counts.
Result<json> ScrollOrdered(vector::Collection& c, const json& b,
                           const std::optional<vector::Filter>& f, size_t limit,
                           const PayloadSelector& ps, const VectorSelector& vs);
Result<json> Facet(vector::Collection& c, const json& b);
// The points the filter matches ordered by an order_by spec (a key or
// {key, direction, start_from}); each score is the point's order value.
Result<std::vector<vector::ScoredPoint>> OrderedPoints(vector::Collection& c, const json& order_by,
                                                       const std::optional<vector::Filter>& f,
                                                       size_t limit, bool with_vectors);

// payload.cc: edits of points chosen by "points": [ids] (404 for a missing
// one) or "filter"; Batch answers one UpdateResult per operation.
Result<json> SetPayload(vector::Collection& c, const json& b, bool overwrite, bool wait);
Result<json> DeletePayload(vector::Collection& c, const json& b, bool wait);
Result<json> ClearPayload(vector::Collection& c, const json& b, bool wait);
Result<json> DeleteVectors(vector::Collection& c, const json& b, bool wait);
Result<json> Batch(vector::Collection& c, const json& b, bool wait);

// search.cc: the parameters every search and query stage shares (filter,
// limit, offset, score_threshold, params, selectors).
Status ParseSearchCommon(const json& b, vector::SearchRequest* r, PayloadSelector* ps,
                         VectorSelector* vs, bool payload_default);

// query.cc: one /points/query body, answered with the selectors it asks for.
struct QueryRun {
  std::vector<vector::ScoredPoint> points;
  PayloadSelector ps;
  VectorSelector vs;
};
Result<QueryRun> RunQuery(vector::Collection& c, const json& b);
// A body that is a plain nearest-neighbour query (no prefetch; `query` a
// vector or {nearest: vector}) parsed as a SearchRequest, so a batch of them
// runs as one index batch; false (nothing parsed) for any other body.
Result<bool> PlainNearest(vector::Collection& c, const json& b, vector::SearchRequest* r,
                          PayloadSelector* ps, VectorSelector* vs);
// The body of /points/recommend (discover=false) or /points/discover as the
// equivalent /points/query body.
Result<json> LegacyToQuery(const json& b, bool discover);

// search.cc: one result list per body (query_shape: each as {"points": [...]}).
Result<json> SearchBatch(vector::Collection& c, const std::vector<const json*>& bodies,
                         bool query_shape);
// search/groups (query_shape false) and query/groups: {"groups": [{"id", "hits"}]}.
Result<json> SearchGroups(vector::Collection& c, const json& b, bool query_shape);

// snapshots.cc: PUT .../snapshots/recover {"location": "file:///..."}
// (archives under the server's snapshot directory only) and the multipart
// upload of an archive; both replace or create collection `name`.
Result<json> RecoverSnapshot(vector::CollectionManager& mgr, const std::string& name,
                             const json& b);
Result<json> UploadSnapshot(vector::CollectionManager& mgr, const std::string& name,
                            http::Request& req, std::string_view query, uint64_t max_bytes);

// bm25.cc: Strata's text-to-sparse helper (not a Qdrant route).
// POST /collections/{name}/strata/bm25 {"text_field", "using", "k1"?, "b"?}:
// BM25 document vectors of a text payload field written into a sparse field.
Result<json> Bm25Index(vector::Collection& c, const json& b, bool wait);
// POST /strata/bm25/encode {"text", "kind": "query" | "document", "avg_len"?,
// "k1"?, "b"?}: one sparse vector {"indices", "values"}.
Result<json> Bm25Encode(const json& b);

}  // namespace strata::qdrant
