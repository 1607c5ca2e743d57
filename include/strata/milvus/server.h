// The Milvus-compatible API over a vector::CollectionManager: gRPC
// (milvus.proto.milvus.MilvusService, the RPCs listed in docs/vector.md) and
// the RESTful API v2 (/v2/vectordb/...) on one port, as Milvus serves both.
// The server accepts each connection itself and looks at its first bytes:
// the HTTP/2 preface goes to gRPC, anything else to the HTTP/1.1 REST
// handler, which maps JSON onto the same RPCs. An adapter at the edge, like
// qdrant::Handler, that owns no storage. Milvus-specific
// collection metadata (the schema, indexes, load state) is kept in each
// collection's directory as milvus.json.
//
// The generated protocol code stays inside src/milvus; this header names none
// of it. The manager is borrowed and must outlive the server.
//
// Thread-safety: Start/Stop from one thread; RPCs run on gRPC's threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/http_server.h>
#include <strata/core/status.h>
#include <strata/vector/collection.h>

namespace strata::milvus {

// Milvus's authentication (auth off by default, as in Milvus standalone).
struct AuthOptions {
  bool enabled = false;
  // "user:password" tokens: true when the pair names a user (Strata's S3
  // users: access key and secret key).
  std::function<bool(std::string_view user, std::string_view password)> verify_password;
  std::vector<std::string> api_keys;  // tokens without ':' accepted as they are
};

struct ServerOptions {
  std::string address = "127.0.0.1:19530";  // host:port; port 0 picks a free one
  size_t max_message_bytes = 256 << 20;     // largest request or response
  // The RESTful API v2 on the same port (HTTP/1.1; HTTP/2 is gRPC).
  bool rest = true;
  http::ServerOptions http;  // the REST side's limits and threads (bind/port unused)
  AuthOptions auth;
};

// What a connection's first bytes are (the acceptor's choice, exposed for tests).
enum class ConnKind { kUndecided, kGrpc, kHttp1 };
ConnKind ClassifyFirstBytes(std::string_view first);

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
