// The served-vector log files in a directory (served-*.parquet), in name order.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace strata::features::testlog {

inline std::vector<std::string> LogFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("served-") && name.ends_with(".parquet")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace strata::features::testlog
