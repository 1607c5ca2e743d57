#include "cli/exit_codes.h"

namespace strata::cli {

int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kInvalidArgument: return kExitUsage;
    case StatusCode::kNotFound: return kExitNotFound;
    case StatusCode::kPermissionDenied: return kExitAuth;
    case StatusCode::kPreconditionFailed:
    case StatusCode::kConflict:
    case StatusCode::kAlreadyExists: return kExitConflict;
    case StatusCode::kUnavailable: return kExitUnavailable;
    case StatusCode::kCorruption: return kExitCorruption;
    default: return kExitSomeFailed;
  }
}

}  // namespace strata::cli
