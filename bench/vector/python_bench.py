#!/usr/bin/env python3
"""Embedded batch search from Python against the C++ bench: strata.vector's
Collection.search over a collection directory, measured as
`strata_bench_vector --collection DIR` measures Collection::SearchBatch
(batches of --batch queries, best of --repeat timed runs after a warm-up,
recall@k against the data set's gt.ivecs).

    PYTHONPATH=build/python /usr/bin/python3 bench/vector/python_bench.py \
        --dir /tmp/vbench/synthetic-1M --collection DATA/vector/bench --ef 64
    build/bench/strata_bench_vector --dir /tmp/vbench/synthetic-1M \
        --collection DATA/vector/bench --ef 64

The collection's point ids must be the base rows (bench/vector/rest_bench.py
writes it so); --build N instead creates one in --collection from the first N
base vectors. Numbers are only comparable on a quiet machine, both runs on
the same one."""
import argparse
import os
import sys
import time

import numpy as np


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    dim = int(raw[0])
    return raw.reshape(-1, dim + 1)[:, 1:].view(dtype).copy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="data set: base.fvecs query.fvecs gt.ivecs")
    ap.add_argument("--collection", required=True)
    ap.add_argument("--ef", type=int, default=64)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--build", type=int, default=0, help="create the collection from N rows")
    a = ap.parse_args()
    from strata.vector import Collection

    queries = read_vecs(os.path.join(a.dir, "query.fvecs"), np.float32)[:a.queries]
    truth = read_vecs(os.path.join(a.dir, "gt.ivecs"), np.int32)[:a.queries, :a.k]
    if a.build:
        base = read_vecs(os.path.join(a.dir, "base.fvecs"), np.float32)[:a.build]
        metric_file = os.path.join(a.dir, "metric")
        metric = open(metric_file).read().strip() if os.path.exists(metric_file) else "l2"
        col = Collection(a.collection, dim=base.shape[1], metric=metric)
        for i in range(0, len(base), 50_000):
            col.add(np.arange(i, min(i + 50_000, len(base))), base[i:i + 50_000])
        col.compact(seal_growing=True)
    else:
        col = Collection(a.collection)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    best = 0.0
    ids = None
    for r in range(a.repeat + 1):  # the first run warms up
        t0 = time.perf_counter()
        out = [col.search(queries[i:i + a.batch], k=a.k, ef=a.ef)[0]
               for i in range(0, len(queries), a.batch)]
        wall = time.perf_counter() - t0
        if r > 0:
            best = max(best, len(queries) / wall)
        ids = np.concatenate(out)
    recall = np.mean([len(set(x) & set(y)) / a.k for x, y in zip(ids, truth)])
    print(f"python Collection.search ef={a.ef} batch={a.batch}: recall@{a.k} {recall:.4f}, "
          f"QPS {best:.0f}, load {os.getloadavg()[0]:.2f}")
    col.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
