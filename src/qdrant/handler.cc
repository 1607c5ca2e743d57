// The Qdrant API's door and routing: API key, body limits, the route table
// over /collections/..., per-operation metrics, and the one place a Status
// becomes an HTTP reply (through errors.h). The operations live in
// collections.cc, points.cc, payload.cc and search.cc.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <strata/core/log.h>
#include <strata/core/metrics.h>
#include <strata/core/strings.h>
#include <strata/qdrant/handler.h>

#include "qdrant/errors.h"
#include "qdrant/json_convert.h"
#include "qdrant/operations.h"

namespace strata::qdrant {

using vector::Collection;
using vector::CollectionManager;

namespace {

constexpr log::Logger kLog("vector-rest");
// The Qdrant version we answer GET / with: @qdrant/js-client-rest warns (only)
// when its major differs or its minor is more than one away.
constexpr std::string_view kQdrantVersion = "1.18.0";

// A reply before it is written: status, body, content type.
struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::string file;  // set: the body is this file (a snapshot download)
};

struct Clock {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double injected = 0;  // HandlerOptions::inject_delay (tests)
  double Elapsed() const {
    return injected + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

Reply OkReply(const Clock& clock, json result) {
  return Reply{200, OkBody(std::move(result), clock.Elapsed())};
}

Reply ErrorReplyOf(const Clock& clock, const Status& st) {
  ErrorReply e = ToErrorReply(st);
  return Reply{e.status, ErrorBody(e, clock.Elapsed())};
}

void Write(const Reply& r, http::ResponseWriter& w) {
  if (!r.file.empty()) {
    int fd = ::open(r.file.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0) {
      w.SetStatus(200);
      w.AddHeader("Content-Type", "application/octet-stream");
      if (w.BeginBody(uint64_t(st.st_size)).ok()) (void)w.SendFile(fd, 0, uint64_t(st.st_size));
      ::close(fd);
      return;
    }
    if (fd >= 0) ::close(fd);
    w.SetStatus(500);
    w.AddHeader("Content-Type", "application/json");
    (void)w.Send(ErrorBody(ErrorReply{500, "cannot read the snapshot archive " + r.file}, 0));
    return;
  }
  w.SetStatus(r.status);
  w.AddHeader("Content-Type", r.content_type);
  (void)w.Send(r.body);
}

Status MethodNotAllowed() { return ProtocolError(405, "Method not allowed"); }

Status NoRoute(std::string_view method, const std::vector<std::string>& seg) {
  return Status::NotFound(fmt::format("no route for {} /{}", method, fmt::join(seg, "/")));
}

Result<json> ParseBody(std::string_view body, bool required) {
  if (Trim(body).empty()) {
    if (required) return Status::InvalidArgument("the request needs a JSON body");
    return json::object();
  }
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded())
    return ProtocolError(400, "Format error in JSON body: the body is not valid JSON");
  if (!j.is_object())
    return ProtocolError(400, "Format error in JSON body: expected a JSON object");
  return j;
}

// Qdrant's `timeout` (seconds) and `consistency` (a replica count or
// "majority" | "quorum" | "all") URL parameters. One node holds the only
// replica and every read sees every acknowledged write, so each consistency
// level is met; a count above 1 asks for replicas that do not exist.
Status CheckQueryParams(std::string_view query) {
  for (auto part : Split(query, '&')) {
    const size_t eq = part.find('=');
    const std::string_view k = part.substr(0, eq);
    const std::string_view v = eq == std::string_view::npos ? "" : part.substr(eq + 1);
    if (k == "timeout") {
      auto n = ParseUint64(v);
      if (!n || *n == 0)
        return Status::InvalidArgument(
            fmt::format("timeout must be a positive number of seconds, got \"{}\"", v));
    } else if (k == "consistency") {
      if (v == "majority" || v == "quorum" || v == "all") continue;
      auto n = ParseUint64(v);
      if (!n)
        return Status::InvalidArgument(fmt::format(
            "consistency is a number of replicas or majority, quorum, all; got \"{}\"", v));
      if (*n != 1)
        return Status::InvalidArgument(fmt::format(
            "consistency={} asks for {} replicas; a Strata collection has exactly one", *n, *n));
    } else if (k == "ordering") {
      // Qdrant's write ordering. One node applies every write through one
      // WAL in arrival order, so each level's promise (weak: no ordering
      // asked; medium: ordered by the current leader; strong: by the
      // permanent leader) is kept.
      if (v == "weak" || v == "medium" || v == "strong") continue;
      return Status::InvalidArgument(
          fmt::format("ordering must be weak, medium or strong; got \"{}\"", v));
    }
  }
  return Status::Ok();
}

// The request's `timeout` in seconds, 0 without one.
uint64_t TimeoutOf(std::string_view query) {
  for (auto part : Split(query, '&')) {
    const size_t eq = part.find('=');
    if (part.substr(0, eq) != "timeout" || eq == std::string_view::npos) continue;
    auto n = ParseUint64(part.substr(eq + 1));
    return n ? *n : 0;
  }
  return 0;
}

// A request already past its `timeout` before its operation runs answers
// Qdrant's timeout error and applies nothing.
Status CheckTimeoutBefore(std::string_view query, double elapsed) {
  const uint64_t t = TimeoutOf(query);
  if (t == 0 || elapsed <= double(t)) return Status::Ok();
  return ProtocolError(408, fmt::format("Timeout error: the request waited {:.3f} s, past its "
                                        "timeout of {} s, before it ran; nothing was applied",
                                        elapsed, t));
}

// A request that ran past its `timeout` answers Qdrant's timeout error
// instead of its result (the work is not interrupted: a write may have been
// applied, as when Qdrant times out waiting for one).
Result<json> CheckTimeout(std::string_view query, double elapsed, json result) {
  for (auto part : Split(query, '&')) {
    const size_t eq = part.find('=');
    if (part.substr(0, eq) != "timeout" || eq == std::string_view::npos) continue;
    auto n = ParseUint64(part.substr(eq + 1));
    if (n && elapsed > double(*n)) {
      return ProtocolError(
          408, fmt::format("Timeout error: the operation took {:.3f} s, past its timeout of {} s; "
                           "a write may have been applied",
                           elapsed, *n));
    }
  }
  return result;
}

// The collection named by an upload route, percent-decoded.
bool UploadTarget(std::string_view method, std::string_view path, std::string* name) {
  if (method != "POST" && method != "PUT") return false;
  std::vector<std::string_view> seg;
  for (auto part : Split(path, '/')) {
    if (!part.empty()) seg.push_back(part);
  }
  if (seg.size() != 4 || seg[0] != "collections" || seg[2] != "snapshots" || seg[3] != "upload")
    return false;
  auto dec = UriDecode(seg[1]);
  if (!dec) return false;
  *name = *dec;
  return true;
}

metrics::Histogram& LatencyFor(const std::string& op) {
  return metrics::Registry::Global().GetHistogram("strata_vector_http_request_seconds",
                                                  "Vector REST request latency by operation",
                                                  fmt::format("op=\"{}\"", op));
}

}  // namespace

struct Handler::Impl {
  CollectionManager* mgr;
  HandlerOptions opts;

