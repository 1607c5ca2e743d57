// The `strata fs` administration subcommands: quota (set, get, delete, ls,
// check), summary and config. Private to the CLI.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace strata::cli {

// Adds them to the `fs` subcommand; `wrap` turns a command returning an exit
// code into a CLI11 callback (fs_cmds.cc).
void RegisterFsAdminCommands(
    CLI::App* fsc, const std::function<std::function<void()>(std::function<int()>)>& wrap);

}  // namespace strata::cli
