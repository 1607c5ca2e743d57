// `strata features ...`: plan, apply, historical, convert, parquet-info.
// Private to the CLI.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Adds the `features` subcommand tree to app. When one of its commands runs
// (inside app.parse), its exit code goes to *exit_code: 0 ok, 1 failed,
// 2 usage or invalid definitions.
void RegisterFeaturesCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
