// Where the shared test corpus lives: $STRATA_SHARED_DATA, else ../shared/data
// beside the repository (as the developers' machines and CI lay it out).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace strata::features::testing {

inline std::string RepoRoot() {
  // tests/features/<this file> -> the repository root.
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().string();
}

inline std::string SharedDataDir() {
  if (const char* env = std::getenv("STRATA_SHARED_DATA"); env != nullptr && *env) return env;
  return (std::filesystem::path(RepoRoot()).parent_path() / "shared" / "data").string();
}

}  // namespace strata::features::testing
