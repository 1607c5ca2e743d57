// MilvusService: connection, collections and load state (service.h).
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <strata/core/file_util.h>
#include <strata/core/log.h>

#include "milvus/errors.h"
#include "milvus/service.h"

namespace strata::milvus {

namespace {

constexpr log::Logger kLog("milvus");
constexpr const char* kMetaFile = "/milvus.json";
// Reported by GetVersion; the SDKs compare it to enable features.
constexpr const char* kMilvusVersion = "v2.5.0";

// Strata has one database; Milvus's is called "default".
Status CheckDb(const std::string& db) {
  if (db.empty() || db == "default") return Status::Ok();
  return Status::NotFound(fmt::format(
      "database not found[database={}]: Strata serves only the \"default\" database", db));
}

Status CollectionNotFound(const std::string& name) {
  return MilvusError(kCodeCollectionNotFound,
                     fmt::format("collection not found[collection={}]", name));
}

}  // namespace

grpc::Status Reply(const Status& st, pbc::Status* out) {
  ToProtoStatus(st, out);
  if (!st.ok()) kLog.Debug("milvus rpc error: {}", st.ToString());
  return grpc::Status::OK;
}

MilvusServiceImpl::MilvusServiceImpl(vector::CollectionManager* manager) : mgr_(manager) {}

int64_t MilvusServiceImpl::NewId() {
  const int64_t now = static_cast<int64_t>(HybridNow());
  int64_t prev = last_id_.load();
  int64_t next;
  do {
    next = std::max(prev + 1, now);
  } while (!last_id_.compare_exchange_weak(prev, next));
  return next;
}

Result<MilvusServiceImpl::Target> MilvusServiceImpl::OpenLocked(const std::string& alias_or_name) {
  const std::string name = ResolveLocked(alias_or_name);
  auto c = mgr_->Get(name);
  if (!c) return CollectionNotFound(alias_or_name);
  Target t;
  t.name = name;
  t.coll = *c;
  auto it = metas_.find(name);
  if (it != metas_.end()) {
    t.meta = it->second;
    return t;
  }
  auto text = ReadFileToString(t.coll->dir() + kMetaFile);
  if (!text) {
    return Status::NotSupported(fmt::format(
        "collection \"{}\" was not created through the Milvus API (it has no Milvus schema); "
        "use the Qdrant API for it",
        name));
  }
  STRATA_ASSIGN_OR_RETURN(auto m, MetaFromJson(*text));
  t.meta = std::make_shared<const CollectionMeta>(std::move(m));
  metas_[name] = t.meta;
  return t;
}

Result<MilvusServiceImpl::Target> MilvusServiceImpl::Open(const std::string& db,
                                                          const std::string& name) {
  STRATA_RETURN_IF_ERROR(CheckDb(db));
  std::lock_guard<std::mutex> l(mu_);
  return OpenLocked(name);
}

Result<MilvusServiceImpl::Target> MilvusServiceImpl::OpenLoaded(const std::string& db,
                                                                const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(auto t, Open(db, name));
  if (!t.meta->loaded) {
    return MilvusError(kCodeCollectionNotLoaded,
                       fmt::format("collection not loaded[collection={}]", name));
  }
  return t;
}

Status MilvusServiceImpl::SaveLocked(const std::string& name, const vector::Collection& c,
                                     CollectionMeta meta) {
  STRATA_RETURN_IF_ERROR(WriteFileAtomic(c.dir() + kMetaFile, MetaToJson(meta)));
  metas_[name] = std::make_shared<const CollectionMeta>(std::move(meta));
  return Status::Ok();
}

grpc::Status MilvusServiceImpl::Connect(ServerContext*, const pbm::ConnectRequest* req,
                                        pbm::ConnectResponse* resp) {
  ToProtoStatus(Status::Ok(), resp->mutable_status());
  auto* si = resp->mutable_server_info();
  si->set_build_tags("strata");
  si->set_deploy_mode("STANDALONE");
  (*si->mutable_reserved())["strata"] = "0.1.0";
  resp->set_identifier(NewId());
  kLog.Debug("client connected: {} {}", req->client_info().sdk_type(),
             req->client_info().sdk_version());
  return grpc::Status::OK;
}

grpc::Status MilvusServiceImpl::GetVersion(ServerContext*, const pbm::GetVersionRequest*,
                                           pbm::GetVersionResponse* resp) {
  ToProtoStatus(Status::Ok(), resp->mutable_status());
  resp->set_version(kMilvusVersion);
  return grpc::Status::OK;
}

grpc::Status MilvusServiceImpl::CheckHealth(ServerContext*, const pbm::CheckHealthRequest*,
                                            pbm::CheckHealthResponse* resp) {
  ToProtoStatus(Status::Ok(), resp->mutable_status());
  resp->set_ishealthy(true);
  return grpc::Status::OK;
}

grpc::Status MilvusServiceImpl::CreateCollection(ServerContext*,
                                                 const pbm::CreateCollectionRequest* req,
                                                 pbc::Status* resp) {
  auto run = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(CheckDb(req->db_name()));
    pbs::CollectionSchema s;
    if (!s.ParseFromString(req->schema())) {
      return Status::InvalidArgument(
          "schema is not a serialized milvus.proto.schema.CollectionSchema");
    }
    if (!s.name().empty() && s.name() != req->collection_name()) {
      return Status::InvalidArgument(
          fmt::format("collection name ({}) does not match the schema's name ({})",
                      req->collection_name(), s.name()));
    }
    if (req->num_partitions() > 0) {
      return Status::NotSupported("num_partitions (partition keys) is not supported");
    }
    STRATA_ASSIGN_OR_RETURN(CollectionMeta m, MetaFromProto(s));
    m.id = NewId();
    m.created_ts = HybridNow();
    m.partitions.push_back({std::string(kDefaultPartition), NewId(), m.created_ts, false});
    m.shards = req->shards_num() > 0 ? req->shards_num() : 1;
    m.consistency_level = req->consistency_level();
    for (const auto& p : req->properties()) m.properties.emplace_back(p.key(), p.value());
    STRATA_ASSIGN_OR_RETURN(auto vs, ToVectorSchema(m));
    std::lock_guard<std::mutex> l(mu_);
    if (mgr_->Exists(req->collection_name())) {
      return Status::AlreadyExists(
          fmt::format("collection {} already exists", req->collection_name()));
    }
    if (ResolveLocked(req->collection_name()) != req->collection_name()) {
      return Status::InvalidArgument(fmt::format(
          "collection name [{}] conflicts with an existing alias", req->collection_name()));
    }
    STRATA_ASSIGN_OR_RETURN(auto c, mgr_->Create(req->collection_name(), vs));
    Status st = SaveLocked(req->collection_name(), *c, std::move(m));
    if (!st.ok()) (void)mgr_->Drop(req->collection_name());
    return st;
  };
  return Reply(run(), resp);
}

