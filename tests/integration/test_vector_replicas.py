#!/usr/bin/env python3
"""Vector collections on an object store: one writer, two read-only replicas.

Four `strata server` processes on loopback: one is the S3 store; the writer
runs with --vector-storage s3://... and the replicas with --vector-replica-of.
Points upserted through the Qdrant REST API on the writer must be searchable
on both replicas with the same results within a second of their publication
(the writer's MANIFEST object in the store naming an operation at least as
new as the last acknowledged upsert); writes to a replica are refused naming
the writer; kill -9 of the writer loses no acknowledged point; a second writer
is refused at start.

Usage: test_vector_replicas.py --strata build/strata [--points N]
"""
import json
import os
import random
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

DIM = 32
BATCH = 2000
COLL = "replicated"
BUCKET = "vectors"


def rest(server, method, path, body=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    r = H.url_request(server.vector_endpoint + path, method=method, data=data,
                      headers={"Content-Type": "application/json"}, timeout=timeout)
    try:
        payload = json.loads(r.body or b"{}")
    except ValueError:
        payload = {"raw": r.body[:200]}
    return r.status, payload


def ok(server, method, path, body=None):
    st, payload = rest(server, method, path, body)
    if st != 200:
        raise AssertionError(f"{method} {path}: HTTP {st} {payload}")
    return payload["result"]


def vec(rng):
    return [rng.uniform(-1, 1) for _ in range(DIM)]


def upsert_all(writer, n, seed):
    rng = random.Random(seed)
    last_op = 0
    for start in range(0, n, BATCH):
        pts = [{"id": i, "vector": vec(rng), "payload": {"i": i}}
               for i in range(start, min(n, start + BATCH))]
        res = ok(writer, "PUT", f"/collections/{COLL}/points?wait=true", {"points": pts})
        last_op = max(last_op, res.get("operation_id", 0))
    return last_op


def published_lsn(s3):
    """last_lsn of the MANIFEST in the store (offset 20 of its header), or -1."""
    try:
        body = s3.get_object(Bucket=BUCKET, Key=f"c/{COLL}/MANIFEST")["Body"].read()
    except Exception:  # noqa: BLE001 - not published yet
        return -1
    return struct.unpack_from("<Q", body, 20)[0]


def searches(server, queries, exact=False):
    out = []
    for q in queries:
        res = ok(server, "POST", f"/collections/{COLL}/points/search",
                 {"vector": q, "limit": 10, "params": {"hnsw_ef": 64, "exact": exact}})
        out.append([p["id"] for p in res])
    return out


def same_everywhere(servers, queries, exact):
    results = [searches(s, queries, exact) for s in servers]
    return all(r == results[0] for r in results), results


def count(server):
    st, payload = rest(server, "POST", f"/collections/{COLL}/points/count", {"exact": True})
    return payload["result"]["count"] if st == 200 else -1


def wait_until(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return time.time()
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def main():
    args = H.parse_args(lambda p: p.add_argument("--points", type=int, default=100_000))
    n = args.points
    t_start = time.time()
    with H.StrataServer(args.strata, vector=False) as store:
        s3 = store.client()
        s3.create_bucket(Bucket=BUCKET)
        url = (f"s3://{BUCKET}/c?endpoint={store.endpoint}&region=us-east-1"
               f"&access_key={store.access_key}&secret_key={store.secret_key}")
        wdir = os.path.join(store.base_dir, "writer")
        common = ["--no-s3", "--vector-poll-interval-ms", "100"]
        writer = H.StrataServer(args.strata, data_dir=wdir, vector=True,
                                extra_args=common + ["--vector-storage", url,
                                                     "--vector-publish-interval-ms", "500"])
        replicas = [H.StrataServer(args.strata, vector=True,
                                   extra_args=common + ["--vector-replica-of", url])
                    for _ in range(2)]
        try:
            writer.start()
            ok(writer, "PUT", f"/collections/{COLL}",
               {"vectors": {"size": DIM, "distance": "Cosine"},
                "hnsw_config": {"m": 8, "ef_construct": 32}})
            for r in replicas:
                r.start()
            wait_until(lambda: all(count(r) == 0 for r in replicas), 10,
                       "the empty collection on the replicas")

            # Writes to a replica are refused, naming the writer.
            st, payload = rest(replicas[0], "PUT", f"/collections/{COLL}/points?wait=true",
                               {"points": [{"id": 1, "vector": [0.0] * DIM}]})
            msg = json.dumps(payload)
            assert st == 403, (st, payload)
            assert "read-only replica" in msg and f"127.0.0.1:{writer.vector_port}" in msg, msg
            st, payload = rest(replicas[1], "PUT", "/collections/other",
                               {"vectors": {"size": DIM, "distance": "Cosine"}})
            assert st == 403, (st, payload)

            t0 = time.time()
            last_op = upsert_all(writer, n, seed=1)
            t_upsert = time.time() - t0
            t_pub = wait_until(lambda: published_lsn(s3) >= last_op, 120,
                               f"the writer to publish operation {last_op}")
            rng = random.Random(7)
            queries = [vec(rng) for _ in range(20)]
            t_seen = wait_until(lambda: all(count(r) == n for r in replicas), 30,
                                f"{n} points on both replicas")
            lag = t_seen - t_pub
            # Exact search: the same points, so the same answers at once.
            same, results = same_everywhere([writer] + replicas, queries, exact=True)
            assert same, f"exact results differ (writer, replicas):\n{[r[:1] for r in results]}"
            # Index search: the same segments and indexes once every replica has the
            # writer's newest manifest (the writer may still merge small segments).
            deadline = time.time() + 10
            while True:
                same, results = same_everywhere([writer] + replicas, queries, exact=False)
                if same or time.time() > deadline:
                    break
                time.sleep(0.2)
            assert same, f"index results differ (writer, replicas):\n{[r[:1] for r in results]}"
            assert all(len(ids) == 10 for ids in results[0]), results[0]
            # Scroll on a replica pages through the same points.
            res = ok(replicas[1], "POST", f"/collections/{COLL}/points/scroll",
                     {"limit": 5, "with_payload": True})
            assert [p["id"] for p in res["points"]] == [0, 1, 2, 3, 4], res
            assert res["points"][3]["payload"] == {"i": 3}, res
            print(f"upserted {n} points in {t_upsert:.1f}s; replicas caught up "
                  f"{lag * 1000:.0f} ms after publication", flush=True)
            assert lag <= 1.0 + 0.5, f"replicas followed the publication after {lag:.2f}s"

            # Acknowledged but not yet published points survive kill -9.
            extra = [{"id": n + i, "vector": vec(rng)} for i in range(500)]
            ok(writer, "PUT", f"/collections/{COLL}/points?wait=true", {"points": extra})
            writer.kill9()
            # A second writer (another data directory) is refused while the
            # lease is fresh; the message names the holder.
            other = H.StrataServer(args.strata, vector=True,
                                   extra_args=common + ["--vector-storage", url])
            try:
                other.start(timeout=30)
                raise AssertionError("a second writer started")
            except RuntimeError as e:
                assert "second writer is refused" in str(e), str(e)
                assert f"127.0.0.1:{writer.vector_port}" in str(e), str(e)
            finally:
                other.cleanup()
            writer.start()  # the same data directory takes its lease back
            assert count(writer) == n + 500, count(writer)
            wait_until(lambda: all(count(r) == n + 500 for r in replicas), 30,
                       "the restarted writer's points on the replicas")
            print(f"PASS vector replicas ({time.time() - t_start:.1f}s)", flush=True)
        except BaseException:
            for name, s in [("writer", writer)] + [(f"replica{i}", r) for i, r in enumerate(replicas)]:
                print(f"--- {name} log ---\n{s.log_tail(30)}", flush=True)
            raise
        finally:
            for s in [writer] + replicas:
                s.cleanup()


if __name__ == "__main__":
    main()
