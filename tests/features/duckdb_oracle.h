// Runs the DuckDB oracle scripts in tests/features/duckdb/ with node, installing
// @duckdb/node-api there (npm, from package.json) the first time.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "features/data_paths.h"

namespace strata::features::testing {

inline std::string DuckDbDir() { return RepoRoot() + "/tests/features/duckdb"; }

// Runs a shell command; returns its exit code and appends its output to *out.
inline int RunCommand(const std::string& cmd, std::string* out) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int rc = ::pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// Ensures node_modules is there; returns "" or what went wrong.
inline std::string EnsureDuckDb() {
  if (std::filesystem::exists(DuckDbDir() + "/node_modules/@duckdb/node-api")) return "";
  std::string out;
  // ctest runs tests in parallel: one npm install at a time (flock), the others wait for it.
  const int rc = RunCommand("cd '" + DuckDbDir() +
                                "' && flock .npm-install.lock sh -c '[ -d node_modules/@duckdb/node-api ] || "
                                "npm install --no-audit --no-fund --loglevel=error'",
                            &out);
  return rc == 0 ? "" : "npm install in " + DuckDbDir() + " failed: " + out;
}

// node <script> <args>; returns the exit code, output in *out.
inline int RunDuckDbScript(const std::string& script, const std::string& args, std::string* out) {
  return RunCommand("node '" + DuckDbDir() + "/" + script + "' " + args, out);
}

}  // namespace strata::features::testing
