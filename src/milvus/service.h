// MilvusServiceImpl: the MilvusService RPCs over a vector::CollectionManager.
// Every RPC answers gRPC OK with the outcome in the response's common.Status,
// as Milvus does (the SDKs read that status); RPCs not declared in
// proto/milvus/milvus.proto answer gRPC UNIMPLEMENTED. The methods never touch
// the ServerContext, so tests call them directly with a null one (no socket).
//
// Thread-safety: RPCs run concurrently on gRPC's threads. mu_ guards metas_
// and serialises the schema-changing RPCs (create, drop, rename, index, load);
// data RPCs take a snapshot of the collection's meta and run outside it.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <grpcpp/grpcpp.h>

#include <strata/core/result.h>
#include <strata/vector/collection.h>

#include "milvus.grpc.pb.h"
#include "milvus/convert.h"
#include "milvus/meta.h"

namespace strata::milvus {

namespace pbm = ::milvus::proto::milvus;
namespace pbc = ::milvus::proto::common;
namespace pbs = ::milvus::proto::schema;
using grpc::ServerContext;

// Sets *out from st (logged at debug level when an error) and answers gRPC OK.
grpc::Status Reply(const Status& st, pbc::Status* out);

// What a load request asks that one Strata node cannot give (more replicas,
// a subset of fields, resource groups) is refused rather than ignored.
// `refresh` needs nothing: every acknowledged write is already searchable.
template <class LoadRequest>
Status CheckLoadOptions(const LoadRequest& req) {
  if (req.replica_number() > 1) {
    return Status::NotSupported("replica_number > 1: Strata serves one replica");
  }
  if (req.load_fields_size() > 0 || req.skip_load_dynamic_field()) {
    return Status::NotSupported("load_fields: Strata loads every field");
  }
  if (req.resource_groups_size() > 0) {
    return Status::NotSupported("resource_groups: Strata has one resource group");
  }
  if (!req.load_params().empty()) {
    return Status::NotSupported("load_params: Strata has no load-time parameters");
  }
  return Status::Ok();
}
// Milvus loads only a collection whose every vector field has an index.
Status RequireVectorIndexes(const CollectionMeta& m, const std::string& collection);

// A Milvus boolean expression as an engine filter; a malformed one is
// kInvalidArgument with Milvus's "cannot parse expression" wording.
Result<vector::Filter> ParseMilvusExpr(const std::string& expr);
// The partition a write or delete names ("" is "_default"); an unknown one
// is Milvus's partition-not-found error.
Result<std::string> WritePartition(const CollectionMeta& m, const std::string& name);
// The filter restricting a search or query to `names` (each must exist and
// be loaded) or, with none named, to the loaded partitions; nullopt when
// that is every partition.
Result<std::optional<vector::Filter>> ReadPartitionsFilter(
    const CollectionMeta& m, const google::protobuf::RepeatedPtrField<std::string>& names);
vector::Filter PartitionMatch(const std::string& name);

// A search hit with its score in Milvus's units (squared distance for L2).
struct MilvusHit {
  vector::Record record;
  float score = 0;
};
// a AND b, either absent.
std::optional<vector::Filter> AndFilters(std::optional<vector::Filter> a,
                                         std::optional<vector::Filter> b);

class MilvusServiceImpl final : public pbm::MilvusService::Service {
 public:
  explicit MilvusServiceImpl(vector::CollectionManager* manager);

  // service_collections.cc
  grpc::Status Connect(ServerContext*, const pbm::ConnectRequest*, pbm::ConnectResponse*) override;
  grpc::Status GetVersion(ServerContext*, const pbm::GetVersionRequest*,
                          pbm::GetVersionResponse*) override;
  grpc::Status CheckHealth(ServerContext*, const pbm::CheckHealthRequest*,
                           pbm::CheckHealthResponse*) override;
  grpc::Status CreateCollection(ServerContext*, const pbm::CreateCollectionRequest*,
                                pbc::Status*) override;
  grpc::Status DescribeCollection(ServerContext*, const pbm::DescribeCollectionRequest*,
                                  pbm::DescribeCollectionResponse*) override;
  grpc::Status HasCollection(ServerContext*, const pbm::HasCollectionRequest*,
                             pbm::BoolResponse*) override;
  grpc::Status ShowCollections(ServerContext*, const pbm::ShowCollectionsRequest*,
                               pbm::ShowCollectionsResponse*) override;
  grpc::Status DropCollection(ServerContext*, const pbm::DropCollectionRequest*,
                              pbc::Status*) override;
  grpc::Status RenameCollection(ServerContext*, const pbm::RenameCollectionRequest*,
                                pbc::Status*) override;
  grpc::Status LoadCollection(ServerContext*, const pbm::LoadCollectionRequest*,
                              pbc::Status*) override;
  grpc::Status ReleaseCollection(ServerContext*, const pbm::ReleaseCollectionRequest*,
                                 pbc::Status*) override;
  grpc::Status GetLoadState(ServerContext*, const pbm::GetLoadStateRequest*,
                            pbm::GetLoadStateResponse*) override;
  grpc::Status GetLoadingProgress(ServerContext*, const pbm::GetLoadingProgressRequest*,
                                  pbm::GetLoadingProgressResponse*) override;

