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
        if r.get("filtered") or "bucket" in r or "qps1" not in r:
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

    filtered_table(rows, 0.95, k1, k2)
    filt = [r for r in rows if r.get("filtered")]
    if filt:
        print()
        print("| index | filter | recall@10 | QPS 1t | QPS 2t |")
        print("|---|---|---|---|---|")
        for r in filt:
            print(f"| {r['index']} | {r['search']} | {r['recall']:.4f} | {r[k1]:,.0f} | "
                  f"{r[k2]:,.0f} |")


def bucket_cell(pts, target, k1, k2):
    """QPS@target 1t / 2t, the lowest search setting reaching it and its short
    queries; or "not reached" with the best recall and its short queries."""
    q1, q2 = qps_at(pts, target, k1), qps_at(pts, target, k2)
    hit = [p for p in pts if p["recall"] >= target]
    if q1 is None or q2 is None:
        best = max(pts, key=lambda p: p["recall"])
        return None, None, f"not reached (max {best['recall']:.3f}, short {best['short']})"
    first = hit[0]
    return q1, q2, (f"{q1:,.0f} / {q2:,.0f} ({first['search']}, recall {first['recall']:.3f}, "
                    f"short {first['short']})")


def filtered_table(rows, target, k1, k2):
    """Issue 22's table: per filter bucket, QPS at recall@10 = target for
    Strata (strategy auto), FAISS HNSW with an IDSelectorBitmap, and exact
    search over the filtered subset (Strata kExact, FAISS IndexFlat with the
    selector); Strata / FAISS in the same run."""
    by = defaultdict(lambda: defaultdict(list))
    meta = {}
    for r in rows:
        if "bucket" not in r:
            continue
        if r["engine"] == "strata":
            key = "strata-exact" if r["search"] == "exact" else "strata-" + r["strategy"]
        else:
            key = "faiss-exact" if r["index"] == "FLAT" else "faiss"
        by[r["bucket"]][key].append(r)
        meta[r["bucket"]] = r
    if not by:
        return
    strata_keys = sorted({k for b in by.values() for k in b if k.startswith("strata-")
                          and k != "strata-exact"})
    print()
    print(f"Filtered search: QPS at recall@10 = {target} (1 thread / 2 threads), lowest search "
          "setting reaching it, queries answered with fewer than min(10, matches) points.")
    print()
    print("| filter | rows | " + " | ".join(f"Strata {k[7:]}" for k in strata_keys) + " | FAISS HNSW + IDSelectorBitmap | "
          "Strata / FAISS | Strata exact | FAISS exact |")
    print("|---|---|" + "---|" * (len(strata_keys) + 4))
    order = sorted(by, key=lambda b: ({"cat": 0, "ts": 1}.get(meta[b]["kind"], 2),
                                      meta[b]["selectivity"]))
    for b in order:
        m = meta[b]
        cells = [b, f"{m['matches']:,} ({m['matches'] / m['n']:.2%})"]
        ours = None
        for k in strata_keys:
            q1, q2, txt = bucket_cell(by[b][k], target, k1, k2) if by[b][k] else (None, None, "-")
            if k == "strata-auto" and q1:
                ours = (q1, q2)
            cells.append(txt)
        f1, f2, txt = bucket_cell(by[b]["faiss"], target, k1, k2) if by[b]["faiss"] else \
            (None, None, "-")
        cells.append(txt)
        if ours and f1:
            cells.append(f"{ours[0] / f1:.2f}x / {ours[1] / f2:.2f}x")
        elif not by[b]["faiss"]:
            cells.append("-")
        else:
            cells.append("FAISS not reached" if ours else "Strata (auto) not reached")
        for k in ("strata-exact", "faiss-exact"):
            e = by[b][k]
            cells.append(f"{e[0][k1]:,.0f} / {e[0][k2]:,.0f} (recall {e[0]['recall']:.3f})"
                         if e else "-")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
