#include <strata/features/serving_log.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include <strata/core/clock.h>
#include <strata/core/log.h>
#include <strata/features/io.h>

namespace strata::features {

namespace {

namespace fs = std::filesystem;

constexpr log::Logger kLog("features");

struct Pending {
  OnlineResponse response;
  size_t entity_columns = 0;
  std::vector<DataType> feature_types;
  int64_t now_us = 0;
  std::string request_id;
};

DataType EntityType(const OnlineResponse::Column& c) {
  for (const OnlineValue& v : c.values) {
    switch (v.kind) {
      case OnlineValue::kNull: continue;
      case OnlineValue::kBool: return DataType::Bool();
      case OnlineValue::kInt: return DataType::Int64();
      case OnlineValue::kDouble: return DataType::Double();
      case OnlineValue::kString: return DataType::String();
      case OnlineValue::kBytes: return DataType::Binary();
      case OnlineValue::kTimestamp: return DataType::Timestamp(TimeUnit::kMicro, true);
    }
  }
  return DataType::String();
}

// Appends `v` to a column of type `t`, converting between numeric kinds; a
// value that does not fit the type is logged as NULL rather than guessed.
void AppendValue(Column* c, const OnlineValue& v) {
  if (v.kind == OnlineValue::kNull) {
    c->AppendNull();
    return;
  }
  const bool is_num = v.kind == OnlineValue::kInt || v.kind == OnlineValue::kBool || v.kind == OnlineValue::kTimestamp;
  const double d = v.kind == OnlineValue::kDouble ? v.d : static_cast<double>(v.i);
  switch (c->type().id) {
    case TypeId::kBool:
      if (is_num) return c->Append<uint8_t>(v.i ? 1 : 0);
      break;
    case TypeId::kInt32:
    case TypeId::kDate:
      if (is_num) return c->Append<int32_t>(static_cast<int32_t>(v.i));
      break;
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      if (is_num) return c->Append<int64_t>(v.i);
      break;
    case TypeId::kFloat:
      if (is_num || v.kind == OnlineValue::kDouble) return c->Append<float>(static_cast<float>(d));
      break;
    case TypeId::kDouble:
      if (is_num || v.kind == OnlineValue::kDouble) return c->Append<double>(d);
      break;
    case TypeId::kString:
    case TypeId::kBinary:
      if (v.kind == OnlineValue::kString || v.kind == OnlineValue::kBytes) return c->AppendString(v.s);
      break;
  }
  c->AppendNull();
}

// Timestamps are logged in microseconds with the UTC flag, as served.
DataType LoggedType(DataType t) {
  if (t.id == TypeId::kTimestamp) return DataType::Timestamp(TimeUnit::kMicro, true);
  return t;
}

Schema RowSchema(const Pending& p) {
  Schema s;
  const OnlineResponse& r = p.response;
  for (size_t c = 0; c < p.entity_columns && c < r.columns.size(); ++c) {
    s.push_back({r.names[c], EntityType(r.columns[c]), true});
  }
  for (size_t c = p.entity_columns; c < r.columns.size(); ++c) {
    const size_t fi = c - p.entity_columns;
    const DataType t = fi < p.feature_types.size() ? LoggedType(p.feature_types[fi]) : DataType::Double();
    s.push_back({r.names[c], t, true});
    s.push_back({r.names[c] + "__timestamp", DataType::Timestamp(TimeUnit::kMicro, true), true});
    s.push_back({r.names[c] + "__status", DataType::String(), true});
  }
  s.push_back({"__log_timestamp", DataType::Timestamp(TimeUnit::kMicro, true), true});
  s.push_back({"__request_id", DataType::String(), true});
  return s;
}

std::string SchemaKey(const Schema& s) {
  std::string k;
  for (const Field& f : s) {
    k += f.name;
    k.push_back('\x1f');
    k += f.type.ToString();
    k.push_back('\x1e');
  }
  return k;
}

void AppendRows(const Pending& p, Table* t) {
  const OnlineResponse& r = p.response;
  const size_t n = r.columns.empty() ? 0 : r.columns[0].values.size();
  size_t out = 0;
  for (size_t c = 0; c < p.entity_columns && c < r.columns.size(); ++c, ++out) {
    for (size_t i = 0; i < n; ++i) AppendValue(&t->column(out), r.columns[c].values[i]);
  }
  for (size_t c = p.entity_columns; c < r.columns.size(); ++c) {
    const OnlineResponse::Column& col = r.columns[c];
    Column& values = t->column(out++);
    Column& ts = t->column(out++);
    Column& status = t->column(out++);
    for (size_t i = 0; i < n; ++i) {
      AppendValue(&values, col.values[i]);
      if (col.statuses[i] == "NOT_FOUND" || col.event_ts_us[i] == 0) {
        ts.AppendNull();
      } else {
        ts.Append<int64_t>(col.event_ts_us[i]);
      }
      status.AppendString(col.statuses[i]);
    }
  }
  Column& log_ts = t->column(out++);
  Column& rid = t->column(out++);
  for (size_t i = 0; i < n; ++i) {
    log_ts.Append<int64_t>(p.now_us);
    rid.AppendString(p.request_id);
  }
}

// One open file per row schema.
struct OpenFile {
  Schema schema;
  std::unique_ptr<ParquetWriter> writer;
  std::string path;
  int64_t rows = 0;
  int64_t opened_ns = 0;  // MonotonicNanos()
};

}  // namespace

Table ServedRows(const OnlineResponse& response, size_t entity_columns, const std::vector<DataType>& feature_types,
                 int64_t now_us, const std::string& request_id) {
  Pending p{response, entity_columns, feature_types, now_us, request_id};
  Table t(RowSchema(p));
  AppendRows(p, &t);
  return t;
}

struct ServingLogger::Impl {
  ServingLogOptions options;
  std::string file_prefix;  // "served-<start time>-<pid>"

