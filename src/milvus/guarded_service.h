// GuardedService: the MilvusService answered by MilvusServiceImpl once the
// caller's token passes the Authenticator (Milvus's auth interceptor: a bad
// or missing token is gRPC UNAUTHENTICATED and the RPC does not run). Used
// only when authentication is on; otherwise the implementation is
// registered directly.
//
// Thread-safety: as MilvusServiceImpl; both pointers are borrowed.
#pragma once

#include "milvus/auth.h"
#include "milvus/service.h"

namespace strata::milvus {

// Every RPC of MilvusServiceImpl: name, request, response.
#define STRATA_MILVUS_RPCS(X)                                                                     \
  X(Connect, pbm::ConnectRequest, pbm::ConnectResponse)                                           \
  X(GetVersion, pbm::GetVersionRequest, pbm::GetVersionResponse)                                  \
  X(CheckHealth, pbm::CheckHealthRequest, pbm::CheckHealthResponse)                               \
  X(CreateCollection, pbm::CreateCollectionRequest, pbc::Status)                                  \
  X(DescribeCollection, pbm::DescribeCollectionRequest, pbm::DescribeCollectionResponse)          \
  X(HasCollection, pbm::HasCollectionRequest, pbm::BoolResponse)                                  \
  X(ShowCollections, pbm::ShowCollectionsRequest, pbm::ShowCollectionsResponse)                   \
  X(DropCollection, pbm::DropCollectionRequest, pbc::Status)                                      \
  X(RenameCollection, pbm::RenameCollectionRequest, pbc::Status)                                  \
  X(LoadCollection, pbm::LoadCollectionRequest, pbc::Status)                                      \
  X(ReleaseCollection, pbm::ReleaseCollectionRequest, pbc::Status)                                \
  X(GetLoadState, pbm::GetLoadStateRequest, pbm::GetLoadStateResponse)                            \
  X(GetLoadingProgress, pbm::GetLoadingProgressRequest, pbm::GetLoadingProgressResponse)          \
  X(CreateIndex, pbm::CreateIndexRequest, pbc::Status)                                            \
  X(DescribeIndex, pbm::DescribeIndexRequest, pbm::DescribeIndexResponse)                         \
  X(GetIndexState, pbm::GetIndexStateRequest, pbm::GetIndexStateResponse)                         \
  X(GetIndexBuildProgress, pbm::GetIndexBuildProgressRequest, pbm::GetIndexBuildProgressResponse) \
  X(DropIndex, pbm::DropIndexRequest, pbc::Status)                                                \
  X(Insert, pbm::InsertRequest, pbm::MutationResult)                                              \
  X(Upsert, pbm::UpsertRequest, pbm::MutationResult)                                              \
  X(Delete, pbm::DeleteRequest, pbm::MutationResult)                                              \
  X(Flush, pbm::FlushRequest, pbm::FlushResponse)                                                 \
  X(GetFlushState, pbm::GetFlushStateRequest, pbm::GetFlushStateResponse)                         \
  X(GetCollectionStatistics, pbm::GetCollectionStatisticsRequest,                                 \
    pbm::GetCollectionStatisticsResponse)                                                         \
  X(Search, pbm::SearchRequest, pbm::SearchResults)                                               \
  X(HybridSearch, pbm::HybridSearchRequest, pbm::SearchResults)                                   \
  X(Query, pbm::QueryRequest, pbm::QueryResults)                                                  \
  X(CreateAlias, pbm::CreateAliasRequest, pbc::Status)                                            \
  X(DropAlias, pbm::DropAliasRequest, pbc::Status)                                                \
  X(AlterAlias, pbm::AlterAliasRequest, pbc::Status)                                              \
  X(DescribeAlias, pbm::DescribeAliasRequest, pbm::DescribeAliasResponse)                         \
  X(ListAliases, pbm::ListAliasesRequest, pbm::ListAliasesResponse)                               \
  X(CreatePartition, pbm::CreatePartitionRequest, pbc::Status)                                    \
  X(DropPartition, pbm::DropPartitionRequest, pbc::Status)                                        \
  X(HasPartition, pbm::HasPartitionRequest, pbm::BoolResponse)                                    \
  X(ShowPartitions, pbm::ShowPartitionsRequest, pbm::ShowPartitionsResponse)                      \
  X(LoadPartitions, pbm::LoadPartitionsRequest, pbc::Status)                                      \
  X(ReleasePartitions, pbm::ReleasePartitionsRequest, pbc::Status)                                \
  X(GetPartitionStatistics, pbm::GetPartitionStatisticsRequest, pbm::GetPartitionStatisticsResponse)

class GuardedService final : public pbm::MilvusService::Service {
 public:
  GuardedService(MilvusServiceImpl* impl, const Authenticator* auth) : impl_(impl), auth_(auth) {}

#define STRATA_GUARDED_RPC(Name, Req, Resp)                                    \
  grpc::Status Name(ServerContext* ctx, const Req* req, Resp* resp) override { \
    if (grpc::Status st = auth_->CheckGrpc(ctx); !st.ok()) return st;          \
    return impl_->Name(ctx, req, resp);                                        \
  }
  STRATA_MILVUS_RPCS(STRATA_GUARDED_RPC)
#undef STRATA_GUARDED_RPC

 private:
  MilvusServiceImpl* impl_;
  const Authenticator* auth_;
};

}  // namespace strata::milvus