  Result<std::shared_ptr<Collection>> Coll(const std::string& name) const {
    auto c = mgr->Resolve(name);  // a collection or an alias of one
    if (!c) return Status::NotFound(fmt::format("Collection `{}` doesn't exist!", name));
    return *c;
  }

  // /collections/{name}
  Result<json> RouteCollection(std::string_view method, const std::string& name,
                               std::string_view body, std::string* op) {
    if (method == "GET") {
      *op = "get_collection";
      STRATA_ASSIGN_OR_RETURN(auto c, Coll(name));
      return CollectionInfoJson(*c);
    }
    if (method == "PUT") {
      *op = "create_collection";
      STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
      return CreateCollection(*mgr, name, b);
    }
    if (method == "PATCH") {
      *op = "update_collection";
      STRATA_ASSIGN_OR_RETURN(auto c, Coll(name));
      STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
      return UpdateCollection(*c, b);
    }
    if (method == "DELETE") {
      *op = "delete_collection";
      Status st = mgr->Drop(name);
      if (st.code() == StatusCode::kNotFound) return json(false);
      if (!st.ok()) return st;
      return json(true);
    }
    return MethodNotAllowed();
  }

  // /collections/{name}/points[/...]
  Result<json> RoutePoints(std::string_view method, const std::vector<std::string>& seg,
                           std::string_view body, bool wait, Collection& c, std::string* op) {
    if (seg.size() == 3) {
      if (method == "PUT") {
        *op = "upsert";
        STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
        return Upsert(c, b, wait);
      }
      if (method == "POST") {
        *op = "retrieve";
        STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
        return Retrieve(c, b);
      }
      return MethodNotAllowed();
    }
    const std::string& s3 = seg[3];
    if (method == "GET" && seg.size() == 4) {
      *op = "get_point";
      return GetPoint(c, s3);
    }
    if (method == "PUT" && seg.size() == 4 && s3 == "vectors") {
      *op = "update_vectors";
      STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
      return UpdateVectors(c, b, wait);
    }
    if (method == "PUT" && seg.size() == 4 && s3 == "payload") {
      *op = "overwrite_payload";
      STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
      return SetPayload(c, b, /*overwrite=*/true, wait);
    }
    if (method != "POST") return MethodNotAllowed();
    STRATA_ASSIGN_OR_RETURN(json bj, ParseBody(body, s3 != "count" && s3 != "scroll"));
    if (seg.size() == 4) {
      if (s3 == "delete") {
        *op = "delete";
        return Delete(c, bj, wait);
      }
      if (s3 == "payload") {
        *op = "set_payload";
        return SetPayload(c, bj, /*overwrite=*/false, wait);
      }
      if (s3 == "batch") {
        *op = "batch_update";
        return Batch(c, bj, wait);
      }
      if (s3 == "search" || s3 == "query") {
        *op = s3;
        STRATA_ASSIGN_OR_RETURN(json r, SearchBatch(c, {&bj}, s3 == "query"));
        return std::move(r[0]);
      }
      if (s3 == "recommend" || s3 == "discover") {
        *op = s3;
        STRATA_ASSIGN_OR_RETURN(json q, LegacyToQuery(bj, s3 == "discover"));
        STRATA_ASSIGN_OR_RETURN(json r, SearchBatch(c, {&q}, /*query_shape=*/true));
        return std::move(r[0]["points"]);
      }
      if (s3 == "scroll") {
        *op = "scroll";
        return Scroll(c, bj);
      }
      if (s3 == "count") {
        *op = "count";
        return Count(c, bj);
      }
    }
    if (seg.size() == 5 && s3 == "payload" && seg[4] == "delete") {
      *op = "delete_payload";
      return DeletePayload(c, bj, wait);
    }
    if (seg.size() == 5 && s3 == "payload" && seg[4] == "clear") {
      *op = "clear_payload";
      return ClearPayload(c, bj, wait);
    }
    if (seg.size() == 5 && s3 == "vectors" && seg[4] == "delete") {
      *op = "delete_vectors";
      return DeleteVectors(c, bj, wait);
    }
    if (seg.size() == 5 && (s3 == "recommend" || s3 == "discover") && seg[4] == "batch") {
      *op = s3 + "_batch";
      const json* searches = Field(bj, "searches");
      if (searches == nullptr || !searches->is_array())
        return Status::InvalidArgument("batch needs \"searches\": [...]");
      std::vector<json> qs;
      for (const auto& s : *searches) {
        STRATA_ASSIGN_OR_RETURN(json q, LegacyToQuery(s, s3 == "discover"));
        qs.push_back(std::move(q));
      }
      std::vector<const json*> bodies;
      for (const auto& q : qs) bodies.push_back(&q);
      STRATA_ASSIGN_OR_RETURN(json r, SearchBatch(c, bodies, /*query_shape=*/true));
      json out = json::array();
      for (auto& x : r) out.push_back(std::move(x["points"]));
      return out;
    }
    if (seg.size() == 5 && s3 == "recommend" && seg[4] == "groups") {
      *op = "recommend_groups";
      json g = bj;
      json rest = json::object();
      for (const char* k : {"group_by", "group_size", "limit", "with_lookup"}) {
        if (g.contains(k)) {
          rest[k] = g[k];
          g.erase(k);
        }
      }
      STRATA_ASSIGN_OR_RETURN(json q, LegacyToQuery(g, false));
      q.update(rest);
      return SearchGroups(c, q, /*query_shape=*/true);
    }
    if (seg.size() == 5 && (s3 == "search" || s3 == "query") && seg[4] == "groups") {
      *op = s3 + "_groups";
      return SearchGroups(c, bj, s3 == "query");
    }
    if (seg.size() == 5 && (s3 == "search" || s3 == "query") && seg[4] == "batch") {
      *op = s3 + "_batch";
      const json* searches = Field(bj, "searches");
      if (searches == nullptr || !searches->is_array())
        return Status::InvalidArgument("batch needs \"searches\": [...]");
      std::vector<const json*> bodies;
      for (const auto& s : *searches) bodies.push_back(&s);
      return SearchBatch(c, bodies, s3 == "query");
    }
    return NoRoute(method, seg);
  }

