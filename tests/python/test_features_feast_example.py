"""A Feast-style driver-stats repository (tests/python/feast_driver_repo: the
names and shape of Feast's quick-start, strata.features imports) end to end,
in the steps of Feast's quick-start workflow: `strata features apply` reads the .py
definitions, historical features into pandas (equal to the CLI's output and
to an independent pandas oracle), materialize_incremental, online to_dict
(by references and by feature service), push to the fresh view, and the same
online answers from a running feature server (FeatureStore(url=...))."""
import os
import re
import subprocess
import unittest
from datetime import datetime, timedelta

import numpy as np
import pandas as pd

import strata
from _util import strata_bin, tmpdir
import _features_util as fu
from strata import features as sf
from strata.features import FeatureStore, PushMode

FEATURES = ["driver_hourly_stats:conv_rate", "driver_hourly_stats:acc_rate",
            "driver_hourly_stats:avg_daily_trips"]


class FeastExample(unittest.TestCase):
    def setUp(self):
        self.dir = tmpdir(self)
        self.repo = fu.copy_repo(self.dir)
        self.end = fu.now_hour()
        self.source = fu.driver_stats_df(self.end)
        sf.write_table(self.source, os.path.join(self.repo, "data", "driver_stats.parquet"))

    def entity_df(self):
        # The template's entity frame (naive datetimes are UTC), at times inside our data.
        base = (self.end - timedelta(days=3)).replace(tzinfo=None)
        return pd.DataFrame.from_dict({
            "driver_id": [1001, 1002, 1003, 1005, 1001],
            "event_timestamp": [base + timedelta(hours=10, minutes=59, seconds=42),
                                base + timedelta(hours=8, minutes=12, seconds=10),
                                base + timedelta(hours=16, minutes=40, seconds=26),
                                base + timedelta(days=2, hours=23),  # 1005: older than the 1-day TTL
                                base + timedelta(hours=10, minutes=59, seconds=42)],  # duplicate row kept
            "label_driver_reported_satisfaction": [1, 5, 3, 2, 1],
        })

    def test_workflow(self):
        # feast apply (the CLI reads example_repo.py)
        p = fu.cli("apply", "--repo", self.repo)
        self.assertIn("Created feature view driver_hourly_stats", p.stdout)
        self.assertIn("Created feature service driver_activity_v3", p.stdout)
        store = FeatureStore(repo_path=self.repo)
        self.addCleanup(store.close)
        self.assertEqual(sorted(v.name for v in store.list_feature_views()),
                         ["driver_hourly_stats", "driver_hourly_stats_fresh"])
        fv = store.get_feature_view("driver_hourly_stats")
        self.assertEqual(fv.ttl, timedelta(days=1))
        self.assertEqual([f.name for f in fv.features], ["conv_rate", "acc_rate", "avg_daily_trips"])
        self.assertEqual(fv.tags, {"team": "driver_performance"})
        self.assertEqual(store.get_feature_view("driver_hourly_stats_fresh").stream_source.name,
                         "driver_stats_push_source")

        # historical: pandas frame == CLI output == oracle
        entity_df = self.entity_df()
        training_df = store.get_historical_features(entity_df=entity_df, features=FEATURES).to_df()
        self.assertEqual(list(training_df.columns),
                         ["driver_id", "event_timestamp", "label_driver_reported_satisfaction",
                          "conv_rate", "acc_rate", "avg_daily_trips"])
        ent_path = os.path.join(self.dir, "entities.parquet")
        out_path = os.path.join(self.dir, "training.parquet")
        sf.write_table(entity_df, ent_path)
        fu.cli("historical", "--repo", self.repo, "--entities", ent_path, "--features",
               ",".join(FEATURES), "--out", out_path)
        pd.testing.assert_frame_equal(training_df, sf.read_table(out_path))
        want = fu.oracle(entity_df, self.source, ["conv_rate", "acc_rate", "avg_daily_trips"])
        np.testing.assert_array_equal(training_df["conv_rate"].to_numpy(),
                                      np.array(want["conv_rate"], dtype=np.float32))
        np.testing.assert_array_equal(training_df["avg_daily_trips"].to_numpy(),
                                      np.array(want["avg_daily_trips"], dtype=np.float64))
        self.assertTrue(np.isnan(training_df["conv_rate"][3]))  # outside the TTL
        # a feature service, to_dict and to_parquet
        job = store.get_historical_features(entity_df=entity_df,
                                            features=store.get_feature_service("driver_activity_v1"))
        d = job.to_dict()
        self.assertEqual(list(d), ["driver_id", "event_timestamp", "label_driver_reported_satisfaction",
                                   "conv_rate"])
        self.assertIsNone(d["conv_rate"][3])
        self.assertAlmostEqual(d["conv_rate"][0], float(np.float32(want["conv_rate"][0])))
        job.to_parquet(os.path.join(self.dir, "svc.parquet"))
        self.assertEqual(list(sf.read_table(os.path.join(self.dir, "svc.parquet"))["conv_rate"][:1]),
                         list(training_df["conv_rate"][:1]))

        # materialize_incremental(now): the last day of each view (1-day TTL)
        st = store.materialize_incremental(end_date=datetime.now())
        self.assertEqual(st["views"], 2)
        latest = self.source.sort_values(["event_timestamp", "created"], kind="stable") \
            .groupby("driver_id").tail(1).set_index("driver_id")
        rows = [{"driver_id": 1001}, {"driver_id": 1002}, {"driver_id": 1005}]
        online = store.get_online_features(
            features=["driver_hourly_stats:acc_rate", "driver_hourly_stats:conv_rate"],
            entity_rows=rows).to_dict()
        self.assertEqual(online["driver_id"], [1001, 1002, 1005])
        for i, d_id in enumerate([1001, 1002]):
            self.assertAlmostEqual(online["acc_rate"][i], float(latest.loc[d_id, "acc_rate"]), places=6)
            self.assertAlmostEqual(online["conv_rate"][i], float(latest.loc[d_id, "conv_rate"]), places=6)
        self.assertEqual(online["acc_rate"][2], None)  # 1005 stopped 2 days ago: not in the window
        by_service = store.get_online_features(
            features=store.get_feature_service("driver_activity_v1"), entity_rows=rows).to_dict()
        self.assertEqual(list(by_service), ["driver_id", "conv_rate"])
        self.assertEqual(by_service["conv_rate"], online["conv_rate"])

        # push (the template pushes ONLINE_AND_OFFLINE; Strata's offline store is the files)
        event_df = pd.DataFrame.from_dict({
            "driver_id": [1001], "event_timestamp": [datetime.now()], "created": [datetime.now()],
            "conv_rate": [1.0], "acc_rate": [1.0], "avg_daily_trips": [1000]})
        with self.assertRaises(NotImplementedError):
            store.push("driver_stats_push_source", event_df, to=PushMode.ONLINE_AND_OFFLINE)
        store.push("driver_stats_push_source", event_df, to=PushMode.ONLINE)
        fresh = store.get_online_features(features=store.get_feature_service("driver_activity_v3"),
                                          entity_rows=[{"driver_id": 1001}]).to_dict()
        self.assertEqual(fresh, {"driver_id": [1001], "conv_rate": [1.0], "acc_rate": [1.0],
                                 "avg_daily_trips": [1000]})
        local = store.get_online_features(features=FEATURES, entity_rows=rows).to_dict()
        store.close()

        # the same answers from a running feature server
        srv = subprocess.Popen([strata_bin(), "features", "serve", "--repo", self.repo, "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.addCleanup(lambda: (srv.kill(), srv.wait(), srv.stdout.close()))
        seen = []
        for _ in range(20):  # "Feature server listening on http://127.0.0.1:PORT", after log lines
            seen.append(srv.stdout.readline())
            m = re.search(r"listening on http://[\d.]+:(\d+)", seen[-1])
            if m or not seen[-1]:
                break
        self.assertIsNotNone(m, "".join(seen))
        remote = FeatureStore(url=f"http://127.0.0.1:{m.group(1)}")
        got = remote.get_online_features(features=FEATURES, entity_rows=rows).to_dict()
        self.assertEqual(got["driver_id"], local["driver_id"])
        for k in ("conv_rate", "acc_rate", "avg_daily_trips"):
            for a, b in zip(got[k], local[k]):
                if b is None:
                    self.assertIsNone(a)
                else:
                    self.assertAlmostEqual(a, b, places=6)
        with self.assertRaises(NotImplementedError):
            remote.get_historical_features(entity_df, FEATURES)
        # push through the server: the rows reach the view fed by the push source
        event_df["conv_rate"] = [2.0]
        event_df["event_timestamp"] = [datetime.now()]
        remote.push("driver_stats_push_source", event_df)
        fresh = remote.get_online_features(features=["driver_hourly_stats_fresh:conv_rate"],
                                           entity_rows=[{"driver_id": 1001}]).to_dict()
        self.assertEqual(fresh["conv_rate"], [2.0])
        with self.assertRaises(strata.NotFoundError):
            remote.push("no_such_source", event_df)


def start_server(test, repo):
    """`strata features serve --repo REPO --port 0`: the FeatureStore(url=...)."""
    srv = subprocess.Popen([strata_bin(), "features", "serve", "--repo", repo, "--port", "0"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen, m = [], None
    for _ in range(20):  # "Feature server listening on http://127.0.0.1:PORT", after log lines
        seen.append(srv.stdout.readline())
        m = re.search(r"listening on http://[\d.]+:(\d+)", seen[-1])
        if m or not seen[-1]:
            break
    if m is None:
        srv.kill()
        srv.wait()
        srv.stdout.close()
        test.fail("".join(seen))
    return srv, FeatureStore(url=f"http://127.0.0.1:{m.group(1)}")


class RemoteWrites(unittest.TestCase):
    """FeatureStore(url=...)'s materialize, materialize_incremental and
    write_to_online_store go to the feature server (Feast's /materialize,
    /materialize-incremental and /write-to-online-store endpoints) and land
    in the repository's online store: checked through the server and, after
    it stops, through a local FeatureStore on the same repository."""

    def setUp(self):
        self.dir = tmpdir(self)
        self.repo = fu.copy_repo(self.dir)
        self.end = fu.now_hour()
        self.source = fu.driver_stats_df(self.end)
        sf.write_table(self.source, os.path.join(self.repo, "data", "driver_stats.parquet"))
        fu.cli("apply", "--repo", self.repo)
        self.srv, self.remote = start_server(self, self.repo)
        self.addCleanup(self.stop)

    def stop(self):
        if self.srv is not None:
            self.srv.kill()
            self.srv.wait()
            self.srv.stdout.close()
            self.srv = None

    def online(self, store, drivers, features=FEATURES):
        return store.get_online_features(features=features,
                                         entity_rows=[{"driver_id": d} for d in drivers]).to_dict()

    def test_materialize_and_write_over_http(self):
        remote = self.remote
        before = self.online(remote, [1001, 1002])
        self.assertEqual(before["conv_rate"], [None, None])  # nothing materialized yet

        # A bad request changes nothing.
        with self.assertRaises(strata.NotFoundError):
            remote.materialize(self.end - timedelta(hours=12), self.end, ["no_such_view"])
        self.assertEqual(self.online(remote, [1001])["conv_rate"], [None])

        # materialize(start, end): the latest row per driver in [start, end]
        start = self.end - timedelta(hours=12)
        st = remote.materialize(start, self.end, ["driver_hourly_stats"])
        self.assertEqual(st["views"], 1)
        window = self.source[(self.source["event_timestamp"] >= start) &
                             (self.source["event_timestamp"] <= self.end)]
        latest = window.sort_values(["event_timestamp", "created"], kind="stable") \
            .groupby("driver_id").tail(1).set_index("driver_id")
        self.assertEqual(st["entities_written"], len(latest))  # 1005 stopped 2 days ago
        got = self.online(remote, [1001, 1002, 1005])
        for i, d in enumerate([1001, 1002]):
            self.assertAlmostEqual(got["conv_rate"][i], float(latest.loc[d, "conv_rate"]), places=6)
            self.assertEqual(got["avg_daily_trips"][i], int(latest.loc[d, "avg_daily_trips"]))
        self.assertIsNone(got["conv_rate"][2])

        # write_to_online_store: a newer row for 1001 replaces the materialized one
        now = datetime.now(tz=self.end.tzinfo)
        row = pd.DataFrame.from_dict({
            "driver_id": [1001], "event_timestamp": [now], "created": [now],
            "conv_rate": [0.25], "acc_rate": [0.75], "avg_daily_trips": [4242]})
        remote.write_to_online_store("driver_hourly_stats", row)
        got = self.online(remote, [1001, 1002])
        self.assertEqual(got["conv_rate"][0], 0.25)
        self.assertEqual(got["avg_daily_trips"][0], 4242)
        self.assertAlmostEqual(got["conv_rate"][1], float(latest.loc[1002, "conv_rate"]), places=6)
        # ...an older one does not (latest event time wins, as materialize keeps it)
        old = row.copy()
        old["event_timestamp"] = [now - timedelta(hours=1)]
        old["conv_rate"] = [0.125]
        remote.write_to_online_store("driver_hourly_stats", old)
        self.assertEqual(self.online(remote, [1001])["conv_rate"], [0.25])
        # Bad writes are refused and change nothing.
        with self.assertRaises(strata.NotFoundError):
            remote.write_to_online_store("no_such_view", row)
        with self.assertRaises(strata.InvalidArgumentError):
            remote.write_to_online_store("driver_hourly_stats", row.drop(columns=["event_timestamp"]))
        self.assertEqual(self.online(remote, [1001])["conv_rate"], [0.25])

        # materialize_incremental: the fresh view, from end - ttl to now
        st = remote.materialize_incremental(datetime.now(tz=self.end.tzinfo),
                                            ["driver_hourly_stats_fresh"])
        self.assertEqual(st["views"], 1)
        fresh = self.online(remote, [1002], ["driver_hourly_stats_fresh:conv_rate"])
        self.assertAlmostEqual(fresh["conv_rate"][0], float(latest.loc[1002, "conv_rate"]), places=6)

        # The server wrote the repository's online store: a local store sees it.
        self.stop()
        local = FeatureStore(repo_path=self.repo)
        self.addCleanup(local.close)
        got = self.online(local, [1001, 1002])
        self.assertEqual(got["conv_rate"][0], 0.25)
        self.assertAlmostEqual(got["conv_rate"][1], float(latest.loc[1002, "conv_rate"]), places=6)


if __name__ == "__main__":
    unittest.main()
