// The transfer subcommands of `strata`: ls, cp, mv, sync, rm, cat, head, presign, mb, rb, du
// (against any S3 endpoint; flags and credentials as awscli takes them).
// Private to the CLI.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Adds the subcommands to app. When one of them runs (its CLI11 callback, during
// app.parse), its exit code is stored in *exit_code (left untouched otherwise),
// for Main to return: 0 ok, 1 some objects failed, 2 usage, 3 not found,
// 4 access denied, 5 precondition/conflict, 6 unreachable, 7 checksum mismatch.
void RegisterTransferCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
