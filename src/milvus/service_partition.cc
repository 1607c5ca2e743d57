// MilvusService: partitions (service.h). A partition is a name in the
// collection's milvus.json and a hidden payload key on each row (meta.h); the
// engine collection is one, and reads and deletes restrict to partitions with
// a filter conjunction. Load state is kept per partition.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "milvus/errors.h"
#include "milvus/service.h"

namespace strata::milvus {

namespace {

constexpr size_t kMaxPartitions = 1024;  // Milvus's rootCoord.maxPartitionNum default

Status CheckDb(const std::string& db) {
  if (db.empty() || db == "default") return Status::Ok();
  return Status::NotFound(fmt::format("database not found[database={}]", db));
}

Status PartitionNotFound(const std::string& name) {
  return MilvusError(kCodePartitionNotFound,
                     fmt::format("partition not found[partition={}]", name));
}

// Milvus's rule: 1..255 characters, letters, digits and '_', not starting
// with a digit.
Status CheckPartitionName(const std::string& n) {
  auto invalid = [&](const char* why) {
    return Status::InvalidArgument(fmt::format("Invalid partition name: {}. {}", n, why));
  };
  if (n.empty()) return invalid("Partition name should not be empty.");
  if (n.size() > 255) return invalid("The length of a partition name must be less than 255.");
  const char c0 = n[0];
  if (c0 != '_' && !std::isalpha(static_cast<unsigned char>(c0))) {
    return invalid("The first character of a partition name must be an underscore or letter.");
  }
  for (char c : n) {
    if (c != '_' && !std::isalnum(static_cast<unsigned char>(c))) {
      return invalid("Partition name can only contain numbers, letters and underscores.");
    }
  }
  return Status::Ok();
}

}  // namespace

vector::Filter PartitionMatch(const std::string& name) {
  return vector::Condition::Match(std::string(kPartitionKey), vector::FilterValue::String(name));
}

std::optional<vector::Filter> AndFilters(std::optional<vector::Filter> a,
                                         std::optional<vector::Filter> b) {
  if (!a) return b;
  if (!b) return a;
  std::vector<vector::Condition> c;
  c.push_back(std::move(*a));
  c.push_back(std::move(*b));
  return vector::Condition::And(std::move(c));
}

Result<std::string> WritePartition(const CollectionMeta& m, const std::string& name) {
  const std::string n = name.empty() ? std::string(kDefaultPartition) : name;
  if (m.Partition(n) == nullptr) return PartitionNotFound(n);
  return n;
}

Result<std::optional<vector::Filter>> ReadPartitionsFilter(
    const CollectionMeta& m, const google::protobuf::RepeatedPtrField<std::string>& names) {
  std::vector<vector::FilterValue> vals;
  if (names.empty()) {
    for (const auto& p : m.partitions) {
      if (p.loaded) vals.push_back(vector::FilterValue::String(p.name));
    }
  } else {
    for (const auto& n : names) {
      const PartitionMeta* p = m.Partition(n);
      if (p == nullptr) return PartitionNotFound(n);
      if (!p->loaded) {
        return MilvusError(kCodePartitionNotLoaded,
                           fmt::format("partition not loaded[partition={}]", n));
      }
      vals.push_back(vector::FilterValue::String(n));
    }
  }
  // Always a filter, even over every partition: rows of a partition whose
  // drop was cut short (rows deleted first, then the name) must stay hidden.
  return std::optional<vector::Filter>(
      vector::Condition::MatchAny(std::string(kPartitionKey), std::move(vals)));
}

grpc::Status MilvusServiceImpl::CreatePartition(ServerContext*,
                                                const pbm::CreatePartitionRequest* req,
                                                pbc::Status* resp) {
  auto run = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(CheckDb(req->db_name()));
    STRATA_RETURN_IF_ERROR(CheckPartitionName(req->partition_name()));
    std::lock_guard<std::mutex> l(mu_);
    STRATA_ASSIGN_OR_RETURN(auto t, OpenLocked(req->collection_name()));
    // Milvus answers success for a partition that already exists.
    if (t.meta->Partition(req->partition_name()) != nullptr) return Status::Ok();
    if (t.meta->partitions.size() >= kMaxPartitions) {
      return Status::InvalidArgument(
          fmt::format("partition number ({}) exceeds max configuration ({})",
                      t.meta->partitions.size(), kMaxPartitions));
    }
    CollectionMeta m = *t.meta;
    // A collection loaded as a whole loads its new partitions too.
    bool all = true;
    for (const auto& p : m.partitions) all &= p.loaded;
    m.partitions.push_back({req->partition_name(), NewId(), HybridNow(), all});
    m.SyncLoaded();
    return SaveLocked(t.name, *t.coll, std::move(m));
  };
  return Reply(run(), resp);
}

