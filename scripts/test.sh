#!/usr/bin/env bash
# Installs what the tests need, builds everything and runs every test (unit and
# integration, with real clients against a real server) through CTest, then
# the fuzz regression stage: every libFuzzer target once over its checked-in
# corpus and crash regressions (scripts/fuzz.sh --regress, its own clang build
# in build-fuzz). STRATA_SKIP_FUZZ=1 leaves that stage out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 900 -j "${STRATA_TEST_JOBS:-2}" "$@"
if [ "${STRATA_SKIP_FUZZ:-0}" = 1 ]; then
  echo "fuzz stage: skipped (STRATA_SKIP_FUZZ=1)"
elif ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz stage: skipped, clang++ is not installed"
else
  start=$(date +%s)
  scripts/fuzz.sh --regress
  echo "fuzz stage: $(( $(date +%s) - start ))s"
fi
