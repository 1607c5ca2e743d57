// Where the shared test corpus lives: $STRATA_SHARED_DATA, else ../shared/data
// beside the repository (as the developers' machines and CI lay it out).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace strata::features::testing {

inline std::string RepoRoot() {
  // Set by strata_add_test (tests/CMakeLists.txt) to the repository root.
  return STRATA_SOURCE_DIR;
}

inline std::string SharedDataDir() {
  if (const char* env = std::getenv("STRATA_SHARED_DATA"); env != nullptr && *env) return env;
  return (std::filesystem::path(RepoRoot()).parent_path() / "shared" / "data").string();
}

}  // namespace strata::features::testing
