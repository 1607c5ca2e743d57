// MilvusService: vector indexes (service.h). An index is part of the engine
// collection's schema, so CreateIndex either confirms the index the engine
// collection already has, re-creates an empty engine collection with the
// requested one, or copies the rows into a new engine collection with it.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "milvus/errors.h"
#include "milvus/service.h"

namespace strata::milvus {

using json = nlohmann::json;

namespace {

bool SameIndex(const vector::IndexParams& a, const vector::IndexParams& b) {
  return a.type == b.type && a.dim == b.dim && a.metric == b.metric && a.hnsw_m == b.hnsw_m &&
         a.hnsw_ef_construction == b.hnsw_ef_construction && a.ivf_nlist == b.ivf_nlist &&
         a.pq_m == b.pq_m && a.pq_nbits == b.pq_nbits;
}

bool SameMeta(const IndexMeta& a, const IndexMeta& b) {
  return a.index_type == b.index_type && a.metric == b.metric && a.params == b.params;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// extra_params of CreateIndexRequest: index_type, metric_type and the index
// parameters, either as "params" (a JSON object) or as keys of their own.
Result<IndexMeta> IndexFromRequest(const pbm::CreateIndexRequest& req) {
  IndexMeta idx;
  idx.field = req.field_name();
  idx.name = req.index_name().empty() ? req.field_name() : req.index_name();
  for (const auto& kv : req.extra_params()) {
    if (kv.key() == "index_type") {
      idx.index_type = Upper(kv.value());
    } else if (kv.key() == "metric_type") {
      idx.metric = Upper(kv.value());
    } else if (kv.key() == "params") {
      json j = json::parse(kv.value(), nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        return Status::InvalidArgument("index param \"params\" must be a JSON object");
      }
      for (const auto& [k, v] : j.items()) {
        idx.params.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
      }
    } else {
      idx.params.emplace_back(kv.key(), kv.value());
    }
  }
  if (idx.index_type.empty()) idx.index_type = "AUTOINDEX";
  return idx;
}

}  // namespace

// The rows are copied into a new engine collection built with `schema`, which
// then replaces the old one (drop, rename). A failure before the drop leaves
// the old collection as it was; the copy's name ("<name>.reindex-<n>") marks
// debris of a crash in between. mu_ held.
Result<std::shared_ptr<vector::Collection>> MilvusServiceImpl::Reindex(
    Target& t, const vector::CollectionSchema& schema) {
  const std::string tmp = fmt::format("{}.reindex-{}", t.name, NewId());
  STRATA_ASSIGN_OR_RETURN(auto fresh, mgr_->Create(tmp, schema));
  auto copy = [&]() -> Status {
    vector::ScrollRequest sr;
    sr.limit = 1024;
    sr.with_payload = true;
    sr.with_vectors = true;
    while (true) {
      STRATA_ASSIGN_OR_RETURN(auto page, t.coll->Scroll(sr));
      std::vector<vector::Point> pts;
      pts.reserve(page.points.size());
      for (auto& r : page.points) {
        pts.push_back(
            vector::Point{r.id, std::move(r.vectors), std::move(r.payload), std::move(r.sparse)});
      }
      if (!pts.empty()) STRATA_RETURN_IF_ERROR(fresh->Upsert(pts));
      if (!page.next_offset) break;
      sr.offset = page.next_offset;
    }
    // Like rows inserted after CreateIndex, the copies are sealed into indexed
    // segments by the engine's own policy (CollectionOptions::segment_rows).
    return Status::Ok();
  };
  if (Status st = copy(); !st.ok()) {
    fresh.reset();
    (void)mgr_->Drop(tmp);
    return st;
  }
  fresh.reset();
  t.coll.reset();
  STRATA_RETURN_IF_ERROR(mgr_->Drop(t.name));
  return mgr_->Rename(tmp, t.name);
}

Status MilvusServiceImpl::DoCreateIndex(const pbm::CreateIndexRequest& req) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_ASSIGN_OR_RETURN(auto t, OpenLocked(req.collection_name()));
  pbm::CreateIndexRequest r = req;
  if (r.field_name().empty()) {
    auto vf = t.meta->VectorFields();
    if (vf.size() != 1)
      return Status::InvalidArgument(
          "field_name is required: the collection has several vector fields");
    r.set_field_name(vf[0]->name);
  }
  const FieldMeta* f = t.meta->Field(r.field_name());
  if (f == nullptr) {
    return Status::InvalidArgument(
        fmt::format("cannot create index on non-exist field: {}", r.field_name()));
  }
  if (!IsVectorType(f->type)) {
    return Status::NotSupported(fmt::format(
        "scalar index on field {}: Strata indexes typed scalar fields by itself", f->name));
  }
  STRATA_ASSIGN_OR_RETURN(IndexMeta idx, IndexFromRequest(r));
  // Milvus's default metric per vector type.
  if (idx.metric.empty()) {
    idx.metric = f->type == DataType::kSparseFloatVector ? "IP"
                 : f->type == DataType::kBinaryVector    ? "HAMMING"
                                                         : "COSINE";
  }
  STRATA_ASSIGN_OR_RETURN(vector::IndexParams params, ToFieldIndexParams(idx, *f));
  if (const IndexMeta* have = t.meta->IndexOf(f->name)) {
    if (SameMeta(*have, idx)) return Status::Ok();
    return Status::InvalidArgument(
        fmt::format("at most one distinct index is allowed per field: field {} has index {} ({}); "
                    "drop it first",
                    f->name, have->name, have->index_type));
  }
  CollectionMeta m = *t.meta;
  idx.id = NewId();
  m.indexes.push_back(idx);
  // A sparse field's inverted index is kept by the engine from the first row.
  if (f->type == DataType::kSparseFloatVector) return SaveLocked(t.name, *t.coll, std::move(m));
  const auto& vs = t.coll->schema().vectors;
  bool same = false;
  for (const auto& v : vs) {
    if (v.name == f->name) same = SameIndex(v.index, params);
  }
  if (same) return SaveLocked(t.name, *t.coll, std::move(m));
  if (t.coll->Info().points > 0) {
    vector::Metric old_metric = vector::Metric::kL2;
    for (const auto& v : vs) {
      if (v.name == f->name) old_metric = v.index.metric;
    }
    if (old_metric == vector::Metric::kCosine && params.metric != vector::Metric::kCosine) {
      return Status::NotSupported(fmt::format(
          "field {} was indexed with COSINE, which stores its vectors normalised: a {} index "
          "over its {} rows would not see the vectors as inserted; re-insert them instead",
          f->name, idx.metric, t.coll->Info().points));
    }
    STRATA_ASSIGN_OR_RETURN(auto schema, ToVectorSchema(m));
    STRATA_ASSIGN_OR_RETURN(auto c, Reindex(t, schema));
    return SaveLocked(t.name, *c, std::move(m));
  }
  STRATA_ASSIGN_OR_RETURN(auto schema, ToVectorSchema(m));
  t.coll.reset();
  STRATA_RETURN_IF_ERROR(mgr_->Drop(t.name));
  STRATA_ASSIGN_OR_RETURN(auto c, mgr_->Create(t.name, schema));
  return SaveLocked(t.name, *c, std::move(m));
}

grpc::Status MilvusServiceImpl::CreateIndex(ServerContext*, const pbm::CreateIndexRequest* req,
                                            pbc::Status* resp) {
  Status st = Open(req->db_name(), req->collection_name()).status();
  if (st.ok()) st = DoCreateIndex(*req);
  return Reply(st, resp);
}

grpc::Status MilvusServiceImpl::DescribeIndex(ServerContext*, const pbm::DescribeIndexRequest* req,
                                              pbm::DescribeIndexResponse* resp) {
  auto t = Open(req->db_name(), req->collection_name());
  if (!t) return Reply(t.error(), resp->mutable_status());
  const size_t points = t->coll->Info().points;
  for (const auto& idx : t->meta->indexes) {
    if (!req->field_name().empty() && idx.field != req->field_name()) continue;
    if (!req->index_name().empty() && idx.name != req->index_name()) continue;
    auto* d = resp->add_index_descriptions();
    d->set_index_name(idx.name);
    d->set_indexid(idx.id);
    d->set_field_name(idx.field);
    auto add = [d](const std::string& k, const std::string& v) {
      auto* p = d->add_params();
      p->set_key(k);
      p->set_value(v);
    };
    add("index_type", idx.index_type);
    add("metric_type", idx.metric);
    json params = json::object();
    for (const auto& [k, v] : idx.params) params[k] = v;
    add("params", params.dump());
    d->set_indexed_rows(static_cast<int64_t>(points));
    d->set_total_rows(static_cast<int64_t>(points));
    d->set_pending_index_rows(0);
    d->set_state(pbc::Finished);
  }
  if (resp->index_descriptions_size() == 0) {
    return Reply(MilvusError(kCodeIndexNotFound,
                             fmt::format("index not found[collection={}]", req->collection_name())),
                 resp->mutable_status());
  }
  return Reply(Status::Ok(), resp->mutable_status());
}

grpc::Status MilvusServiceImpl::GetIndexState(ServerContext*, const pbm::GetIndexStateRequest* req,
                                              pbm::GetIndexStateResponse* resp) {
  auto t = Open(req->db_name(), req->collection_name());
  if (!t) return Reply(t.error(), resp->mutable_status());
  for (const auto& idx : t->meta->indexes) {
    if ((req->field_name().empty() || idx.field == req->field_name()) &&
        (req->index_name().empty() || idx.name == req->index_name())) {
      resp->set_state(pbc::Finished);
      return Reply(Status::Ok(), resp->mutable_status());
    }
  }
  return Reply(MilvusError(kCodeIndexNotFound,
                           fmt::format("index not found[collection={}]", req->collection_name())),
               resp->mutable_status());
}

grpc::Status MilvusServiceImpl::GetIndexBuildProgress(ServerContext*,
                                                      const pbm::GetIndexBuildProgressRequest* req,
                                                      pbm::GetIndexBuildProgressResponse* resp) {
  auto t = Open(req->db_name(), req->collection_name());
  if (!t) return Reply(t.error(), resp->mutable_status());
  if (t->meta->indexes.empty()) {
    return Reply(MilvusError(kCodeIndexNotFound,
                             fmt::format("index not found[collection={}]", req->collection_name())),
                 resp->mutable_status());
  }
  const auto points = static_cast<int64_t>(t->coll->Info().points);
  resp->set_indexed_rows(points);
  resp->set_total_rows(points);
  return Reply(Status::Ok(), resp->mutable_status());
}

grpc::Status MilvusServiceImpl::DropIndex(ServerContext*, const pbm::DropIndexRequest* req,
                                          pbc::Status* resp) {
  auto run = [&]() -> Status {
    if (auto t = Open(req->db_name(), req->collection_name()); !t) return t.error();
    std::lock_guard<std::mutex> l(mu_);
    STRATA_ASSIGN_OR_RETURN(auto t, OpenLocked(req->collection_name()));
    if (t.meta->loaded) {
      return Status::PreconditionFailed(
          fmt::format("index cannot be dropped, collection is loaded, please release it first: {}",
                      req->collection_name()));
    }
    CollectionMeta m = *t.meta;
    size_t before = m.indexes.size();
    std::erase_if(m.indexes, [&](const IndexMeta& i) {
      return (req->field_name().empty() || i.field == req->field_name()) &&
             (req->index_name().empty() || i.name == req->index_name());
    });
    if (m.indexes.size() == before) {
      return MilvusError(kCodeIndexNotFound,
                         fmt::format("index not found[collection={}]", req->collection_name()));
    }
    return SaveLocked(t.name, *t.coll, std::move(m));
  };
  return Reply(run(), resp);
}

}  // namespace strata::milvus
