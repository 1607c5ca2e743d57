// The Redis online store in Feast's layout (feast_format.h): one hash per
// entity key + project, a field per feature (mmh3 of "view:feature") holding
// a feast ValueProto and "_ts:view" holding the event time. Writes and reads
// are pipelined: a write is one round trip for the stored timestamps and one
// for the HSETs; a read of many entities and views is one round trip.
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include <strata/core/redis.h>
#include <strata/features/online.h>

#include "features/feast_format.h"
#include "features/redis_connection.h"

namespace strata::features {

namespace {

namespace ff = feast_format;

// The field names of one view: the feature fields in schema order, then "_ts:view".
std::vector<std::string> ViewFields(const FeatureViewDef& view) {
  std::vector<std::string> fields;
  fields.reserve(view.features.size() + 1);
  for (const FeatureDef& f : view.features) fields.push_back(ff::FeatureField(view.name, f.name));
  fields.push_back(ff::TimestampField(view.name));
  return fields;
}

std::string Printable(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c >= 0x20 && c < 0x7f)
      out += c;
    else
      out += fmt::format("\\x{:02x}", static_cast<uint8_t>(c));
  }
  return out.size() > 120 ? out.substr(0, 120) + "..." : out;
}

class FeastRedisOnlineStore final : public OnlineStore {
 public:
  FeastRedisOnlineStore(redis::Endpoint endpoint, std::string project, int64_t key_ttl_seconds)
      : pool_(std::move(endpoint)),
        project_(std::move(project)),
        key_ttl_(std::to_string(key_ttl_seconds)),
        expire_(key_ttl_seconds > 0) {}
  std::string name() const override { return "redis (feast layout)"; }

  Status Ping() {
    STRATA_ASSIGN_OR_RETURN(auto conn, pool_.Acquire());
    STRATA_ASSIGN_OR_RETURN(redis::Reply r, conn->Command(std::vector<std::string_view>{"PING"}));
    if (r.is_error()) return Status::Unavailable("redis: " + r.str);
    pool_.Release(std::move(conn));
    return Status::Ok();
  }

  // Feast's layout has a field per feature: only the schema-aware forms work.
  Status Write(const std::string& view,
               const std::vector<std::pair<std::string, std::string>>&) override {
    return Status::Internal(
        fmt::format("the feast-layout Redis store needs the definition of view \"{}\"", view));
  }
  Result<std::vector<std::optional<std::string>>> Read(
      const std::vector<std::pair<std::string, std::string>>&) override {
    return Status::Internal("the feast-layout Redis store needs the feature views' definitions");
  }

  Status WriteRows(const FeatureViewDef& view,
                   const std::vector<std::pair<std::string, std::string>>& rows) override;
  Result<std::vector<std::optional<std::string>>> ReadRows(
      const std::vector<std::pair<std::string, std::string>>& keys,
      const std::vector<const FeatureViewDef*>& views) override;

 private:
  // The rows of one (entity key, view) read back: fields[0..n) features, fields[n] the timestamp.
  Result<std::optional<std::string>> DecodeRow(const FeatureViewDef& view, const std::string& key,
                                               std::vector<redis::Reply>::iterator fields);

  redis::Pool pool_;
  std::string project_;
  std::string key_ttl_;  // EXPIRE's argument
  bool expire_;
};

Status FeastRedisOnlineStore::WriteRows(
    const FeatureViewDef& view, const std::vector<std::pair<std::string, std::string>>& rows) {
  if (rows.empty()) return Status::Ok();
  const std::vector<std::string> fields = ViewFields(view);
  const std::string& ts_field = fields.back();
  STRATA_ASSIGN_OR_RETURN(auto conn, pool_.Acquire());
  std::string key;
  for (const auto& [ek, row] : rows) {
    key.assign(ek).append(project_);
    conn->Append(std::vector<std::string_view>{"HGET", key, ts_field});
  }
  // Rows older than the stored event time are skipped; an equal time
  // overwrites (a re-materialization of corrected data lands; Feast skips it).
  std::vector<int64_t> ts(rows.size());
  std::vector<std::vector<OnlineValue>> values(rows.size());
  std::vector<bool> write(rows.size(), true);
  for (size_t i = 0; i < rows.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(redis::Reply r, conn->GetReply());
    if (r.is_error()) return Status::IOError("redis: " + r.str);
    if (!DecodeOnlineRow(view, rows[i].second, &ts[i], &values[i])) {
      return Status::Internal(
          fmt::format("feature view \"{}\": a row to write does not match its schema", view.name));
    }
    if (r.type == redis::Reply::kString) {
      // A stored timestamp that does not parse is replaced by the new row.
      Result<int64_t> old = ff::DecodeTimestamp(r.str);
      if (old.ok() && *old > ts[i]) write[i] = false;
    }
  }
  std::vector<std::string> args;
  size_t sent = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!write[i]) continue;
    args.assign({"HSET", rows[i].first + project_, ts_field, ff::EncodeTimestamp(ts[i])});
    for (size_t f = 0; f < view.features.size(); ++f) {
      args.push_back(fields[f]);
      args.push_back(ff::EncodeValue(view.features[f].type, values[i][f]));
    }
    conn->Append(args);
    ++sent;
    if (expire_) {
      conn->Append(std::vector<std::string_view>{"EXPIRE", args[1], key_ttl_});
      ++sent;
    }
  }
  STRATA_RETURN_IF_ERROR(DrainReplies(*conn, sent));
  pool_.Release(std::move(conn));
  return Status::Ok();
}

