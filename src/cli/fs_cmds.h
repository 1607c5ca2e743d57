// The `strata fs` subcommands: format, mount, umount, status, info, gc, fsck,
// bench, warmup, dump, load, destroy (Strata FS, src/fs and src/fsmeta).
// Private to the CLI.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Adds `fs` and its subcommands to app. When one runs (its CLI11 callback,
// during app.parse), its exit code goes to *exit_code: 0 ok, 1 failed,
// 2 usage, 3 not found, 6 store unreachable.
void RegisterFsCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
