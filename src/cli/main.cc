// The `strata` command. Subcommands are registered in src/cli/*.cc.
#include "cli/commands.h"

int main(int argc, char** argv) { return strata::cli::Main(argc, argv); }
