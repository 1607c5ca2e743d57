#!/usr/bin/env python3
"""Markdown table from bench/s3/run.sh's RESULT lines.

usage: table.py RESULTS.raw.txt [OUT.md]

Per workload (label, connections): Strata = mean of its runs (A/B/A), nginx =
mean of its runs; "Ratio" = Strata ops/s / nginx ops/s. "CPU ratio" = nginx
server CPU per request / Strata server CPU per request: what the throughput
ratio would be if both servers had the cores to themselves (the driver shares
the same 2 cores, which compresses the throughput ratio towards 1).
"""
import shlex
import statistics as st
import sys


def main():
    rows = []
    for line in open(sys.argv[1]):
        if line.startswith("RESULT "):
            rows.append(dict(t.split("=", 1) for t in shlex.split(line[7:]) if "=" in t))
    out = []

    def p(s=""):
        print(s)
        out.append(s)

    def f(x, d=0):
        return f"{x:,.{d}f}"

    groups, order = {}, []
    for r in rows:
        if r.get("op") in ("get", "put"):
            k = (r["label"], r["conns"])
            if k not in groups:
                groups[k] = {"strata": [], "nginx": []}
                order.append(k)
            groups[k][r["target"]].append(r)
    if order:
        p("| Workload | Conns | Strata ops/s (runs) | nginx ops/s | Ratio | Strata p50 / p99 µs "
          "| nginx p50 / p99 µs | Strata GiB/s | nginx GiB/s | Server CPU µs/op Strata / nginx | CPU ratio |")
        p("|---|---|---|---|---|---|---|---|---|---|---|")
        for k in order:
            s, n = groups[k]["strata"], groups[k]["nginx"]
            if not s or not n:
                continue

            def m(rs, key):
                return st.mean(float(r.get(key, 0)) for r in rs)

            so, no = m(s, "ops_per_s"), m(n, "ops_per_s")
            runs = " / ".join(f(float(r["ops_per_s"]), 1 if so < 100 else 0) for r in s)
            sc, nc = m(s, "server_cpu_us_per_op"), m(n, "server_cpu_us_per_op")
            errs = sum(int(r["errors"]) for r in s + n)
            d = 1 if so < 100 else 0
            p(f"| {k[0]} | {k[1]} | {f(so, d)} ({runs}) | {f(no, d)} | **{so / no:.2f}×** | "
              f"{f(m(s, 'p50_us'))} / {f(m(s, 'p99_us'))} | {f(m(n, 'p50_us'))} / {f(m(n, 'p99_us'))} | "
              f"{m(s, 'gib_per_s'):.2f} | {m(n, 'gib_per_s'):.2f} | {f(sc, 1)} / {f(nc, 1)} | "
              f"{(nc / sc if sc else 0):.2f}× |" + (f" {errs} errors" if errs else ""))
    lists = [r for r in rows if r.get("op") == "list"]
    if lists:
        p()
        p("| ListObjectsV2 page (1,000 keys) | median ms | p90 ms | min ms |")
        p("|---|---|---|---|")
        for r in lists:
            p(f"| {r['label']} | {float(r['median_ms']):.2f} | {float(r['p90_ms']):.2f} | {float(r['min_ms']):.2f} |")
        if len(lists) >= 2:
            a, b = float(lists[0]["median_ms"]), float(lists[-1]["median_ms"])
            p(f"\nLargest / smallest bucket page time: {b / a:.2f}× (target ≤ 2×)")
    p()
    for r in rows:
        if r.get("op") == "sign-cost":
            p(f"Client SigV4 signing cost: {r['us_per_request']} µs per request (inside the Strata latencies).  ")
        if r.get("op") == "machine":
            p(f"Load average at start: {r['load_start']}.  ")
        if r.get("op") == "machine-end":
            p(f"Load average at end: {r['load_end']}.")
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as fh:
            fh.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
