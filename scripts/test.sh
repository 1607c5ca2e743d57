#!/usr/bin/env bash
# Installs what the tests need, builds everything and runs every test (unit and
# integration, with real clients against a real server) through CTest, then
# the fuzz regression stage: every libFuzzer target once over its checked-in
# corpus and crash regressions (scripts/fuzz.sh --regress, its own clang build
# in build-fuzz), then the sanitizer stage (scripts/sanitize.sh: a subset of
# the unit tests under ASan+UBSan and under TSan, in build-asan / build-tsan).
# STRATA_SKIP_FUZZ=1 / STRATA_SKIP_SANITIZE=1 leave those stages out.
# scripts/test.sh --sanitize address,undefined|thread [COMPONENT...] only runs
# the unit tests under that sanitizer (all of them for ASan+UBSan, the
# concurrency-heavy ones for TSan; see scripts/sanitize.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --sanitize ]; then
  shift
  scripts/install-deps.sh test
  exec scripts/sanitize.sh "$@"
fi
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
if [ "${STRATA_SKIP_SANITIZE:-0}" = 1 ]; then
  echo "sanitize stage: skipped (STRATA_SKIP_SANITIZE=1)"
else
  # Within CI's budget (timings in docs/testing.md): ASan+UBSan on the
  # core binary (HTTP parsing, file layer, codecs), TSan on core (HTTP server,
  # MD5 batcher, thread pool). The full runs are scripts/test.sh --sanitize.
  start=$(date +%s)
  scripts/sanitize.sh address,undefined ${STRATA_CI_ASAN:-core}
  scripts/sanitize.sh thread ${STRATA_CI_TSAN:-core}
  echo "sanitize stage: $(( $(date +%s) - start ))s"
fi