  mutable std::mutex mu;
  std::condition_variable wake;        // with mu: work queued, flush asked, closing
  std::condition_variable flushed;     // with mu: a flush finished
  std::deque<Pending> queue;           // guarded by mu
  bool closing = false;                // guarded by mu
  uint64_t flush_asked = 0;            // guarded by mu
  uint64_t flush_done = 0;             // guarded by mu
  Status flush_status;                 // guarded by mu
  Stats stats;                         // guarded by mu
  std::atomic<uint64_t> next_request{0};
  std::thread thread;

  // Writer thread only.
  std::map<std::string, OpenFile> files;
  uint64_t next_file = 0;

  Status Publish(OpenFile* f) {
    Status st = f->writer->Close();
    f->writer.reset();
    std::lock_guard<std::mutex> l(mu);
    if (st.ok()) {
      stats.files_written += 1;
      stats.rows_written += f->rows;
    } else {
      stats.last_error = st.ToString();
    }
    return st;
  }

  Status Write(Pending& p) {
    Schema schema = RowSchema(p);
    const std::string key = SchemaKey(schema);
    auto it = files.find(key);
    if (it == files.end()) {
      OpenFile f;
      f.schema = schema;
      f.path = fmt::format("{}/{}-{:06}.parquet", options.path, file_prefix, next_file++);
      ParquetWriteOptions wo;
      wo.codec = options.codec;
      wo.row_group_rows = std::max<int64_t>(1, std::min<int64_t>(options.max_rows_per_file, 1 << 16));
      wo.key_value_metadata = {{"strata.served_log", "1"}};
      auto w = ParquetWriter::Open(f.path, schema, wo);
      if (!w.ok()) return w.error();
      f.writer = std::move(*w);
      f.opened_ns = MonotonicNanos();
      it = files.emplace(key, std::move(f)).first;
    }
    Table rows(schema);
    AppendRows(p, &rows);
    OpenFile& f = it->second;
    Status st = f.writer->Write(rows);
    if (!st.ok()) {
      files.erase(it);  // the writer removes its temporary file
      return st;
    }
    f.rows += static_cast<int64_t>(rows.num_rows());
    if (f.rows >= options.max_rows_per_file) {
      st = Publish(&f);
      files.erase(it);
    }
    return st;
  }

