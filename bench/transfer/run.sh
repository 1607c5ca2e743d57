#!/usr/bin/env bash
# Transfers side by side, in one run, against one `strata server --no-fsync`
# on a free loopback port: `strata cp` vs awscli (/usr/bin/aws s3 cp) vs rclone
# (/usr/bin/rclone copy), each at several concurrency values (its best is
# reported), on the same data:
#   1m  1,000 x 1 MiB files, up and down
#   1g  4 x 1 GiB files, up and down
#   4k  10,000 x 4 KiB files, up
# Prints a markdown table (best time per tool, MiB/s, the concurrency it came
# from, and Strata's speed-up over each tool).
#
#   bench/transfer/run.sh [--cases 1m,1g,4k] [--quick] [--out FILE.md]
#                         [--strata-conc 16,32,64] [--aws-conc 10,32,64]
#                         [--rclone-conc 8,16,32] [--tools strata,awscli,rclone]
#
# --quick: a tenth of the files and 256 MiB instead of 1 GiB (smoke test).
# Needs build/strata (BUILD=dir to override); about 13 GiB free under WORKDIR
# (default /tmp: sources, the server's copy and a download at once for the
# 4 GiB case; each case's files are removed when it is done) and ~10 minutes.
# Run it on an otherwise idle machine. KEEP=1 keeps the temp dir.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
STRATA=$BUILD/strata
OUT=""
ARGS=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) ARGS+=(--scale 0.1); shift ;;
    --out) OUT=$2; shift 2 ;;
    --cases|--strata-conc|--aws-conc|--rclone-conc|--tools) ARGS+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for b in "$STRATA" /usr/bin/aws /usr/bin/rclone /usr/bin/python3; do
  [[ -x $b ]] || { echo "run.sh: $b not found (build strata with: cmake --build build --target strata)" >&2; exit 2; }
done
WORK=$(mktemp -d "${WORKDIR:-/tmp}/strata-bench-transfer.XXXXXX")
cleanup() { [[ ${KEEP:-0} == 1 ]] && echo "kept $WORK" >&2 || rm -rf "$WORK"; }
trap cleanup EXIT
avail=$(df -Pk "$WORK" | awk 'NR==2 {print int($4 / 1048576)}')
if (( avail < 13 )); then echo "run.sh: only ${avail} GiB free under $WORK; need about 13" >&2; fi

echo "# strata $("$STRATA" --version 2>/dev/null | head -1), $(/usr/bin/aws --version 2>&1 | cut -d' ' -f1), $(/usr/bin/rclone --version | head -1)" >&2
echo "# $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ)" >&2
TABLE=$(/usr/bin/python3 "$ROOT/bench/transfer/bench.py" --strata "$STRATA" --work "$WORK" \
  --json-out "$WORK/results.json" "${ARGS[@]}")
echo "$TABLE"
if [[ -n $OUT ]]; then echo "$TABLE" > "$OUT"; fi
