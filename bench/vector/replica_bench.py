#!/usr/bin/env python3
"""Replica search QPS with a cold and a warm segment cache (docs/scale-out.md).

Starts a strata S3 store, a writer (--vector-storage) and loads N points
through the Qdrant REST API; then, for each round, a replica
(--vector-replica-of) is started cold (fresh DATA/vector-cache) and warm
(restarted on the same cache), and the time until it serves the collection
and its search QPS (one client, sequential requests) are printed. Cold and
warm rounds alternate so machine load affects both alike.

Usage: replica_bench.py --strata build/strata [--points 100000] [--rounds 2] [--queries 300]
"""
import json
import os
import random
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
import strata_harness as H  # noqa: E402
import test_vector_replicas as T  # noqa: E402


def replica_round(strata, url, data_dir, queries, n):
    rep = H.StrataServer(strata, data_dir=data_dir, vector=True,
                         extra_args=["--no-s3", "--vector-replica-of", url])
    t0 = time.time()
    rep.start(timeout=120)
    T.wait_until(lambda: T.count(rep) == n, 120, "the replica to load")
    ready = time.time() - t0
    t1 = time.time()
    for q in queries:
        T.ok(rep, "POST", f"/collections/{T.COLL}/points/search", {"vector": q, "limit": 10})
    qps = len(queries) / (time.time() - t1)
    rep.cleanup()
    return ready, qps


def main():
    def extra(p):
        p.add_argument("--points", type=int, default=100_000)
        p.add_argument("--rounds", type=int, default=2)
        p.add_argument("--queries", type=int, default=300)
    args = H.parse_args(extra)
    with H.StrataServer(args.strata) as store:
        s3 = store.client()
        s3.create_bucket(Bucket=T.BUCKET)
        url = (f"s3://{T.BUCKET}/c?endpoint={store.endpoint}&region=us-east-1"
               f"&access_key={store.access_key}&secret_key={store.secret_key}")
        writer = H.StrataServer(args.strata, vector=True,
                                extra_args=["--no-s3", "--vector-storage", url])
        writer.start()
        try:
            T.ok(writer, "PUT", f"/collections/{T.COLL}",
                 {"vectors": {"size": T.DIM, "distance": "Cosine"}})
            last = T.upsert_all(writer, args.points, seed=1)
            T.wait_until(lambda: T.published_lsn(s3) >= last, 300, "publication")
        finally:
            writer.cleanup()
        rng = random.Random(3)
        queries = [T.vec(rng) for _ in range(args.queries)]
        print(f"load average {os.getloadavg()[0]:.1f}; {args.points} points, dim {T.DIM}")
        print("round  cache  ready_s  search_qps")
        base = os.path.join(store.base_dir, "replica")
        for r in range(args.rounds):
            shutil.rmtree(base, ignore_errors=True)
            for kind in ("cold", "warm"):
                ready, qps = replica_round(args.strata, url, base, queries, args.points)
                print(f"{r:5d}  {kind:5s}  {ready:7.2f}  {qps:10.0f}", flush=True)


if __name__ == "__main__":
    main()
