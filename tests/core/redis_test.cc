// The shared Redis client against a real redis-server.
#include <strata/core/redis.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testutil/testutil.h"

namespace strata::redis {
namespace {

using SV = std::vector<std::string_view>;

class RedisClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(server_.Start()); }
  Endpoint Ep() const {
    Endpoint e;
    e.port = server_.port();
    return e;
  }
  ::strata::testing::RedisServer server_;
};

TEST_F(RedisClientTest, CommandsAndReplyTypes) {
  ASSERT_OK_AND_ASSIGN(auto c, Connection::Open(Ep()));
  ASSERT_OK_AND_ASSIGN(Reply ok, c->Command(SV{"SET", "k", std::string_view("v\0w", 3)}));
  EXPECT_EQ(ok.type, Reply::kStatus);
  EXPECT_EQ(ok.str, "OK");
  ASSERT_OK_AND_ASSIGN(Reply v, c->Command(SV{"GET", "k"}));
  EXPECT_EQ(v.type, Reply::kString);
  EXPECT_EQ(v.str, std::string("v\0w", 3)) << "binary-safe";
  ASSERT_OK_AND_ASSIGN(Reply nil, c->Command(SV{"GET", "missing"}));
  EXPECT_TRUE(nil.is_nil());
  ASSERT_OK_AND_ASSIGN(Reply n, c->Command(std::vector<std::string>{"INCRBY", "n", "41"}));
  EXPECT_EQ(n.type, Reply::kInteger);
  EXPECT_EQ(n.integer, 41);
  ASSERT_OK_AND_ASSIGN(Reply arr, c->Command(SV{"MGET", "k", "missing"}));
  ASSERT_EQ(arr.type, Reply::kArray);
  ASSERT_EQ(arr.elements.size(), 2u);
  EXPECT_TRUE(arr.elements[1].is_nil());
  ASSERT_OK_AND_ASSIGN(Reply err, c->Command(SV{"NOSUCHCOMMAND"}));
  EXPECT_TRUE(err.is_error()) << "an error reply is a reply, not a failed Status";
  EXPECT_FALSE(c->broken());
}

TEST_F(RedisClientTest, PipelinedRepliesComeInOrder) {
  ASSERT_OK_AND_ASSIGN(auto c, Connection::Open(Ep()));
  for (int i = 0; i < 100; ++i) c->Append(std::vector<std::string>{"SET", "p" + std::to_string(i), std::to_string(i)});
  for (int i = 0; i < 100; ++i) c->Append(std::vector<std::string>{"GET", "p" + std::to_string(i)});
  EXPECT_EQ(c->pending(), 200);
  for (int i = 0; i < 100; ++i) ASSERT_OK(c->GetReply());
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK_AND_ASSIGN(Reply r, c->GetReply());
    EXPECT_EQ(r.str, std::to_string(i));
  }
  EXPECT_EQ(c->pending(), 0);
  EXPECT_STATUS_CODE(c->GetReply(), StatusCode::kInternal) << "no reply pending";
}

TEST_F(RedisClientTest, SelectAndAuthFailures) {
  Endpoint e = Ep();
  e.db = 3;
  ASSERT_OK_AND_ASSIGN(auto c3, Connection::Open(e));
  ASSERT_OK(c3->Command(SV{"SET", "only-in-3", "x"}));
  ASSERT_OK_AND_ASSIGN(auto c0, Connection::Open(Ep()));
  ASSERT_OK_AND_ASSIGN(Reply r, c0->Command(SV{"GET", "only-in-3"}));
  EXPECT_TRUE(r.is_nil()) << "SELECT 3 was not applied";
  e.db = 0;
  e.password = "wrong";  // the server has no password: AUTH is refused
  EXPECT_STATUS_CODE(Connection::Open(e), StatusCode::kPermissionDenied);
}

TEST_F(RedisClientTest, DeadServerIsUnavailableAndPoolDropsBrokenConnections) {
  Pool pool(Ep());
  {
    ASSERT_OK_AND_ASSIGN(auto c, pool.Acquire());
    ASSERT_OK(c->Command(SV{"PING"}));
    pool.Release(std::move(c));
  }
  ASSERT_OK_AND_ASSIGN(auto again, pool.Acquire(/*validate=*/true));
  ASSERT_OK_AND_ASSIGN(auto killer, Connection::Open(Ep()));
  ASSERT_OK_AND_ASSIGN(Reply killed, killer->Command(SV{"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}));
  ASSERT_GE(killed.integer, 1);
  auto after = again->Command(SV{"PING"});
  EXPECT_STATUS_CODE(after, StatusCode::kUnavailable);
  EXPECT_TRUE(again->broken());
  pool.Release(std::move(again));  // dropped, not pooled
  ASSERT_OK_AND_ASSIGN(auto fresh, pool.Acquire(true));
  EXPECT_FALSE(fresh->broken());
  Endpoint nowhere;
  nowhere.port = ::strata::testing::FreePort();
  nowhere.connect_timeout_ms = 500;
  auto none = Connection::Open(nowhere);
  EXPECT_STATUS_CODE(none, StatusCode::kUnavailable);
  EXPECT_NE(none.error().message().find("redis-server"), std::string::npos) << none.error().ToString();
}

}  // namespace
}  // namespace strata::redis