  // /collections/{name}/{index|snapshots|points}...
  Result<json> RouteInCollection(std::string_view method, const std::vector<std::string>& seg,
                                 std::string_view query, std::string_view body, std::string* op) {
    const std::string& name = seg[1];
    *op = "points";
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Collection> cp, Coll(name));
    Collection& c = *cp;
    const std::string& s2 = seg[2];
    const bool wait = QueryBool(query, "wait", false);
    if (s2 == "index") {
      if (seg.size() == 3 && (method == "PUT" || method == "POST")) {
        *op = "create_index";
        STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
        return CreateIndex(c, b);
      }
      if (seg.size() == 4 && method == "DELETE") {
        *op = "delete_index";
        Status st = c.DropPayloadIndex(seg[3]);
        if (!st.ok()) return st;
        return UpdateResult(c.Info().last_operation, true);
      }
    }
    if (s2 == "snapshots" && seg.size() == 3) {
      if (method == "POST") {
        *op = "create_snapshot";
        STRATA_ASSIGN_OR_RETURN(std::string snap, mgr->CreateSnapshot(c.name()));
        return SnapshotJson(*mgr, c.name(), snap);
      }
      if (method == "GET") {
        *op = "list_snapshots";
        STRATA_ASSIGN_OR_RETURN(auto list, mgr->ListSnapshots(c.name()));
        json out = json::array();
        for (const auto& s : list) out.push_back(SnapshotJson(*mgr, c.name(), s));
        return out;
      }
    }
    if (s2 == "snapshots" && seg.size() == 4 && method == "DELETE") {
      *op = "delete_snapshot";
      STRATA_RETURN_IF_ERROR(mgr->DeleteSnapshot(c.name(), seg[3]));
      return json(true);
    }
    if (s2 == "facet" && seg.size() == 3 && method == "POST") {
      *op = "facet";
      STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
      return Facet(c, b);
    }
    if (s2 == "aliases" && seg.size() == 3 && method == "GET") {
      *op = "list_collection_aliases";
      return AliasesJson(*mgr, c.name());
    }
    if (s2 == "strata" && seg.size() == 4 && seg[3] == "bm25" && method == "POST") {
      *op = "strata_bm25_index";
      STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
      return Bm25Index(c, b, wait);
    }
    if (s2 == "points") return RoutePoints(method, seg, body, wait, c, op);
    return NoRoute(method, seg);
  }

