// MilvusService: collection aliases (service.h). An alias names a collection
// in every RPC that takes a collection name; aliases and collection names
// share one namespace. They live in ROOT/.milvus-aliases.json: a name that
// starts with '.' is never a collection, so the file cannot collide with one.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/file_util.h>

#include "milvus/errors.h"
#include "milvus/service.h"

namespace strata::milvus {

using json = nlohmann::json;

namespace {

std::string AliasFile(const vector::CollectionManager& m) {
  return m.root() + "/.milvus-aliases.json";
}

Status CheckDb(const std::string& db) {
  if (db.empty() || db == "default") return Status::Ok();
  return Status::NotFound(fmt::format("database not found[database={}]", db));
}

}  // namespace

Status MilvusServiceImpl::LoadAliasesLocked() {
  if (aliases_loaded_) return Status::Ok();
  auto text = ReadFileToString(AliasFile(*mgr_));
  if (text) {
    json j = json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return Status::Corruption(fmt::format("{} is not a JSON object", AliasFile(*mgr_)));
    }
    for (const auto& [a, c] : j.items()) {
      if (c.is_string()) aliases_[a] = c.get<std::string>();
    }
  }
  aliases_loaded_ = true;
  return Status::Ok();
}

Status MilvusServiceImpl::SaveAliasesLocked() {
  json j = json::object();
  for (const auto& [a, c] : aliases_) j[a] = c;
  return WriteFileAtomic(AliasFile(*mgr_), j.dump(2));
}

std::string MilvusServiceImpl::ResolveLocked(const std::string& name) {
  if (!LoadAliasesLocked().ok()) return name;
  auto it = aliases_.find(name);
  return it == aliases_.end() ? name : it->second;
}

std::vector<std::string> MilvusServiceImpl::AliasesOfLocked(const std::string& collection) const {
  std::vector<std::string> out;
  for (const auto& [a, c] : aliases_) {
    if (c == collection) out.push_back(a);
  }
  return out;
}

grpc::Status MilvusServiceImpl::CreateAlias(ServerContext*, const pbm::CreateAliasRequest* req,
                                            pbc::Status* resp) {
  auto run = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(CheckDb(req->db_name()));
    STRATA_RETURN_IF_ERROR(vector::CollectionManager::ValidateName(req->alias()));
    std::lock_guard<std::mutex> l(mu_);
    STRATA_RETURN_IF_ERROR(LoadAliasesLocked());
    if (mgr_->Exists(req->alias())) {
      return Status::InvalidArgument(fmt::format(
          "alias and collection name conflict[database=default][alias={}]", req->alias()));
    }
    if (aliases_.count(req->alias())) {
      return Status::AlreadyExists(fmt::format("alias {} already exists (collection {})",
                                               req->alias(), aliases_[req->alias()]));
    }
    STRATA_ASSIGN_OR_RETURN(auto t, OpenLocked(req->collection_name()));
    if (t.name != req->collection_name()) {
      return Status::InvalidArgument(
          fmt::format("cannot create an alias of an alias ({})", req->collection_name()));
    }
    aliases_[req->alias()] = t.name;
    Status st = SaveAliasesLocked();
    if (!st.ok()) aliases_.erase(req->alias());
    return st;
  };
  return Reply(run(), resp);
}

grpc::Status MilvusServiceImpl::DropAlias(ServerContext*, const pbm::DropAliasRequest* req,
                                          pbc::Status* resp) {
  auto run = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(CheckDb(req->db_name()));
    std::lock_guard<std::mutex> l(mu_);
    STRATA_RETURN_IF_ERROR(LoadAliasesLocked());
    auto it = aliases_.find(req->alias());
    if (it == aliases_.end()) return Status::Ok();  // as Milvus: dropping a missing alias succeeds
    const std::string target = it->second;
    aliases_.erase(it);
    Status st = SaveAliasesLocked();
    if (!st.ok()) aliases_[req->alias()] = target;
    return st;
  };
  return Reply(run(), resp);
}

grpc::Status MilvusServiceImpl::AlterAlias(ServerContext*, const pbm::AlterAliasRequest* req,
                                           pbc::Status* resp) {
  auto run = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(CheckDb(req->db_name()));
    std::lock_guard<std::mutex> l(mu_);
    STRATA_RETURN_IF_ERROR(LoadAliasesLocked());
    auto it = aliases_.find(req->alias());
    if (it == aliases_.end()) {
      return Status::NotFound(
          fmt::format("alias not found[database=default][alias={}]", req->alias()));
    }
    if (!mgr_->Exists(req->collection_name())) {
      return MilvusError(kCodeCollectionNotFound, fmt::format("collection not found[collection={}]",
                                                              req->collection_name()));
    }
    const std::string before = it->second;
    it->second = req->collection_name();
    Status st = SaveAliasesLocked();
    if (!st.ok()) aliases_[req->alias()] = before;
    return st;
  };
  return Reply(run(), resp);
}

grpc::Status MilvusServiceImpl::DescribeAlias(ServerContext*, const pbm::DescribeAliasRequest* req,
                                              pbm::DescribeAliasResponse* resp) {
  Status st = CheckDb(req->db_name());
  if (st.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    st = LoadAliasesLocked();
    auto it = aliases_.find(req->alias());
    if (st.ok() && it == aliases_.end()) {
      st = Status::NotFound(
          fmt::format("alias not found[database=default][alias={}]", req->alias()));
    } else if (st.ok()) {
      resp->set_db_name("default");
      resp->set_alias(it->first);
      resp->set_collection(it->second);
    }
  }
  return Reply(st, resp->mutable_status());
}

grpc::Status MilvusServiceImpl::ListAliases(ServerContext*, const pbm::ListAliasesRequest* req,
                                            pbm::ListAliasesResponse* resp) {
  Status st = CheckDb(req->db_name());
  if (st.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    st = LoadAliasesLocked();
    if (st.ok() && !req->collection_name().empty() && !mgr_->Exists(req->collection_name())) {
      st = MilvusError(kCodeCollectionNotFound,
                       fmt::format("collection not found[collection={}]", req->collection_name()));
    }
    if (st.ok()) {
      resp->set_db_name("default");
      resp->set_collection_name(req->collection_name());
      for (const auto& [a, c] : aliases_) {
        if (req->collection_name().empty() || c == req->collection_name()) resp->add_aliases(a);
      }
    }
  }
  return Reply(st, resp->mutable_status());
}

}  // namespace strata::milvus