grpc::Status MilvusServiceImpl::DescribeCollection(ServerContext*,
                                                   const pbm::DescribeCollectionRequest* req,
                                                   pbm::DescribeCollectionResponse* resp) {
  auto t = Open(req->db_name(), req->collection_name());
  if (!t) return Reply(t.error(), resp->mutable_status());
  const CollectionMeta& m = *t->meta;
  MetaToProto(m, t->name, resp->mutable_schema());
  resp->set_collectionid(m.id);
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& a : AliasesOfLocked(t->name)) resp->add_aliases(a);
  }
  resp->set_created_timestamp(m.created_ts);
  resp->set_created_utc_timestamp(m.created_ts >> 18);
  resp->set_shards_num(m.shards);
  resp->set_consistency_level(static_cast<pbc::ConsistencyLevel>(m.consistency_level));
  resp->set_collection_name(t->name);
  resp->set_db_name("default");
  resp->set_num_partitions(static_cast<int64_t>(m.partitions.size()));
  for (const auto& [k, v] : m.properties) {
    auto* p = resp->add_properties();
    p->set_key(k);
    p->set_value(v);
  }
  return Reply(Status::Ok(), resp->mutable_status());
}

grpc::Status MilvusServiceImpl::HasCollection(ServerContext*, const pbm::HasCollectionRequest* req,
                                              pbm::BoolResponse* resp) {
  Status st = CheckDb(req->db_name());
  if (st.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    resp->set_value(mgr_->Exists(ResolveLocked(req->collection_name())));
  }
  return Reply(st, resp->mutable_status());
}

