// Online serving: the row and entity-key encodings (Feast's serialized
// entity key), materialization of the latest row per key into an online
// store, direct writes (push), and get-online-features with Feast's statuses.
#include <strata/features/online.h>

#include <algorithm>
#include <bit>
#include <deque>
#include <future>
#include <mutex>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include <fmt/format.h>

#include <strata/core/clock.h>
#include <strata/core/coding.h>
#include <strata/features/io.h>

namespace strata::features {

namespace {

// Feast's ValueType numbers.
enum FeastType : uint32_t { kBytes = 1, kString = 2, kInt32 = 3, kInt64 = 4, kDouble = 5, kFloat = 6, kBool = 7 };

void PutF64(std::string* out, double v) { PutFixed64(out, std::bit_cast<uint64_t>(v)); }

uint32_t Fingerprint(const FeatureViewDef& v) {
  uint32_t h = 2166136261u;  // FNV-1a over names and types (no allocation: it runs per decoded row)
  auto mix = [&h](uint8_t b) {
    h ^= b;
    h *= 16777619u;
  };
  for (const FeatureDef& f : v.features) {
    for (char c : f.name) mix(static_cast<uint8_t>(c));
    mix(':');
    mix(static_cast<uint8_t>(f.type.id));
    mix(static_cast<uint8_t>(f.type.unit));
    mix(';');
  }
  return h;
}

bool IsIntLike(TypeId t) {
  return t == TypeId::kInt32 || t == TypeId::kInt64 || t == TypeId::kBool || t == TypeId::kDate ||
         t == TypeId::kTimestamp;
}

int64_t TimeUs(const Column& c, size_t r) {
  if (c.type().id == TypeId::kDate) return static_cast<int64_t>(c.values<int32_t>()[r]) * 86400000000LL;
  return ConvertTime(c.values<int64_t>()[r], c.type().unit, TimeUnit::kMicro);
}

std::string SourceName(const FeatureViewDef& v, const std::string& name) {
  for (const auto& [from, to] : v.source.field_mapping) {
    if (to == name) return from;
  }
  return name;
}

bool ValueFits(const DataType& t, const OnlineValue& v) {
  if (v.kind == OnlineValue::kNull) return true;
  switch (t.id) {
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kDate:
    case TypeId::kTimestamp: return v.kind == OnlineValue::kInt || v.kind == OnlineValue::kTimestamp;
    case TypeId::kBool: return v.kind == OnlineValue::kBool || v.kind == OnlineValue::kInt;
    case TypeId::kFloat:
    case TypeId::kDouble: return v.kind == OnlineValue::kDouble || v.kind == OnlineValue::kInt;
    case TypeId::kString:
    case TypeId::kBinary: return v.kind == OnlineValue::kString || v.kind == OnlineValue::kBytes;
  }
  return true;
}

std::string Describe(const OnlineValue& v) {
  switch (v.kind) {
    case OnlineValue::kNull: return "null";
    case OnlineValue::kBool: return v.i ? "true" : "false";
    case OnlineValue::kInt:
    case OnlineValue::kTimestamp: return fmt::format("{}", v.i);
    case OnlineValue::kDouble: return fmt::format("{}", v.d);
    case OnlineValue::kString:
    case OnlineValue::kBytes: return fmt::format("\"{}\" (a string)", v.s.size() > 40 ? v.s.substr(0, 40) + "..." : v.s);
  }
  return "?";
}

}  // namespace

int64_t NowMicros() { return NowUnixNanos() / 1000; }

OnlineValue ValueAt(const Column& c, size_t r) {
  OnlineValue v;
  if (c.IsNull(r)) return v;
  switch (c.type().id) {
    case TypeId::kBool: v.kind = OnlineValue::kBool; v.i = c.values<uint8_t>()[r] ? 1 : 0; break;
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kDate: v.kind = OnlineValue::kInt; v.i = c.IntAt(r); break;
    case TypeId::kTimestamp: v.kind = OnlineValue::kTimestamp; v.i = TimeUs(c, r); break;
    case TypeId::kFloat:
    case TypeId::kDouble: v.kind = OnlineValue::kDouble; v.d = c.DoubleAt(r); break;
    case TypeId::kString: v.kind = OnlineValue::kString; v.s = std::string(c.StringAt(r)); break;
    case TypeId::kBinary: v.kind = OnlineValue::kBytes; v.s = std::string(c.StringAt(r)); break;
  }
  return v;
}

std::string SerializeEntityKey(std::vector<std::pair<std::string, OnlineValue>> keys) {
  std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  PutFixed32(&out, static_cast<uint32_t>(keys.size()));
  for (const auto& [name, v] : keys) {
    PutFixed32(&out, kString);
    PutFixed32(&out, static_cast<uint32_t>(name.size()));
    out += name;
  }
  for (const auto& [name, v] : keys) {
    switch (v.kind) {
      case OnlineValue::kInt:
      case OnlineValue::kTimestamp:
      case OnlineValue::kBool:
        PutFixed32(&out, kInt64);
        PutFixed32(&out, 8);
        PutFixed64(&out, static_cast<uint64_t>(v.i));
        break;
      case OnlineValue::kString:
        PutFixed32(&out, kString);
        PutFixed32(&out, static_cast<uint32_t>(v.s.size()));
        out += v.s;
        break;
      case OnlineValue::kBytes:
        PutFixed32(&out, kBytes);
        PutFixed32(&out, static_cast<uint32_t>(v.s.size()));
        out += v.s;
        break;
      case OnlineValue::kDouble:
        PutFixed32(&out, kDouble);
        PutFixed32(&out, 8);
        PutF64(&out, v.d);
        break;
      case OnlineValue::kNull:
        PutFixed32(&out, 0);
        PutFixed32(&out, 0);
        break;
    }
  }
  return out;
}

std::string EncodeOnlineRow(const FeatureViewDef& view, int64_t ts, const std::vector<OnlineValue>& values) {
  std::string out;
  PutFixed64(&out, static_cast<uint64_t>(ts));
  PutFixed32(&out, Fingerprint(view));
  PutFixed32(&out, static_cast<uint32_t>(values.size()));
  for (const OnlineValue& v : values) {
    out.push_back(static_cast<char>(v.kind));
    switch (v.kind) {
      case OnlineValue::kNull: break;
      case OnlineValue::kBool: out.push_back(static_cast<char>(v.i ? 1 : 0)); break;
      case OnlineValue::kInt:
      case OnlineValue::kTimestamp: PutFixed64(&out, static_cast<uint64_t>(v.i)); break;
      case OnlineValue::kDouble: PutF64(&out, v.d); break;
      case OnlineValue::kString:
      case OnlineValue::kBytes:
        PutFixed32(&out, static_cast<uint32_t>(v.s.size()));
        out += v.s;
        break;
    }
  }
  return out;
}

bool DecodeOnlineRow(const FeatureViewDef& view, std::string_view row, int64_t* ts, std::vector<OnlineValue>* values) {
  if (row.size() < 16) return false;
  *ts = static_cast<int64_t>(DecodeFixed64(row.data()));
  const uint32_t fp = DecodeFixed32(row.data() + 8);
  const uint32_t n = DecodeFixed32(row.data() + 12);
  if (fp != Fingerprint(view) || n != view.features.size()) return false;
  values->assign(n, OnlineValue{});
  size_t p = 16;
  auto need = [&](size_t k) { return row.size() - p >= k; };
  for (uint32_t i = 0; i < n; ++i) {
    if (!need(1)) return false;
    OnlineValue& v = (*values)[i];
    v.kind = static_cast<OnlineValue::Kind>(row[p++]);
    switch (v.kind) {
      case OnlineValue::kNull: break;
      case OnlineValue::kBool:
        if (!need(1)) return false;
        v.i = row[p++] ? 1 : 0;
        break;
      case OnlineValue::kInt:
      case OnlineValue::kTimestamp:
        if (!need(8)) return false;
        v.i = static_cast<int64_t>(DecodeFixed64(row.data() + p));
        p += 8;
        break;
      case OnlineValue::kDouble:
        if (!need(8)) return false;
        v.d = std::bit_cast<double>(DecodeFixed64(row.data() + p));
        p += 8;
        break;
      case OnlineValue::kString:
      case OnlineValue::kBytes: {
        if (!need(4)) return false;
        const uint32_t len = DecodeFixed32(row.data() + p);
        p += 4;
        if (!need(len)) return false;
        v.s.assign(row.data() + p, len);
        p += len;
        break;
      }
      default: return false;
    }
  }
  return true;
}

namespace {

struct Best {
  int64_t ts = 0;
  int64_t created = 0;
  std::string row;
};

// Latest row per entity key of one view within [start, end].
Status MaterializeView(const FeatureRepo& repo, const FeatureViewDef& v, OnlineStore* store,
                       const MaterializeOptions& opt, std::mutex* progress_mu, MaterializeStats* st) {
  std::vector<std::string> cols;
  for (const std::string& k : v.join_keys) cols.push_back(SourceName(v, k));
  cols.push_back(SourceName(v, v.source.timestamp_field));
  const bool has_created = !v.source.created_timestamp_column.empty();
  if (has_created) cols.push_back(SourceName(v, v.source.created_timestamp_column));
  for (const FeatureDef& f : v.features) cols.push_back(SourceName(v, f.name));
  std::vector<std::string> unique;
  std::vector<size_t> pos(cols.size());
  for (size_t i = 0; i < cols.size(); ++i) {
    auto it = std::find(unique.begin(), unique.end(), cols[i]);
    pos[i] = static_cast<size_t>(it - unique.begin());
    if (it == unique.end()) unique.push_back(cols[i]);
  }
  auto reader = BatchReader::Open(repo.ResolvePath(v.source.path), v.source.format, unique);
  if (!reader.ok()) return reader.error().WithContext(fmt::format("feature view \"{}\" source", v.name));
  const size_t nk = v.join_keys.size();
  const size_t f0 = nk + 1 + (has_created ? 1 : 0);
  std::unordered_map<std::string, Best> best;
  Table batch;
  int64_t scanned = 0, in_window = 0;
  const int64_t total = (*reader)->num_rows();
  std::vector<std::pair<std::string, OnlineValue>> key;
  std::vector<OnlineValue> values(v.features.size());
  while (true) {
    auto more = (*reader)->Next(&batch);
    if (!more.ok()) return more.error().WithContext(fmt::format("feature view \"{}\" source", v.name));
    if (!*more) break;
    const Column& ts_col = batch.column(pos[nk]);
    if (ts_col.type().id != TypeId::kTimestamp && ts_col.type().id != TypeId::kDate) {
      return Status::InvalidArgument(fmt::format("feature view \"{}\": timestamp field \"{}\" is not a timestamp",
                                                 v.name, v.source.timestamp_field));
    }
    std::vector<Column> feats;
    for (size_t i = 0; i < v.features.size(); ++i) {
      auto c = CastColumn(batch.column(pos[f0 + i]), v.features[i].type);
      if (!c.ok()) return c.error().WithContext(fmt::format("feature view \"{}\": feature \"{}\"", v.name, v.features[i].name));
      feats.push_back(std::move(*c));
    }
    for (size_t r = 0; r < batch.num_rows(); ++r) {
      if (ts_col.IsNull(r)) continue;
      const int64_t ts = TimeUs(ts_col, r);
      if (ts < opt.start_us || ts > opt.end_us) continue;
      key.clear();
      bool null_key = false;
      for (size_t k = 0; k < nk; ++k) {
        const Column& kc = batch.column(pos[k]);
        if (kc.IsNull(r)) null_key = true;
        key.emplace_back(v.join_keys[k], ValueAt(kc, r));
        if (IsIntLike(kc.type().id)) key.back().second.kind = OnlineValue::kInt;
      }
      if (null_key) continue;
      ++in_window;
      const int64_t created = has_created && !batch.column(pos[nk + 1]).IsNull(r)
                                  ? TimeUs(batch.column(pos[nk + 1]), r)
                                  : INT64_MIN;
      auto [it, fresh] = best.try_emplace(SerializeEntityKey(key));
      if (!fresh && (ts < it->second.ts || (ts == it->second.ts && created < it->second.created))) continue;
      for (size_t i = 0; i < feats.size(); ++i) values[i] = ValueAt(feats[i], r);
      it->second = Best{ts, created, EncodeOnlineRow(v, ts, values)};
    }
    scanned += static_cast<int64_t>(batch.num_rows());
    if (opt.progress) {
      std::lock_guard<std::mutex> l(*progress_mu);
      opt.progress(v.name, scanned, total);
    }
  }
  std::vector<std::pair<std::string, std::string>> rows;
  rows.reserve(opt.write_batch);
  int64_t written = 0;
  for (auto& [k, b] : best) {
    rows.emplace_back(k, std::move(b.row));
    if (rows.size() >= opt.write_batch) {
      STRATA_RETURN_IF_ERROR(store->WriteRows(v, rows));
      written += static_cast<int64_t>(rows.size());
      rows.clear();
    }
  }
  if (!rows.empty()) {
    STRATA_RETURN_IF_ERROR(store->WriteRows(v, rows));
    written += static_cast<int64_t>(rows.size());
  }
  std::lock_guard<std::mutex> l(*progress_mu);
  st->views += 1;
  st->rows_scanned += scanned;
  st->rows_in_window += in_window;
  st->entities_written += written;
  return Status::Ok();
}

}  // namespace

Status Materialize(FeatureRepo* registry, OnlineStore* store, const MaterializeOptions& opt, MaterializeStats* stats) {
  MaterializeStats local;
  MaterializeStats* st = stats ? stats : &local;
  if (opt.end_us < opt.start_us) {
    return Status::InvalidArgument("materialize: the end is before the start");
  }
  std::vector<FeatureViewDef*> views;
  if (opt.views.empty()) {
    for (FeatureViewDef& v : registry->views) {
      if (v.online) views.push_back(&v);
    }
  } else {
    for (const std::string& n : opt.views) {
      FeatureViewDef* v = registry->FindView(n);
      if (!v) return Status::NotFound(fmt::format("unknown feature view \"{}\"", n));
      if (!v->online) return Status::InvalidArgument(fmt::format("feature view \"{}\" is not online", n));
      views.push_back(v);
    }
  }
  std::mutex mu;
  std::vector<Status> results(views.size());
  const size_t threads = static_cast<size_t>(std::max(1, opt.threads));
  for (size_t b = 0; b < views.size(); b += threads) {
    std::vector<std::future<void>> running;
    for (size_t i = b; i < std::min(views.size(), b + threads); ++i) {
      try {
        running.push_back(std::async(std::launch::async, [&, i] {
          results[i] = MaterializeView(*registry, *views[i], store, opt, &mu, st);
        }));
      } catch (const std::system_error& e) {  // no thread could be started
        results[i] = Status::ResourceExhausted(
            fmt::format("cannot start a thread to materialize feature view \"{}\": {}", views[i]->name, e.what()));
      }
    }
    for (auto& f : running) f.get();
  }
  // A view is marked materialized only once all its rows are written and the
  // store has finished the load (flushed); a view that failed part-way stays
  // unmarked, so materialize-incremental covers its interval again.
  Status first_error;
  for (size_t i = 0; i < views.size(); ++i) {
    if (!results[i].ok() && first_error.ok()) {
      first_error =
          results[i].WithContext(fmt::format("materializing feature view \"{}\"", views[i]->name));
    }
  }
  Status finished = store->FinishBulkLoad();
  if (!finished.ok()) return first_error.ok() ? finished : first_error;
  bool marked = false;
  for (size_t i = 0; i < views.size(); ++i) {
    if (!results[i].ok()) continue;
    views[i]->materialization_intervals.push_back({opt.start_us, opt.end_us});
    marked = true;
  }
  if (marked && !registry->config.registry_path.empty()) {
    Status saved = SaveRegistry(registry->config.registry_path, *registry);
    if (!saved.ok() && first_error.ok()) first_error = saved;
  }
  return first_error;
}

Status MaterializeIncremental(FeatureRepo* registry, OnlineStore* store, int64_t end_us, MaterializeOptions opt,
                              MaterializeStats* stats) {
  std::vector<std::string> names = opt.views;
  if (names.empty()) {
    for (const FeatureViewDef& v : registry->views) {
      if (v.online) names.push_back(v.name);
    }
  }
  MaterializeStats total;
  for (const std::string& n : names) {
    const FeatureViewDef* v = registry->FindView(n);
    if (!v) return Status::NotFound(fmt::format("unknown feature view \"{}\"", n));
    int64_t start;
    if (!v->materialization_intervals.empty()) {
      start = v->materialization_intervals.back().end_us;
      for (const Interval& i : v->materialization_intervals) start = std::max(start, i.end_us);
    } else {
      const int64_t ttl = v->ttl_seconds > 0 ? v->ttl_seconds : 52LL * 7 * 86400;
      start = end_us - ttl * 1000000;
    }
    if (start >= end_us) continue;  // nothing new
    MaterializeOptions one = opt;
    one.start_us = start;
    one.end_us = end_us;
    one.views = {n};
    MaterializeStats s;
    STRATA_RETURN_IF_ERROR(Materialize(registry, store, one, &s));
    total.views += s.views;
    total.rows_scanned += s.rows_scanned;
    total.rows_in_window += s.rows_in_window;
    total.entities_written += s.entities_written;
  }
  if (stats) *stats = total;
  return Status::Ok();
}

Status WriteToOnlineStore(const FeatureRepo& registry, OnlineStore* store, const std::string& view_name,
                          const Table& rows) {
  const FeatureViewDef* v = registry.FindView(view_name);
  if (!v) return Status::NotFound(fmt::format("unknown feature view \"{}\"", view_name));
  std::vector<int> key_ix;
  for (const std::string& k : v->join_keys) {
    const int ix = rows.FieldIndex(k);
    if (ix < 0) return Status::InvalidArgument(fmt::format("the rows lack join key \"{}\" of view \"{}\"", k, v->name));
    key_ix.push_back(ix);
  }
  const int ts_ix = rows.FieldIndex(v->source.timestamp_field);
  if (ts_ix < 0) {
    return Status::InvalidArgument(fmt::format("the rows lack the timestamp field \"{}\"", v->source.timestamp_field));
  }
  const Column& ts_col = rows.column(ts_ix);
  if (ts_col.type().id != TypeId::kTimestamp && ts_col.type().id != TypeId::kDate) {
    return Status::InvalidArgument(fmt::format("\"{}\" must hold timestamps", v->source.timestamp_field));
  }
  std::vector<std::optional<Column>> feats;
  for (const FeatureDef& f : v->features) {
    const int ix = rows.FieldIndex(f.name);
    if (ix < 0) {
      feats.emplace_back();
      continue;
    }
    auto c = CastColumn(rows.column(ix), f.type);
    if (!c.ok()) return c.error().WithContext(fmt::format("feature \"{}\"", f.name));
    feats.emplace_back(std::move(*c));
  }
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<OnlineValue> values(v->features.size());
  for (size_t r = 0; r < rows.num_rows(); ++r) {
    if (ts_col.IsNull(r)) return Status::InvalidArgument(fmt::format("row {} has no event timestamp", r));
    std::vector<std::pair<std::string, OnlineValue>> key;
    for (size_t k = 0; k < key_ix.size(); ++k) {
      const Column& kc = rows.column(key_ix[k]);
      if (kc.IsNull(r)) return Status::InvalidArgument(fmt::format("row {} has a NULL join key", r));
      key.emplace_back(v->join_keys[k], ValueAt(kc, r));
      if (IsIntLike(kc.type().id)) key.back().second.kind = OnlineValue::kInt;
    }
    for (size_t i = 0; i < feats.size(); ++i) values[i] = feats[i] ? ValueAt(*feats[i], r) : OnlineValue{};
    out.emplace_back(SerializeEntityKey(std::move(key)), EncodeOnlineRow(*v, TimeUs(ts_col, r), values));
  }
  return store->WriteRows(*v, out);
}

namespace {

// Entity values must have the entity's type (declared, or inferred on apply):
// a string for an integer key would silently find nothing.
Status CheckEntities(const FeatureRepo& registry,
                     const std::vector<std::pair<std::string, std::vector<OnlineValue>>>& entities, size_t n) {
  for (const auto& [name, vals] : entities) {
    if (vals.size() != n) {
      return Status::InvalidArgument(fmt::format("entity \"{}\" has {} values, \"{}\" has {}", name, vals.size(),
                                                 entities[0].first, n));
    }
  }
  for (const auto& [name, vals] : entities) {
    const EntityDef* e = nullptr;
    for (const EntityDef& d : registry.entities) {
      if (d.join_key == name) e = &d;
    }
    if (!e || !e->value_type) continue;
    for (const OnlineValue& v : vals) {
      if (!ValueFits(*e->value_type, v)) {
        return Status::InvalidArgument(fmt::format("entity key \"{}\" must hold {} values (entity \"{}\"), got {}",
                                                   name, e->value_type->ToString(), e->name, Describe(v)));
      }
    }
  }
  return Status::Ok();
}

// What one projection reads: its view, the features wanted, and per entity
// row the slot of its key among the keys read.
struct ViewPlan {
  const FeatureViewDef* view;
  std::vector<size_t> feature_ix;
  std::vector<size_t> slot;  // per row: index into `keys`, or SIZE_MAX for a NULL key
};

// Entity keys are serialized once per row for each distinct join-key list
// (views over the same entities share them).
struct KeyGroup {
  const std::vector<std::string>* join_keys;
  std::vector<std::string> ek;  // per row; empty for a NULL key
};

// The serialized entity keys of every row for v's join keys, from `groups`
// or made and added there.
Result<const KeyGroup*> KeyGroupFor(const FeatureViewDef& v,
                                    const std::vector<std::pair<std::string, std::vector<OnlineValue>>>& entities,
                                    size_t n, std::deque<KeyGroup>* groups) {
  for (const KeyGroup& g : *groups) {
    if (*g.join_keys == v.join_keys) return &g;
  }
  std::vector<const std::vector<OnlineValue>*> cols;
  for (const std::string& k : v.join_keys) {
    const std::vector<OnlineValue>* c = nullptr;
    for (const auto& [name, vals] : entities) {
      if (name == k) {
        c = &vals;
        break;
      }
    }
    if (!c) {
      return Status::InvalidArgument(
          fmt::format("entities lack join key \"{}\" needed by feature view \"{}\"", k, v.name));
    }
    cols.push_back(c);
  }
  KeyGroup* group = &groups->emplace_back(KeyGroup{&v.join_keys, std::vector<std::string>(n)});
  std::vector<std::pair<std::string, OnlineValue>> key;
  for (size_t r = 0; r < n; ++r) {
    key.clear();
    bool null_key = false;
    for (size_t k = 0; k < cols.size(); ++k) {
      null_key |= (*cols[k])[r].kind == OnlineValue::kNull;
      key.emplace_back(v.join_keys[k], (*cols[k])[r]);
    }
    if (!null_key) group->ek[r] = SerializeEntityKey(key);
  }
  return group;
}

// Plans every projection: the (entity key, view) pairs to read, deduplicated,
// and the output names the projections add.
Status PlanOnlineRead(const FeatureRepo& registry, const std::vector<FeatureProjection>& features,
                      const std::vector<std::pair<std::string, std::vector<OnlineValue>>>& entities,
                      size_t n, bool full_names, std::vector<ViewPlan>* plans,
                      std::vector<std::pair<std::string, std::string>>* keys,
                      std::vector<const FeatureViewDef*>* key_views,
                      std::vector<std::string>* names) {
  // A deque: the strings are referenced by the dedup map below.
  std::deque<KeyGroup> groups;
  std::unordered_map<std::string_view, size_t> seen;
  for (const FeatureProjection& p : features) {
    const FeatureViewDef* v = registry.FindView(p.view);
    if (!v) return Status::NotFound(fmt::format("unknown feature view \"{}\"", p.view));
    ViewPlan plan{v, {}, {}};
    for (const std::string& f : p.features) {
      size_t ix = SIZE_MAX;
      for (size_t i = 0; i < v->features.size(); ++i) {
        if (v->features[i].name == f) ix = i;
      }
      if (ix == SIZE_MAX) return Status::NotFound(fmt::format("feature view \"{}\" has no feature \"{}\"", v->name, f));
      plan.feature_ix.push_back(ix);
    }
    STRATA_ASSIGN_OR_RETURN(const KeyGroup* group, KeyGroupFor(*v, entities, n, &groups));
    plan.slot.resize(n);
    seen.clear();
    for (size_t r = 0; r < n; ++r) {
      const std::string& ek = group->ek[r];
      if (ek.empty()) {
        plan.slot[r] = SIZE_MAX;
        continue;
      }
      if (n > 1) {  // repeated entity rows read once
        auto [it, fresh] = seen.try_emplace(ek, keys->size());
        if (!fresh) {
          plan.slot[r] = it->second;
          continue;
        }
      }
      plan.slot[r] = keys->size();
      keys->emplace_back(ek, v->name);
      key_views->push_back(v);
    }
    for (const std::string& f : p.features) names->push_back(full_names ? v->name + "__" + f : f);
    plans->push_back(std::move(plan));
  }
  return Status::Ok();
}

// Decodes the rows read and appends one response column per planned feature,
// with Feast's statuses.
void FillOnlineResponse(const std::vector<ViewPlan>& plans, const std::vector<std::optional<std::string>>& rows,
                        size_t n, int64_t now_us, OnlineResponse* resp) {
  std::vector<int64_t> ts(rows.size(), 0);
  std::vector<std::vector<OnlineValue>> decoded(rows.size());
  std::vector<uint8_t> found(rows.size(), 0);
  for (const ViewPlan& plan : plans) {
    for (size_t r = 0; r < n; ++r) {
      const size_t s = plan.slot[r];
      if (s == SIZE_MAX || found[s] || !rows[s]) continue;
      found[s] = DecodeOnlineRow(*plan.view, *rows[s], &ts[s], &decoded[s]) ? 1 : 0;
    }
  }
  for (const ViewPlan& plan : plans) {
    const int64_t ttl_us = plan.view->ttl_seconds * 1000000;
    for (size_t fi : plan.feature_ix) {
      OnlineResponse::Column c;
      c.values.resize(n);
      c.statuses.resize(n);
      c.event_ts_us.assign(n, 0);
      for (size_t r = 0; r < n; ++r) {
        const size_t s = plan.slot[r];
        if (s == SIZE_MAX || !found[s]) {
          c.statuses[r] = "NOT_FOUND";
          continue;
        }
        c.values[r] = decoded[s][fi];
        c.event_ts_us[r] = ts[s];
        if (ttl_us > 0 && now_us - ts[s] > ttl_us) {
          c.statuses[r] = "OUTSIDE_MAX_AGE";
        } else if (c.values[r].kind == OnlineValue::kNull) {
          c.statuses[r] = "NULL_VALUE";
        } else {
          c.statuses[r] = "PRESENT";
        }
      }
      resp->columns.push_back(std::move(c));
    }
  }
}

}  // namespace

Result<OnlineResponse> GetOnlineFeatures(const FeatureRepo& registry, OnlineStore* store,
                                         const std::vector<FeatureProjection>& features,
                                         const std::vector<std::pair<std::string, std::vector<OnlineValue>>>& entities,
                                         bool full_names, int64_t now_us) {
  if (entities.empty()) return Status::InvalidArgument("no entities given");
  const size_t n = entities[0].second.size();
  STRATA_RETURN_IF_ERROR(CheckEntities(registry, entities, n));
  OnlineResponse resp;
  for (const auto& [name, vals] : entities) {
    resp.names.push_back(name);
    OnlineResponse::Column c;
    c.values = vals;
    c.statuses.assign(n, "PRESENT");
    c.event_ts_us.assign(n, 0);
    resp.columns.push_back(std::move(c));
  }
  // Keys of every (row, view), deduplicated, then one read.
  std::vector<ViewPlan> plans;
  std::vector<std::pair<std::string, std::string>> keys;
  std::vector<const FeatureViewDef*> key_views;
  STRATA_RETURN_IF_ERROR(PlanOnlineRead(registry, features, entities, n, full_names, &plans, &keys,
                                        &key_views, &resp.names));
  // Duplicate output names need full_feature_names, as in Feast.
  for (size_t i = 0; i < resp.names.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (resp.names[i] == resp.names[j]) {
        return Status::InvalidArgument(fmt::format(
            "feature name \"{}\" appears twice: set full_feature_names to get view__feature names", resp.names[i]));
      }
    }
  }
  STRATA_ASSIGN_OR_RETURN(auto rows, store->ReadRows(keys, key_views));
  FillOnlineResponse(plans, rows, n, now_us, &resp);
  return resp;
}

}  // namespace strata::features