  Result<json> Route(std::string_view method, const std::vector<std::string>& seg,
                     std::string_view query, std::string_view body, std::string* op) {
    if (seg.size() == 2 && seg[0] == "collections" && seg[1] == "aliases" && method == "POST") {
      *op = "update_aliases";
      STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
      return UpdateAliases(*mgr, b);
    }
    if (seg.size() == 1 && seg[0] == "aliases" && method == "GET") {
      *op = "list_aliases";
      return AliasesJson(*mgr, "");
    }
    if (seg.size() == 4 && seg[0] == "collections" && seg[2] == "snapshots" &&
        seg[3] == "recover" && method == "PUT") {
      *op = "recover_snapshot";
      STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
      return RecoverSnapshot(*mgr, seg[1], b);
    }
    if (seg.size() == 1 && seg[0] == "telemetry" && method == "GET") {
      *op = "telemetry";
      return Telemetry();
    }
    if (seg.size() >= 2 && seg[0] == "collections") {
      if (seg.size() == 2) return RouteCollection(method, seg[1], body, op);
      if (seg.size() == 3 && seg[2] == "exists" && method == "GET") {
        *op = "collection_exists";
        return json{{"exists", mgr->Resolve(seg[1]).has_value()}};  // an alias counts, as in Qdrant
      }
      return RouteInCollection(method, seg, query, body, op);
    }
    if (seg.size() == 3 && seg[0] == "strata" && seg[1] == "bm25" && seg[2] == "encode" &&
        method == "POST") {
      *op = "strata_bm25_encode";
      STRATA_ASSIGN_OR_RETURN(json b, ParseBody(body, true));
      return Bm25Encode(b);
    }
    if (seg.size() == 1 && seg[0] == "collections" && method == "GET") {
      *op = "list_collections";
      json list = json::array();
      for (const auto& n : mgr->List()) list.push_back({{"name", n}});
      return json{{"collections", list}};
    }
    return NoRoute(method, seg);
  }

