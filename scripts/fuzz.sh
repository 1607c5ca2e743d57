#!/usr/bin/env bash
# Builds and runs the libFuzzer targets (tests/fuzz/) in ./build-fuzz (clang,
# ASan+UBSan, -DSTRATA_FUZZ=ON; the normal gcc build is untouched).
# Usage: scripts/fuzz.sh [TARGET] [SECONDS]   fuzz one target (or all, one after
#                                             another) for SECONDS each (default 30)
#                                             on a copy of its corpus
#        scripts/fuzz.sh --regress           every target once over its checked-in
#                                             corpus and tests/fuzz/regressions/ (CI)
#        scripts/fuzz.sh --list              the targets
# New inputs found go to build-fuzz/corpus/<target>/ (not the checked-in seeds);
# crashes to build-fuzz/crashes/<target>/. Exit status: non-zero on a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${STRATA_JOBS:-2}"
dir=build-fuzz

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: clang++ not found (scripts/install-deps.sh installs clang and libfuzzer-14-dev)" >&2
  exit 3
fi
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DSTRATA_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" >/dev/null
fi
cmake --build "$dir" -j "$jobs" --target strata_fuzz

targets=()
for f in tests/fuzz/*_fuzz.cc; do t=$(basename "$f" _fuzz.cc); targets+=("$t"); done
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"

case "${1:-}" in
  --list) printf '%s\n' "${targets[@]}"; exit 0 ;;
  --regress)
    rc=0
    for t in "${targets[@]}"; do
      inputs=()
      for d in tests/fuzz/corpus/$t tests/fuzz/regressions/$t; do [ -d "$d" ] && inputs+=("$d"); done
      [ ${#inputs[@]} -gt 0 ] || { echo "fuzz: $t has no corpus" >&2; rc=1; continue; }
      if "$dir/tests/fuzz/fuzz_$t" -runs=0 "${inputs[@]}" >"$dir/regress_$t.log" 2>&1; then
        echo "fuzz regress: $t ok ($(find "${inputs[@]}" -type f | wc -l) inputs)"
      else
        echo "fuzz regress: $t FAILED (log: $dir/regress_$t.log)"; tail -40 "$dir/regress_$t.log"; rc=1
      fi
    done
    exit $rc ;;
esac

want="${1:-all}"
secs="${2:-30}"
rc=0
for t in "${targets[@]}"; do
  [ "$want" = all ] || [ "$want" = "$t" ] || continue
  mkdir -p "$dir/corpus/$t" "$dir/crashes/$t"
  echo "fuzz: $t for ${secs}s"
  "$dir/tests/fuzz/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 \
    -artifact_prefix="$dir/crashes/$t/" "$dir/corpus/$t" tests/fuzz/corpus/$t || rc=1
done
exit $rc
