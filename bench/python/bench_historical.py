#!/usr/bin/python3
"""get_historical_features from Python against `strata features historical`
(the CLI) on bench/features' point-in-time join data (10M feature rows x 1M
entity rows, TTL 7 days), in interleaved rounds (the order alternates), each
side a fresh process timed from outside (interpreter and module start-up
included, as the CLI's process start is):

  cli        strata features historical --repo R --entities E --features ... --out O
  py-file    FeatureStore(R).get_historical_features(entity_df=E, ...).to_parquet(O)
             (the same work as the CLI: Parquet in, Parquet out)
  py-pandas  entity_df as a pandas.DataFrame (read before the clock starts),
             result .to_df(): the frames in and out without a file

    ninja -C build strata _strata strata_bench_features
    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_historical.py --rounds 3

Prints each round, the median ratio of each Python side to the CLI (1.00 = as
fast) and the load average; checks that py-file's output equals the CLI's.
The data are written by `strata_bench_features gen` into --data when missing.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(ROOT, "build")

FEATURES = ["pit:conv_rate", "pit:acc_rate", "pit:trips"]

CHILD = r"""
import os, sys, time
t_start = time.perf_counter()
from strata.features import FeatureStore
repo, entities, out, mode = sys.argv[1:5]
feats = sys.argv[5].split(",")
store = FeatureStore(repo_path=repo)
if mode == "py-file":
    t0 = time.perf_counter()
    store.get_historical_features(entity_df=entities, features=feats).to_parquet(out)
else:
    from strata.features import read_table
    df = read_table(entities)  # a pandas.DataFrame, before the clock
    t0 = time.perf_counter()
    res = store.get_historical_features(entity_df=df, features=feats).to_df()
    assert len(res) == len(df), (len(res), len(df))
print(f"INNER {time.perf_counter() - t0:.3f} IMPORT {t0 - t_start:.3f}")
"""


def write_repo(repo, data, ttl):
    os.makedirs(os.path.join(repo, "definitions"), exist_ok=True)
    with open(os.path.join(repo, "feature_store.yaml"), "w") as f:
        f.write("project: pybench\nregistry: registry.json\nprovider: local\n"
                "online_store:\n  type: rocksdb\n  path: online_store\n"
                "entity_key_serialization_version: 3\n")
    with open(os.path.join(repo, "definitions", "pit.yaml"), "w") as f:
        f.write(f"""entities:
  - name: driver
    join_keys: [driver_id]
    value_type: Int64
feature_views:
  - name: pit
    entities: [driver]
    ttl: {ttl}
    online: false
    schema:
      - {{name: conv_rate, dtype: Float64}}
      - {{name: acc_rate, dtype: Float32}}
      - {{name: trips, dtype: Int64}}
    source:
      path: {os.path.join(data, "features.parquet")}
      timestamp_field: event_timestamp
      created_timestamp_column: created
""")
    subprocess.run([os.path.join(BUILD, "strata"), "features", "apply", "--repo", repo],
                   check=True, capture_output=True)


def timed(cmd, env):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed: {p.stderr[-2000:]}")
    return wall, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                   "strata-bench-features-10000000-1000000-100000"))
    ap.add_argument("--feature-rows", type=int, default=10_000_000)
    ap.add_argument("--entity-rows", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--ttl-seconds", type=int, default=604800)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sides", default="cli,py-file,py-pandas")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.data, "entities.parquet")):
        os.makedirs(a.data, exist_ok=True)
        subprocess.run([os.path.join(BUILD, "strata_bench_features"), "gen", a.data,
                        "--feature-rows", str(a.feature_rows), "--entity-rows",
                        str(a.entity_rows), "--keys", str(a.keys)], check=True)
    repo = os.path.join(a.data, "pybench-repo")
    write_repo(repo, a.data, a.ttl_seconds)
    entities = os.path.join(a.data, "entities.parquet")
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", os.path.join(BUILD, "python"))
    outs = {s: os.path.join(a.data, f"out_{s}.parquet") for s in ("cli", "py-file")}
    cmds = {
        "cli": [os.path.join(BUILD, "strata"), "features", "historical", "--repo", repo,
                "--entities", entities, "--features", ",".join(FEATURES), "--out", outs["cli"]],
        "py-file": [sys.executable, "-c", CHILD, repo, entities, outs["py-file"], "py-file",
                    ",".join(FEATURES)],
        "py-pandas": [sys.executable, "-c", CHILD, repo, entities, "-", "py-pandas",
                      ",".join(FEATURES)],
    }
    sides = a.sides.split(",")
    walls = {s: [] for s in sides}
    inner = {s: [] for s in sides}
    print(f"{a.data}: {a.feature_rows} feature rows, {a.entity_rows} entity rows, "
          f"ttl {a.ttl_seconds}s, {os.cpu_count()} cores")
    for r in range(a.rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        line = []
        for s in order:
            wall, out = timed(cmds[s], env)
            walls[s].append(wall)
            if "INNER" in out:
                inner[s].append(float(out.split()[1]))
            line.append(f"{s} {wall:.2f}s")
        print(f"round {r}: " + ", ".join(line) + f"; load {os.getloadavg()[0]:.1f}", flush=True)
    if "cli" in sides and "py-file" in sides:
        with open(outs["cli"], "rb") as f1, open(outs["py-file"], "rb") as f2:
            # Same writer, same rows, same order: the files must be identical
            # up to the writer's created-by footer, which is the same string.
            same = f1.read() == f2.read()
        print(f"py-file output identical to the CLI's: {same}")
    print(f"{'side':<10}{'median wall (s)':>16}{'in-call (s)':>12}{'ratio to cli':>14}")
    cli = walls.get("cli")
    for s in sides:
        med = statistics.median(walls[s])
        ratios = [w / c for w, c in zip(walls[s], cli)] if cli else []
        rt = f"{statistics.median(ratios):.3f}" if ratios else "-"
        inn = f"{statistics.median(inner[s]):.2f}" if inner[s] else "-"
        print(f"{s:<10}{med:>16.2f}{inn:>12}{rt:>14}")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