grpc::Status MilvusServiceImpl::ShowCollections(ServerContext*,
                                                const pbm::ShowCollectionsRequest* req,
                                                pbm::ShowCollectionsResponse* resp) {
  Status st = CheckDb(req->db_name());
  if (!st.ok()) return Reply(st, resp->mutable_status());
  std::vector<std::string> names = mgr_->List();
  if (req->collection_names_size() > 0) {
    names.assign(req->collection_names().begin(), req->collection_names().end());
  }
  for (const auto& n : names) {
    auto t = Open(req->db_name(), n);
    if (!t) {
      if (req->collection_names_size() > 0) return Reply(t.error(), resp->mutable_status());
      continue;  // a collection of the Qdrant API only
    }
    if (req->type() == pbm::InMemory && !t->meta->loaded) continue;
    resp->add_collection_names(n);
    resp->add_collection_ids(t->meta->id);
    resp->add_created_timestamps(t->meta->created_ts);
    resp->add_created_utc_timestamps(t->meta->created_ts >> 18);
    resp->add_inmemory_percentages(t->meta->loaded ? 100 : 0);
    resp->add_query_service_available(t->meta->loaded);
    resp->add_shards_num(t->meta->shards);
  }
  return Reply(Status::Ok(), resp->mutable_status());
}

grpc::Status MilvusServiceImpl::DropCollection(ServerContext*,
                                               const pbm::DropCollectionRequest* req,
                                               pbc::Status* resp) {
  Status st = CheckDb(req->db_name());
  if (st.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    // Milvus answers success for a collection that does not exist.
    if (ResolveLocked(req->collection_name()) != req->collection_name()) {
      st = Status::InvalidArgument(
          fmt::format("cannot drop the collection via alias = {}", req->collection_name()));
    } else if (!AliasesOfLocked(req->collection_name()).empty()) {
      st = Status::PreconditionFailed(fmt::format(
          "unable to drop the collection [{}] because it has associated aliases [{}], please "
          "remove all aliases before dropping the collection",
          req->collection_name(), fmt::join(AliasesOfLocked(req->collection_name()), ", ")));
    } else if (mgr_->Exists(req->collection_name())) {
      auto t = OpenLocked(req->collection_name());
      st = t ? mgr_->Drop(req->collection_name()) : t.error();
      if (st.ok()) metas_.erase(req->collection_name());
    }
  }
  return Reply(st, resp);
}

grpc::Status MilvusServiceImpl::RenameCollection(ServerContext*,
                                                 const pbm::RenameCollectionRequest* req,
                                                 pbc::Status* resp) {
  auto run = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(CheckDb(req->db_name()));
    STRATA_RETURN_IF_ERROR(CheckDb(req->newdbname()));
    std::lock_guard<std::mutex> l(mu_);
    STRATA_ASSIGN_OR_RETURN(auto t, OpenLocked(req->oldname()));
    if (t.name != req->oldname()) {
      return Status::InvalidArgument(
          fmt::format("unsupported use an alias to rename collection, alias:{}", req->oldname()));
    }
    if (ResolveLocked(req->newname()) != req->newname()) {
      return Status::InvalidArgument(
          fmt::format("new collection name {} is an alias", req->newname()));
    }
    if (mgr_->Exists(req->newname())) {
      return Status::AlreadyExists(
          fmt::format("duplicated new collection name {}", req->newname()));
    }
    t.coll.reset();
    STRATA_ASSIGN_OR_RETURN(auto c, mgr_->Rename(req->oldname(), req->newname()));
    metas_.erase(req->oldname());
    metas_[req->newname()] = t.meta;
    bool moved = false;
    for (auto& [a, c] : aliases_) {
      if (c == req->oldname()) c = req->newname(), moved = true;
    }
    return moved ? SaveAliasesLocked() : Status::Ok();
  };
  return Reply(run(), resp);
}

