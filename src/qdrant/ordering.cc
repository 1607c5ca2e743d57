// Scroll with order_by and facet counts. Both need a payload index on the
// key, as Qdrant does (order_by a range-capable one: integer, float or
// datetime; facet a keyword, integer or bool one), and read the values from
// the matching points' payloads.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <strata/core/strings.h>

#include "qdrant/json_convert.h"
#include "qdrant/operations.h"

namespace strata::qdrant {

using vector::Collection;
using vector::PayloadType;

namespace {

// The type of the payload index on `key`, if there is one.
std::optional<PayloadType> IndexType(const Collection& c, const std::string& key) {
  for (const auto& [f, n] : c.Info().payload_indexes) {
    if (f.name == key) return f.type;
  }
  return std::nullopt;
}

// The values at a dot path; an array there gives each of its elements.
std::vector<json> ValuesAt(const std::string& payload_text, const std::string& path) {
  json at = json::parse(payload_text.empty() ? "{}" : payload_text, nullptr, false);
  for (auto part : Split(path, '.')) {
    if (!at.is_object()) return {};
    auto it = at.find(std::string(part));
    if (it == at.end()) return {};
    json next = *it;
    at = std::move(next);
  }
  if (at.is_null()) return {};
  if (at.is_array()) return std::vector<json>(at.begin(), at.end());
  return {at};
}

// Every point the filter matches, with payload (and vectors when asked).
Result<std::vector<vector::Record>> AllMatching(Collection& c,
                                                const std::optional<vector::Filter>& filter,
                                                bool with_vectors) {
  vector::ScrollRequest sr;
  sr.filter = filter;
  sr.limit = c.Info().points + 1;
  sr.with_payload = true;
  sr.with_vectors = with_vectors;
  STRATA_ASSIGN_OR_RETURN(auto page, c.Scroll(sr));
  return std::move(page.points);
}

// A value of an order_by key as a number: integers and floats as they are,
// datetimes (RFC 3339 strings) as Unix nanoseconds.
std::optional<double> OrderValue(const json& v, PayloadType t) {
  if (t == PayloadType::kTimestamp) {
    if (!v.is_string()) return std::nullopt;
    auto ns = ParseIso8601(v.get<std::string>());
    if (!ns) return std::nullopt;
    return double(*ns);
  }
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}

}  // namespace

Result<std::vector<vector::ScoredPoint>> OrderedPoints(Collection& c, const json& ob,
                                                       const std::optional<vector::Filter>& f,
                                                       size_t limit, bool with_vectors) {
  std::string key;
  bool desc = false;
  std::optional<double> start;
  if (ob.is_string()) {
    key = ob.get<std::string>();
  } else if (ob.is_object()) {
    for (auto it = ob.begin(); it != ob.end(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      if (k == "key" && v.is_string()) {
        key = v.get<std::string>();
      } else if (k == "direction" && v.is_string() && (v == "asc" || v == "desc")) {
        desc = v == "desc";
      } else if (k == "start_from" && v.is_number()) {
        start = v.get<double>();
      } else if (k == "start_from" && v.is_string()) {
        auto ns = ParseIso8601(v.get<std::string>());
        if (!ns) return Status::InvalidArgument("order_by.start_from is not an RFC 3339 datetime");
        start = double(*ns);
      } else if (!v.is_null()) {
        return Status::InvalidArgument(fmt::format(
            "order_by.{} is not valid (key, direction \"asc\" | \"desc\", start_from)", k));
      }
    }
  }
  if (key.empty()) return Status::InvalidArgument("order_by needs a \"key\"");
  auto type = IndexType(c, key);
  if (!type || (*type != PayloadType::kInteger && *type != PayloadType::kFloat &&
                *type != PayloadType::kTimestamp)) {
    return Status::InvalidArgument(fmt::format(
        "Bad request: No range index for `order_by` key: `{}`. Please create one to use "
        "`order_by`. Check https://qdrant.tech/documentation/concepts/indexing/#payload-index to "
        "see which payload schemas support Range conditions",
        key));
  }
  STRATA_ASSIGN_OR_RETURN(auto recs, AllMatching(c, f, with_vectors));
  std::vector<std::pair<double, size_t>> rows;
  for (size_t i = 0; i < recs.size(); ++i) {
    // A point with several values appears once per value, as in Qdrant.
    for (const auto& v : ValuesAt(recs[i].payload, key)) {
      auto d = OrderValue(v, *type);
      if (!d) continue;
      if (start && (desc ? *d > *start : *d < *start)) continue;
      rows.emplace_back(*d, i);
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& z) {
    if (a.first != z.first) return desc ? a.first > z.first : a.first < z.first;
    return recs[a.second].id < recs[z.second].id;
  });
  std::vector<vector::ScoredPoint> out;
  for (size_t i = 0; i < rows.size() && i < limit; ++i)
    out.push_back(vector::ScoredPoint{recs[rows[i].second], float(rows[i].first)});
  return out;
}

Result<json> ScrollOrdered(Collection& c, const json& b, const std::optional<vector::Filter>& f,
                           size_t limit, const PayloadSelector& ps, const VectorSelector& vs) {
  if (Field(b, "offset") != nullptr)
    return Status::InvalidArgument("offset cannot be used with order_by; use order_by.start_from");
  STRATA_ASSIGN_OR_RETURN(auto pts, OrderedPoints(c, *Field(b, "order_by"), f, limit, vs.enabled));
  json out = json::array();
  for (const auto& p : pts) {
    json r = RecordJson(p.record, c, ps, vs);
    const double v = p.score;
    r["order_value"] = v == double(int64_t(v)) ? json(int64_t(v)) : json(v);
    out.push_back(std::move(r));
  }
  // Qdrant pages an ordered scroll with start_from, not with an offset.
  return json{{"points", out}, {"next_page_offset", nullptr}};
}

Result<json> Facet(Collection& c, const json& b) {
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (it.key() != "key" && it.key() != "filter" && it.key() != "limit" && it.key() != "exact")
      return Status::InvalidArgument(fmt::format("facet: field \"{}\" is not supported", it.key()));
  }
  const json* k = Field(b, "key");
  if (k == nullptr || !k->is_string()) return Status::InvalidArgument("facet needs \"key\"");
  const std::string key = k->get<std::string>();
  size_t limit = 10;
  if (const json* l = Field(b, "limit")) {
    if (!l->is_number_unsigned() || l->get<uint64_t>() == 0)
      return Status::InvalidArgument("facet limit must be a positive integer");
    limit = l->get<size_t>();
  }
  if (const json* e = Field(b, "exact"); e != nullptr && !e->is_boolean())
    return Status::InvalidArgument("facet exact must be a boolean");
  auto type = IndexType(c, key);
  if (!type || (*type != PayloadType::kKeyword && *type != PayloadType::kInteger &&
                *type != PayloadType::kBool)) {
    return Status::InvalidArgument(fmt::format(
        "Bad request: Index required but not found for \"{}\" of one of the following types: "
        "[keyword, integer, bool]. Help: Create an index for this key.",
        key));
  }
  STRATA_ASSIGN_OR_RETURN(auto f, FilterFromJson(Field(b, "filter")));
  STRATA_ASSIGN_OR_RETURN(auto recs, AllMatching(c, f, false));
  // Counts are always exact here: each point counts once per distinct value.
  std::map<std::string, std::pair<json, size_t>> counts;
  for (const auto& r : recs) {
    std::map<std::string, json> distinct;
    for (const auto& v : ValuesAt(r.payload, key)) {
      if (v.is_string() || v.is_number_integer() || v.is_boolean()) distinct[v.dump()] = v;
    }
    for (auto& [s, v] : distinct) {
      auto& slot = counts[s];
      slot.first = v;
      slot.second++;
    }
  }
  std::vector<std::pair<json, size_t>> hits;
  for (auto& [s, p] : counts) hits.push_back(p);
  std::stable_sort(hits.begin(), hits.end(),
                   [](const auto& a, const auto& z) { return a.second > z.second; });
  json out = json::array();
  for (size_t i = 0; i < hits.size() && i < limit; ++i)
    out.push_back({{"value", hits[i].first}, {"count", hits[i].second}});
  return json{{"hits", out}};
}

}  // namespace strata::qdrant
