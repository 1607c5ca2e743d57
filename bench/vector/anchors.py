#!/usr/bin/env python3
"""The anchors users would pick instead of Strata, on the data set written by
prepare.py: hnswlib (Debian python3-hnswlib) and FAISS (Debian python3-faiss)
HNSW with the same M / efConstruction, and FAISS IVF-Flat / IVF-PQ. Appends one
JSON object per measurement to --json, in strata_bench_vector's format.
The metric is DIR/metric (l2, or cosine: hnswlib's "cosine" space, FAISS inner
product over normalised vectors).

  anchors.py --dir DIR --json results.jsonl [--M 16] [--efc 200] [--only hnswlib,faiss-hnsw]
  anchors.py --dir DIR --only faiss-filtered ...   (the filter buckets of
      prepare.py clustered: FAISS HNSW with an IDSelectorBitmap, and exact)
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


def emit(out, engine, index, build, search, rec, q, b, mem_mb, extra=None):
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
                                  disk_mb=0, load=loadavg(), **(extra or {}))) + "\n")
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


def load_buckets(d, n, nq):
    """The filter buckets of prepare.py clustered: (name, kind, selectivity,
    matches, packed bitmap, exact filtered top-k)."""
    fdir = os.path.join(d, "filters")
    out = []
    for line in open(os.path.join(fdir, "buckets.tsv")):
        name, kind, sel, matches = line.split()
        bits = np.fromfile(os.path.join(fdir, name + ".bits"), dtype=np.uint8)
        gt = read_vecs(os.path.join(fdir, name + ".gt.ivecs"), np.int32)[:nq]
        out.append((name, kind, float(sel), int(matches), bits, gt))
    return out


def filtered_recall(found, gt, k):
    """recall@k against the exact filtered top-k (-1 past the matches)."""
    hits = want = 0
    for q in range(gt.shape[0]):
        truth = set(x for x in gt[q, :k].tolist() if x >= 0)
        if truth:
            hits += len(set(found[q, :k].tolist()) & truth)
            want += len(truth)
    return hits / want if want else 1.0


def faiss_filtered(a, out, base, queries, fmetric, efs):
    """Issue 22's filtered table, FAISS's side: HNSW (same M, efConstruction)
    searched with an IDSelectorBitmap through SearchParametersHNSW (sel,
    efSearch), the ef sweep ending at the first ef reaching --stop-recall; and
    exact search over the filtered subset (IndexFlat with the same selector:
    distances only to matching rows)."""
    import faiss

    n, d = base.shape
    k = a.k
    buckets = load_buckets(a.dir, n, queries.shape[0])
    build = f"M={a.M},efC={a.efc}"
    faiss.omp_set_num_threads(a.build_threads)
    hnsw = faiss.IndexHNSWFlat(d, a.M, fmetric)
    hnsw.hnsw.efConstruction = a.efc
    w0, c0 = time.perf_counter(), time.process_time()
    hnsw.add(base)
    b = (time.perf_counter() - w0, (time.process_time() - c0) / a.build_threads)
    print(f"faiss-hnsw {build}: built in {b[0]:.2f} s ({b[1]:.2f} CPU s per thread)", flush=True)
    flat = faiss.IndexFlat(d, fmetric)
    flat.add(base)
    for name, kind, sel, matches, bits, gt in buckets:
        selector = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bits))
        runs = []
        for ef in efs:
            # Fields set one by one: python3-faiss 1.7.3's keyword constructor
            # SearchParametersHNSW(sel=..., efSearch=...) left efSearch at its
            # default here (recall stopped growing with ef, unfiltered too).
            params = faiss.SearchParametersHNSW()
            params.sel = selector
            params.efSearch = ef
            assert params.efSearch == ef
            runs.append(("HNSW", build, f"ef={ef}", hnsw, params))
        params = faiss.SearchParameters()
        params.sel = selector
        runs.append(("FLAT", "exact", "exact", flat, params))
        hnsw_done = False
        for index_name, build_label, search, index, params in runs:
            if index_name == "HNSW" and hnsw_done:
                continue
            faiss.omp_set_num_threads(1)
            _, labels = index.search(queries, k, params=params)
            rec = filtered_recall(labels, gt, k)
            short = int(np.sum((labels >= 0).sum(axis=1) < min(k, matches)))
            q = {}
            for t in (1, 2):
                faiss.omp_set_num_threads(t)
                q[t] = timed(lambda: index.search(queries, k, params=params), len(queries), t,
                             a.repeat)
            print(f"[{name}, {matches} rows] short {short}  ", end="")
            emit(out, "faiss", index_name, build_label, search, rec, q,
                 b if index_name == "HNSW" else (0, 0), 0,
                 extra=dict(bucket=name, kind=kind, selectivity=sel, matches=matches, n=n,
                            strategy="selector", short=short))
            hnsw_done = index_name == "HNSW" and rec >= a.stop_recall


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
    ap.add_argument("--stop-recall", type=float, default=0.98,
                    help="faiss-filtered: a bucket's ef sweep ends at the first ef reaching this")
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

    if "faiss-filtered" in only:
        faiss_filtered(a, out, base, queries, fmetric,
                       [int(x) for x in a.ef.split(",")])

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