  Status RollOld(bool all) {
    Status first;
    const int64_t now = MonotonicNanos();
    for (auto it = files.begin(); it != files.end();) {
      const double age = static_cast<double>(now - it->second.opened_ns) / 1e9;
      if (all || (options.max_seconds_per_file > 0 && age >= options.max_seconds_per_file)) {
        Status st = Publish(&it->second);
        if (first.ok()) first = st;
        it = files.erase(it);
      } else {
        ++it;
      }
    }
    return first;
  }

  void Run() {
    std::unique_lock<std::mutex> l(mu);
    while (true) {
      wake.wait_for(l, std::chrono::milliseconds(200),
                    [&] { return closing || !queue.empty() || flush_asked != flush_done; });
      std::deque<Pending> batch;
      batch.swap(queue);
      const uint64_t flush_target = flush_asked;
      const bool stop = closing;
      l.unlock();
      Status st;
      for (Pending& p : batch) {
        Status s = Write(p);
        if (!s.ok()) {
          if (st.ok()) st = s;
          kLog.Warn("served-vector log: {}", s.ToString());
        }
      }
      Status r = RollOld(flush_target != flush_done || stop);
      if (!r.ok()) kLog.Warn("served-vector log: {}", r.ToString());
      if (st.ok()) st = r;
      l.lock();
      if (!st.ok()) stats.last_error = st.ToString();
      if (flush_target != flush_done) {
        flush_status = st;
        flush_done = flush_target;
        flushed.notify_all();
      }
      if (stop && queue.empty()) break;
    }
  }
};

ServingLogger::ServingLogger(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ServingLogger::~ServingLogger() { (void)Close(); }

Result<std::unique_ptr<ServingLogger>> ServingLogger::Open(ServingLogOptions options) {
  if (!(options.sample_rate > 0 && options.sample_rate <= 1)) {
    return Status::InvalidArgument(
        fmt::format("served-vector logging: sample_rate must be in (0, 1], not {}", options.sample_rate));
  }
  if (options.path.empty()) return Status::InvalidArgument("served-vector logging: no log directory given");
  if (options.max_rows_per_file <= 0) options.max_rows_per_file = 1;
  std::error_code ec;
  fs::create_directories(options.path, ec);
  if (ec) {
    return Status::IOError(fmt::format("served-vector logging: cannot create {}: {}", options.path, ec.message()));
  }
  auto impl = std::make_unique<Impl>();
  const int64_t now = NowMicros();
  std::string t = FormatTimestamp(now, TimeUnit::kMicro, false);  // "2024-01-02 03:04:05.123456"
  std::string compact;
  for (char c : t) {
    if (std::isdigit(static_cast<unsigned char>(c))) compact.push_back(c);
    if (c == ' ') compact.push_back('T');
  }
  impl->file_prefix = fmt::format("served-{}-{}", compact, ::getpid());
  impl->options = std::move(options);
  Impl* p = impl.get();
  try {
    impl->thread = std::thread([p] { p->Run(); });
  } catch (const std::system_error& e) {
    return Status::ResourceExhausted(fmt::format("served-vector logging: cannot start its writer thread: {}", e.what()));
  }
  return std::unique_ptr<ServingLogger>(new ServingLogger(std::move(impl)));
}

const ServingLogOptions& ServingLogger::options() const { return impl_->options; }

bool ServingLogger::Sample() {
  const double rate = impl_->options.sample_rate;
  if (rate >= 1) return true;
  thread_local std::mt19937_64 rng(std::random_device{}() ^ std::hash<std::thread::id>{}(std::this_thread::get_id()));
  return static_cast<double>(rng() >> 11) * 0x1.0p-53 < rate;
}

void ServingLogger::Log(OnlineResponse response, size_t entity_columns, std::vector<DataType> feature_types,
                        int64_t now_us) {
  Impl& im = *impl_;
  Pending p{std::move(response), entity_columns, std::move(feature_types), now_us,
            fmt::format("{}-{}", im.file_prefix.substr(7), im.next_request.fetch_add(1, std::memory_order_relaxed))};
  std::lock_guard<std::mutex> l(im.mu);
  if (im.closing) return;
  if (im.queue.size() >= im.options.max_queued_requests) {
    im.stats.requests_dropped += 1;
    return;
  }
  im.queue.push_back(std::move(p));
  im.stats.requests_logged += 1;
  if (im.queue.size() == 1) im.wake.notify_one();
}

Status ServingLogger::Flush() {
  Impl& im = *impl_;
  std::unique_lock<std::mutex> l(im.mu);
  if (!im.thread.joinable()) return Status::Ok();
  const uint64_t target = ++im.flush_asked;
  im.wake.notify_one();
  im.flushed.wait(l, [&] { return im.flush_done >= target; });
  return im.flush_status;
}

Status ServingLogger::Close() {
  if (!impl_ || !impl_->thread.joinable()) return Status::Ok();
  Status st = Flush();
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    impl_->closing = true;
    impl_->wake.notify_one();
  }
  impl_->thread.join();
  return st;
}

ServingLogger::Stats ServingLogger::stats() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->stats;
}