Status RequireVectorIndexes(const CollectionMeta& m, const std::string& collection) {
  for (const FieldMeta* f : m.VectorFields()) {
    if (m.IndexOf(f->name) == nullptr) {
      return MilvusError(kCodeIndexNotFound,
                         fmt::format("there is no vector index on field: [{}], please create "
                                     "index firstly: collection={}",
                                     f->name, collection));
    }
  }
  return Status::Ok();
}

grpc::Status MilvusServiceImpl::LoadCollection(ServerContext*,
                                               const pbm::LoadCollectionRequest* req,
                                               pbc::Status* resp) {
  auto run = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(CheckDb(req->db_name()));
    STRATA_RETURN_IF_ERROR(CheckLoadOptions(*req));
    std::lock_guard<std::mutex> l(mu_);
    STRATA_ASSIGN_OR_RETURN(auto t, OpenLocked(req->collection_name()));
    STRATA_RETURN_IF_ERROR(RequireVectorIndexes(*t.meta, req->collection_name()));
    bool all = true;
    for (const auto& p : t.meta->partitions) all &= p.loaded;
    if (all) return Status::Ok();
    CollectionMeta m = *t.meta;
    m.SetLoaded(true);
    return SaveLocked(t.name, *t.coll, std::move(m));
  };
  return Reply(run(), resp);
}

grpc::Status MilvusServiceImpl::ReleaseCollection(ServerContext*,
                                                  const pbm::ReleaseCollectionRequest* req,
                                                  pbc::Status* resp) {
  auto run = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(CheckDb(req->db_name()));
    std::lock_guard<std::mutex> l(mu_);
    STRATA_ASSIGN_OR_RETURN(auto t, OpenLocked(req->collection_name()));
    if (!t.meta->loaded) return Status::Ok();
    CollectionMeta m = *t.meta;
    m.SetLoaded(false);
    return SaveLocked(t.name, *t.coll, std::move(m));
  };
  return Reply(run(), resp);
}

grpc::Status MilvusServiceImpl::GetLoadState(ServerContext*, const pbm::GetLoadStateRequest* req,
                                             pbm::GetLoadStateResponse* resp) {
  auto t = Open(req->db_name(), req->collection_name());
  if (!t) return Reply(t.error(), resp->mutable_status());
  bool loaded = t->meta->loaded;
  for (const auto& name : req->partition_names()) {
    const PartitionMeta* p = t->meta->Partition(name);
    if (p == nullptr) {
      return Reply(MilvusError(kCodePartitionNotFound,
                               fmt::format("partition not found[partition={}]", name)),
                   resp->mutable_status());
    }
    loaded &= p->loaded;
  }
  resp->set_state(loaded ? pbc::LoadStateLoaded : pbc::LoadStateNotLoad);
  return Reply(Status::Ok(), resp->mutable_status());
}

grpc::Status MilvusServiceImpl::GetLoadingProgress(ServerContext*,
                                                   const pbm::GetLoadingProgressRequest* req,
                                                   pbm::GetLoadingProgressResponse* resp) {
  auto t = Open(req->db_name(), req->collection_name());
  if (!t) return Reply(t.error(), resp->mutable_status());
  for (const auto& name : req->partition_names()) {
    const PartitionMeta* p = t->meta->Partition(name);
    if (p == nullptr) {
      return Reply(MilvusError(kCodePartitionNotFound,
                               fmt::format("partition not found[partition={}]", name)),
                   resp->mutable_status());
    }
    if (!p->loaded) {
      return Reply(MilvusError(kCodePartitionNotLoaded,
                               fmt::format("partition not loaded[partition={}]", name)),
                   resp->mutable_status());
    }
  }
  if (!t->meta->loaded) {
    return Reply(
        MilvusError(kCodeCollectionNotLoaded,
                    fmt::format("collection not loaded[collection={}]", req->collection_name())),
        resp->mutable_status());
  }
  resp->set_progress(100);
  resp->set_refresh_progress(100);
  return Reply(Status::Ok(), resp->mutable_status());
}

}  // namespace strata::milvus
