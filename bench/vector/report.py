#!/usr/bin/env python3
"""Summarises the JSON lines written by strata_bench_vector,
strata_bench_vector_hnswlib and anchors.py: QPS at fixed recall@10 (linear
interpolation on each engine's recall/QPS curve), build time and memory, and
Strata's ratio to each anchor, as Markdown.

  report.py results.jsonl [--targets 0.9,0.95,0.99] [--wall]

QPS is per CPU second by default (cpu_qps1/cpu_qps2: the search thread's CPU
time, or the process's CPU time / threads), which stays meaningful on a shared
machine; --wall uses wall-clock QPS instead.
"""
import argparse
import json
import sys
from collections import defaultdict


def qps_at(points, target, key):
    """QPS at recall `target` on the upper envelope of (recall, qps) points."""
    pts = sorted((p["recall"], p[key]) for p in points)
    best = None
    for (r0, q0), (r1, q1) in zip(pts, pts[1:]):
        if r0 <= target <= r1 and r1 > r0:
            q = q0 + (q1 - q0) * (target - r0) / (r1 - r0)
            best = q if best is None else max(best, q)
    for r, q in pts:
        if r >= target:
            best = q if best is None else max(best, q)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--targets", default="0.9,0.95,0.99")
    ap.add_argument("--wall", action="store_true")
    a = ap.parse_args()
    k1, k2, kb = ("qps1", "qps2", "build_s") if a.wall else ("cpu_qps1", "cpu_qps2", "build_cpu_s")
    targets = [float(t) for t in a.targets.split(",")]
    rows = [json.loads(l) for l in open(a.results) if l.strip()]
    curves = defaultdict(list)
    meta = {}
    for r in rows:
        if r.get("filtered") or "qps1" not in r:
            continue
        key = (r["index"], r["engine"])
        curves[key].append(r)
        meta[key] = r

    print(f"QPS {'wall clock' if a.wall else 'per CPU second'}; build time "
          f"{'wall clock' if a.wall else 'CPU seconds per build thread'}.")
    print()
    print("| index | engine | build | build s | RAM MB | " +
          " | ".join(f"QPS@{t} 1t / 2t" for t in targets) + " | max recall |")
    print("|---|---|---|---|---|" + "---|" * len(targets) + "---|")
    for key in sorted(curves):
        m = meta[key]
        cells = []
        for t in targets:
            q1, q2 = qps_at(curves[key], t, k1), qps_at(curves[key], t, k2)
            cells.append("-" if q1 is None else f"{q1:,.0f} / {q2:,.0f}")
        best = max(p["recall"] for p in curves[key])
        print(f"| {key[0]} | {key[1]} | {m['build']} | {m[kb]:.1f} | {m['mem_mb']:.0f} | "
              + " | ".join(cells) + f" | {best:.4f} |")

    print()
    print("Strata / anchor (QPS at equal recall@10, 1 thread / 2 threads; build: anchor time / "
          "Strata time):")
    for (index, engine), pts in sorted(curves.items()):
        if engine == "strata":
            continue
        ours = curves.get((index, "strata"))
        if not ours:
            continue
        parts = []
        for t in targets:
            a_q, s_q = qps_at(pts, t, k1), qps_at(ours, t, k1)
            a_q2, s_q2 = qps_at(pts, t, k2), qps_at(ours, t, k2)
            if a_q and s_q and a_q2 and s_q2:
                parts.append(f"@{t}: {s_q / a_q:.2f}x / {s_q2 / a_q2:.2f}x")
        b = meta[(index, engine)][kb] / max(meta[(index, "strata")][kb], 1e-9)
        print(f"- {index} vs {engine}: " + ", ".join(parts) + f"; build {b:.2f}x faster")

    filt = [r for r in rows if r.get("filtered")]
    if filt:
        print()
        print("| index | filter | recall@10 | QPS 1t | QPS 2t |")
        print("|---|---|---|---|---|")
        for r in filt:
            print(f"| {r['index']} | {r['search']} | {r['recall']:.4f} | {r[k1]:,.0f} | "
                  f"{r[k2]:,.0f} |")


if __name__ == "__main__":
    sys.exit(main())