  // GET /telemetry: what this process serves, with real counts (Qdrant's
  // shape, the parts a single node has).
  json Telemetry() const {
    json colls = json::array();
    size_t points = 0;
    for (const auto& n : mgr->List()) {
      auto c = mgr->Get(n);
      if (!c) continue;
      auto info = (*c)->Info();
      points += info.points;
      colls.push_back({{"id", n},
                       {"points", info.points},
                       {"segments", info.segments},
                       {"vectors", info.schema.vectors.size()},
                       {"sparse_vectors", info.schema.sparse.size()}});
    }
    return json{
        {"id", "strata"},
        {"app", {{"name", "strata"}, {"version", kQdrantVersion}}},
        {"collections",
         {{"number_of_collections", colls.size()}, {"points", points}, {"collections", colls}}}};
  }

  // GET /collections/{name}/snapshots/{snapshot}: the archive, streamed.
  Reply Download(const Clock& clock, const std::string& coll, const std::string& snap) {
    auto c = Coll(coll);
    if (!c) return ErrorReplyOf(clock, c.error());
    auto path = mgr->SnapshotArchive((*c)->name(), snap);
    if (!path) return ErrorReplyOf(clock, path.error());
    Reply r;
    r.file = *path;
    return r;
  }

  bool Authorized(std::string_view api_key) const {
    return opts.api_key.empty() || api_key == opts.api_key;
  }

  // POST|PUT /collections/{name}/snapshots/upload: the body streams to a file.
  Reply Upload(http::Request& req, const std::string& name, std::string_view api_key) {
    Clock clock;
    Result<json> r = Status::Internal("unreachable");
    if (!Authorized(api_key)) {
      r = ProtocolError(401, "Invalid API key or JWT");
    } else if (Status qs = CheckQueryParams(req.query); !qs.ok()) {
      r = qs;
    } else {
      r = UploadSnapshot(*mgr, name, req, req.query, opts.max_upload_bytes);
    }
    Reply reply = r ? OkReply(clock, std::move(*r)) : ErrorReplyOf(clock, r.error());
    LatencyFor("upload_snapshot").Observe(clock.Elapsed());
    return reply;
  }

