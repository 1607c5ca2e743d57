// Runs the DuckDB oracle scripts in tests/features/duckdb/ with node, installing
// @duckdb/node-api there (npm, from package.json) the first time.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
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

inline std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Ensures node_modules is whole; returns "" or what went wrong. npm fills node_modules in
// place, so its directories appear before their files (the DuckDB .node library among them)
// are written: a test that only checked for a directory could load a half-written library
// while a parallel test was installing, and die of SIGBUS. The install is complete only
// when node_modules/.installed-package.json, copied from package.json after npm install
// succeeded, is there and matches (so an edited package.json installs again).
inline std::string EnsureDuckDb() {
  const std::string dir = DuckDbDir();
  const std::string want = ReadWhole(dir + "/package.json");
  if (!want.empty() && ReadWhole(dir + "/node_modules/.installed-package.json") == want) return "";
  std::string out;
  // ctest runs tests in parallel: one npm install at a time (flock), the others wait for it.
  const int rc = RunCommand("cd '" + dir +
                                "' && flock .npm-install.lock sh -c 'cmp -s package.json "
                                "node_modules/.installed-package.json || { npm install --no-audit --no-fund "
                                "--loglevel=error && cp package.json node_modules/.installed-package.json; }'",
                            &out);
  return rc == 0 ? "" : "npm install in " + dir + " failed: " + out;
}

// node <script> <args>; returns the exit code, output in *out.
inline int RunDuckDbScript(const std::string& script, const std::string& args, std::string* out) {
  return RunCommand("node '" + DuckDbDir() + "/" + script + "' " + args, out);
}

}  // namespace strata::features::testing