  // service_index.cc
  grpc::Status CreateIndex(ServerContext*, const pbm::CreateIndexRequest*, pbc::Status*) override;
  grpc::Status DescribeIndex(ServerContext*, const pbm::DescribeIndexRequest*,
                             pbm::DescribeIndexResponse*) override;
  grpc::Status GetIndexState(ServerContext*, const pbm::GetIndexStateRequest*,
                             pbm::GetIndexStateResponse*) override;
  grpc::Status GetIndexBuildProgress(ServerContext*, const pbm::GetIndexBuildProgressRequest*,
                                     pbm::GetIndexBuildProgressResponse*) override;
  grpc::Status DropIndex(ServerContext*, const pbm::DropIndexRequest*, pbc::Status*) override;

  // service_data.cc
  grpc::Status Insert(ServerContext*, const pbm::InsertRequest*, pbm::MutationResult*) override;
  grpc::Status Upsert(ServerContext*, const pbm::UpsertRequest*, pbm::MutationResult*) override;
  grpc::Status Delete(ServerContext*, const pbm::DeleteRequest*, pbm::MutationResult*) override;
  grpc::Status Flush(ServerContext*, const pbm::FlushRequest*, pbm::FlushResponse*) override;
  grpc::Status GetFlushState(ServerContext*, const pbm::GetFlushStateRequest*,
                             pbm::GetFlushStateResponse*) override;
  grpc::Status GetCollectionStatistics(ServerContext*, const pbm::GetCollectionStatisticsRequest*,
                                       pbm::GetCollectionStatisticsResponse*) override;
  grpc::Status Search(ServerContext*, const pbm::SearchRequest*, pbm::SearchResults*) override;
  grpc::Status HybridSearch(ServerContext*, const pbm::HybridSearchRequest*,
                            pbm::SearchResults*) override;
  grpc::Status Query(ServerContext*, const pbm::QueryRequest*, pbm::QueryResults*) override;

  // service_alias.cc
  grpc::Status CreateAlias(ServerContext*, const pbm::CreateAliasRequest*, pbc::Status*) override;
  grpc::Status DropAlias(ServerContext*, const pbm::DropAliasRequest*, pbc::Status*) override;
  grpc::Status AlterAlias(ServerContext*, const pbm::AlterAliasRequest*, pbc::Status*) override;
  grpc::Status DescribeAlias(ServerContext*, const pbm::DescribeAliasRequest*,
                             pbm::DescribeAliasResponse*) override;
  grpc::Status ListAliases(ServerContext*, const pbm::ListAliasesRequest*,
                           pbm::ListAliasesResponse*) override;

  // service_partition.cc
  grpc::Status CreatePartition(ServerContext*, const pbm::CreatePartitionRequest*,
                               pbc::Status*) override;
  grpc::Status DropPartition(ServerContext*, const pbm::DropPartitionRequest*,
                             pbc::Status*) override;
  grpc::Status HasPartition(ServerContext*, const pbm::HasPartitionRequest*,
                            pbm::BoolResponse*) override;
  grpc::Status ShowPartitions(ServerContext*, const pbm::ShowPartitionsRequest*,
                              pbm::ShowPartitionsResponse*) override;
  grpc::Status LoadPartitions(ServerContext*, const pbm::LoadPartitionsRequest*,
                              pbc::Status*) override;
  grpc::Status ReleasePartitions(ServerContext*, const pbm::ReleasePartitionsRequest*,
                                 pbc::Status*) override;
  grpc::Status GetPartitionStatistics(ServerContext*, const pbm::GetPartitionStatisticsRequest*,
                                      pbm::GetPartitionStatisticsResponse*) override;

