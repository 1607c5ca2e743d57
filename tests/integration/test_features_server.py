#!/usr/bin/python3
"""The feature server inside `strata server` (Feast's HTTP API on its own port).

Starts `strata server` with a fresh data directory: the default feature
repository DATA/features is created empty and /health answers with no feature
views. Then a repository is written there, `strata features apply` registers it
while the server runs (the server re-reads the registry), /materialize loads
the online store, and /get-online-features answers Feast-shaped JSON; bad
requests get 4xx with a detail. A second start logs every served vector to
Parquet, and `strata features skew` reads that log as the serving side.

Usage: /usr/bin/python3 test_features_server.py --strata build/strata
"""

import http.client
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

DEFS = """entities:
  - {name: driver, join_keys: [driver_id]}
feature_views:
  - name: driver_stats
    entities: [driver]
    ttl: 0
    schema:
      - {name: conv_rate, dtype: Float64}
      - {name: trips, dtype: Int64}
    source: {path: data/driver_stats.csv, timestamp_field: event_timestamp}
feature_services:
  - name: ranking
    features: [driver_stats]
"""


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        c.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        r = c.getresponse()
        raw = r.read()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw
    finally:
        c.close()


def write_repo(repo, n=300, seed=1):
    rng = random.Random(seed)
    os.makedirs(os.path.join(repo, "data"), exist_ok=True)
    with open(os.path.join(repo, "defs.yaml"), "w") as f:
        f.write(DEFS)
    rows = ["driver_id,event_timestamp,conv_rate,trips"]
    for i in range(n):
        rows.append(f"{1000 + i},2024-01-01 00:{i % 60:02d}:00,{rng.gauss(0.5, 0.1):.6f},{i}")
    with open(os.path.join(repo, "data", "driver_stats.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")


def apply(args, repo):
    H.run_tool([args.strata, "features", "apply", "--repo", repo], H.clean_env(), timeout=60)


def test_serving(args, srv):
    port = srv.features_port
    repo = os.path.join(srv.data_dir, "features")
    # Health with no feature views; the default repository exists.
    st, body = request(port, "GET", "/health")
    assert st == 200, (st, body)
    assert os.path.exists(os.path.join(repo, "feature_store.yaml")), os.listdir(srv.data_dir)
    st, body = request(port, "POST", "/get-online-features",
                       {"features": ["driver_stats:conv_rate"], "entities": {"driver_id": [1000]}})
    assert st == 404 and "driver_stats" in body["detail"], (st, body)
    with open(srv.log_path, "rb") as f:
        out = f.read().decode()
    assert f"Features:   http://127.0.0.1:{port}" in out, out

    # Register a repository while the server runs, then materialize through it.
    write_repo(repo)
    apply(args, repo)
    st, body = request(port, "POST", "/materialize",
                       {"start_ts": "2023-12-31T00:00:00", "end_ts": "2024-01-02T00:00:00"})
    assert st == 200, (st, body)
    assert body["entities_written"] == 300, body
    st, body = request(port, "POST", "/get-online-features",
                       {"features": ["driver_stats:conv_rate", "driver_stats:trips"],
                        "entities": {"driver_id": [1000, 1005, 5]}})
    assert st == 200, (st, body)
    assert body["metadata"]["feature_names"] == ["driver_id", "conv_rate", "trips"], body
    assert body["results"][0]["values"] == [1000, 1005, 5], body
    assert body["results"][2]["values"][:2] == [0, 5], body
    assert body["results"][2]["statuses"] == ["PRESENT", "PRESENT", "NOT_FOUND"], body
    assert body["results"][1]["event_timestamps"][1] == "2024-01-01T00:05:00Z", body
    st, body = request(port, "POST", "/get-online-features",
                       {"feature_service": "ranking", "entities": {"driver_id": [1001]},
                        "full_feature_names": True})
    assert st == 200 and body["metadata"]["feature_names"][1] == "driver_stats__conv_rate", (st, body)

    # Bad input: 4xx with a detail, and the server keeps serving.
    bad = [
        ({"features": ["driver_stats:nope"], "entities": {"driver_id": [1000]}}, 404, "no feature \"nope\""),
        ({"features": ["nope:x"], "entities": {"driver_id": [1000]}}, 404, "unknown feature view"),
        ({"features": ["driver_stats:trips"], "entities": {"driver_id": ["abc"]}}, 422, "must hold int64"),
        ({"features": ["driver_stats:trips"], "entities": {"driver_id": [1.5]}}, 422, "must hold int64"),
        ({"features": ["driver_stats:trips"], "entities": {"driver_id": [1000]}, "full_feature_names": "yes"},
         422, "full_feature_names"),
        ({"features": "driver_stats:trips", "entities": {"driver_id": [1000]}}, 422, "features"),
        ("{not json", 422, "JSON"),
    ]
    for req, want, needle in bad:
        st, body = request(port, "POST", "/get-online-features", req)
        assert st == want, (req, st, body)
        assert needle in body["detail"], (req, body)
    st, body = request(port, "GET", "/health")
    assert st == 200


def test_logging_and_skew(args):
    with H.tempdir() as work:
        data = os.path.join(work, "data")
        repo = os.path.join(work, "repo")
        log_dir = os.path.join(work, "served")
        os.makedirs(repo)
        with open(os.path.join(repo, "feature_store.yaml"), "w") as f:
            f.write("project: it\nonline_store: {type: rocksdb, path: data/online}\n"
                    "feature_server:\n  logging: {sample_rate: 1.0, path: " + log_dir + "}\n")
        write_repo(repo, n=1000)
        apply(args, repo)
        srv = H.StrataServer(args.strata, data_dir=data, features=True,
                             extra_args=["--features-repo", repo, "--no-vector"])
        with srv:
            port = srv.features_port
            st, body = request(port, "POST", "/materialize",
                               {"start_ts": "2023-12-31T00:00:00", "end_ts": "2024-01-02T00:00:00"})
            assert st == 200, (st, body)
            for b in range(0, 1000, 100):
                st, body = request(port, "POST", "/get-online-features",
                                   {"features": ["driver_stats:conv_rate", "driver_stats:trips"],
                                    "entities": {"driver_id": list(range(1000 + b, 1100 + b))}})
                assert st == 200, (st, body)
            assert srv.stop() == 0  # SIGTERM publishes the open log files
        files = sorted(f for f in os.listdir(log_dir) if f.endswith(".parquet"))
        assert files, os.listdir(log_dir)
        assert all(f.startswith("served-") for f in os.listdir(log_dir)), os.listdir(log_dir)
        # Same distribution: stable. Shifted reference: significant (exit 3 with --fail-above).
        same = os.path.join(work, "same.csv")
        moved = os.path.join(work, "moved.csv")
        rng = random.Random(7)
        with open(same, "w") as f:
            f.write("conv_rate\n" + "".join(f"{rng.gauss(0.5, 0.1):.6f}\n" for _ in range(3000)))
        with open(moved, "w") as f:
            f.write("conv_rate\n" + "".join(f"{rng.gauss(0.7, 0.1):.6f}\n" for _ in range(3000)))
        p = H.run_tool([args.strata, "features", "skew", "--reference", same, "--serving", log_dir, "--json",
                        "--fail-above", "0.25"], H.clean_env(), timeout=60)
        res = json.loads(p.stdout)
        assert res[0]["feature"] == "conv_rate" and res[0]["serving_rows"] == 1000, res
        assert res[0]["psi"] < 0.1, res
        p = H.run_tool([args.strata, "features", "skew", "--reference", moved, "--serving", log_dir,
                        "--fail-above", "0.25"], H.clean_env(), timeout=60, check=False)
        assert p.returncode == 3, (p.returncode, p.stdout, p.stderr)
        assert "significant" in p.stdout, p.stdout
        # An online snapshot (the store's current values, server stopped) as the serving side.
        ents = os.path.join(work, "entities.csv")
        with open(ents, "w") as f:
            f.write("driver_id\n" + "".join(f"{1000 + i}\n" for i in range(1000)) + "99\n")
        snap = os.path.join(work, "snapshot.parquet")
        H.run_tool([args.strata, "features", "snapshot", "--repo", repo, "--entities", ents,
                    "--features", "driver_stats:conv_rate,driver_stats:trips", "--out", snap, "--batch", "300"],
                   H.clean_env(), timeout=60)
        p = H.run_tool([args.strata, "features", "skew", "--reference", same, "--serving", snap, "--json"],
                       H.clean_env(), timeout=60)
        res = json.loads(p.stdout)
        assert res[0]["serving_rows"] == 1001 and res[0]["psi"] < 0.1, res
        p = H.run_tool([args.strata, "features", "snapshot", "--repo", repo, "--entities", ents,
                        "--features", "driver_stats:nope", "--out", snap + "2"], H.clean_env(), timeout=60,
                       check=False)
        assert p.returncode != 0 and "nope" in p.stderr and not os.path.exists(snap + "2"), (p.returncode, p.stderr)


def main():
    args = H.parse_args()
    r = H.Runner("features_server")
    srv = H.StrataServer(args.strata, features=True, extra_args=["--no-vector"])
    try:
        srv.start()
        r.case("feature server in strata server: health, apply, materialize, get-online-features, bad input",
               test_serving, args, srv)
    finally:
        srv.cleanup()
    r.case("served-vector log to Parquet, skew from the log", test_logging_and_skew, args)
    sys.exit(r.finish())


if __name__ == "__main__":
    main()