  // The routing core without a socket: one request in, status and body out.
  Reply Dispatch(std::string_view method, std::string_view path, std::string_view query,
                 std::string_view body, std::string_view api_key) {
    Clock clock;
    std::vector<std::string> seg;
    for (auto part : Split(path, '/')) {
      if (part.empty()) continue;
      auto dec = UriDecode(part);
      if (!dec)
        return ErrorReplyOf(clock,
                            Status::InvalidArgument("the path is not validly percent-encoded"));
      seg.push_back(*dec);
    }
    std::string op = "other";
    Reply reply;
    if (seg.size() == 1 && (seg[0] == "healthz" || seg[0] == "livez" || seg[0] == "readyz") &&
        method == "GET") {
      reply = Reply{200, "healthz check passed", "text/plain"};
      op = "health";
    } else if (!opts.api_key.empty() && api_key != opts.api_key) {
      reply = ErrorReplyOf(
          clock, ProtocolError(401, api_key.empty()
                                        ? "Must provide an API key or an Authorization bearer token"
                                        : "Invalid API key or JWT"));
      op = "unauthorized";
    } else if (seg.empty() && method == "GET") {
      json j{{"title", "strata vector (qdrant-compatible API)"},
             {"version", kQdrantVersion},
             {"commit", "strata-0.1.0"}};
      reply = Reply{200, j.dump()};
      op = "root";
    } else if (Status qs = CheckQueryParams(query); !qs.ok()) {
      reply = ErrorReplyOf(clock, qs);
    } else if (seg.size() == 4 && seg[0] == "collections" && seg[2] == "snapshots" &&
               method == "GET") {
      reply = Download(clock, seg[1], seg[3]);
      op = "download_snapshot";
    } else if (seg.size() == 1 && seg[0] == "metrics" && method == "GET") {
      reply =
          Reply{200, metrics::Registry::Global().ExportPrometheus(), "text/plain; version=0.0.4"};
      op = "metrics";
    } else {
      Result<json> r = Status::Internal("unreachable");
      if (opts.inject_delay) clock.injected += opts.inject_delay("before");
      try {
        if (Status late = CheckTimeoutBefore(query, clock.Elapsed()); !late.ok()) {
          r = late;
        } else {
          r = Route(method, seg, query, body, &op);
          if (opts.inject_delay) clock.injected += opts.inject_delay("after");
        }
      } catch (const std::exception& e) {
        // The operations catch what nlohmann throws where they parse; this is
        // the net for anything else, so no exception leaves the adapter.
        kLog.Warn("{} {}: {}", method, path, e.what());
        r = Status::InvalidArgument(std::string("bad request body: ") + e.what());
      }
      if (r) r = CheckTimeout(query, clock.Elapsed(), std::move(*r));
      reply = r ? OkReply(clock, std::move(*r)) : ErrorReplyOf(clock, r.error());
    }
    metrics::Registry::Global()
        .GetCounter("strata_vector_http_requests_total",
                    "Vector REST requests by operation and HTTP status",
                    fmt::format("op=\"{}\",code=\"{}\"", op, reply.status))
        .Inc();
    LatencyFor(op).Observe(clock.Elapsed());
    return reply;
  }
};

Handler::Handler(CollectionManager* manager, HandlerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->mgr = manager;
  impl_->opts = std::move(options);
}

Handler::~Handler() = default;

void Handler::Handle(http::Request& req, http::ResponseWriter& w) {
  std::string_view key;
  if (auto k = req.Header("api-key")) {
    key = *k;
  } else if (auto a = req.Header("authorization")) {
    std::string_view v = *a;
    if (v.size() > 7 && IEquals(v.substr(0, 7), "bearer ")) key = Trim(v.substr(7));
  }
  if (std::string name; UploadTarget(req.method, req.path, &name)) {
    Write(impl_->Upload(req, name, key), w);
    if (!req.body_done()) w.CloseAfter();
    return;
  }
  std::string body;
  if (req.content_length.value_or(0) > 0 || req.chunked) {
    auto b = req.ReadAllBody(impl_->opts.max_body_bytes);
    if (!b) {
      Status st =
          b.error().code() == StatusCode::kResourceExhausted
              ? ProtocolError(413,
                              fmt::format("Payload error: the request body is larger than {} bytes",
                                          impl_->opts.max_body_bytes))
              : ProtocolError(400, "cannot read the request body: " + b.error().message());
      w.CloseAfter();
      Write(ErrorReplyOf(Clock(), st), w);
      return;
    }
    body = std::move(*b);
  }
  Write(impl_->Dispatch(req.method, req.path, req.query, body, key), w);
}

void Handler::HandleTransportError(int status, std::string_view message, http::ResponseWriter& w) {
  Write(ErrorReplyOf(Clock(), ProtocolError(status, message)), w);
}

}  // namespace strata::qdrant
