// Sampled logging of served feature vectors to Parquet, and reading the log
// back as the serving side of a skew check.
//
// The feature server hands a sampled request's response to ServingLogger::Log,
// which only moves it onto a bounded queue (a full queue drops the request and
// counts it); one background thread turns responses into rows and appends them
// to a ParquetWriter per row schema (requests asking for other features have
// other columns). Files roll after max_rows_per_file rows or
// max_seconds_per_file seconds, and on Close. Each file is written under a
// temporary name and renamed when complete, so a reader listing
// DIR/served-*.parquet only ever sees whole files.
//
// Row layout, one row per entity row of a request (Feast's feature-logging
// names): the join keys as requested, then per feature `<name>` (the view's
// dtype), `<name>__timestamp` (timestamp[us, UTC], NULL when not found) and
// `<name>__status` (PRESENT, NULL_VALUE, NOT_FOUND, OUTSIDE_MAX_AGE), then
// `__log_timestamp` (timestamp[us, UTC]) and `__request_id` (string). <name> is
// the response's name (view__feature with full_feature_names).
//
// Thread-safety: Sample, Log and stats may be called from any thread; Close and
// Flush from one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <strata/core/result.h>
#include <strata/features/online.h>
#include <strata/features/parquet.h>
#include <strata/features/table.h>

namespace strata::features {

struct ServingLogOptions {
  double sample_rate = 0;             // fraction of requests logged; 0 = logging off
  std::string path;                   // directory of the Parquet files (created if missing)
  int64_t max_rows_per_file = 100000;
  double max_seconds_per_file = 60;   // a file with rows older than this is rolled (0: roll by rows only)
  size_t max_queued_requests = 4096;  // sampled requests waiting for the writer; beyond, dropped
  ParquetCodec codec = ParquetCodec::kZstd;
};

class ServingLogger {
 public:
  struct Stats {
    int64_t requests_logged = 0;   // queued for writing
    int64_t requests_dropped = 0;  // queue full
    int64_t rows_written = 0;      // rows in published files
    int64_t files_written = 0;
    std::string last_error;        // the last write failure, "" if none
  };

  // Creates the directory and starts the writer thread.
  static Result<std::unique_ptr<ServingLogger>> Open(ServingLogOptions options);
  ~ServingLogger();  // Close()

  const ServingLogOptions& options() const;
  // Whether to log this request (a per-thread random draw at sample_rate).
  bool Sample();
  // Queues one served response: its first `entity_columns` columns are the join
  // keys; `feature_types` (one per remaining column) type the value columns.
  void Log(OnlineResponse response, size_t entity_columns, std::vector<DataType> feature_types, int64_t now_us);
  // Writes everything queued so far and publishes the open files.
  Status Flush();
  // Flush, then stop the thread. Later Log calls are ignored.
  Status Close();
  Stats stats() const;

 private:
  struct Impl;
  explicit ServingLogger(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The rows Log writes for one response, as a table: also what `strata features
// snapshot` writes (the online store's current values for given entities).
Table ServedRows(const OnlineResponse& response, size_t entity_columns, const std::vector<DataType>& feature_types,
                 int64_t now_us, const std::string& request_id);

// The serving sample for a skew check: each named column (empty: every value
// column, i.e. not a join key, `__*` or `*__status`/`*__timestamp`) gathered
// over `path`, a log directory (every served-*.parquet in it, oldest first) or
// one Parquet/CSV file (a log file or an online snapshot). Columns are cast to
// the first file's type. NotFound when no file holds a named column.
Result<std::vector<std::pair<std::string, Column>>> ReadServingSample(const std::string& path,
                                                                     const std::vector<std::string>& columns = {});

}  // namespace strata::features
