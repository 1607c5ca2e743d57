#!/usr/bin/env python3
"""The anchors users would pick instead of Strata, on the data set written by
prepare.py: hnswlib (Debian python3-hnswlib) and FAISS (Debian python3-faiss)
HNSW with the same M / efConstruction, and FAISS IVF-Flat / IVF-PQ. Appends one
JSON object per measurement to --json, in strata_bench_vector's format.
The metric is DIR/metric (l2, or cosine: hnswlib's "cosine" space, FAISS inner
product over normalised vectors).

  anchors.py --dir DIR --json results.jsonl [--M 16] [--efc 200] [--only hnswlib,faiss-hnsw]
"""
import argparse
import json
import os
import sys
import time

import numpy as np


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    d = raw[0]
    return raw.reshape(-1, d + 1)[:, 1:].view(dtype).copy()


def recall(found, gt, k):
    hits = 0
    for q in range(found.shape[0]):
        hits += len(set(found[q, :k].tolist()) & set(gt[q, :k].tolist()))
    return hits / (found.shape[0] * k)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def emit(out, engine, index, build, search, rec, q, b, mem_mb):
    """q: {threads: (wall qps, cpu qps)}; b: (wall s, cpu s per thread)."""
    print(f"{engine:15s} {index:9s} {build:22s} {search:20s} recall@10 {rec:.4f}  "
          f"QPS 1t {q[1][0]:7.0f} (cpu {q[1][1]:7.0f})  2t {q[2][0]:7.0f} (cpu {q[2][1]:7.0f})",
          flush=True)
    if out:
        out.write(json.dumps(dict(engine=engine, index=index, build=build, search=search,
                                  recall=round(rec, 5), qps1=round(q[1][0], 1),
                                  qps2=round(q[2][0], 1), cpu_qps1=round(q[1][1], 1),
                                  cpu_qps2=round(q[2][1], 1), build_s=round(b[0], 3),
                                  build_cpu_s=round(b[1], 3), mem_mb=round(mem_mb, 2),
                                  disk_mb=0, load=loadavg())) + "\n")
        out.flush()


