// The data-path subcommands of `strata`: `warm` (keep the next shards of a
// training run's read order in a local cache) and `ckpt save|load|ls|rm`
// (checkpoints saved locally, uploaded in the background). Private to the CLI.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Adds the subcommands to app. When one runs (its CLI11 callback, during
// app.parse), its exit code goes to *exit_code: 0 ok, 1 failed, 2 usage,
// 3 not found, 6 store unreachable, 7 checksum mismatch.
void RegisterDatapathCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