Result<std::optional<std::string>> FeastRedisOnlineStore::DecodeRow(
    const FeatureViewDef& view, const std::string& key,
    std::vector<redis::Reply>::iterator fields) {
  const size_t n = view.features.size();
  bool any = false;
  for (size_t f = 0; f <= n; ++f) any |= fields[f].type == redis::Reply::kString;
  if (!any) return std::optional<std::string>();  // no field of this view: NOT_FOUND
  int64_t ts = 0;  // values without a timestamp: epoch, as Feast reads them
  if (fields[n].type == redis::Reply::kString) {
    Result<int64_t> t = ff::DecodeTimestamp(fields[n].str);
    if (!t.ok()) {
      return Status::Corruption(fmt::format("redis hash \"{}\" field \"_ts:{}\": {}",
                                            Printable(key), view.name, t.error().message()));
    }
    ts = *t;
  }
  std::vector<OnlineValue> values(n);
  for (size_t f = 0; f < n; ++f) {
    if (fields[f].type != redis::Reply::kString) continue;  // absent: null
    Result<OnlineValue> v = ff::DecodeValue(view.features[f].type, fields[f].str);
    if (!v.ok()) {
      return Status(v.error().code(),
                    fmt::format("redis hash \"{}\", feature \"{}:{}\": {}", Printable(key),
                                view.name, view.features[f].name, v.error().message()));
    }
    values[f] = std::move(*v);
  }
  return std::optional<std::string>(EncodeOnlineRow(view, ts, values));
}

Result<std::vector<std::optional<std::string>>> FeastRedisOnlineStore::ReadRows(
    const std::vector<std::pair<std::string, std::string>>& keys,
    const std::vector<const FeatureViewDef*>& views) {
  std::vector<std::optional<std::string>> out(keys.size());
  if (keys.empty()) return out;
  if (views.size() != keys.size())
    return Status::Internal("ReadRows: one view definition per key is needed");
  // One HMGET per entity key for the fields of all its views, pipelined.
  std::vector<std::vector<size_t>> groups;
  std::unordered_map<std::string_view, size_t> group_of;
  group_of.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [it, fresh] = group_of.try_emplace(keys[i].first, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  std::unordered_map<std::string, std::vector<std::string>> fields_of;  // per view name
  for (const FeatureViewDef* v : views) {
    if (!fields_of.count(v->name)) fields_of.emplace(v->name, ViewFields(*v));
  }
  STRATA_ASSIGN_OR_RETURN(auto conn, pool_.Acquire());
  std::vector<std::string> hash_keys(groups.size());
  std::vector<std::string_view> args;
  for (size_t g = 0; g < groups.size(); ++g) {
    hash_keys[g] = keys[groups[g][0]].first + project_;
    args.assign({"HMGET", hash_keys[g]});
    for (size_t i : groups[g]) {
      for (const std::string& f : fields_of.at(views[i]->name)) args.push_back(f);
    }
    conn->Append(args);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    STRATA_ASSIGN_OR_RETURN(redis::Reply r, conn->GetReply());
    if (r.is_error()) return Status::IOError("redis: " + r.str);
    size_t expect = 0;
    for (size_t i : groups[g]) expect += views[i]->features.size() + 1;
    if (r.type != redis::Reply::kArray || r.elements.size() != expect) {
      return Status::Corruption("redis: HMGET answered with an unexpected reply");
    }
    auto it = r.elements.begin();
    for (size_t i : groups[g]) {
      STRATA_ASSIGN_OR_RETURN(out[i], DecodeRow(*views[i], hash_keys[g], it));
      it += static_cast<std::ptrdiff_t>(views[i]->features.size() + 1);
    }
  }
  pool_.Release(std::move(conn));
  return out;
}

}  // namespace

Result<std::unique_ptr<OnlineStore>> OpenFeastRedisOnlineStore(const std::string& connection,
                                                               const std::string& project,
                                                               int64_t key_ttl_seconds) {
  STRATA_ASSIGN_OR_RETURN(redis::Endpoint endpoint, ParseRedisConnection(connection));
  auto store =
      std::make_unique<FeastRedisOnlineStore>(std::move(endpoint), project, key_ttl_seconds);
  STRATA_RETURN_IF_ERROR(store->Ping());
  return std::unique_ptr<OnlineStore>(std::move(store));
}

}  // namespace strata::features
