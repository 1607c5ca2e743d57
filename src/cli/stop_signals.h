// How long-running subcommands (`strata server`, `strata features serve`) wait
// to be stopped. Private to the CLI.
#pragma once

#include <signal.h>

namespace strata::cli {

// Blocks SIGTERM and SIGINT on this thread (and so on every thread started
// after it, which inherit the mask) and ignores SIGPIPE. Call it before any
// thread starts, so the stop signals reach WaitForStopSignal only.
sigset_t BlockStopSignals();
// Waits for SIGTERM or SIGINT; returns which.
int WaitForStopSignal(const sigset_t& set);

}  // namespace strata::cli
