// `strata user add|rm|ls|policy`: manage the S3 users of a running
// `strata server` through its admin API (src/server/admin_users.h), so a new
// user works at once and a removed one stops at once. Private to the CLI.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Adds the subcommands to app. When one runs (its CLI11 callback, during
// app.parse), its exit code goes to *exit_code: 0 ok, 1 failed, 2 usage
// (a malformed policy), 3 no such user, 4 refused (wrong root secret),
// 5 the user exists, 6 the server could not be reached.
void RegisterUserCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
