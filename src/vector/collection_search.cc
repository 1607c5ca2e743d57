// Collection reads: Get, Scroll, Count, and search. SearchBatch groups
// requests that can share one index call per segment, then per segment the
// planner picks exact search over the filtered rows (a filter that keeps few
// rows: at most exact_max_rows or exact_selectivity of the live ones) or
// hands the filter to the index, whose own planner weighs an exact scan
// against its filtered walk (and whose walk falls back to the scan when it
// comes up short); hits from every segment are merged in score order.
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <shared_mutex>
#include <unordered_map>

#include <fmt/format.h>

#include <strata/vector/collection.h>

#include "vector/collection_internal.h"

namespace strata::vector {

using internal::AllFinite;
using internal::M;
using internal::PointLoc;
using internal::RowSet;
using internal::Segment;

namespace {

struct Hit {
  float distance;
  const Segment* seg;
  uint32_t row;
};

// The vector field of each request, after checking the query vectors.
Result<std::vector<int>> ResolveFields(const Collection::Impl& im,
                                       std::span<const SearchRequest> reqs) {
  std::vector<int> field(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    const SearchRequest& r = reqs[i];
    if (r.sparse) {
      field[i] = -1;  // SearchSparse
      continue;
    }
    field[i] = im.FieldIndex(r.vector_name);
    if (field[i] < 0 && im.SparseIndex(r.vector_name) >= 0) {
      return Status::InvalidArgument(fmt::format(
          "vector \"{}\" is sparse; query it with a sparse vector {{\"indices\", \"values\"}}",
          r.vector_name));
    }
    if (field[i] < 0) {
      return Status::InvalidArgument(
          r.vector_name.empty()
              ? std::string(
                    "the collection has several vectors; name the one to search (\"using\")")
              : fmt::format("the collection has no vector named \"{}\"", r.vector_name));
    }
    const uint32_t dim = im.schema.vectors[field[i]].index.dim;
    if (r.vector.size() != dim) {
      return Status::InvalidArgument(
          fmt::format("wrong query vector dimension: expected {}, got {}", dim, r.vector.size()));
    }
    if (!AllFinite(r.vector))
      return Status::InvalidArgument("the query vector has a NaN or infinite component");
  }
  return field;
}

// Searches one segment for the nq queries of a group (one index call),
// appending the live hits to hits[q].
Status SearchSegment(const Collection::Impl& im, const Segment& seg, const SearchRequest& r0, int f,
                     const std::vector<float>& queries, size_t nq, size_t k, bool filtered,
                     uint32_t threads, std::vector<std::vector<Hit>>* hits) {
  const auto& sf = seg.fields[f];
  if (!sf.index || sf.index->Size() == 0 || seg.live == 0) return Status::Ok();
  std::optional<RowSet> allowed;
  if (filtered) {
    allowed = im.Matching(seg, *r0.filter);
    if (allowed->Empty()) return Status::Ok();
  } else if (seg.live < seg.rows()) {
    allowed = im.LiveRows(seg);
  }
  SearchResults res;
  // The planner: a filter that keeps few rows is answered exactly over
  // them; otherwise the index walks its graph with the filter.
  const size_t matching = allowed ? allowed->Count() : seg.live;
  const bool is_flat = sf.index->type() == IndexType::kFlat;
  const bool exact = r0.exact || r0.filter_strategy == FilterStrategy::kExact ||
                     (filtered && !is_flat &&
                      (matching <= im.opts.exact_max_rows ||
                       double(matching) <= im.opts.exact_selectivity * double(seg.live)));
  Status st;
  if (exact && (allowed || r0.exact)) {
    std::vector<uint64_t> ids;
    if (allowed) {
      allowed->Enumerate(&ids);
    } else {
      im.LiveRows(seg).Enumerate(&ids);
    }
    st = sf.index->SearchSubset(nq, queries.data(), k, ids.data(), ids.size(), &res, threads);
    if (filtered) M().exact_plans.Inc();
  } else {
    SearchParams sp;
    sp.ef = r0.ef;
    sp.nprobe = r0.nprobe;
    sp.rerank = r0.rerank;
    sp.search_l = r0.search_list;
    sp.filter = allowed ? &*allowed : nullptr;
    sp.filter_strategy =
        r0.filter_strategy == FilterStrategy::kExact ? FilterStrategy::kAuto : r0.filter_strategy;
    sp.exact_threshold = 0;  // the index's cost model decides between its walk and a scan
    sp.num_threads = threads;
    st = sf.index->Search(nq, queries.data(), k, sp, &res);
    if (filtered) M().graph_plans.Inc();
  }
  if (!st.ok()) return st;
  for (size_t q = 0; q < nq; ++q) {
    const Neighbor* row = res.Row(q);
    for (size_t j = 0; j < res.k; ++j) {
      if (row[j].id == kNoId) break;
      if (row[j].id >= seg.rows() || seg.deleted.Test(row[j].id)) continue;
      (*hits)[q].push_back(Hit{row[j].distance, &seg, uint32_t(row[j].id)});
    }
  }
  return Status::Ok();
}

// Ranks the hits of one request and turns them into its results: closest
// first (ties by id), without excluded ids, within the score threshold, after
// `offset`, at most `limit`.
void CollectResults(const Collection::Impl& im, const SearchRequest& r, Metric metric,
                    std::vector<Hit>* hits, std::vector<ScoredPoint>* results) {
  auto& h = *hits;
  std::sort(h.begin(), h.end(), [](const Hit& a, const Hit& b) {
    if (a.distance != b.distance) return a.distance < b.distance;
    return a.seg->ids[a.row] < b.seg->ids[b.row];
  });
  size_t skipped = 0;
  auto& out = *results;
  for (const Hit& x : h) {
    if (out.size() >= r.limit) break;
    const PointId& id = x.seg->ids[x.row];
    if (!r.exclude.empty() && std::find(r.exclude.begin(), r.exclude.end(), id) != r.exclude.end())
      continue;
    float score = ScoreFromDistance(metric, x.distance);
    if (r.score_threshold) {
      bool ok = metric == Metric::kL2 ? score <= *r.score_threshold : score >= *r.score_threshold;
      if (!ok) break;  // hits are in score order
    }
    if (skipped < r.offset) {
      ++skipped;
      continue;
    }
    ScoredPoint sp;
    sp.score = score;
    sp.record = im.MakeRecord(*x.seg, x.row, r.with_payload, r.with_vectors);
    out.push_back(std::move(sp));
  }
}

// The query weights of a sparse search on field f: sorted, and multiplied by
// each term's IDF over the live points when the field has that modifier.
Result<SparseVector> SparseQuery(const Collection::Impl& im, int f, const SparseVector& q) {
  SparseVector out;
  STRATA_RETURN_IF_ERROR(internal::NormalizeSparse(q, &out).WithContext("the sparse query"));
  if (im.schema.sparse[f].modifier != SparseModifier::kIdf) return out;
  double n_docs = 0;
  std::vector<double> df(out.indices.size(), 0.0);
  im.ForEachSegment([&](Segment& seg) {
    const auto& col = seg.sparse[f];
    const bool all_live = seg.live == seg.rows();
    if (all_live) {
      n_docs += double(col.present());
    } else {
      for (uint32_t r = 0; r < seg.rows(); ++r) n_docs += col.Has(r) && !seg.deleted.Test(r);
    }
    for (size_t i = 0; i < out.indices.size(); ++i) {
      const auto* p = col.Find(out.indices[i]);
      if (p == nullptr) continue;
      if (all_live) {
        df[i] += double(p->rows.size());
      } else {
        for (uint32_t r : p->rows) df[i] += !seg.deleted.Test(r);
      }
    }
  });
  for (size_t i = 0; i < out.indices.size(); ++i) {
    out.values[i] *= float(std::log(1.0 + (n_docs - df[i] + 0.5) / (df[i] + 0.5)));
  }
  return out;
}

// One sparse search (mu_ held shared): every segment's inverted index, the
// filter evaluated per segment as for dense searches.
Status SearchSparse(const Collection::Impl& im, const SearchRequest& r,
                    std::vector<ScoredPoint>* results) {
  const int f = im.SparseIndex(r.vector_name);
  if (f < 0) {
    return Status::InvalidArgument(
        im.FieldIndex(r.vector_name) >= 0
            ? fmt::format("vector \"{}\" is dense; a sparse query needs a sparse vector field",
                          r.vector_name)
            : fmt::format("the collection has no sparse vector named \"{}\"", r.vector_name));
  }
  if (r.limit == 0) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(SparseVector q, SparseQuery(im, f, *r.sparse));
  const size_t k = r.offset + r.limit + r.exclude.size();
  const bool filtered = r.filter && !internal::IsTrivial(*r.filter);
  std::vector<Hit> hits;
  im.ForEachSegment([&](Segment& seg) {
    if (seg.live == 0 || seg.sparse[f].present() == 0) return;
    std::optional<RowSet> allowed;
    if (filtered) {
      allowed = im.Matching(seg, *r.filter);
      if (allowed->Empty()) return;
    } else if (seg.live < seg.rows()) {
      allowed = im.LiveRows(seg);
    }
    for (const auto& [row, score] : seg.sparse[f].Search(q, k, allowed ? &*allowed : nullptr))
      hits.push_back(Hit{-score, &seg, row});
  });
  CollectResults(im, r, Metric::kInnerProduct, &hits, results);
  return Status::Ok();
}

}  // namespace

// ---------------------------------------------------------------------------
// Collection::Impl: records

Record Collection::Impl::MakeRecord(const Segment& seg, uint32_t row, bool with_payload,
                                    bool with_vectors) const {
  Record r;
  r.id = seg.ids[row];
  r.version = seg.versions[row];
  if (with_payload) r.payload = seg.payloads[row].empty() ? "{}" : seg.payloads[row];
  if (with_vectors) {
    for (size_t f = 0; f < schema.vectors.size(); ++f) {
      NamedVector nv;
      nv.name = schema.vectors[f].name;
      nv.values.resize(schema.vectors[f].index.dim);
      if (seg.GetVector(f, row, nv.values.data())) r.vectors.push_back(std::move(nv));
    }
    for (size_t f = 0; f < schema.sparse.size() && f < seg.sparse.size(); ++f) {
      if (seg.sparse[f].Has(row))
        r.sparse.push_back(NamedSparseVector{schema.sparse[f].name, seg.sparse[f].Row(row)});
    }
  }
  return r;
}

// ---------------------------------------------------------------------------
// Collection: reads

Result<std::vector<Record>> Collection::Get(std::span<const PointId> ids, bool with_payload,
                                            bool with_vectors) const {
  const Impl& im = *impl_;
  std::shared_lock<std::shared_mutex> l(im.mu_);
  std::vector<Record> out;
  std::set<PointId> seen;
  for (const auto& id : ids) {
    auto it = im.points.find(id);
    if (it == im.points.end() || !seen.insert(id).second) continue;
    out.push_back(im.MakeRecord(*it->second.seg, it->second.row, with_payload, with_vectors));
  }
  return out;
}

Result<std::vector<ScoredPoint>> Collection::Search(const SearchRequest& req) const {
  STRATA_ASSIGN_OR_RETURN(auto all, SearchBatch(std::span<const SearchRequest>(&req, 1)));
  return std::move(all[0]);
}

Result<std::vector<std::vector<ScoredPoint>>> Collection::SearchBatch(
    std::span<const SearchRequest> reqs) const {
  const Impl& im = *impl_;
  auto t0 = std::chrono::steady_clock::now();
  STRATA_ASSIGN_OR_RETURN(std::vector<int> field, ResolveFields(im, reqs));
  std::vector<std::vector<ScoredPoint>> results(reqs.size());

  // Group requests that can share one index call per segment.
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const SearchRequest& r = reqs[i];
    if (r.limit == 0 || r.sparse) continue;
    std::string key =
        fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", field[i], r.filter ? r.filter->ToString() : "",
                    r.exact, r.ef, r.nprobe, int(r.filter_strategy), r.rerank, r.search_list);
    groups[key].push_back(i);
  }

  std::shared_lock<std::shared_mutex> l(im.mu_);
  if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (!reqs[i].sparse) continue;
    STRATA_RETURN_IF_ERROR(SearchSparse(im, reqs[i], &results[i]));
    M().searches.Inc();
  }
  for (const auto& [key, members] : groups) {
    const SearchRequest& r0 = reqs[members[0]];
    const int f = field[members[0]];
    const Metric metric = im.schema.vectors[f].index.metric;
    size_t k = 0;
    for (size_t i : members)
      k = std::max(k, reqs[i].offset + reqs[i].limit + reqs[i].exclude.size());
    const size_t nq = members.size();
    std::vector<float> queries;
    queries.reserve(nq * r0.vector.size());
    for (size_t i : members)
      queries.insert(queries.end(), reqs[i].vector.begin(), reqs[i].vector.end());
    std::vector<std::vector<Hit>> hits(nq);
    const bool filtered = r0.filter && !internal::IsTrivial(*r0.filter);
    const uint32_t threads = im.opts.search_threads != 0 ? im.opts.search_threads : nq >= 8 ? 0 : 1;

    Status err;
    im.ForEachSegment([&](Segment& seg) {
      if (!err.ok()) return;
      err = SearchSegment(im, seg, r0, f, queries, nq, k, filtered, threads, &hits);
    });
    if (!err.ok()) return err;
    for (size_t qi = 0; qi < nq; ++qi) {
      CollectResults(im, reqs[members[qi]], metric, &hits[qi], &results[members[qi]]);
    }
    M().searches.Inc(nq);
  }
  M().search_seconds.Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return results;
}

