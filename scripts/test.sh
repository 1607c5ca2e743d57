#!/usr/bin/env bash
# Installs what the tests need, builds everything and runs every test (unit and
# integration, with real clients against a real server) through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 900 -j "${STRATA_TEST_JOBS:-2}" "$@"