 private:
  struct Target {
    std::string name;  // the collection's own name (an alias resolved)
    std::shared_ptr<vector::Collection> coll;
    std::shared_ptr<const CollectionMeta> meta;
  };
  // The collection and its Milvus description (read from milvus.json once).
  Result<Target> Open(const std::string& db, const std::string& name);
  // Open, and the collection must be loaded (Milvus's rule for search/query).
  Result<Target> OpenLoaded(const std::string& db, const std::string& name);
  Result<Target> OpenLocked(const std::string& name);  // mu_ held
  Status SaveLocked(const std::string& name, const vector::Collection& c,
                    CollectionMeta meta);  // mu_ held
  Status WriteRows(const std::string& db, const std::string& name, const std::string& partition,
                   const std::string& ns, const FieldDataList& fields, uint32_t num_rows,
                   bool insert, pbm::MutationResult* resp);
  Status DoCreateIndex(const pbm::CreateIndexRequest& req);
  Result<std::shared_ptr<vector::Collection>> Reindex(Target& t,
                                                      const vector::CollectionSchema& schema);
  // One search request, checked and resolved (service_search.cc).
  struct PreparedSearch {
    const FieldMeta* field = nullptr;
    std::string metric;
    bool l2 = false;       // smaller is closer: L2, HAMMING, JACCARD
    bool hamming = false;  // squared L2 of the 0/1 components, an integer
    bool jaccard = false;  // scored by ExactJaccard, not by the engine's index
    SearchParams sp;
    std::vector<std::vector<float>> queries;           // dense and binary (as 0/1) fields
    std::vector<vector::SparseVector> sparse_queries;  // a sparse field
    size_t nq() const { return field_is_sparse() ? sparse_queries.size() : queries.size(); }
    bool field_is_sparse() const { return field->type == DataType::kSparseFloatVector; }
    std::optional<vector::Filter> filter;  // the expression AND the partitions
    std::vector<vector::PointId> skip;     // the iterator's hits at its last bound
  };
  static Result<PreparedSearch> PrepareSearch(const CollectionMeta& m,
                                              const pbm::SearchRequest& req,
                                              const std::optional<vector::Filter>& pfilter);
  static vector::SearchRequest EngineRequest(const PreparedSearch& ps, size_t q, bool with_vectors);
  // The hits of query r under ps's range, grouping and iterator rules.
  static Result<std::vector<MilvusHit>> RunQuery(const vector::Collection& coll,
                                                 const PreparedSearch& ps, vector::SearchRequest r);
  // One engine search (or the exact JACCARD scan), scores in Milvus's units.
  static Result<std::vector<MilvusHit>> SearchHits(const vector::Collection& coll,
                                                   const PreparedSearch& ps,
                                                   const vector::SearchRequest& r);
  static Status FillSearchResults(const CollectionMeta& m, const OutputFields& out,
                                  const std::vector<std::vector<MilvusHit>>& results, size_t topk,
                                  int round_decimal, const std::string& group_field,
                                  pbs::SearchResultData* rd);
  Status DoSearch(const pbm::SearchRequest& req, pbm::SearchResults* resp);
  Status DoHybridSearch(const pbm::HybridSearchRequest& req, pbm::SearchResults* resp);
  Status DoQuery(const pbm::QueryRequest& req, pbm::QueryResults* resp);
  int64_t NewId();
  // Aliases: alias -> collection, in ROOT/.milvus-aliases.json (a name no
  // collection can have). Loaded on first use; mu_ held.
  Status LoadAliasesLocked();
  Status SaveAliasesLocked();
  std::string ResolveLocked(const std::string& name);  // the collection an alias names, or name
  std::vector<std::string> AliasesOfLocked(const std::string& collection) const;

  vector::CollectionManager* mgr_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const CollectionMeta>> metas_;  // guarded by mu_
  std::map<std::string, std::string> aliases_;                          // guarded by mu_
  bool aliases_loaded_ = false;                                         // guarded by mu_
  std::atomic<int64_t> last_id_{0};  // auto_id keys: ms << 18 + sequence, monotonic
};

}  // namespace strata::milvus
