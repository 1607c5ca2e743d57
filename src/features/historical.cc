// The point-in-time join (Feast's get_historical_features): for each entity
// row, the latest feature row of its key at or before its timestamp (within
// the view's TTL; the created column breaks ties). Keys become dense ids, the
// source is scanned once (decoding the next row group on another thread) and
// kept rows are matched in memory, or partitioned through spill files when
// they would not fit the memory budget.
#include <strata/features/historical.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <limits>
#include <set>
#include <system_error>
#include <unordered_map>

#include <fmt/format.h>

#include <strata/core/coding.h>
#include <strata/features/parquet.h>

namespace strata::features {

namespace {

namespace fs = std::filesystem;

constexpr int64_t kNoCreated = std::numeric_limits<int64_t>::min();

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// int64 -> dense id. Keys that span a small range (most integer ids) map
// through a direct array; others through open addressing with key and id in
// one slot (one cache line per probe). Lookups are the scan's hot loop: ten
// million of them for the benchmark's feature table.
class IntKeyMap {
 public:
  // Builds the map from every (non-NULL) key; ids follow first appearance.
  void Build(const std::vector<int64_t>& keys) {
    if (keys.empty()) return;
    int64_t lo = keys[0], hi = keys[0];
    for (int64_t k : keys) {
      lo = std::min(lo, k);
      hi = std::max(hi, k);
    }
    const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    if (range < (uint64_t{1} << 26) && range <= 8 * keys.size() + 1024) {
      direct_ = true;
      lo_ = lo;
      table_.assign(range + 1, kEmpty);
      for (int64_t k : keys) {
        uint32_t& slot = table_[static_cast<uint64_t>(k) - static_cast<uint64_t>(lo)];
        if (slot == kEmpty) slot = next_++;
      }
      return;
    }
    Grow(1024);
    for (int64_t k : keys) Insert(k);
  }
  int64_t Find(int64_t k) const {
    if (direct_) {
      const uint64_t off = static_cast<uint64_t>(k) - static_cast<uint64_t>(lo_);
      if (off >= table_.size()) return -1;
      const uint32_t v = table_[off];
      return v == kEmpty ? -1 : static_cast<int64_t>(v);
    }
    if (slots_.empty()) return -1;
    size_t i = Mix(static_cast<uint64_t>(k)) & mask_;
    while (slots_[i].id != kEmpty) {
      if (slots_[i].key == k) return slots_[i].id;
      i = (i + 1) & mask_;
    }
    return -1;
  }
  uint32_t size() const { return next_; }

 private:
  struct Slot {
    int64_t key;
    uint32_t id;
  };
  static constexpr uint32_t kEmpty = 0xffffffffu;

