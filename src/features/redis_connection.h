// Parses the connection_string of a Redis online store, as Feast writes it:
// "host:port[,db=N][,password=P]". Shared by both Redis layouts.
#pragma once

#include <cstddef>
#include <string>

#include <strata/core/redis.h>
#include <strata/core/result.h>

namespace strata::features {

// InvalidArgument naming the bad part (a port that is not a number, an
// option Strata does not implement such as ssl=true).
Result<redis::Endpoint> ParseRedisConnection(const std::string& connection);

// Reads the replies of `n` pipelined commands whose answers carry nothing
// (HSET, EXPIRE, ...): the first error reply becomes IOError("redis: ...").
Status DrainReplies(redis::Connection& conn, size_t n);

}  // namespace strata::features
