// A private PostgreSQL server for tests: initdb in a temporary directory,
// postgres on a free loopback port (its socket in that directory too), stopped
// (fast shutdown) when the object is destroyed. Under root, initdb and postgres
// (which refuse to run as root) run as the `postgres` user.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <strata/core/status.h>

#include "testutil/testutil.h"

namespace strata::testing {

class PostgresServer {
 public:
  PostgresServer() = default;
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // The newest /usr/lib/postgresql/*/bin, or "" where Debian's postgresql is
  // not installed (tests skip then).
  static std::string BinDir();

  // NotFound where the binaries are missing; Unavailable where the server
  // does not come up within 30 s.
  Status Start();
  // Creates an empty database (createdb).
  Status CreateDatabase(const std::string& name);
  // Runs one SQL command in database `db` (psql); OK when psql exits 0.
  Status Sql(const std::string& db, const std::string& sql);
  int port() const { return port_; }
  // postgres://strata@127.0.0.1:PORT/DB (trust authentication on loopback),
  // the database created on first use ("" where createdb failed).
  std::string Url(const std::string& db);

 private:
  // Runs bin/argv[0] with argv, as the server's user; its exit code.
  int Run(const std::vector<std::string>& argv, bool wait);

  std::string bin_;
  int port_ = 0;
  int pid_ = -1;
  unsigned uid_ = 0, gid_ = 0;
  bool drop_ = false;
  std::unique_ptr<TempDir> dir_;
  std::mutex mu_;
  std::set<std::string> databases_;  // created; guarded by mu_
};

// One server for the whole test binary, started on first use, stopped when
// the binary exits; nullptr where it could
// not start, with the reason in *why (NotFound: the binaries are missing).
PostgresServer* SharedPostgres(Status* why = nullptr);

}  // namespace strata::testing