Result<std::vector<std::pair<std::string, Column>>> ReadServingSample(const std::string& path,
                                                                     const std::vector<std::string>& columns) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!IsUrl(path) && fs::is_directory(path, ec)) {
    // increment(ec), not a range-for: its operator++ throws.
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code type_ec;
      if (it->is_regular_file(type_ec) && name.starts_with("served-") && name.ends_with(".parquet")) {
        files.push_back(it->path().string());
      }
    }
    if (ec) return Status::IOError(fmt::format("cannot list {}: {}", path, ec.message()));
    std::sort(files.begin(), files.end());  // names start with the logger's start time
    if (files.empty()) return Status::NotFound(fmt::format("{} holds no served-*.parquet log files", path));
  } else {
    files.push_back(path);
  }
  auto value_column = [](const Field& f) {
    return !f.name.starts_with("__") && !f.name.ends_with("__status") && !f.name.ends_with("__timestamp");
  };
  std::vector<std::pair<std::string, Column>> out;
  for (const std::string& file : files) {
    STRATA_ASSIGN_OR_RETURN(Table t, ReadTableFile(file));
    const std::vector<std::string>* want = &columns;
    std::vector<std::string> all;
    if (columns.empty()) {
      for (const Field& f : t.schema()) {
        if (value_column(f)) all.push_back(f.name);
      }
      want = &all;
    }
    for (const std::string& name : *want) {
      const int ix = t.FieldIndex(name);
      if (ix < 0) continue;
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == name; });
      if (it == out.end()) {
        out.emplace_back(name, t.column(ix));
        continue;
      }
      if (t.column(ix).type() == it->second.type()) {
        it->second.AppendColumn(t.column(ix));
      } else {
        auto cast = CastColumn(t.column(ix), it->second.type());
        if (!cast.ok()) return cast.error().WithContext(fmt::format("{}: column \"{}\"", file, name));
        it->second.AppendColumn(*cast);
      }
    }
  }
  for (const std::string& name : columns) {
    if (std::none_of(out.begin(), out.end(), [&](const auto& p) { return p.first == name; })) {
      return Status::NotFound(fmt::format("the serving sample {} has no column \"{}\"", path, name));
    }
  }
  return out;
}

}  // namespace strata::features
