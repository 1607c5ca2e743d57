// The console's static files, compiled into the binary: assets.cc is generated
// at build time from src/console/assets/ by embed_assets.cmake.
#pragma once

#include <cstddef>
#include <string_view>

namespace strata::console {

struct Asset {
  const char* name;          // "app.js"
  const char* content_type;  // "text/javascript; charset=utf-8"
  const unsigned char* data;
  size_t size;
};

// nullptr when there is no such asset.
const Asset* FindAsset(std::string_view name);

}  // namespace strata::console
