// The exit codes of every `strata` subcommand (docs/transfer.md, `--help`),
// and the one map from a Status to them. Private to the CLI.
#pragma once

#include <strata/core/status.h>

namespace strata::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitSomeFailed = 1,     // some objects failed (the rest were done), or another error
  kExitUsage = 2,          // bad arguments
  kExitNotFound = 3,       // a source, bucket, key, volume or file does not exist
  kExitAuth = 4,           // credentials missing or refused, access denied
  kExitConflict = 5,       // precondition: source changed mid-transfer, bucket not empty, exists
  kExitUnavailable = 6,    // the service could not be reached (after retries)
  kExitCorruption = 7,     // a checksum did not match, or stored data is damaged
  kExitInterrupted = 130,  // SIGINT
};

// kOk 0, kInvalidArgument 2, kNotFound 3, kPermissionDenied 4, kPreconditionFailed,
// kConflict and kAlreadyExists 5, kUnavailable 6, kCorruption 7, anything else 1.
int ExitCodeFor(const Status& s);

inline constexpr const char* kExitCodesHelp =
    "Exit codes: 0 ok, 1 some objects failed, 2 usage, 3 not found, 4 access denied or no\n"
    "credentials, 5 precondition (source changed mid-transfer, bucket not empty, exists),\n"
    "6 endpoint unreachable, 7 checksum mismatch.";

}  // namespace strata::cli
