// The one Redis client of Strata (hiredis underneath), shared by the FS
// metadata engine on Redis and the feature store's Redis online store.
//
// A Connection is one blocking TCP connection: commands are queued with
// Append (pipelined, nothing sent yet) and their replies read in order with
// GetReply, which flushes what was queued; Command is one round trip. Replies
// are owned values (no hiredis types leak out). A transport failure (refused,
// reset, timeout, protocol error) marks the connection broken: it is never
// reused, and the Pool drops it. A Redis error reply ("-ERR ...") is a Reply
// of type kError, not a failed Status: callers decide what it means.
//
// Thread-safety: a Connection is used by one thread at a time; a Pool is
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/core/status.h>

namespace strata::redis {

struct Reply {
  enum Type { kStatus, kError, kInteger, kString, kNil, kArray };
  Type type = kNil;
  std::string str;        // kStatus, kError, kString
  int64_t integer = 0;    // kInteger
  std::vector<Reply> elements;  // kArray
  bool is_error() const { return type == kError; }
  bool is_nil() const { return type == kNil; }
};

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password;  // "" = no AUTH
  int db = 0;            // SELECTed after connecting when not 0
  int connect_timeout_ms = 10'000;
  int io_timeout_ms = 0;  // 0 = none: each read and write may block
};

class Connection {
 public:
  // Connects, then AUTHs and SELECTs as the endpoint asks. Unavailable when
  // the server cannot be reached; PermissionDenied when AUTH or SELECT is refused.
  static Result<std::unique_ptr<Connection>> Open(const Endpoint& endpoint);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Queues one command; its reply comes from a later GetReply.
  void Append(const std::vector<std::string_view>& args);
  void Append(const std::vector<std::string>& args);
  // The reply of the oldest queued command (sending what is queued first).
  Result<Reply> GetReply();
  // Append + GetReply.
  Result<Reply> Command(const std::vector<std::string_view>& args);
  Result<Reply> Command(const std::vector<std::string>& args);
  // Replies still to be read for queued commands.
  int pending() const { return pending_; }
  bool broken() const;

 private:
  struct Ctx;
  explicit Connection(Ctx* ctx, std::string where);
  void AppendArgv(int argc, const char** argv, const size_t* lens);
  Ctx* ctx_;
  std::string where_;  // "redis 127.0.0.1:6379", for messages
  int pending_ = 0;
  bool broken_ = false;
};

// Idle connections to one endpoint, reused across requests.
class Pool {
 public:
  explicit Pool(Endpoint endpoint, size_t max_idle = 64)
      : endpoint_(std::move(endpoint)), max_idle_(max_idle) {}
  // An idle connection, or a new one. validate: PING an idle one first and
  // drop it when it is dead (for work that cannot simply be retried).
  Result<std::unique_ptr<Connection>> Acquire(bool validate = false);
  // Hands a connection back; broken ones and those with replies unread are dropped.
  void Release(std::unique_ptr<Connection> c);
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  Endpoint endpoint_;
  size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
};

}  // namespace strata::redis
