#!/usr/bin/env bash
# Quick start: installs what Strata needs, builds it and runs `strata server`
# with embedded defaults (data in ./strata-data, S3 on 127.0.0.1:9000, admin on :9001).
# Extra arguments go to `strata server` (see `build/strata server --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
scripts/build.sh
exec build/strata server "$@"
