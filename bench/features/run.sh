#!/usr/bin/env bash
# Point-in-time join, Strata against DuckDB's ASOF JOIN on the same Parquet files,
# in one run: wall time and peak RSS of each (/usr/bin/time), their ratio, and a
# row-by-row check that both produced the same training set.
#   FROWS=10000000 EROWS=1000000 KEYS=100000 TTL=604800 bench/features/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
FROWS=${FROWS:-10000000}
EROWS=${EROWS:-1000000}
KEYS=${KEYS:-100000}
TTL=${TTL:-604800}
DATA=${DATA:-${TMPDIR:-/tmp}/strata-bench-features-$FROWS-$EROWS-$KEYS}
mkdir -p "$DATA"
if [ ! -f "$DATA/entities.parquet" ]; then
  "$BUILD/strata_bench_features" gen "$DATA" --feature-rows "$FROWS" --entity-rows "$EROWS" --keys "$KEYS"
fi
if [ ! -d bench/features/duckdb/node_modules/@duckdb/node-api ]; then
  (cd bench/features/duckdb && npm install --no-audit --no-fund --loglevel=error >/dev/null)
fi
echo "data: $(du -sh "$DATA/features.parquet" | cut -f1) features ($FROWS rows, $KEYS keys), $EROWS entity rows, ttl ${TTL}s, $(nproc) cores"
sync
ours=$( { /usr/bin/time -f "TIME %e %M" "$BUILD/strata_bench_features" join "$DATA" --ttl-seconds "$TTL" ${BUDGET:+--budget $BUDGET}; } 2>&1 )
echo "$ours" | grep -v '^TIME'
theirs=$( { /usr/bin/time -f "TIME %e %M" node bench/features/duckdb/asof.mjs "$DATA" "$TTL"; } 2>&1 )
echo "$theirs" | grep -v '^TIME'
read -r _ s_wall s_rss <<<"$(echo "$ours" | grep '^TIME')"
read -r _ d_wall d_rss <<<"$(echo "$theirs" | grep '^TIME')"
node bench/features/duckdb/compare.mjs "$DATA/out_strata.parquet" "$DATA/out_duckdb.parquet"
awk -v s="$s_wall" -v d="$d_wall" -v sr="$s_rss" -v dr="$d_rss" 'BEGIN {
  printf "| side | process wall (s) | peak RSS (MiB) |\n|---|---:|---:|\n";
  printf "| Strata | %.2f | %.0f |\n| DuckDB ASOF | %.2f | %.0f |\n", s, sr / 1024, d, dr / 1024;
  printf "Strata / DuckDB wall time: %.2fx (below 1 = Strata faster)\n", s / d }'
