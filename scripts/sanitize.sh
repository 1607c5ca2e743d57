#!/usr/bin/env bash
# Builds the unit-test binaries under sanitizers in their own directory and
# runs them (the Release build in ./build is untouched).
# Usage: scripts/sanitize.sh address,undefined [COMPONENT...]   -> build-asan
#        scripts/sanitize.sh thread [COMPONENT...]              -> build-tsan
# COMPONENT is a strata_<component>_test binary (core, vector, ...); default:
# every unit-test binary for ASan+UBSan, the concurrency-heavy ones for TSan
# (core: HTTP server and MD5 batcher, cache fills, vector sealing, fs writer).
# STRATA_SANITIZE_GTEST_FILTER narrows the tests run in each binary.
# Compiler: $CC/$CXX (default gcc/g++). Exit status: non-zero on any report.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${STRATA_JOBS:-2}"
kind="${1:?usage: scripts/sanitize.sh address,undefined|thread [COMPONENT...]}"
shift
case "$kind" in
  address,undefined | undefined,address | address)
    dir=build-asan
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
    default=(core objstore s3 qdrant feast console server cache vector features fsmeta fs) ;;
  thread)
    dir=build-tsan
    flags="-fsanitize=thread"
    default=(core cache vector fs) ;;
  *) echo "sanitize: unknown kind $kind (address,undefined or thread)" >&2; exit 2 ;;
esac
components=("$@")
[ ${#components[@]} -gt 0 ] || components=("${default[@]}")

flags="-O1 -g -fno-omit-frame-pointer $flags"
if [ ! -f "$dir/build.ninja" ]; then
  CC="${CC:-gcc}" CXX="${CXX:-g++}" cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
    -DSTRATA_BUILD_BENCH=OFF -DSTRATA_BUILD_PYTHON=OFF >/dev/null
fi

# Tests that start a real server (objstore's S3 client tests, ...) find the
# strata binary beside themselves or in STRATA_BINARY: the Release one from
# scripts/build.sh when there is one (the client side is what runs sanitized).
if [ -z "${STRATA_BINARY:-}" ] && [ -x build/strata ]; then export STRATA_BINARY="$PWD/build/strata"; fi
supp="$PWD/tests/sanitize"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$supp/lsan.supp}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp}"

rc=0
for c in "${components[@]}"; do
  start=$(date +%s)
  if ! cmake --build "$dir" -j "$jobs" --target "strata_${c}_test" >"$dir/build_$c.log" 2>&1; then
    echo "sanitize $kind: strata_${c}_test FAILED to build (log: $dir/build_$c.log)"
    tail -20 "$dir/build_$c.log"; rc=1; continue
  fi
  built=$(date +%s)
  if "$dir/tests/strata_${c}_test" --gtest_brief=1 \
      ${STRATA_SANITIZE_GTEST_FILTER:+--gtest_filter="$STRATA_SANITIZE_GTEST_FILTER"} \
      >"$dir/run_$c.log" 2>&1; then
    echo "sanitize $kind: strata_${c}_test ok ($(grep -ao 'PASSED[^0-9]*[0-9]*' "$dir/run_$c.log" | grep -o '[0-9]*$') tests; build $((built - start))s, run $(( $(date +%s) - built ))s)"
  else
    echo "sanitize $kind: strata_${c}_test FAILED (log: $dir/run_$c.log)"
    grep -a -m5 "ERROR: \|WARNING: ThreadSanitizer\|runtime error\|FAILED" "$dir/run_$c.log" || true
    rc=1
  fi
done
exit $rc