  void Insert(int64_t k) {
    if ((next_ + 1) * 2 > slots_.size()) Grow(slots_.size() * 2);
    size_t i = Mix(static_cast<uint64_t>(k)) & mask_;
    while (slots_[i].id != kEmpty) {
      if (slots_[i].key == k) return;
      i = (i + 1) & mask_;
    }
    slots_[i] = Slot{k, next_++};
  }
  void Grow(size_t cap) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{0, kEmpty});
    mask_ = cap - 1;
    for (const Slot& s : old) {
      if (s.id == kEmpty) continue;
      size_t i = Mix(static_cast<uint64_t>(s.key)) & mask_;
      while (slots_[i].id != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  bool direct_ = false;
  int64_t lo_ = 0;
  std::vector<uint32_t> table_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  uint32_t next_ = 0;
};

bool IntLike(TypeId t) {
  return t == TypeId::kBool || t == TypeId::kInt32 || t == TypeId::kInt64 || t == TypeId::kDate ||
         t == TypeId::kTimestamp;
}

// Join keys of either side, as dense ids shared by both.
class KeyIndex {
 public:
  explicit KeyIndex(bool single_int) : single_int_(single_int) {}

  // Entity side: assigns ids. -1 for a NULL key.
  void BuildFromEntities(const std::vector<const Column*>& cols, size_t n, std::vector<int64_t>* ids) {
    ids->resize(n);
    if (single_int_) {
      const Column& c = *cols[0];
      std::vector<int64_t> present;
      present.reserve(n);
      for (size_t r = 0; r < n; ++r) {
        if (!c.IsNull(r)) present.push_back(c.IntAt(r));
      }
      ints_.Build(present);
      for (size_t r = 0; r < n; ++r) (*ids)[r] = c.IsNull(r) ? int64_t{-1} : ints_.Find(c.IntAt(r));
      count_ = ints_.size();
      return;
    }
    std::string buf;
    strs_.reserve(n);
    for (size_t r = 0; r < n; ++r) {
      if (!Encode(cols, r, &buf)) {
        (*ids)[r] = -1;
        continue;
      }
      auto [it, fresh] = strs_.try_emplace(buf, count_);
      if (fresh) ++count_;
      (*ids)[r] = it->second;
    }
  }

  // Source side: -1 when NULL or absent among the entities.
  int64_t Lookup(const std::vector<const Column*>& cols, size_t r, std::string* buf) const {
    if (single_int_) return cols[0]->IsNull(r) ? -1 : ints_.Find(cols[0]->IntAt(r));
    if (!Encode(cols, r, buf)) return -1;
    auto it = strs_.find(*buf);
    return it == strs_.end() ? int64_t{-1} : int64_t{it->second};
  }

  uint32_t count() const { return count_; }

 private:
  static bool Encode(const std::vector<const Column*>& cols, size_t r, std::string* buf) {
    buf->clear();
    for (const Column* c : cols) {
      if (c->IsNull(r)) return false;
      if (IntLike(c->type().id)) {
        const int64_t v = c->IntAt(r);
        buf->push_back('i');
        PutFixed64(buf, static_cast<uint64_t>(v));
      } else {
        const std::string_view s = c->StringAt(r);
        buf->push_back('s');
        PutFixed32(buf, static_cast<uint32_t>(s.size()));
        buf->append(s);
      }
    }
    return true;
  }

  bool single_int_;
  IntKeyMap ints_;
  std::unordered_map<std::string, uint32_t> strs_;
  uint32_t count_ = 0;
};

TimeUnit UnitOf(const DataType& t) { return t.id == TypeId::kDate ? TimeUnit::kMilli : t.unit; }
TimeUnit Finer(TimeUnit a, TimeUnit b) { return static_cast<int>(a) > static_cast<int>(b) ? a : b; }
int64_t PerSecond(TimeUnit u) { return u == TimeUnit::kMilli ? 1000 : u == TimeUnit::kMicro ? 1000000 : 1000000000; }

// Row r of a timestamp/date column in `unit`.
inline int64_t TimeAt(const Column& c, size_t r, TimeUnit unit) {
  if (c.type().id == TypeId::kDate) {
    return ConvertTime(static_cast<int64_t>(c.values<int32_t>()[r]) * 86400000, TimeUnit::kMilli, unit);
  }
  return ConvertTime(c.values<int64_t>()[r], c.type().unit, unit);
}

bool IsTime(const DataType& t) { return t.id == TypeId::kTimestamp || t.id == TypeId::kDate; }

// Kept feature rows of one partition (or of everything).
struct Kept {
  std::vector<uint32_t> id;       // dense key id (global)
  std::vector<int64_t> ts;        // in the join unit
  std::vector<int64_t> created;   // in the join unit; empty when the view has none
  std::vector<Column> features;   // cast to the declared types
};

struct FRow {
  int64_t ts;
  int64_t created;
  uint32_t idx;
};

struct ERow {
  int64_t ts;
  uint32_t row;
};

// For each entity row in `erows` (ids global, divided by `stride` into local
// ids), the index into `k` of its point-in-time feature row, or -1.
void Match(const Kept& k, uint32_t nlocal, uint32_t stride, const std::vector<uint32_t>& erows,
           const std::vector<int64_t>& e_id, const std::vector<int64_t>& e_ts, const std::vector<uint8_t>& e_ts_valid,
           int64_t ttl, std::vector<int64_t>* match) {
  const size_t m = k.id.size();
  const bool has_created = !k.created.empty();
  // Counting sort of feature rows by key, then time order within each key.
  std::vector<uint32_t> start(static_cast<size_t>(nlocal) + 1, 0);
  for (size_t i = 0; i < m; ++i) ++start[k.id[i] / stride + 1];
  for (size_t g = 0; g < nlocal; ++g) start[g + 1] += start[g];
  std::vector<FRow> rows(m);
  {
    std::vector<uint32_t> pos(start.begin(), start.end() - 1);
    for (size_t i = 0; i < m; ++i) {
      rows[pos[k.id[i] / stride]++] = FRow{k.ts[i], has_created ? k.created[i] : 0, static_cast<uint32_t>(i)};
    }
  }
  auto by_time = [](const FRow& a, const FRow& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.created != b.created) return a.created < b.created;
    return a.idx < b.idx;
  };
  for (size_t g = 0; g < nlocal; ++g) {
    if (start[g + 1] - start[g] > 1) std::sort(rows.begin() + start[g], rows.begin() + start[g + 1], by_time);
  }
  // Entity rows the same way.
  std::vector<uint32_t> estart(static_cast<size_t>(nlocal) + 1, 0);
  size_t live = 0;
  for (uint32_t r : erows) {
    if (e_id[r] >= 0 && e_ts_valid[r]) {
      ++estart[static_cast<size_t>(e_id[r]) / stride + 1];
      ++live;
    }
  }
  for (size_t g = 0; g < nlocal; ++g) estart[g + 1] += estart[g];
  std::vector<ERow> ents(live);
  {
    std::vector<uint32_t> pos(estart.begin(), estart.end() - 1);
    for (uint32_t r : erows) {
      if (e_id[r] >= 0 && e_ts_valid[r]) ents[pos[static_cast<size_t>(e_id[r]) / stride]++] = ERow{e_ts[r], r};
    }
  }
  for (size_t g = 0; g < nlocal; ++g) {
    const uint32_t fb = start[g], fe = start[g + 1];
    const uint32_t eb = estart[g], ee = estart[g + 1];
    if (ee - eb > 1) {
      std::sort(ents.begin() + eb, ents.begin() + ee, [](const ERow& a, const ERow& b) { return a.ts < b.ts; });
    }
    uint32_t j = fb;  // first feature row with ts > the current entity ts
    for (uint32_t e = eb; e < ee; ++e) {
      const int64_t ets = ents[e].ts;
      while (j < fe && rows[j].ts <= ets) ++j;
      int64_t hit = -1;
      if (j > fb) {
        const FRow& f = rows[j - 1];
        // ttl: ts >= ets - ttl. Here f.ts < ets, so the true gap is in
        // [1, 2^64 - 1]: it is exact in uint64, where a signed ets - f.ts
        // overflows (a 1700-01-01 row in ns is ~1.0e19 before 2024).
        const uint64_t gap = static_cast<uint64_t>(ets) - static_cast<uint64_t>(f.ts);
        if (ttl <= 0 || f.ts >= ets || gap <= static_cast<uint64_t>(ttl)) hit = f.idx;
      }
      (*match)[ents[e].row] = hit;
    }
  }
}

std::string SourceName(const ViewJoinSpec& v, const std::string& name) {
  for (const auto& [from, to] : v.field_mapping) {
    if (to == name) return from;
  }
  return name;
}

class SpillFiles {
 public:
  ~SpillFiles() {
    for (const std::string& p : paths_) {
      std::error_code ec;
      fs::remove(p, ec);
      fs::remove(p + fmt::format(".tmp-{}", ::getpid()), ec);
    }
  }
  void Add(std::string p) { paths_.push_back(std::move(p)); }