grpc::Status MilvusServiceImpl::DropPartition(ServerContext*, const pbm::DropPartitionRequest* req,
                                              pbc::Status* resp) {
  auto run = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(CheckDb(req->db_name()));
    if (req->partition_name() == kDefaultPartition) {
      return Status::InvalidArgument("default partition cannot be deleted");
    }
    std::lock_guard<std::mutex> l(mu_);
    STRATA_ASSIGN_OR_RETURN(auto t, OpenLocked(req->collection_name()));
    const PartitionMeta* p = t.meta->Partition(req->partition_name());
    if (p == nullptr) return Status::Ok();  // Milvus: dropping a missing partition succeeds
    if (p->loaded) {
      return Status::InvalidArgument(
          "partition cannot be dropped, partition is loaded, please release it first");
    }
    // Rows first, then the name: a cut-short drop leaves an empty partition,
    // never rows of a partition that no longer exists.
    size_t deleted = 0;
    STRATA_RETURN_IF_ERROR(t.coll->DeleteByFilter(PartitionMatch(p->name), {}, &deleted));
    CollectionMeta m = *t.meta;
    std::erase_if(m.partitions, [&](const PartitionMeta& x) { return x.name == p->name; });
    m.SyncLoaded();
    return SaveLocked(t.name, *t.coll, std::move(m));
  };
  return Reply(run(), resp);
}

grpc::Status MilvusServiceImpl::HasPartition(ServerContext*, const pbm::HasPartitionRequest* req,
                                             pbm::BoolResponse* resp) {
  auto t = Open(req->db_name(), req->collection_name());
  if (!t) return Reply(t.error(), resp->mutable_status());
  resp->set_value(t->meta->Partition(req->partition_name()) != nullptr);
  return Reply(Status::Ok(), resp->mutable_status());
}

grpc::Status MilvusServiceImpl::ShowPartitions(ServerContext*,
                                               const pbm::ShowPartitionsRequest* req,
                                               pbm::ShowPartitionsResponse* resp) {
  auto t = Open(req->db_name(), req->collection_name());
  if (!t) return Reply(t.error(), resp->mutable_status());
  std::vector<const PartitionMeta*> ps;
  if (req->partition_names_size() == 0) {
    for (const auto& p : t->meta->partitions) {
      if (req->type() == pbm::InMemory && !p.loaded) continue;  // only the loaded ones
      ps.push_back(&p);
    }
  } else {
    for (const auto& n : req->partition_names()) {
      const PartitionMeta* p = t->meta->Partition(n);
      if (p == nullptr) return Reply(PartitionNotFound(n), resp->mutable_status());
      ps.push_back(p);
    }
  }
  for (const PartitionMeta* p : ps) {
    resp->add_partition_names(p->name);
    resp->add_partitionids(p->id);
    resp->add_created_timestamps(p->created_ts);
    resp->add_created_utc_timestamps(p->created_ts >> 18);
    resp->add_inmemory_percentages(p->loaded ? 100 : 0);
  }
  return Reply(Status::Ok(), resp->mutable_status());
}

grpc::Status MilvusServiceImpl::LoadPartitions(ServerContext*,
                                               const pbm::LoadPartitionsRequest* req,
                                               pbc::Status* resp) {
  auto run = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(CheckDb(req->db_name()));
    STRATA_RETURN_IF_ERROR(CheckLoadOptions(*req));
    if (req->partition_names_size() == 0) {
      return Status::InvalidArgument("partition names should not be empty");
    }
    std::lock_guard<std::mutex> l(mu_);
    STRATA_ASSIGN_OR_RETURN(auto t, OpenLocked(req->collection_name()));
    STRATA_RETURN_IF_ERROR(RequireVectorIndexes(*t.meta, req->collection_name()));
    CollectionMeta m = *t.meta;
    for (const auto& n : req->partition_names()) {
      PartitionMeta* p = m.MutablePartition(n);
      if (p == nullptr) return PartitionNotFound(n);
      p->loaded = true;
    }
    m.SyncLoaded();
    return SaveLocked(t.name, *t.coll, std::move(m));
  };
  return Reply(run(), resp);
}

grpc::Status MilvusServiceImpl::ReleasePartitions(ServerContext*,
                                                  const pbm::ReleasePartitionsRequest* req,
                                                  pbc::Status* resp) {
  auto run = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(CheckDb(req->db_name()));
    if (req->partition_names_size() == 0) {
      return Status::InvalidArgument("partition names should not be empty");
    }
    std::lock_guard<std::mutex> l(mu_);
    STRATA_ASSIGN_OR_RETURN(auto t, OpenLocked(req->collection_name()));
    CollectionMeta m = *t.meta;
    for (const auto& n : req->partition_names()) {
      PartitionMeta* p = m.MutablePartition(n);
      if (p == nullptr) return PartitionNotFound(n);
      p->loaded = false;
    }
    m.SyncLoaded();
    return SaveLocked(t.name, *t.coll, std::move(m));
  };
  return Reply(run(), resp);
}

grpc::Status MilvusServiceImpl::GetPartitionStatistics(
    ServerContext*, const pbm::GetPartitionStatisticsRequest* req,
    pbm::GetPartitionStatisticsResponse* resp) {
  auto run = [&]() -> Status {
    STRATA_ASSIGN_OR_RETURN(auto t, Open(req->db_name(), req->collection_name()));
    if (t.meta->Partition(req->partition_name()) == nullptr) {
      return PartitionNotFound(req->partition_name());
    }
    STRATA_ASSIGN_OR_RETURN(size_t n, t.coll->Count(PartitionMatch(req->partition_name())));
    auto* kv = resp->add_stats();
    kv->set_key("row_count");
    kv->set_value(std::to_string(n));
    return Status::Ok();
  };
  return Reply(run(), resp->mutable_status());
}

}  // namespace strata::milvus
