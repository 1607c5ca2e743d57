#!/usr/bin/env bash
# Strata's vector indexes side by side with hnswlib and FAISS on one data set.
#
#   bench/vector/run.sh [synthetic|fashion-mnist] [N] [D]
#
# Needs: build/strata_bench_vector (and build/strata_bench_vector_hnswlib when
# libhnswlib-dev is installed), /usr/bin/python3 with python3-numpy,
# python3-hnswlib, python3-faiss (scripts/install-deps.sh bench), and for
# fashion-mnist the Debian dataset-fashion-mnist package.
# Environment: BUILD_DIR (default build), VBENCH_DIR (default /tmp/strata-vbench),
# TYPES (default hnsw,ivf_flat,ivf_pq,diskann), M (16), EFC (200), THREADS (2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build}
py=/usr/bin/python3  # Debian's interpreter: that is where python3-faiss/hnswlib live
kind=${1:-synthetic}
n=${2:-1000000}
d=${3:-128}
M=${M:-16}
efc=${EFC:-200}
threads=${THREADS:-2}
types=${TYPES:-hnsw,ivf_flat,ivf_pq,diskann}

if [ "$kind" = fashion-mnist ]; then
  dir=${VBENCH_DIR:-/tmp/strata-vbench}/fashion-mnist
  $py "$here/prepare.py" fashion-mnist --nq 1000 --out "$dir"
else
  dir=${VBENCH_DIR:-/tmp/strata-vbench}/synthetic-$n-$d
  $py "$here/prepare.py" synthetic --n "$n" --d "$d" --nq 1000 --out "$dir"
fi
out=$dir/results.jsonl
rm -f "$out"

echo "== strata"
"$build/strata_bench_vector" --dir "$dir" --types "$types" --M "$M" --efc "$efc" \
  --build-threads "$threads" --filters --json "$out"
if [ -x "$build/strata_bench_vector_hnswlib" ]; then
  echo "== hnswlib (native, -mavx2)"
  "$build/strata_bench_vector_hnswlib" --dir "$dir" --M "$M" --efc "$efc" \
    --build-threads "$threads" --json "$out"
fi
echo "== anchors (python3-hnswlib, python3-faiss)"
$py "$here/anchors.py" --dir "$dir" --M "$M" --efc "$efc" --build-threads "$threads" --json "$out"
echo "== report"
$py "$here/report.py" "$out"