 private:
  std::vector<std::string> paths_;
};

struct EntityTime {
  int column = -1;
  TimeUnit unit = TimeUnit::kMicro;
};

Result<EntityTime> FindEntityTime(const Table& e, const std::string& wanted) {
  EntityTime et;
  if (!wanted.empty()) {
    et.column = e.FieldIndex(wanted);
    if (et.column < 0) return Status::InvalidArgument(fmt::format("the entity table has no column \"{}\"", wanted));
  } else if (e.FieldIndex("event_timestamp") >= 0) {
    et.column = e.FieldIndex("event_timestamp");
  } else {
    for (size_t i = 0; i < e.num_columns(); ++i) {
      if (IsTime(e.field(i).type)) {
        if (et.column >= 0) {
          return Status::InvalidArgument(
              "the entity table has several timestamp columns and none is named event_timestamp: name the one "
              "to use (--timestamp-column)");
        }
        et.column = static_cast<int>(i);
      }
    }
    if (et.column < 0) {
      return Status::InvalidArgument("the entity table has no timestamp column (event_timestamp)");
    }
  }
  const DataType& t = e.field(et.column).type;
  if (!IsTime(t)) {
    return Status::InvalidArgument(fmt::format("entity column \"{}\" is {}, not a timestamp",
                                               e.field(et.column).name, t.ToString()));
  }
  et.unit = UnitOf(t);
  return et;
}

// The view's source, projected to keys, timestamps and features (in that
// order): the unique column names read, and where each wanted one sits.
struct ViewSource {
  std::vector<std::string> unique;
  std::vector<int> pos_of;  // per wanted column: its index among `unique`
  std::unique_ptr<BatchReader> reader;  // null when the source is an in-memory table
  Schema schema;  // of `unique`
  size_t nk = 0;  // join keys
  bool has_created = false;
  size_t f0 = 0;  // the first feature's index in pos_of
};

Status OpenViewSource(const ViewJoinSpec& v, const std::string& what, ViewSource* src) {
  std::vector<std::string> wanted;
  for (const std::string& k : v.join_keys) wanted.push_back(SourceName(v, k));
  wanted.push_back(SourceName(v, v.timestamp_field));
  src->nk = v.join_keys.size();
  src->has_created = !v.created_timestamp_column.empty();
  if (src->has_created) wanted.push_back(SourceName(v, v.created_timestamp_column));
  src->f0 = src->nk + 1 + (src->has_created ? 1 : 0);
  for (const FeatureDef& f : v.features) wanted.push_back(SourceName(v, f.name));
  // A column may serve twice (rare: a feature that is also the created column); project unique names.
  std::vector<std::string>& unique = src->unique;
  src->pos_of.resize(wanted.size());
  for (size_t i = 0; i < wanted.size(); ++i) {
    auto it = std::find(unique.begin(), unique.end(), wanted[i]);
    src->pos_of[i] = static_cast<int>(it - unique.begin());
    if (it == unique.end()) unique.push_back(wanted[i]);
  }
  if (v.table != nullptr) {
    for (const std::string& c : unique) {
      const int ix = v.table->FieldIndex(c);
      if (ix < 0) return Status::InvalidArgument(fmt::format("{}: the source has no column \"{}\"", what, c));
      src->schema.push_back(v.table->field(ix));
    }
  } else {
    auto r = BatchReader::Open(v.path, v.format, unique);
    if (!r.ok()) return r.error().WithContext(what + " source");
    src->reader = std::move(*r);
    src->schema = src->reader->schema();
  }
  return Status::Ok();
}

// Join keys comparable with the entity table's, timestamps that are times,
// features castable to their declared types.
Status CheckViewSource(const ViewJoinSpec& v, const std::string& what, const std::vector<const Column*>& ekeys,
                       const ViewSource& src) {
  const std::vector<int>& pos_of = src.pos_of;
  const size_t nk = src.nk;
  for (size_t i = 0; i < nk; ++i) {
    const DataType& s = src.schema[pos_of[i]].type;
    const DataType& e = ekeys[i]->type();
    const bool ok = IntLike(s.id) ? IntLike(e.id) : (s.is_string_like() && e.is_string_like());
    if (!ok) {
      return Status::InvalidArgument(fmt::format("join key \"{}\" is {} in the entity table but {} in {}'s source",
                                                 v.join_keys[i], e.ToString(), s.ToString(), what));
    }
  }
  const DataType& ts_type = src.schema[pos_of[nk]].type;
  if (!IsTime(ts_type)) {
    return Status::InvalidArgument(fmt::format("{}: timestamp field \"{}\" is {}, not a timestamp", what,
                                               v.timestamp_field, ts_type.ToString()));
  }
  if (src.has_created && !IsTime(src.schema[pos_of[nk + 1]].type)) {
    return Status::InvalidArgument(fmt::format("{}: created column \"{}\" is not a timestamp", what,
                                               v.created_timestamp_column));
  }
  for (size_t i = 0; i < v.features.size(); ++i) {
    const DataType& s = src.schema[pos_of[src.f0 + i]].type;
    if (!CanCast(s, v.features[i].type)) {
      return Status::InvalidArgument(fmt::format("{}: feature \"{}\" is declared {} but the source column is {}", what,
                                                 v.features[i].name, v.features[i].type.ToString(), s.ToString()));
    }
  }
  return Status::Ok();
}

// Entity rows as the join sees them: dense key ids (-1 for NULL) and
// timestamps in the join unit (valid = 0 for NULL).
struct EntitySide {
  std::vector<int64_t> id;
  std::vector<int64_t> ts;
  std::vector<uint8_t> valid;
};

void BuildEntityTimes(const Column& ets_col, size_t n, TimeUnit unit, EntitySide* e) {
  e->ts.resize(n);
  e->valid.resize(n);
  for (size_t r = 0; r < n; ++r) {
    e->valid[r] = ets_col.IsValid(r);
    e->ts[r] = e->valid[r] ? TimeAt(ets_col, r, unit) : 0;
  }
}

// The TTL in `unit`, saturating; 0 for none.
int64_t TtlIn(int64_t ttl_seconds, TimeUnit unit) {
  return ttl_seconds > 0 ? (ttl_seconds > std::numeric_limits<int64_t>::max() / PerSecond(unit)
                                ? std::numeric_limits<int64_t>::max()
                                : ttl_seconds * PerSecond(unit))
                         : 0;
}

// Partitions: enough that each one's kept rows fit the budget.
uint32_t PartitionCount(const ViewSource& src, const ViewJoinSpec& v, const HistoricalOptions& opt, uint32_t nkeys) {
  int64_t est = 0;
  if (src.reader) {
    est = src.reader->estimated_bytes() + src.reader->num_rows() * 32;
  } else {
    est = static_cast<int64_t>(v.table->num_rows()) * 64;
  }
  const int64_t budget = std::max<int64_t>(opt.memory_budget_bytes, 4096);
  uint32_t parts = static_cast<uint32_t>(std::min<int64_t>((est + budget - 1) / budget, 4096));
  parts = std::max<uint32_t>(parts, 1);
  parts = std::min<uint32_t>(parts, nkeys);
  return parts;
}

// Kept rows of one batch, before the features are taken: source row, key id,
// timestamp and created time (in the join unit).
struct KeptRows {
  std::vector<int64_t> take;
  std::vector<uint32_t> ids;
  std::vector<int64_t> tss, crs;
};

// The scan's hot loop: the rows of a batch whose key is an entity's and whose
// timestamp is not NULL.
void KeepRows(const Table& batch, const ViewSource& src, const KeyIndex& keys, TimeUnit unit, std::string* buf,
              KeptRows* kept) {
  const size_t m = batch.num_rows();
  const size_t nk = src.nk;
  std::vector<const Column*> fkeys;
  for (size_t i = 0; i < nk; ++i) fkeys.push_back(&batch.column(src.pos_of[i]));
  const Column& fts = batch.column(src.pos_of[nk]);
  const Column* fcr = src.has_created ? &batch.column(src.pos_of[nk + 1]) : nullptr;
  std::vector<int64_t>& take = kept->take;
  std::vector<uint32_t>& ids = kept->ids;
  std::vector<int64_t>& tss = kept->tss;
  std::vector<int64_t>& crs = kept->crs;
  take.clear();
  ids.clear();
  tss.clear();
  crs.clear();
  for (size_t r = 0; r < m; ++r) {
    if (fts.IsNull(r)) continue;
    const int64_t id = keys.Lookup(fkeys, r, buf);
    if (id < 0) continue;
    take.push_back(static_cast<int64_t>(r));
    ids.push_back(static_cast<uint32_t>(id));
    tss.push_back(TimeAt(fts, r, unit));
    if (fcr) crs.push_back(fcr->IsNull(r) ? kNoCreated : TimeAt(*fcr, r, unit));
  }
}

// The kept rows' features, cast to their declared types.
Status TakeFeatures(const Table& batch, const ViewSource& src, const ViewJoinSpec& v, const std::string& what,
                    const std::vector<int64_t>& take, std::vector<Column>* feats) {
  for (size_t i = 0; i < v.features.size(); ++i) {
    const Column& col = batch.column(src.pos_of[src.f0 + i]);
    Column taken = col.Take(take);
    if (taken.type() == v.features[i].type) {
      feats->push_back(std::move(taken));
      continue;
    }
    auto cast = CastColumn(taken, v.features[i].type);
    if (!cast.ok()) {
      return cast.error().WithContext(fmt::format("{}: feature \"{}\"", what, v.features[i].name));
    }
    feats->push_back(std::move(*cast));
  }
  return Status::Ok();
}

// Kept rows partitioned by key id into Parquet files (parts > 1), each read
// back and joined alone.
struct Spill {
  Spill(const Schema& kept_schema, const HistoricalOptions& opt, uint32_t parts)
      : writers(parts > 1 ? parts : 0), paths(writers.size()) {
    dir = opt.spill_dir;
    if (dir.empty()) {
      const char* t = std::getenv("TMPDIR");
      dir = t && *t ? t : "/tmp";
    }
    schema = {{"__id", DataType::Int64(), false}, {"__ts", DataType::Int64(), false},
              {"__created", DataType::Int64(), false}};
    for (const Field& f : kept_schema) schema.push_back({"f_" + f.name, f.type, true});
    options.codec = ParquetCodec::kLz4Raw;
    options.dictionary = ParquetWriteOptions::Dictionary::kNever;
    options.statistics = false;
    options.row_group_rows = 1 << 16;
  }

