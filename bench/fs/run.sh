#!/usr/bin/env bash
# Filesystems over object storage, side by side, in one run against one bucket
# of one `strata server --no-fsync` on a free loopback port: Strata FS
# (`strata fs mount`, SQLite metadata) without and with --writeback, on
# PostgreSQL metadata (a throwaway server on loopback, strata-pg), s3fs
# (Debian s3fs), `rclone mount --vfs-cache-mode writes` (Debian rclone; its
# write rows wait until the bucket holds what was written) and the local disk
# as the limit. Rows: sequential write, cold and warm read of one big file
# (MiB/s), random 4 KiB reads on it (IOPS), 1,000 x 4 KiB files written,
# stat'ed and read (files/s), 5,000 empty files created, then unlinked
# (ops/s). Each row but the random reads is the median of --rounds rounds
# (default 3); before each cold row the page cache is dropped and the tool's
# local cache wiped (remount). Prints a markdown table with the ratios of both
# Strata columns to s3fs, rclone and the local disk. See bench.py for the
# method.
#
#   bench/fs/run.sh [--size-mib 1024] [--small-files 1000] [--empty-files 5000]
#                   [--rand-secs 20] [--rounds 3]
#                   [--tools strata,strata-wb,strata-pg,s3fs,rclone,local] [--quick] [--out FILE.md]
#
# --quick: 64 MiB, 200 small files, 1,000 empty files, 5 s of random reads.
# Run as root (FUSE mounts with allow_other, drop_caches). Needs build/strata
# (BUILD=dir to override), /usr/bin/s3fs, /usr/bin/rclone, /usr/bin/fusermount3,
# about 6 x SIZE free under WORKDIR (default /tmp). KEEP=1 keeps the temp dir.
# STRATA_BENCH_MOUNT_ARGS: extra `strata fs mount` options for both Strata columns.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
STRATA=$BUILD/strata
OUT=""
ARGS=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) ARGS+=(--size-mib 64 --small-files 200 --empty-files 1000 --rand-secs 5); shift ;;
    --out) OUT=$2; shift 2 ;;
    --size-mib|--small-files|--empty-files|--rand-secs|--rounds|--tools) ARGS+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for b in "$STRATA" /usr/bin/s3fs /usr/bin/rclone /usr/bin/fusermount3 /usr/bin/python3; do
  [[ -x $b ]] || { echo "run.sh: $b not found (build strata with: cmake --build build --target strata)" >&2; exit 2; }
done
[[ $(id -u) == 0 ]] || echo "run.sh: not root: allow_other and drop_caches may fail" >&2
WORK=$(mktemp -d "${WORKDIR:-/tmp}/strata-bench-fs.XXXXXX")
chmod 755 "$WORK"
cleanup() {
  for m in "$WORK"/mnt-*; do
    if grep -q " $m fuse" /proc/self/mounts 2>/dev/null; then /usr/bin/fusermount3 -uz "$m" || true; fi
  done
  [[ ${KEEP:-0} == 1 ]] && echo "kept $WORK" >&2 || rm -rf "$WORK"
}
trap cleanup EXIT

echo "# $("$STRATA" --version 2>/dev/null | head -1), $(/usr/bin/s3fs --version 2>&1 | head -1 | cut -c1-60), $(/usr/bin/rclone --version | head -1)" >&2
echo "# $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)" >&2
TABLE=$(/usr/bin/python3 "$ROOT/bench/fs/bench.py" --strata "$STRATA" --work "$WORK" \
  --json-out "$WORK/results.json" "${ARGS[@]}")
echo "$TABLE"
if [[ -n $OUT ]]; then echo "$TABLE" > "$OUT"; fi
