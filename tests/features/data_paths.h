// Where the shared test corpus lives: $STRATA_SHARED_DATA, else ../shared/data
// beside the repository (as the developers' machines and CI lay it out).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace strata::features::testing {

inline std::string RepoRoot() {
  // tests/features/<this file> -> the repository root. Ninja compiles with
  // paths relative to the build directory (where ctest runs the tests), so a
  // relative __FILE__ is made absolute first: "../tests/..." would otherwise
  // lose a level and point the shared data at build/shared/data.
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::absolute(__FILE__, ec).lexically_normal();
  return file.parent_path().parent_path().parent_path().string();
}

inline std::string SharedDataDir() {
  if (const char* env = std::getenv("STRATA_SHARED_DATA"); env != nullptr && *env) return env;
  return (std::filesystem::path(RepoRoot()).parent_path() / "shared" / "data").string();
}

}  // namespace strata::features::testing