  // Creates the directory (and its parents) when it does not exist yet:
  // users name a fresh scratch path as often as an existing one.
  Status CreateDir() const {
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
      return Status::InvalidArgument(
          fmt::format("spill directory {} exists and is not a directory: name a directory", dir));
    }
    fs::create_directories(dir, ec);
    if (ec) {
      return Status::IOError(
          fmt::format("cannot create the spill directory {}: {} (name a writable directory)", dir,
                      ec.message()));
    }
    return Status::Ok();
  }

  std::string dir;
  SpillFiles cleanup;  // declared before the writers: they close first
  std::vector<std::unique_ptr<ParquetWriter>> writers;
  std::vector<std::string> paths;
  Schema schema;
  ParquetWriteOptions options;
};

// Routes one batch's kept rows to their partitions' spill files. `tag` makes
// the file names unique to this join.
Status SpillBatch(const KeptRows& kept, const std::vector<Column>& feats, bool has_created, const std::string& view,
                  uintptr_t tag, Spill* spill) {
  const uint32_t parts = static_cast<uint32_t>(spill->writers.size());
  const std::vector<uint32_t>& ids = kept.ids;
  std::vector<std::vector<int64_t>> by_part(parts);
  for (size_t i = 0; i < ids.size(); ++i) by_part[ids[i] % parts].push_back(static_cast<int64_t>(i));
  for (uint32_t p = 0; p < parts; ++p) {
    if (by_part[p].empty()) continue;
    Table t(spill->schema);
    Column& cid = t.column(0);
    Column& cts = t.column(1);
    Column& ccr = t.column(2);
    for (int64_t i : by_part[p]) {
      cid.Append<int64_t>(ids[i]);
      cts.Append<int64_t>(kept.tss[i]);
      ccr.Append<int64_t>(has_created ? kept.crs[i] : 0);
    }
    for (size_t f = 0; f < feats.size(); ++f) t.column(3 + f) = feats[f].Take(by_part[p]);
    if (!spill->writers[p]) {
      spill->paths[p] = fmt::format("{}/strata-pit-{}-{}-{}-{}.parquet", spill->dir, ::getpid(), tag, view, p);
      spill->cleanup.Add(spill->paths[p]);
      STRATA_ASSIGN_OR_RETURN(spill->writers[p], ParquetWriter::Open(spill->paths[p], spill->schema, spill->options));
    }
    STRATA_RETURN_IF_ERROR(spill->writers[p]->Write(t).WithContext("spilling to " + spill->paths[p]));
  }
  return Status::Ok();
}

// Decodes the reader's next batch into *t on another thread. std::async
// throws when no thread can be started: that becomes a Status here.
Status StartFetch(BatchReader* reader, Table* t, std::future<Result<bool>>* next) {
  try {
    *next = std::async(std::launch::async, [reader, t]() -> Result<bool> { return reader->Next(t); });
  } catch (const std::system_error& e) {
    return Status::ResourceExhausted(fmt::format("cannot start a thread to decode the source: {}", e.what()));
  }
  return Status::Ok();
}

// Scans the source once: kept rows go to `all` (one partition) or to the
// spill files. The next row group decodes on another thread while this one is
// filtered (decoding is most of the work; the join uses both cores).
Status ScanView(const ViewJoinSpec& v, const std::string& what, const ViewSource& src, const KeyIndex& keys,
                TimeUnit unit, HistoricalStats* st, Kept* all, Spill* spill) {
  const bool one_part = spill->writers.empty();
  Table batch;
  bool first = true;
  std::string buf;
  KeptRows kept;
  BatchReader* reader = src.reader.get();
  Table next_batch;  // declared before the future: its destructor waits for the fetch writing here
  std::future<Result<bool>> next;
  if (reader) STRATA_RETURN_IF_ERROR(StartFetch(reader, &next_batch, &next));
  while (true) {
    if (reader) {
      Result<bool> more = next.get();
      if (!more.ok()) return more.error().WithContext(what + " source");
      if (!*more) break;
      batch = std::move(next_batch);
      next_batch = Table();
      STRATA_RETURN_IF_ERROR(StartFetch(reader, &next_batch, &next));
    } else {
      if (!first) break;
      STRATA_ASSIGN_OR_RETURN(batch, v.table->Select(src.unique));
    }
    first = false;
    st->feature_rows_read += static_cast<int64_t>(batch.num_rows());
    KeepRows(batch, src, keys, unit, &buf, &kept);
    st->feature_rows_kept += static_cast<int64_t>(kept.take.size());
    if (kept.take.empty()) continue;
    std::vector<Column> feats;
    STRATA_RETURN_IF_ERROR(TakeFeatures(batch, src, v, what, kept.take, &feats));
    if (one_part) {
      all->id.insert(all->id.end(), kept.ids.begin(), kept.ids.end());
      all->ts.insert(all->ts.end(), kept.tss.begin(), kept.tss.end());
      if (src.has_created) all->created.insert(all->created.end(), kept.crs.begin(), kept.crs.end());
      for (size_t i = 0; i < feats.size(); ++i) all->features[i].AppendColumn(feats[i]);
      continue;
    }
    STRATA_RETURN_IF_ERROR(SpillBatch(kept, feats, src.has_created, v.name, reinterpret_cast<uintptr_t>(all), spill));
  }
  return Status::Ok();
}

// Joins partition by partition from the spill files: *match gets, per entity
// row, its index among the matched rows gathered into *result's columns.
Status MatchSpilled(const ViewJoinSpec& v, const EntitySide& e, size_t n, uint32_t nkeys, int64_t ttl,
                    bool has_created, HistoricalStats* st, Spill* spill, std::vector<int64_t>* match,
                    std::vector<Column>* result) {
  const uint32_t parts = static_cast<uint32_t>(spill->writers.size());
  // Entity rows by partition.
  std::vector<std::vector<uint32_t>> eparts(parts);
  for (size_t r = 0; r < n; ++r) {
    if (e.id[r] >= 0) eparts[static_cast<size_t>(e.id[r]) % parts].push_back(static_cast<uint32_t>(r));
  }
  // Matched rows of every partition, gathered here, then put in entity order.
  std::vector<int64_t> matched_row;
  std::vector<Column> matched;
  for (const FeatureDef& f : v.features) matched.emplace_back(f.type);
  for (uint32_t p = 0; p < parts; ++p) {
    if (!spill->writers[p] || eparts[p].empty()) continue;
    STRATA_RETURN_IF_ERROR(spill->writers[p]->Close());
    spill->writers[p].reset();
    std::error_code ec;
    const uintmax_t spilled = fs::file_size(spill->paths[p], ec);
    if (!ec) st->spilled_bytes += static_cast<int64_t>(spilled);  // else the read below says why
    STRATA_ASSIGN_OR_RETURN(Table t, ReadParquetFile(spill->paths[p]));
    fs::remove(spill->paths[p], ec);
    Kept k;
    const auto& cid = t.column(0).values<int64_t>();
    k.id.assign(cid.begin(), cid.end());
    k.ts = t.column(1).values<int64_t>();
    if (has_created) k.created = t.column(2).values<int64_t>();
    // Local ids: id / parts (ids in partition p are p, p+parts, ...).
    const uint32_t nlocal = (nkeys + parts - 1) / parts + 1;
    std::vector<int64_t> pmatch(n, -1);
    Match(k, nlocal, parts, eparts[p], e.id, e.ts, e.valid, ttl, &pmatch);
    std::vector<int64_t> hits;
    for (uint32_t r : eparts[p]) {
      if (pmatch[r] >= 0) {
        hits.push_back(pmatch[r]);
        (*match)[r] = static_cast<int64_t>(matched_row.size());
        matched_row.push_back(r);
      }
    }
    for (size_t f = 0; f < v.features.size(); ++f) matched[f].AppendColumn(t.column(3 + f).Take(hits));
  }
  for (Column& c : matched) result->push_back(c.Take(*match));
  return Status::Ok();
}

// Joins one view; appends its output columns.
Status JoinView(const Table& entities, const EntityTime& et, const ViewJoinSpec& v, const HistoricalOptions& opt,
                HistoricalStats* st, std::vector<Column>* out) {
  const size_t n = entities.num_rows();
  const std::string what = fmt::format("feature view \"{}\"", v.name);
  if (v.join_keys.empty()) return Status::InvalidArgument(what + " has no join keys");
  if (v.output_names.size() != v.features.size()) return Status::InvalidArgument(what + ": output names mismatch");
  std::vector<const Column*> ekeys;
  for (const std::string& k : v.join_keys) {
    const int ix = entities.FieldIndex(k);
    if (ix < 0) {
      return Status::InvalidArgument(
          fmt::format("the entity table has no column \"{}\", a join key of {}", k, what));
    }
    ekeys.push_back(&entities.column(ix));
  }
  ViewSource src;
  STRATA_RETURN_IF_ERROR(OpenViewSource(v, what, &src));
  STRATA_RETURN_IF_ERROR(CheckViewSource(v, what, ekeys, src));

  // Entity side.
  const bool single_int = src.nk == 1 && IntLike(ekeys[0]->type().id);
  KeyIndex keys(single_int);
  EntitySide e;
  keys.BuildFromEntities(ekeys, n, &e.id);
  const TimeUnit unit = Finer(et.unit, UnitOf(src.schema[src.pos_of[src.nk]].type));
  BuildEntityTimes(entities.column(et.column), n, unit, &e);
  const int64_t ttl = TtlIn(v.ttl_seconds, unit);
  const uint32_t nkeys = std::max<uint32_t>(keys.count(), 1);
  const uint32_t parts = PartitionCount(src, v, opt, nkeys);
  st->partitions += parts;

  Schema kept_schema;
  for (const FeatureDef& f : v.features) kept_schema.push_back(Field{f.name, f.type, true});
  Kept all;
  for (const FeatureDef& f : v.features) all.features.emplace_back(f.type);
  if (parts == 1 && src.reader && src.reader->num_rows() > 0) {
    // Reserving the worst case (every row kept) once beats regrowing 10M-row vectors.
    const size_t rows = static_cast<size_t>(src.reader->num_rows());
    all.id.reserve(rows);
    all.ts.reserve(rows);
    if (src.has_created) all.created.reserve(rows);
    for (Column& c : all.features) c.Reserve(rows);
  }
  Spill spill(kept_schema, opt, parts);
  if (parts > 1) STRATA_RETURN_IF_ERROR(spill.CreateDir());
  STRATA_RETURN_IF_ERROR(ScanView(v, what, src, keys, unit, st, &all, &spill));

  std::vector<int64_t> match(n, -1);
  std::vector<Column> result;
  if (parts == 1) {
    std::vector<uint32_t> erows(n);
    for (size_t r = 0; r < n; ++r) erows[r] = static_cast<uint32_t>(r);
    Match(all, nkeys, 1, erows, e.id, e.ts, e.valid, ttl, &match);
    for (Column& c : all.features) result.push_back(c.Take(match));
  } else {
    STRATA_RETURN_IF_ERROR(MatchSpilled(v, e, n, nkeys, ttl, src.has_created, st, &spill, &match, &result));
  }
  for (int64_t mi : match) st->matched += mi >= 0;
  for (Column& c : result) out->push_back(std::move(c));
  return Status::Ok();
}

}  // namespace

