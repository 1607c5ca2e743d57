#include <strata/core/redis.h>

#include <sys/time.h>

#include <hiredis/hiredis.h>

namespace strata::redis {

struct Connection::Ctx {
  redisContext* c = nullptr;
};

namespace {

Reply Convert(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_STATUS:
      out.type = Reply::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = Reply::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
      out.type = Reply::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(Convert(r->element[i]));
      break;
    default:
      out.type = Reply::kNil;
      break;
  }
  return out;
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
  std::vector<const char*> argv(args.size());
  std::vector<size_t> lens(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    argv[i] = args[i].data();
    lens[i] = args[i].size();
  }
  AppendArgv(static_cast<int>(args.size()), argv.data(), lens.data());
}

void Connection::Append(const std::vector<std::string>& args) {
  Append(std::vector<std::string_view>(args.begin(), args.end()));
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
  auto* r = static_cast<redisReply*>(raw);
  Reply out = Convert(r);
  freeReplyObject(r);
  return out;
}

Result<Reply> Connection::Command(const std::vector<std::string_view>& args) {
  Append(args);
  return GetReply();
}

Result<Reply> Connection::Command(const std::vector<std::string>& args) {
  return Command(std::vector<std::string_view>(args.begin(), args.end()));
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
