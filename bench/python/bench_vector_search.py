#!/usr/bin/python3
"""Embedded batch search from Python (strata.vector.Collection.search) against
the C++ bench (strata_bench_vector --collection, Collection::SearchBatch) on
the same collection at the same parameters, in interleaved rounds: each round
runs both sides (the order alternates), each side a warm-up pass then the best
of --repeat timed passes over the queries in batches of --batch, as
strata_bench_vector measures. Prints each round, the median of the per-round
ratios Python / C++ (1.00 = the same QPS) and the load average.

    ninja -C build _strata strata_bench_vector
    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_vector_search.py \
        --n 200000 --d 128 --ef 64 --batch 100 --rounds 5

The data set (bench/vector/prepare.py's synthetic generator; exact ground truth
by numpy brute force, so python3-faiss is not needed) and the HNSW collection
are made once in --work and reused.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "vector"))
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    dim = int(raw[0])
    return raw.reshape(-1, dim + 1)[:, 1:].view(dtype).copy()


def prepare(out, n, d, nq, seed=1234, gt_k=100):
    """base/query/gt in the TEXMEX layout strata_bench_vector reads."""
    import prepare as prep  # bench/vector/prepare.py
    if os.path.exists(os.path.join(out, "gt.ivecs")):
        return
    os.makedirs(out, exist_ok=True)
    base, queries, _ = prep.synthetic(n, nq, d, 24, seed)
    bn = (base * base).sum(1)
    gt = np.empty((nq, gt_k), dtype=np.int32)
    for i in range(0, nq, 50):  # exact squared L2, 50 queries at a time
        q = queries[i:i + 50]
        dist = bn[None, :] - 2.0 * (q @ base.T)
        part = np.argpartition(dist, gt_k, axis=1)[:, :gt_k]
        order = np.take_along_axis(dist, part, 1).argsort(1)
        gt[i:i + 50] = np.take_along_axis(part, order, 1)
    prep.write_vecs(os.path.join(out, "base.fvecs"), base)
    prep.write_vecs(os.path.join(out, "query.fvecs"), queries)
    prep.write_vecs(os.path.join(out, "gt.ivecs"), gt)
    with open(os.path.join(out, "metric"), "w") as f:
        f.write("l2\n")


def build(coll_dir, data_dir, m, efc):
    from strata.vector import Collection
    if os.path.exists(os.path.join(coll_dir, "config.json")):
        return
    base = read_vecs(os.path.join(data_dir, "base.fvecs"), np.float32)
    t0 = time.perf_counter()
    col = Collection(coll_dir, dim=base.shape[1], metric="l2", index="hnsw",
                     index_params={"m": m, "ef_construction": efc})
    for i in range(0, len(base), 50_000):
        col.add(np.arange(i, min(i + 50_000, len(base))), base[i:i + 50_000])
    col.compact(seal_growing=True)
    col.close()
    print(f"built {coll_dir}: {len(base)} x {base.shape[1]} HNSW m={m} efc={efc} "
          f"in {time.perf_counter() - t0:.0f} s", flush=True)


def python_side(a, queries, truth):
    from strata.vector import Collection
    col = Collection(a.collection)
    try:
        best, ids = 0.0, None
        for r in range(a.repeat + 1):  # the first pass warms up
            t0 = time.perf_counter()
            out = [col.search(queries[i:i + a.batch], k=a.k, ef=a.ef)[0]
                   for i in range(0, len(queries), a.batch)]
            wall = time.perf_counter() - t0
            if r > 0:
                best = max(best, len(queries) / wall)
            ids = np.concatenate(out)
    finally:
        col.close()
    recall = np.mean([len(set(x) & set(y)) / a.k for x, y in zip(ids, truth)])
    return best, recall


def cpp_side(a):
    cmd = [a.bench_bin, "--dir", a.data, "--collection", a.collection, "--ef", str(a.ef),
           "--batch", str(a.batch), "--queries", str(a.queries), "--repeat", str(a.repeat),
           "--k", str(a.k)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"recall@10 ([\d.]+), QPS (\d+)", out)
    if not m:
        raise RuntimeError(f"unexpected strata_bench_vector output: {out!r}")
    return float(m.group(2)), float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--efc", type=int, default=200)
    ap.add_argument("--ef", type=int, default=64)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3, help="timed passes per side per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                   "strata-bench-pyvector"))
    ap.add_argument("--bench-bin", default=os.path.join(ROOT, "build", "strata_bench_vector"))
    a = ap.parse_args()
    a.data = os.path.join(a.work, f"synthetic-{a.n}x{a.d}")
    a.collection = os.path.join(a.work, f"hnsw-{a.n}x{a.d}-m{a.m}-efc{a.efc}")
    prepare(a.data, a.n, a.d, a.queries)
    build(a.collection, a.data, a.m, a.efc)
    queries = np.ascontiguousarray(
        read_vecs(os.path.join(a.data, "query.fvecs"), np.float32)[:a.queries])
    truth = read_vecs(os.path.join(a.data, "gt.ivecs"), np.int32)[:a.queries, :a.k]

    ratios = []
    print(f"{a.n} x {a.d} L2, HNSW m={a.m} efc={a.efc}, ef={a.ef}, k={a.k}, batch={a.batch}, "
          f"{a.queries} queries, best of {a.repeat} per side per round, {os.cpu_count()} cores")
    print(f"{'round':>5} {'C++ QPS':>9} {'Python QPS':>11} {'Py/C++':>7} {'recall C++/Py':>14} {'load':>5}")
    for r in range(a.rounds):
        if r % 2 == 0:
            c_qps, c_rec = cpp_side(a)
            p_qps, p_rec = python_side(a, queries, truth)
        else:
            p_qps, p_rec = python_side(a, queries, truth)
            c_qps, c_rec = cpp_side(a)
        ratios.append(p_qps / c_qps)
        print(f"{r:>5} {c_qps:>9.0f} {p_qps:>11.0f} {ratios[-1]:>7.3f} "
              f"{c_rec:>6.4f}/{p_rec:.4f} {os.getloadavg()[0]:>5.1f}", flush=True)
    print(f"median Python / C++ QPS: {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}), load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