def timed(fn, nq, threads, repeat):
    """Best-of-`repeat` (wall QPS, QPS per CPU second) — see strata_bench_vector."""
    best_w = best_c = 0.0
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        w, c = time.perf_counter() - w0, time.process_time() - c0
        best_w = max(best_w, nq / w)
        best_c = max(best_c, nq / max(c / threads, 1e-9))
    return best_w, best_c


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--json")
    ap.add_argument("--M", type=int, default=16)
    ap.add_argument("--efc", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--build-threads", type=int, default=2)
    ap.add_argument("--only", default="hnswlib,faiss-hnsw,faiss-ivf,faiss-ivfpq")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ef", default="10,16,24,32,48,64,96,128,192,256,384,512")
    ap.add_argument("--nprobe", default="4,8,16,32,64")
    a = ap.parse_args()
    only = set(a.only.split(","))
    base = read_vecs(os.path.join(a.dir, "base.fvecs"), np.float32)
    queries = read_vecs(os.path.join(a.dir, "query.fvecs"), np.float32)[: a.queries]
    gt = read_vecs(os.path.join(a.dir, "gt.ivecs"), np.int32)[: a.queries]
    n, d = base.shape
    k = a.k
    metric = "l2"
    if os.path.exists(os.path.join(a.dir, "metric")):
        metric = open(os.path.join(a.dir, "metric")).read().strip()
    cosine = metric == "cosine"
    out = open(a.json, "a") if a.json else None
    efs = [int(x) for x in a.ef.split(",")]
    build = f"M={a.M},efC={a.efc}"

    if "hnswlib" in only:
        import hnswlib

        rss0 = rss_mb()
        p = hnswlib.Index(space="cosine" if cosine else "l2", dim=d)
        p.init_index(max_elements=n, ef_construction=a.efc, M=a.M, random_seed=100)
        p.set_num_threads(a.build_threads)
        w0, c0 = time.perf_counter(), time.process_time()
        p.add_items(base, np.arange(n))
        b = (time.perf_counter() - w0, (time.process_time() - c0) / a.build_threads)
        mem = rss_mb() - rss0
        print(f"hnswlib-python {build}: built in {b[0]:.2f} s ({b[1]:.2f} CPU s per thread); "
              f"RSS +{mem:.1f} MB", flush=True)
        for ef in efs:
            p.set_ef(ef)
            labels, _ = p.knn_query(queries, k=k, num_threads=1)
            rec = recall(labels, gt, k)
            q = {t: timed(lambda: p.knn_query(queries, k=k, num_threads=t), len(queries), t,
                          a.repeat) for t in (1, 2)}
            emit(out, "hnswlib-python", "HNSW", build, f"ef={ef}", rec, q, b, mem)
        del p

    import faiss

    fmetric = faiss.METRIC_INNER_PRODUCT if cosine else faiss.METRIC_L2
    if cosine:
        # FAISS has no cosine metric: inner product over normalised vectors
        # (the normalisation is outside the timed build; it is one pass).
        base = base / np.linalg.norm(base, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)

    def flat_quantizer():
        return faiss.IndexFlatIP(d) if cosine else faiss.IndexFlatL2(d)

    def faiss_sweep(engine, index, name, build_label, b, mem, setter, values):
        for v in values:
            label = setter(v)
            faiss.omp_set_num_threads(1)
            _, labels = index.search(queries, k)
            rec = recall(labels, gt, k)
            q = {}
            for t in (1, 2):
                faiss.omp_set_num_threads(t)
                q[t] = timed(lambda: index.search(queries, k), len(queries), t, a.repeat)
            emit(out, engine, name, build_label, label, rec, q, b, mem)

    def build_timed(fn):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        return (time.perf_counter() - w0, (time.process_time() - c0) / a.build_threads)

    if "faiss-hnsw" in only:
        faiss.omp_set_num_threads(a.build_threads)
        rss0 = rss_mb()
        index = faiss.IndexHNSWFlat(d, a.M, fmetric)
        index.hnsw.efConstruction = a.efc
        b = build_timed(lambda: index.add(base))
        mem = rss_mb() - rss0
        print(f"faiss-hnsw {build}: built in {b[0]:.2f} s ({b[1]:.2f} CPU s per thread); "
              f"RSS +{mem:.1f} MB", flush=True)

        def set_ef(ef):
            index.hnsw.efSearch = ef
            return f"ef={ef}"

        faiss_sweep("faiss", index, "HNSW", build, b, mem, set_ef, efs)
        del index

    nlist = int(min(1024, max(16, 4 * np.sqrt(n))))
    if "faiss-ivf" in only:
        faiss.omp_set_num_threads(a.build_threads)
        quantizer = flat_quantizer()
        index = faiss.IndexIVFFlat(quantizer, d, nlist, fmetric)
        sample = base[np.random.default_rng(1).choice(n, min(n, nlist * 128), replace=False)]
        b = build_timed(lambda: (index.train(sample), index.add(base)))
        mem = (n * d * 4 + n * 8 + nlist * d * 4) / 1e6

        def set_np(v):
            index.nprobe = v
            return f"nprobe={v}"

        faiss_sweep("faiss", index, "IVF_FLAT", f"nlist={nlist}", b, mem, set_np,
                    [1, 2, 4, 8, 16, 32, 64])
        del index

    if "faiss-ivfpq" in only:
        faiss.omp_set_num_threads(a.build_threads)
        m = d // 4
        quantizer = flat_quantizer()
        ivfpq = faiss.IndexIVFPQ(quantizer, d, nlist, m, 8, fmetric)
        # Re-ranking needs the raw vectors: FAISS keeps them in RAM (IndexRefineFlat,
        # which must wrap the IVF-PQ index before anything is added). nprobe is
        # set on the IVF-PQ index itself (the refine wrapper has no nprobe) and
        # k_factor on the wrapper: it re-scores k * k_factor PQ candidates.
        index = faiss.IndexRefineFlat(ivfpq)
        # PQ codebooks need >= 256 points per centroid; the IVF >= 39 per list.
        ntrain = min(n, max(nlist * 64, 256 * 64))
        sample = base[np.random.default_rng(1).choice(n, ntrain, replace=False)]
        b = build_timed(lambda: (index.train(sample), index.add(base)))
        # RAM of the search structure: PQ codes + 8-byte ids per vector, the
        # centroids and codebooks; the refine copy (4d bytes per vector, in RAM
        # in FAISS, on disk in Strata) is counted apart in the label.
        mem = (n * (m + 8) + nlist * d * 4 + 256 * d * 4) / 1e6

        def set_np(v):
            np_, kf = v
            ivfpq.nprobe = np_
            index.k_factor = kf / k
            return f"nprobe={np_},rerank={kf}"

        nprobes = [int(x) for x in a.nprobe.split(",")]
        faiss_sweep("faiss", index, "IVF_PQ", f"nlist={nlist},m={m},refine=RAM", b, mem,
                    set_np, [(p, r) for p in nprobes for r in (20, 50, 100)])
    if out:
        out.close()


if __name__ == "__main__":
    sys.exit(main())
