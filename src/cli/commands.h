// Entry points of the `strata` subcommands (private to the CLI).
#pragma once

namespace strata::cli {
int Main(int argc, char** argv);
}  // namespace strata::cli
