"""Shared bits of the feature-store tests: the driver-stats data Feast's
template generates (driver_id, event_timestamp, created, conv_rate, acc_rate,
avg_daily_trips; hourly rows), deterministic here, and an independent
pandas oracle of Feast's point-in-time join."""
import os
import shutil
import subprocess
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

from _util import HERE, strata_bin

DRIVERS = [1001, 1002, 1003, 1004, 1005]


def driver_stats_df(end, days=15, seed=7):
    """Hourly rows per driver from end - days to end (UTC), a few with a
    duplicate event_timestamp and a later `created` (the tie-break), and one
    driver (1005) that stops reporting two days before the end (TTL)."""
    rng = np.random.default_rng(seed)
    hours = pd.date_range(end - timedelta(days=days), end, freq="1h", tz="UTC")
    rows = []
    for d in DRIVERS:
        for h in hours:
            if d == 1005 and h > end - timedelta(days=2):
                continue
            rows.append((d, h, h + timedelta(minutes=5)))
    df = pd.DataFrame(rows, columns=["driver_id", "event_timestamp", "created"])
    n = len(df)
    df["conv_rate"] = rng.random(n).astype(np.float32)
    df["acc_rate"] = rng.random(n).astype(np.float32)
    df["avg_daily_trips"] = rng.integers(0, 1000, n).astype(np.int64)
    dup = df.iloc[::37].copy()  # same event time, created later: these win
    dup["created"] = dup["created"] + timedelta(minutes=30)
    dup["conv_rate"] = np.float32(0.5)
    return pd.concat([df, dup], ignore_index=True)


def oracle(entity_df, source, features, ttl=timedelta(days=1)):
    """Feast's SQL semantics, row by row: equal key, ts <= entity_ts, ts >=
    entity_ts - ttl, latest ts then latest created; no match -> NaN."""
    out = {f: [] for f in features}
    src_ts = source["event_timestamp"]
    for _, row in entity_df.iterrows():
        t = pd.Timestamp(row["event_timestamp"])
        if t.tzinfo is None:
            t = t.tz_localize("UTC")
        m = source[(source["driver_id"] == row["driver_id"]) & (src_ts <= t) & (src_ts >= t - ttl)]
        if m.empty:
            for f in features:
                out[f].append(np.nan)
            continue
        best = m.sort_values(["event_timestamp", "created"], kind="stable").iloc[-1]
        for f in features:
            out[f].append(best[f])
    return out


def copy_repo(dst):
    """Feast's example repository (tests/python/feast_driver_repo) into dst."""
    repo = os.path.join(dst, "feature_repo")
    shutil.copytree(os.path.join(HERE, "feast_driver_repo"), repo)
    os.makedirs(os.path.join(repo, "data"), exist_ok=True)
    return repo


def cli(*args, check=True):
    """`strata features ...`; returns the CompletedProcess."""
    # The CLI finds the strata package in python/ next to the binary (a build tree).
    p = subprocess.run([strata_bin(), "features", *args], capture_output=True, text=True,
                       timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"strata features {' '.join(args)} -> {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def now_hour():
    return datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
