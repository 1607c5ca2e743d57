#!/usr/bin/env bash
# Online serving, in one run: materialization rows/s, then get-online-features
# p50/p99 through Strata's feature server (HTTP, 5 views x 10 features) for
# 1 entity and 100 entities per request, against a bare Redis pipeline of HMGETs
# over the same hashes (the anchor), with Redis and RocksDB online stores.
#   ENTITIES=100000 SECONDS=5 THREADS=2 bench/features/run_online.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/strata-bench-online-XXXXXX")
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" --loglevel warning >/dev/null &
REDIS_PID=$!
trap 'kill $REDIS_PID 2>/dev/null; wait $REDIS_PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILD/strata_bench_features" online "$DIR" --redis "127.0.0.1:$PORT" --entities "${ENTITIES:-100000}" \
  --seconds "${SECONDS_PER_CASE:-5}" --threads "${THREADS:-2}"
