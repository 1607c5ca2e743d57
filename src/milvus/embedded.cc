// The Milvus API in-process (embedded.h): each RPC parsed from its bytes,
// run on MilvusServiceImpl with no ServerContext (the service never reads
// one) and serialized back.
#include <filesystem>
#include <functional>
#include <map>
#include <system_error>

#include <fmt/format.h>

#include <strata/core/dir_lock.h>
#include <strata/milvus/embedded.h>

#include "milvus/service.h"

namespace strata::milvus {

namespace {

using Handler = std::function<Status(MilvusServiceImpl*, std::string_view, std::string*)>;

template <class Req, class Resp>
Handler Bind(const char* name,
             grpc::Status (MilvusServiceImpl::*fn)(ServerContext*, const Req*, Resp*)) {
  return [name, fn](MilvusServiceImpl* s, std::string_view in, std::string* out) -> Status {
    Req req;
    if (!req.ParseFromArray(in.data(), static_cast<int>(in.size()))) {
      return Status::InvalidArgument(
          fmt::format("{}: the request is not a serialized {}", name, Req::descriptor()->name()));
    }
    Resp resp;
    const grpc::Status g = (s->*fn)(nullptr, &req, &resp);
    if (!g.ok()) return Status::Internal(fmt::format("{}: {}", name, g.error_message()));
    if (!resp.SerializeToString(out)) {
      return Status::Internal(fmt::format("{}: cannot serialize the response", name));
    }
    return Status::Ok();
  };
}

#define STRATA_MILVUS_RPC(m) \
  { #m, Bind(#m, &MilvusServiceImpl::m) }

const std::map<std::string, Handler, std::less<>>& Handlers() {
  static const auto* table = new std::map<std::string, Handler, std::less<>>{
      STRATA_MILVUS_RPC(Connect),
      STRATA_MILVUS_RPC(GetVersion),
      STRATA_MILVUS_RPC(CheckHealth),
      STRATA_MILVUS_RPC(CreateCollection),
      STRATA_MILVUS_RPC(DescribeCollection),
      STRATA_MILVUS_RPC(HasCollection),
      STRATA_MILVUS_RPC(ShowCollections),
      STRATA_MILVUS_RPC(DropCollection),
      STRATA_MILVUS_RPC(RenameCollection),
      STRATA_MILVUS_RPC(LoadCollection),
      STRATA_MILVUS_RPC(ReleaseCollection),
      STRATA_MILVUS_RPC(GetLoadState),
      STRATA_MILVUS_RPC(GetLoadingProgress),
      STRATA_MILVUS_RPC(CreateIndex),
      STRATA_MILVUS_RPC(DescribeIndex),
      STRATA_MILVUS_RPC(GetIndexState),
      STRATA_MILVUS_RPC(GetIndexBuildProgress),
      STRATA_MILVUS_RPC(DropIndex),
      STRATA_MILVUS_RPC(Insert),
      STRATA_MILVUS_RPC(Upsert),
      STRATA_MILVUS_RPC(Delete),
      STRATA_MILVUS_RPC(Flush),
      STRATA_MILVUS_RPC(GetFlushState),
      STRATA_MILVUS_RPC(GetCollectionStatistics),
      STRATA_MILVUS_RPC(Search),
      STRATA_MILVUS_RPC(Query),
      STRATA_MILVUS_RPC(CreateAlias),
      STRATA_MILVUS_RPC(DropAlias),
      STRATA_MILVUS_RPC(AlterAlias),
      STRATA_MILVUS_RPC(DescribeAlias),
      STRATA_MILVUS_RPC(ListAliases),
      STRATA_MILVUS_RPC(CreatePartition),
      STRATA_MILVUS_RPC(DropPartition),
      STRATA_MILVUS_RPC(HasPartition),
      STRATA_MILVUS_RPC(ShowPartitions),
      STRATA_MILVUS_RPC(LoadPartitions),
      STRATA_MILVUS_RPC(ReleasePartitions),
      STRATA_MILVUS_RPC(GetPartitionStatistics),
  };
  return *table;
}

#undef STRATA_MILVUS_RPC

}  // namespace

struct Embedded::Impl {
  DirLock lock;  // released after the manager is closed (members die in reverse order)
  std::unique_ptr<vector::CollectionManager> manager;
  std::unique_ptr<MilvusServiceImpl> service;
};

Embedded::Embedded(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Embedded::~Embedded() {
  impl_->service.reset();
  impl_->manager.reset();
}

Result<std::unique_ptr<Embedded>> Embedded::Open(const std::string& root,
                                                 const vector::CollectionOptions& options) {
  auto impl = std::make_unique<Impl>();
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec) return Status::IOError(fmt::format("create directory {}: {}", root, ec.message()));
  STRATA_ASSIGN_OR_RETURN(
      impl->lock, DirLock::Open(root, kLockFile, "the Milvus database",
                                "close the other MilvusClient on it, or serve the directory "
                                "with `strata server` and connect with MilvusClient(uri=...)"));
  STRATA_ASSIGN_OR_RETURN(impl->manager, vector::CollectionManager::Open(root, options));
  impl->service = std::make_unique<MilvusServiceImpl>(impl->manager.get());
  return std::unique_ptr<Embedded>(new Embedded(std::move(impl)));
}

Result<std::string> Embedded::Call(std::string_view method, std::string_view request) {
  const auto& handlers = Handlers();
  auto it = handlers.find(method);
  if (it == handlers.end()) {
    return Status::NotSupported(fmt::format(
        "the Milvus RPC {} is not implemented by Strata (see docs/vector.md for the list)",
        method));
  }
  std::string out;
  STRATA_RETURN_IF_ERROR(it->second(impl_->service.get(), request, &out));
  return out;
}

std::vector<std::string> Embedded::Methods() {
  std::vector<std::string> out;
  for (const auto& [name, h] : Handlers()) out.push_back(name);
  return out;
}

const std::string& Embedded::root() const { return impl_->manager->root(); }

}  // namespace strata::milvus
