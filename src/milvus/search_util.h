// The pieces of Milvus's search semantics that need no collection: range
// search bounds per metric, expression templates, the hybrid-search rankers
// (RRF, weighted) and the search iterator's token. Scores are in Milvus's
// units throughout: squared Euclidean distance for L2 (smaller is closer),
// similarity for IP and COSINE (larger is closer). Plain values, no locks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <google/protobuf/map.h>

#include <strata/core/result.h>
#include <strata/vector/filter.h>

#include "common.pb.h"
#include "milvus/convert.h"
#include "schema.pb.h"

namespace strata::milvus {

// Milvus's score of an engine score (the engine's L2 is the plain distance).
inline float MilvusScore(float engine_score, bool l2) {
  return l2 ? engine_score * engine_score : engine_score;
}
// a is a closer hit than b.
inline bool Closer(float a, float b, bool l2) { return l2 ? a < b : a > b; }

// radius / range_filter against the metric, with Milvus's rules: L2 needs
// range_filter < radius, IP and COSINE range_filter > radius.
Status CheckRange(const SearchParams& p, bool l2);
// d is inside the range search's annulus (true without a radius).
bool InRange(const SearchParams& p, float d, bool l2);
// d is past the radius: every later (farther) hit is too.
bool PastRadius(const SearchParams& p, float d, bool l2);

// expr with each {name} outside string literals replaced by its value as an
// expression literal (strings quoted, arrays as [..]); an unknown name is an
// error naming it.
using TemplateValues = google::protobuf::Map<std::string, ::milvus::proto::schema::TemplateValue>;
Result<std::string> ApplyExprTemplate(const std::string& expr, const TemplateValues& values);

// rank_params of a HybridSearchRequest.
struct Ranker {
  enum Kind { kRrf, kWeighted } kind = kRrf;
  double k = 60;                // RRF: score = sum over lists of 1 / (k + rank), rank from 1
  std::vector<double> weights;  // weighted: one per request, each in [0, 1]
  bool norm_score = true;       // weighted: scores mapped to [0, 1] per metric first
  size_t limit = 10;
  size_t offset = 0;
  int round_decimal = -1;
};
Result<Ranker> ParseRankParams(const KvList& kv, size_t requests);

// One ranked list per sub-search: its hits, closest first.
struct RankedHit {
  vector::PointId id;
  float score = 0;  // Milvus units
};
struct FusedHit {
  size_t list = 0;  // where the hit was first seen (its record is there)
  size_t pos = 0;
  float score = 0;  // the fused score (larger is better)
};
// The lists fused by the ranker, best first, all of them (offset and limit
// are the caller's). metrics[i]: list i's metric ("L2", "IP", "COSINE").
std::vector<FusedHit> Fuse(const Ranker& r, const std::vector<std::vector<RankedHit>>& lists,
                           const std::vector<std::string>& metrics);
// Milvus's normalisation of a score into [0, 1] for the weighted ranker.
float NormalizeScore(float s, const std::string& metric);

// The search iterator's token: the ids of the previous page's hits at its
// last score (so the next page skips exactly those among equal scores).
std::string EncodeIterToken(const std::vector<vector::PointId>& at_bound);
Result<std::vector<vector::PointId>> DecodeIterToken(const std::string& token);

}  // namespace strata::milvus
