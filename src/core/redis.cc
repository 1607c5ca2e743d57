#include <strata/core/redis.h>

#include <sys/time.h>

#include <vector>

#include <hiredis/hiredis.h>

namespace strata::redis {

struct Connection::Ctx {
  redisContext* c = nullptr;
};

namespace {

// hiredis's parser builds our Reply values directly (its reply-object hooks),
// so a reply costs one allocation per string, as a hand-written RESP parser
// would, not a redisReply tree plus a copy of it. Children live inside their
// parent's `elements` (sized by createArray), so only a root is ever freed.
Reply* Slot(const redisReadTask* task) {
  if (task->parent != nullptr) {
    auto* parent = static_cast<Reply*>(task->parent->obj);
    return &parent->elements[static_cast<size_t>(task->idx)];
  }
  return new Reply();
}

void* CreateString(const redisReadTask* task, char* str, size_t len) {
  Reply* r = Slot(task);
  r->type = task->type == REDIS_REPLY_ERROR    ? Reply::kError
            : task->type == REDIS_REPLY_STATUS ? Reply::kStatus
                                               : Reply::kString;
  r->str.assign(str, len);
  return r;
}

void* CreateArray(const redisReadTask* task, int elements) {
  Reply* r = Slot(task);
  r->type = Reply::kArray;
  r->elements.resize(elements > 0 ? static_cast<size_t>(elements) : 0);
  return r;
}

void* CreateInteger(const redisReadTask* task, long long value) {
  Reply* r = Slot(task);
  r->type = Reply::kInteger;
  r->integer = value;
  return r;
}

void* CreateNil(const redisReadTask* task) {
  Reply* r = Slot(task);
  r->type = Reply::kNil;
  return r;
}

void FreeReply(void* reply) { delete static_cast<Reply*>(reply); }

redisReplyObjectFunctions kReplyFunctions = {CreateString, CreateArray, CreateInteger, CreateNil,
                                             FreeReply};

// argv/argvlen for redisAppendCommandArgv without a heap allocation for the
// usual short commands.
template <class Strings, class Append>
void AppendArgs(const Strings& args, Append&& append) {
  constexpr size_t kInline = 16;
  const char* argv_inline[kInline];
  size_t lens_inline[kInline];
  std::vector<const char*> argv_heap;
  std::vector<size_t> lens_heap;
  const char** argv = argv_inline;
  size_t* lens = lens_inline;
  if (args.size() > kInline) {
    argv_heap.resize(args.size());
    lens_heap.resize(args.size());
    argv = argv_heap.data();
    lens = lens_heap.data();
  }
  for (size_t i = 0; i < args.size(); ++i) {
    argv[i] = args[i].data();
    lens[i] = args[i].size();
  }
  append(static_cast<int>(args.size()), argv, lens);
}

timeval Timeval(int ms) {
  timeval tv;
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  return tv;
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::Open(const Endpoint& ep) {
  const std::string where = "redis " + ep.host + ":" + std::to_string(ep.port);
  redisContext* rc = redisConnectWithTimeout(ep.host.c_str(), ep.port, Timeval(ep.connect_timeout_ms));
  if (rc == nullptr || rc->err) {
    std::string err = rc ? rc->errstr : "out of memory";
    if (rc) redisFree(rc);
    return Status::Unavailable("cannot connect to " + where + ": " + err +
                               " (is redis-server running?)");
  }
  if (ep.io_timeout_ms > 0) redisSetTimeout(rc, Timeval(ep.io_timeout_ms));
  rc->reader->fn = &kReplyFunctions;
  auto* ctx = new Ctx{rc};
  std::unique_ptr<Connection> c(new Connection(ctx, where));
  if (!ep.password.empty()) {
    STRATA_ASSIGN_OR_RETURN(Reply r, c->Command(std::vector<std::string_view>{"AUTH", ep.password}));
    if (r.is_error()) return Status::PermissionDenied(where + " refused AUTH: " + r.str);
  }
  if (ep.db != 0) {
    const std::string db = std::to_string(ep.db);
    STRATA_ASSIGN_OR_RETURN(Reply r, c->Command(std::vector<std::string_view>{"SELECT", db}));
    if (r.is_error()) return Status::PermissionDenied(where + " refused SELECT " + db + ": " + r.str);
  }
  return c;
}

Connection::Connection(Ctx* ctx, std::string where) : ctx_(ctx), where_(std::move(where)) {}

Connection::~Connection() {
  if (ctx_->c) redisFree(ctx_->c);
  delete ctx_;
}

bool Connection::broken() const { return broken_ || ctx_->c->err != 0; }

void Connection::AppendArgv(int argc, const char** argv, const size_t* lens) {
  if (redisAppendCommandArgv(ctx_->c, argc, argv, lens) != REDIS_OK) {
    broken_ = true;
    return;
  }
  ++pending_;
}

void Connection::Append(const std::vector<std::string_view>& args) {
  AppendArgs(args, [this](int argc, const char** argv, const size_t* lens) { AppendArgv(argc, argv, lens); });
}

void Connection::Append(const std::vector<std::string>& args) {
  AppendArgs(args, [this](int argc, const char** argv, const size_t* lens) { AppendArgv(argc, argv, lens); });
}

Result<Reply> Connection::GetReply() {
  if (broken()) {
    broken_ = true;
    return Status::Unavailable(where_ + ": connection failed: " +
                               (ctx_->c->errstr[0] ? ctx_->c->errstr : "command could not be queued"));
  }
  if (pending_ == 0) return Status::Internal(where_ + ": no reply is pending");
  void* raw = nullptr;
  if (redisGetReply(ctx_->c, &raw) != REDIS_OK || raw == nullptr) {
    broken_ = true;
    return Status::Unavailable(where_ + ": connection failed: " +
                               (ctx_->c->errstr[0] ? ctx_->c->errstr : "no reply"));
  }
  --pending_;
  std::unique_ptr<Reply> r(static_cast<Reply*>(raw));
  return std::move(*r);
}

Result<Reply> Connection::Command(const std::vector<std::string_view>& args) {
  Append(args);
  return GetReply();
}

Result<Reply> Connection::Command(const std::vector<std::string>& args) {
  Append(args);
  return GetReply();
}

Result<std::unique_ptr<Connection>> Pool::Acquire(bool validate) {
  for (;;) {
    std::unique_ptr<Connection> c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_.empty()) break;
      c = std::move(idle_.back());
      idle_.pop_back();
    }
    if (!validate) return c;
    auto pong = c->Command(std::vector<std::string_view>{"PING"});
    if (pong.has_value() && !pong->is_error()) return c;
    // Dead (the server restarted, or closed an idle connection): try the next.
  }
  return Connection::Open(endpoint_);
}

void Pool::Release(std::unique_ptr<Connection> c) {
  if (!c || c->broken() || c->pending() != 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(c));
}

}  // namespace strata::redis
