// The Milvus API in-process, without gRPC: an embedded database (as Milvus
// Lite is for pymilvus) that answers the same MilvusService RPCs as the
// server (server.h), with the same code, over a CollectionManager of its own
// in a directory. Requests and responses are the serialized protobuf
// messages of proto/milvus/milvus.proto, so a client that speaks the
// protocol (strata.vector.MilvusClient) uses one code path for both; the
// generated protocol code stays inside src/milvus.
//
// A directory written here can be served by `strata server` (its vector
// directory) and the other way round; one process at a time: Open holds an
// exclusive lock on ROOT/.strata-vector.lock (kLockFile, core/dir_lock.h) until
// the Embedded is destroyed, and the server holds the same lock on
// DATA/vector, so a second opener gets PreconditionFailed naming the holder.
//
// Thread-safety: Call may run concurrently from several threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/vector/collection.h>

namespace strata::milvus {

class Embedded {
 public:
  // The lock file in the root (the server's vector directory takes it too).
  static constexpr const char* kLockFile = ".strata-vector.lock";

  // Opens (creating when missing) the collections under `root`.
  static Result<std::unique_ptr<Embedded>> Open(const std::string& root,
                                                const vector::CollectionOptions& options = {});
  ~Embedded();
  Embedded(const Embedded&) = delete;
  Embedded& operator=(const Embedded&) = delete;

  // Runs the RPC `method` (its name in the MilvusService, e.g. "Search") on
  // the serialized request and returns the serialized response. The outcome
  // of the RPC is in the response's common.Status, as over gRPC. kNotSupported
  // for a method the service does not have (gRPC's UNIMPLEMENTED),
  // kInvalidArgument for bytes that are not the method's request message.
  Result<std::string> Call(std::string_view method, std::string_view request);

  // The methods Call accepts, sorted.
  static std::vector<std::string> Methods();

  const std::string& root() const;

  struct Impl;

 private:
  explicit Embedded(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::milvus
