// The Milvus-compatible gRPC API (milvus.proto.milvus.MilvusService, the RPCs
// listed in docs/vector.md) over a vector::CollectionManager: an adapter at
// the edge, like qdrant::Handler, that owns no storage. Milvus-specific
// collection metadata (the schema, indexes, load state) is kept in each
// collection's directory as milvus.json.
//
// The generated protocol code stays inside src/milvus; this header names none
// of it. The manager is borrowed and must outlive the server.
//
// Thread-safety: Start/Stop from one thread; RPCs run on gRPC's threads.
#pragma once

#include <memory>
#include <string>

#include <strata/core/status.h>
#include <strata/vector/collection.h>

namespace strata::milvus {

struct ServerOptions {
  std::string address = "127.0.0.1:19530";  // host:port; port 0 picks a free one
  size_t max_message_bytes = 256 << 20;     // largest request or response
};

class Server {
 public:
  Server(vector::CollectionManager* manager, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts serving; kUnavailable when the address cannot be bound.
  Status Start();
  void Stop();
  int port() const;  // 0 before Start

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::milvus