Result<Table> PointInTimeJoin(const Table& entities, const std::vector<ViewJoinSpec>& views,
                              const HistoricalOptions& options, HistoricalStats* stats) {
  HistoricalStats local;
  HistoricalStats* st = stats ? stats : &local;
  STRATA_RETURN_IF_ERROR(entities.Validate());
  if (entities.num_rows() >= std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument("more than 4 billion entity rows: split the entity table");
  }
  STRATA_ASSIGN_OR_RETURN(EntityTime et, FindEntityTime(entities, options.entity_timestamp_column));
  // Output names: unique, and not already entity columns.
  std::set<std::string> names;
  for (const Field& f : entities.schema()) names.insert(f.name);
  for (const ViewJoinSpec& v : views) {
    for (const std::string& o : v.output_names) {
      if (!names.insert(o).second) {
        return Status::InvalidArgument(fmt::format(
            "output column \"{}\" (from feature view \"{}\") would appear twice: it is already an entity column "
            "or another view's feature; use full feature names (view__feature)",
            o, v.name));
      }
    }
  }
  Table out = entities;
  for (const ViewJoinSpec& v : views) {
    std::vector<Column> cols;
    STRATA_RETURN_IF_ERROR(JoinView(entities, et, v, options, st, &cols));
    for (size_t i = 0; i < cols.size(); ++i) {
      STRATA_RETURN_IF_ERROR(out.AddColumn(Field{v.output_names[i], v.features[i].type, true}, std::move(cols[i])));
    }
  }
  return out;
}