Result<ScrollResult> Collection::Scroll(const ScrollRequest& req) const {
  const Impl& im = *impl_;
  std::shared_lock<std::shared_mutex> l(im.mu_);
  ScrollResult out;
  std::unordered_map<const Segment*, RowSet> allowed;
  const bool filtered = req.filter && !internal::IsTrivial(*req.filter);
  if (filtered) {
    im.ForEachSegment([&](Segment& s) { allowed.emplace(&s, im.Matching(s, *req.filter)); });
  }
  auto it = req.offset ? im.points.lower_bound(*req.offset) : im.points.begin();
  for (; it != im.points.end(); ++it) {
    const PointLoc& loc = it->second;
    if (filtered && !allowed.at(loc.seg).Test(loc.row)) continue;
    if (out.points.size() == req.limit) {
      out.next_offset = it->first;
      break;
    }
    out.points.push_back(im.MakeRecord(*loc.seg, loc.row, req.with_payload, req.with_vectors));
  }
  return out;
}

Result<size_t> Collection::Count(const std::optional<Filter>& filter) const {
  const Impl& im = *impl_;
  std::shared_lock<std::shared_mutex> l(im.mu_);
  if (!filter || internal::IsTrivial(*filter)) return im.points.size();
  size_t n = 0;
  im.ForEachSegment([&](Segment& s) { n += im.Matching(s, *filter).Count(); });
  return n;
}

}  // namespace strata::vector
