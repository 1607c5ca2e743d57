#!/usr/bin/env python3
"""Recall@10 against QPS, at 1 and 2 search threads, from the JSON lines of
strata_bench_vector and anchors.py (one curve per engine and index type; the
filtered points are left out). QPS is per CPU second by default, as in
report.py; --wall plots wall-clock QPS.

  plot.py results.jsonl --title fashion-mnist --out docs/img/vector-fashion-mnist.png
"""
import argparse
import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {
    ("HNSW", "strata"): ("tab:red", "o", "-"),
    ("HNSW", "hnswlib-native"): ("tab:blue", "s", "-"),
    ("HNSW", "hnswlib-python"): ("tab:cyan", "v", "-"),
    ("HNSW", "faiss"): ("tab:green", "^", "-"),
    ("HNSW_SQ8", "strata"): ("tab:pink", "o", ":"),
    ("IVF_PQ", "strata"): ("tab:red", "D", "--"),
    ("IVF_PQ", "faiss"): ("tab:green", "D", "--"),
    ("IVF_FLAT", "strata"): ("tab:orange", "x", "--"),
    ("IVF_FLAT", "faiss"): ("tab:olive", "x", "--"),
    ("DISKANN", "strata"): ("tab:purple", "P", "-."),
}


def pareto(points):
    """The upper envelope: points not beaten in both recall and QPS."""
    pts = sorted(points, key=lambda p: (-p[0], -p[1]))
    out, best = [], -1.0
    for r, q in pts:
        if q > best:
            out.append((r, q))
            best = q
    return sorted(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--title", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--wall", action="store_true")
    ap.add_argument("--min-recall", type=float, default=0.5)
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(a.results) if l.strip()]
    curves = defaultdict(list)
    for r in rows:
        if r.get("filtered") or "qps1" not in r:
            continue
        curves[(r["index"], r["engine"])].append(r)
    keys = ("qps1", "qps2") if a.wall else ("cpu_qps1", "cpu_qps2")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    for ax, key, threads in zip(axes, keys, (1, 2)):
        for (index, engine), pts in sorted(curves.items()):
            env = pareto([(p["recall"], p[key]) for p in pts if p["recall"] >= a.min_recall])
            if not env:
                continue
            color, marker, ls = STYLE.get((index, engine), (None, ".", "-"))
            ax.plot([p[0] for p in env], [p[1] for p in env], marker=marker, linestyle=ls,
                    color=color, markersize=4, label=f"{engine} {index}")
        ax.axvline(0.95, color="grey", linewidth=0.8, linestyle=":")
        ax.set_yscale("log")
        ax.set_xlabel("recall@10")
        ax.set_title(f"{a.title}: {threads} search thread{'s' if threads > 1 else ''}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("queries per " + ("second (wall)" if a.wall else "CPU second"))
    axes[1].legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(a.out, dpi=90)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    sys.exit(main())
