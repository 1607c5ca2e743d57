// Shared test helpers: Status/Result assertions, a self-removing temp dir, and
// a private redis-server.
//
//   ASSERT_OK(expr)                  expr is a Status or a Result<T>; fatal if not OK
//   EXPECT_OK(expr)                  same, non-fatal
//   ASSERT_OK_AND_ASSIGN(lhs, expr)  lhs = *expr, fatal if expr holds an error
//   EXPECT_STATUS_CODE(expr, code)   the Status/Result's code is `code` (non-fatal)
//   ASSERT_STATUS_CODE(expr, code)   same, fatal
// All of them accept `<< "more context"` like gtest's own assertions and print
// the Status (code and message) on failure.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <gtest/gtest.h>

#include <strata/core/result.h>
#include <strata/core/status.h>

namespace strata::testing {

inline Status ToStatus(const Status& s) { return s; }
template <class T>
Status ToStatus(const Result<T>& r) {
  return r.error();  // OK when a value is held
}

// A fresh directory under $TEST_TMPDIR (or /tmp), removed recursively with its
// contents when the object is destroyed.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "strata-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string Join(std::string_view name) const;

 private:
  std::string path_;
};

// Reads a whole file (test convenience); "" if it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);
// Writes (replaces) a whole file; false on error.
bool WriteFile(const std::string& path, std::string_view data);

// A loopback TCP port nobody listens on right now.
int FreePort();

// A private redis-server (no persistence) on a free loopback port, for the
// life of the object; Start() returns once it answers PING.
class RedisServer {
 public:
  RedisServer() = default;
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  // Unavailable when redis-server is missing or does not come up in 10 s.
  Status Start();
  // SIGKILL, as a crashed server (fault tests); the destructor then does nothing.
  void Kill();
  int port() const { return port_; }
  std::string host_port() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int port_ = 0;
  int pid_ = -1;
  std::unique_ptr<TempDir> dir_;
};

}  // namespace strata::testing

#define STRATA_TESTUTIL_CHECK_OK_(expr, on_failure)                                      \
  GTEST_AMBIGUOUS_ELSE_BLOCKER_                                                          \
  if (const ::strata::Status strata_testutil_status_ = ::strata::testing::ToStatus(expr); \
      strata_testutil_status_.ok())                                                      \
    ;                                                                                    \
  else                                                                                   \
    on_failure(("Expected OK: " #expr "\n  Actual: " + strata_testutil_status_.ToString()).c_str())

#define ASSERT_OK(expr) STRATA_TESTUTIL_CHECK_OK_(expr, GTEST_FATAL_FAILURE_)
#define EXPECT_OK(expr) STRATA_TESTUTIL_CHECK_OK_(expr, GTEST_NONFATAL_FAILURE_)

#define STRATA_TESTUTIL_CHECK_CODE_(expr, want, on_failure)                              \
  GTEST_AMBIGUOUS_ELSE_BLOCKER_                                                          \
  if (const ::strata::Status strata_testutil_status_ = ::strata::testing::ToStatus(expr); \
      strata_testutil_status_.code() == (want))                                          \
    ;                                                                                    \
  else                                                                                   \
    on_failure(("Expected " #expr " to fail with " +                                    \
                std::string(::strata::StatusCodeName(want)) +                           \
                "\n  Actual: " + strata_testutil_status_.ToString())                    \
                   .c_str())

#define ASSERT_STATUS_CODE(expr, code) STRATA_TESTUTIL_CHECK_CODE_(expr, code, GTEST_FATAL_FAILURE_)
#define EXPECT_STATUS_CODE(expr, code) \
  STRATA_TESTUTIL_CHECK_CODE_(expr, code, GTEST_NONFATAL_FAILURE_)

#define STRATA_TESTUTIL_CONCAT_INNER_(a, b) a##b
#define STRATA_TESTUTIL_CONCAT_(a, b) STRATA_TESTUTIL_CONCAT_INNER_(a, b)
#define STRATA_TESTUTIL_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  ASSERT_OK(tmp);                                    \
  lhs = std::move(*tmp)
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  STRATA_TESTUTIL_ASSIGN_IMPL_(STRATA_TESTUTIL_CONCAT_(strata_testutil_result_, __LINE__), lhs, expr)
