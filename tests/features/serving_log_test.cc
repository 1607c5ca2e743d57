// Served-vector logging: the sampling rate and bad logger options. Logging
// through the feature server (rows read back as served, whole rolled files, a
// skew check against the log) is tested in tests/feast.
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/features/online.h>
#include <strata/features/parquet.h>
#include <strata/features/repo.h>
#include <strata/features/serving_log.h>
#include <strata/features/skew.h>

#include "features/log_files.h"
#include "testutil/testutil.h"

namespace strata::features {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testlog::LogFiles;

TEST(ServingLogTest, SamplingRateAndBadOptions) {
  ::strata::testing::TempDir dir("strata-servelog-opt");
  ServingLogOptions o;
  o.path = dir.path() + "/log";
  o.sample_rate = 0.1;
  ASSERT_OK_AND_ASSIGN(auto logger, ServingLogger::Open(o));
  int hits = 0;
  for (int i = 0; i < 20000; ++i) hits += logger->Sample() ? 1 : 0;
  EXPECT_GT(hits, 1600);
  EXPECT_LT(hits, 2400);
  ASSERT_OK(logger->Close());
  EXPECT_TRUE(LogFiles(o.path).empty());  // nothing logged, no empty file
  o.sample_rate = 1.5;
  EXPECT_STATUS_CODE(ServingLogger::Open(o), StatusCode::kInvalidArgument);
  o.sample_rate = 0.5;
  o.path.clear();
  EXPECT_STATUS_CODE(ServingLogger::Open(o), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(ReadServingSample(dir.path() + "/log"), StatusCode::kNotFound);  // no log files
}

}  // namespace
}  // namespace strata::features