Result<std::vector<ViewJoinSpec>> PlanHistorical(const FeatureRepo& repo, const std::vector<FeatureProjection>& features,
                                                 const HistoricalOptions& options) {
  std::vector<ViewJoinSpec> specs;
  for (const FeatureProjection& p : features) {
    const FeatureViewDef* v = repo.FindView(p.view);
    if (!v) return Status::NotFound(fmt::format("unknown feature view \"{}\"", p.view));
    ViewJoinSpec s;
    s.name = v->name;
    s.path = repo.ResolvePath(v->source.path);
    s.format = v->source.format;
    s.join_keys = v->join_keys;
    s.field_mapping = v->source.field_mapping;
    s.timestamp_field = v->source.timestamp_field;
    s.created_timestamp_column = v->source.created_timestamp_column;
    s.ttl_seconds = v->ttl_seconds;
    std::vector<std::string> names = p.features;
    if (names.empty()) {
      for (const FeatureDef& f : v->features) names.push_back(f.name);
    }
    for (const std::string& n : names) {
      const FeatureDef* f = v->FindFeature(n);
      if (!f) return Status::NotFound(fmt::format("feature view \"{}\" has no feature \"{}\"", v->name, n));
      s.features.push_back(*f);
      s.output_names.push_back(options.full_feature_names ? v->name + "__" + n : n);
    }
    specs.push_back(std::move(s));
  }
  return specs;
}

Result<Table> GetHistoricalFeatures(const FeatureRepo& repo, const Table& entities,
                                    const std::vector<FeatureProjection>& features, const HistoricalOptions& options,
                                    HistoricalStats* stats) {
  STRATA_ASSIGN_OR_RETURN(auto specs, PlanHistorical(repo, features, options));
  return PointInTimeJoin(entities, specs, options, stats);
}

}  // namespace strata::features
