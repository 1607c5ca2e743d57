// `strata fs objbench` (fs_objbench.cc) and `strata fs sync` (fs_sync_cmd.cc):
// the object store's own speed, and copies between volumes' paths, local
// directories and buckets. Private to the CLI.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace strata::cli {

// Each adds its subcommand to `fs`; `wrap` turns a command returning an exit
// code into a CLI11 callback (fs_cmds.cc).
void RegisterFsObjbench(CLI::App* fsc,
                        const std::function<std::function<void()>(std::function<int()>)>& wrap);
void RegisterFsSync(CLI::App* fsc,
                    const std::function<std::function<void()>(std::function<int()>)>& wrap);

}  // namespace strata::cli
