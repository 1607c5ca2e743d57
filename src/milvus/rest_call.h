// RestHandler::Call: one REST request being served (rest.cc, rest_entities.cc):
// its JSON body, parameter accessors that answer Milvus's REST errors
// (thrown as RestFailure, caught by Dispatch), and the endpoints.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "milvus/rest.h"

namespace strata::milvus {

struct RestHandler::Call {
  MilvusServiceImpl* svc;
  const nlohmann::json& body;
  bool allow_int64;
  std::string db;
  std::string_view path;

  // Parameters (keys matched as Go's encoding/json does: any case). A
  // missing required one is 1802, a wrong JSON type 1801.
  const nlohmann::json* Get(std::string_view key) const;
  std::string Str(std::string_view key, bool required) const;
  int64_t Int(std::string_view key, int64_t dflt) const;
  bool Bool(std::string_view key, bool dflt) const;
  std::vector<std::string> StrList(std::string_view key, bool required) const;

  // Fails with the RPC's status unless it is success.
  static void Check(const grpc::Status& g, const pbc::Status& st);
  static RestReply Ok(nlohmann::json data);
  RestReply NotFound() const;

  // Runs an RPC and fails unless its status is success.
  template <class Req, class Resp>
  Resp Rpc(grpc::Status (MilvusServiceImpl::*fn)(ServerContext*, const Req*, Resp*),
           const Req& req) const {
    Resp resp;
    const grpc::Status g = (svc->*fn)(nullptr, &req, &resp);
    Check(g, resp.status());
    return resp;
  }
  // An RPC answering only a status, on a collection by name.
  template <class Req>
  RestReply Simple(grpc::Status (MilvusServiceImpl::*fn)(ServerContext*, const Req*, pbc::Status*),
                   const std::string& collection) const {
    Req req;
    req.set_db_name(db);
    req.set_collection_name(collection);
    pbc::Status st;
    Check((svc->*fn)(nullptr, &req, &st), st);
    return Ok(nlohmann::json::object());
  }
  pbs::CollectionSchema Schema(const std::string& collection) const;

  RestReply Collections(std::string_view action);
  RestReply CreateCollection();
  RestReply DescribeCollection();
  RestReply Indexes(std::string_view action);
  RestReply Partitions(std::string_view action);
  RestReply Aliases(std::string_view action);
  // rest_entities.cc
  RestReply Entities(std::string_view action);
  RestReply Write(bool insert);
  RestReply Delete();
  RestReply Query(bool by_id);
  RestReply Search();
  RestReply HybridSearch();
  // The search params of one (sub-)search as KeyValuePairs.
  void SearchParamsKv(const nlohmann::json& sub, const char* params_key,
                      google::protobuf::RepeatedPtrField<pbc::KeyValuePair>* kv) const;
  std::string PkFilter(const pbs::CollectionSchema& schema, const nlohmann::json& id) const;
  RestReply SearchReply(const pbm::SearchResults& resp) const;
};

}  // namespace strata::milvus
