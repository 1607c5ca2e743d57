// Hosts MilvusServiceImpl on a gRPC server (server.h).
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <strata/core/log.h>
#include <strata/milvus/server.h>

#include "milvus/service.h"

namespace strata::milvus {

namespace {
constexpr log::Logger kLog("milvus");
}  // namespace

struct Server::Impl {
  vector::CollectionManager* manager;
  ServerOptions opts;
  std::unique_ptr<MilvusServiceImpl> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

Server::Server(vector::CollectionManager* manager, ServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->manager = manager;
  impl_->opts = std::move(options);
}

Server::~Server() { Stop(); }

Status Server::Start() {
  Impl& im = *impl_;
  im.service = std::make_unique<MilvusServiceImpl>(im.manager);
  grpc::ServerBuilder b;
  int selected = 0;
  b.AddListeningPort(im.opts.address, grpc::InsecureServerCredentials(), &selected);
  b.SetMaxReceiveMessageSize(static_cast<int>(im.opts.max_message_bytes));
  b.SetMaxSendMessageSize(static_cast<int>(im.opts.max_message_bytes));
  // One process per port: a second server must fail to bind, not share it.
  b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  b.RegisterService(im.service.get());
  im.server = b.BuildAndStart();
  if (!im.server || selected == 0) {
    im.server.reset();
    im.service.reset();
    return Status::Unavailable(
        fmt::format("cannot listen on {} for the Milvus API (address in use?)", im.opts.address));
  }
  im.port = selected;
  kLog.Info("Milvus API (gRPC) listening on {} (port {})", im.opts.address, selected);
  return Status::Ok();
}

void Server::Stop() {
  if (impl_->server) {
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    impl_->server->Wait();
  }
  impl_->server.reset();
  impl_->service.reset();
  impl_->port = 0;
}

int Server::port() const { return impl_->port; }

}  // namespace strata::milvus
