"""strata.features: the definition objects, FeatureStore's registry, offline
and online calls, and their errors (each refused case says what and where).
The end-to-end Feast example is test_features_feast_example.py."""
import os
import textwrap
import unittest
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

import strata
from _util import Server, tmpdir
import _features_util as fu
from strata import features as sf
from strata.features import (Entity, FeatureService, FeatureStore, FeatureView, Field, FileSource,
                             PushSource, RequestSource, ValueType)
from strata.features.types import Array, Bool, Bytes, Float32, Float64, Int32, Int64, String

UTC = timezone.utc
T0 = datetime(2024, 5, 1, tzinfo=UTC)


def line_of(marker):
    """The line of this file holding `marker` (for file:line assertions)."""
    with open(__file__, encoding="utf-8") as f:
        for i, text in enumerate(f, 1):
            if marker in text and "line_of(" not in text:
                return i
    raise AssertionError(marker)


def new_repo(test, yaml_defs=None):
    d = os.path.join(tmpdir(test), "repo")
    os.makedirs(os.path.join(d, "data"))
    with open(os.path.join(d, "feature_store.yaml"), "w") as f:
        f.write("project: unit\nregistry: data/registry.json\nprovider: local\n"
                "online_store: {type: rocksdb, path: data/online}\n")
    if yaml_defs:
        with open(os.path.join(d, "defs.yaml"), "w") as f:
            f.write(textwrap.dedent(yaml_defs))
    return d


def stats_frame():
    # user 1: rows at T0, T0+1h (twice: created breaks the tie), T0+3h; user 2: T0; user 3: NULL trips
    return pd.DataFrame({
        "user_id": np.array([1, 1, 1, 1, 2, 3], dtype=np.int64),
        "ts": pd.to_datetime([T0, T0 + timedelta(hours=1), T0 + timedelta(hours=1),
                              T0 + timedelta(hours=3), T0, T0], utc=True),
        "created": pd.to_datetime([T0, T0, T0 + timedelta(minutes=1), T0, T0, T0], utc=True),
        "score": np.array([0.1, 0.2, 0.25, 0.3, 0.9, 0.5], dtype=np.float64),
        "trips": pd.array([10, 20, 21, 30, 90, None], dtype="Int64"),
        "city": ["a", "b", "c", "d", None, "z"],
    })


class Objects:
    def __init__(self, path="data/stats.parquet"):
        self.user = Entity(name="user", join_keys=["user_id"], value_type=ValueType.INT64)
        self.src = FileSource(name="stats_src", path=path, timestamp_field="ts",
                              created_timestamp_column="created")
        self.view = FeatureView(name="user_stats", entities=[self.user], ttl=timedelta(hours=2),
                                schema=[Field(name="user_id", dtype=Int64),
                                        Field(name="score", dtype=Float64),
                                        Field(name="trips", dtype=Int64),
                                        Field(name="city", dtype=String)],
                                source=self.src, tags={"team": "t"})
        self.push = PushSource(name="stats_push", batch_source=self.src)
        self.fresh = FeatureView(name="user_fresh", entities=[self.user], schema=[
            Field(name="score", dtype=Float64)], source=self.push)
        self.svc = FeatureService(name="svc", features=[self.view[["score"]]])

    def all(self):
        return [self.user, self.view, self.fresh, self.svc]


class Types(unittest.TestCase):
    def test_names_and_arrays(self):
        self.assertEqual([t.name for t in (Float32, Float64, Int32, Int64, String, Bool, Bytes,
                                           sf.types.UnixTimestamp)],
                         ["Float32", "Float64", "Int32", "Int64", "String", "Bool", "Bytes",
                          "UnixTimestamp"])
        self.assertEqual(repr(Array(Float32)), "Array(Float32)")
        with self.assertRaises(TypeError):
            Array(Array(Int64))
        with self.assertRaises(TypeError):
            Field(name="x", dtype=float)

    def test_definition_type_errors(self):
        with self.assertRaises(TypeError):
            Entity(name="u", join_keys="user_id")
        src = FileSource(path="x.parquet", timestamp_field="ts")
        with self.assertRaises(TypeError):
            FeatureView(name="v", entities=[Entity(name="u")], source="x.parquet")
        with self.assertRaises(TypeError):
            FeatureView(name="v", entities=[Entity(name="u")], source=src, ttl=3600)
        with self.assertRaises(NotImplementedError):
            FeatureView(name="v", entities=[Entity(name="u")], source=src, offline=True)
        with self.assertRaises(ValueError):
            FileSource(path="local.parquet", timestamp_field="ts", s3_endpoint_override="http://x")
        s3 = FileSource(path="s3://b/k.parquet", timestamp_field="ts",
                        s3_endpoint_override="http://127.0.0.1:9000")
        self.assertEqual(s3.path, "s3://b/k.parquet?endpoint=http://127.0.0.1:9000")
        with self.assertRaises(KeyError):
            Objects().view[["nope"]]
        with self.assertRaises(NotImplementedError):
            FeatureService(name="s", features=[], logging_config=object())


class Frames(unittest.TestCase):
    def test_round_trip_through_parquet_and_csv(self):
        df = pd.DataFrame({
            "i64": np.array([1, -2, 3], dtype=np.int64), "i32": np.array([1, 2, 3], dtype=np.int32),
            "f32": np.array([0.5, 1.5, np.nan], dtype=np.float32),
            "f64": np.array([0.25, np.nan, 2.0]), "b": [True, False, True],
            "s": ["x", None, "zé"], "bin": [b"\x00\x01", b"", None],
            "ts": pd.to_datetime(["2024-01-01 00:00:01.5", None, "2024-01-02"]),
            "tz": pd.to_datetime(["2024-01-01T00:00:00Z", "2024-01-01T01:00:00Z", None], utc=True),
        })
        d = tmpdir(self)
        sf.write_table(df, os.path.join(d, "t.parquet"))
        back = sf.read_table(os.path.join(d, "t.parquet"))
        pd.testing.assert_frame_equal(back, df)
        sf.write_table(df[["i64", "f64", "s"]], os.path.join(d, "t.csv"))
        pd.testing.assert_frame_equal(sf.read_table(os.path.join(d, "t.csv")), df[["i64", "f64", "s"]])

    def test_unsupported_column(self):
        with self.assertRaises(TypeError):
            sf.write_table(pd.DataFrame({"x": [1, "a"]}), os.path.join(tmpdir(self), "t.parquet"))


class Registry(unittest.TestCase):
    def setUp(self):
        self.repo = new_repo(self)
        sf.write_table(stats_frame(), os.path.join(self.repo, "data", "stats.parquet"))
        self.store = FeatureStore(repo_path=self.repo)
        self.addCleanup(self.store.close)

    def test_apply_plan_list_get(self):
        o = Objects()
        plan = self.store.plan(o.all())
        self.assertEqual({(c.kind, c.object, c.name) for c in plan},
                         {("create", "entity", "user"), ("create", "feature view", "user_stats"),
                          ("create", "feature view", "user_fresh"),
                          ("create", "feature service", "svc")})
        self.assertFalse(os.path.exists(os.path.join(self.repo, "data", "registry.json")))
        self.store.apply(o.all())
        self.assertEqual({c.kind for c in self.store.plan(o.all())}, {"unchanged"})
        self.assertEqual([e.name for e in self.store.list_entities()], ["user"])
        self.assertEqual(self.store.get_entity("user").value_type, Int64)
        v = self.store.get_feature_view("user_stats")
        self.assertEqual((v.ttl, v.source.timestamp_field, v.source.created_timestamp_column),
                         (timedelta(hours=2), "ts", "created"))
        self.assertEqual([f.name for f in v.features], ["score", "trips", "city"])  # user_id is the key
        self.assertEqual([v.name for v in self.store.list_feature_views(tags={"team": "t"})],
                         ["user_stats"])
        svc = self.store.get_feature_service("svc")
        self.assertEqual([(p.name, p.features) for p in svc.feature_view_projections],
                         [("user_stats", ["score"])])
        self.assertEqual(sorted(s.name for s in self.store.list_data_sources()),
                         ["stats_push", "stats_src"])
        with self.assertRaises(strata.NotFoundError):
            self.store.get_feature_view("nope")
        o2 = Objects()
        o2.view.ttl = timedelta(hours=3)
        [ch] = [c for c in self.store.plan(o2.all()) if c.name == "user_stats"]
        self.assertEqual(ch.kind, "update")
        self.assertIn("ttl", ch.detail)

    def test_errors_point_at_the_definition(self):
        bad = FeatureView(name="v", entities=["ghost"], source=Objects().src,  # MARK-ghost
                          schema=[Field(name="score", dtype=Float64)])
        with self.assertRaises(strata.InvalidArgumentError) as cm:
            self.store.apply([bad])
        self.assertIn(f"test_features.py:{line_of('MARK-ghost')}: feature view \"v\": unknown entity "
                      "\"ghost\"", str(cm.exception))
        two = Entity(name="pair", join_keys=["a", "b"])  # MARK-two
        with self.assertRaises(strata.InvalidArgumentError) as cm:
            self.store.apply([two])
        self.assertIn(f"test_features.py:{line_of('MARK-two')}:", str(cm.exception))
        self.assertIn("exactly one", str(cm.exception))

    def test_refused_definitions(self):
        o = Objects()
        arr = FeatureView(name="emb", entities=[o.user], source=o.src,  # MARK-array
                          schema=[Field(name="vec", dtype=Array(Float32))])
        with self.assertRaises(NotImplementedError) as cm:
            self.store.apply([arr])
        self.assertIn(f"test_features.py:{line_of('MARK-array')}", str(cm.exception))
        self.assertIn("list-valued", str(cm.exception))
        req = RequestSource(name="vals", schema=[Field(name="v", dtype=Int64)])
        with self.assertRaises(NotImplementedError):
            self.store.apply([req])
        with self.assertRaises(NotImplementedError):
            self.store.apply([o.user], objects_to_delete=[o.user])
        self.assertFalse(os.path.exists(os.path.join(self.repo, "data", "registry.json")))

    def test_source_validation(self):
        o = Objects()
        bad = FeatureView(name="v", entities=[o.user], source=o.src,
                          schema=[Field(name="missing", dtype=Float64)])
        with self.assertRaises(strata.InvalidArgumentError) as cm:
            self.store.apply([o.user, bad])
        self.assertIn("has no feature column \"missing\"", str(cm.exception))
        self.store.apply([o.user, bad], skip_source_validation=True)  # as --skip-source-validation

    def test_yaml_and_objects_together(self):
        repo = new_repo(self, """
            entities:
              - name: user
                join_keys: [user_id]
            """)
        sf.write_table(stats_frame(), os.path.join(repo, "data", "stats.parquet"))
        store = FeatureStore(repo_path=repo)
        view = FeatureView(name="v", entities=["user"], source=Objects().src,
                           schema=[Field(name="score", dtype=Float64)])
        changes = store.apply([view])
        self.assertEqual({(c.object, c.name) for c in changes if c.kind == "create"},
                         {("entity", "user"), ("feature view", "v")})

    def test_unsupported_store_arguments(self):
        with self.assertRaises(NotImplementedError):
            FeatureStore(repo_path=self.repo, config={})
        with self.assertRaises(FileNotFoundError):
            FeatureStore(repo_path=os.path.join(self.repo, "nope"))


class Historical(unittest.TestCase):
    def setUp(self):
        self.repo = new_repo(self)
        sf.write_table(stats_frame(), os.path.join(self.repo, "data", "stats.parquet"))
        self.store = FeatureStore(repo_path=self.repo)
        self.addCleanup(self.store.close)
        self.o = Objects()
        self.store.apply(self.o.all())

    def entities(self):
        return pd.DataFrame({
            "user_id": [1, 1, 1, 2, 4, 3],
            "event_timestamp": pd.to_datetime([T0 + timedelta(minutes=30), T0 + timedelta(hours=1),
                                               T0 + timedelta(hours=6), T0 + timedelta(hours=1), T0,
                                               T0], utc=True),
            "label": [1, 0, 1, 0, 1, 0]})

    def test_point_in_time(self):
        df = self.store.get_historical_features(
            self.entities(), ["user_stats:score", "user_stats:trips", "user_stats:city"]).to_df()
        # row 1: the T0+1h tie goes to the later created (0.25); row 2: T0+3h is older than
        # the 2h TTL at T0+6h; row 4: unknown user; row 5: user 3's trips are NULL.
        np.testing.assert_array_equal(df["score"].to_numpy(), [0.1, 0.25, np.nan, 0.9, np.nan, 0.5])
        np.testing.assert_array_equal(df["trips"].to_numpy(), [10, 21, np.nan, 90, np.nan, np.nan])
        self.assertEqual(df["city"].tolist(), ["a", "c", None, None, None, "z"])
        self.assertEqual(str(df["event_timestamp"].dtype), "datetime64[ns, UTC]")
        self.assertEqual(df["label"].tolist(), [1, 0, 1, 0, 1, 0])

    def test_service_full_names_and_paths(self):
        job = self.store.get_historical_features(self.entities(), features=self.o.svc,
                                                 full_feature_names=True)
        self.assertEqual(list(job.to_df().columns),
                         ["user_id", "event_timestamp", "label", "user_stats__score"])
        path = os.path.join(tmpdir(self), "entities.csv")
        sf.write_table(self.entities(), path)
        by_path = self.store.get_historical_features(path, ["user_stats:score"]).to_dict()
        self.assertEqual(by_path["score"], [0.1, 0.25, None, 0.9, None, 0.5])
        self.assertIsInstance(by_path["event_timestamp"][0], datetime)
        with self.assertRaises(NotImplementedError):
            job.to_arrow()

    def test_errors(self):
        with self.assertRaises(ValueError):
            self.store.get_historical_features(self.entities())
        with self.assertRaises(strata.NotFoundError):
            self.store.get_historical_features(self.entities(), ["nope:score"]).to_df()
        with self.assertRaises(strata.NotFoundError):
            self.store.get_historical_features(self.entities(), ["user_stats:nope"]).to_df()
        with self.assertRaises(TypeError):
            self.store.get_historical_features([1, 2], ["user_stats:score"])
        with self.assertRaises(strata.InvalidArgumentError):  # no join-key column
            self.store.get_historical_features(self.entities()[["event_timestamp"]],
                                               ["user_stats:score"]).to_df()


class Online(unittest.TestCase):
    def setUp(self):
        self.repo = new_repo(self)
        sf.write_table(stats_frame(), os.path.join(self.repo, "data", "stats.parquet"))
        self.store = FeatureStore(repo_path=self.repo)
        self.addCleanup(self.store.close)
        self.o = Objects()
        self.store.apply(self.o.all())

    def test_materialize_window_and_read(self):
        st = self.store.materialize(T0, T0 + timedelta(hours=1), feature_views=["user_stats"])
        self.assertEqual(st["views"], 1)
        r = self.store.get_online_features(["user_stats:score", "user_stats:trips"],
                                           [{"user_id": 1}, {"user_id": 2}, {"user_id": 9}])
        self.assertEqual(r.to_dict(), {"user_id": [1, 2, 9], "score": [0.25, 0.9, None],
                                       "trips": [21, 90, None]})
        self.assertEqual(r.statuses["score"][2], "NOT_FOUND")
        df = r.to_df()
        self.assertEqual(list(df.columns), ["user_id", "score", "trips"])
        svc = self.store.get_online_features(self.o.svc, [{"user_id": 1}],
                                             full_feature_names=True).to_dict()
        self.assertEqual(svc, {"user_id": [1], "user_stats__score": [0.25]})

    def test_write_push_and_errors(self):
        rows = pd.DataFrame({"user_id": [7], "ts": [datetime.now(UTC)], "score": [4.5]})
        self.store.write_to_online_store("user_stats", rows)
        self.store.push("stats_push", rows)
        got = self.store.get_online_features(["user_stats:score", "user_fresh:score"],
                                             [{"user_id": np.int64(7)}], full_feature_names=True)
        self.assertEqual(got.to_dict(), {"user_id": [7], "user_stats__score": [4.5],
                                         "user_fresh__score": [4.5]})
        with self.assertRaises(strata.NotFoundError):
            self.store.push("no_such_push_source", rows)
        with self.assertRaises(NotImplementedError):
            self.store.push("stats_push", rows, to=sf.PushMode.OFFLINE)
        with self.assertRaises(strata.InvalidArgumentError):  # a string for an Int64 key
            self.store.get_online_features(["user_stats:score"], [{"user_id": "7"}])
        with self.assertRaises(ValueError):
            self.store.get_online_features(["user_stats:score"], [])
        with self.assertRaises(strata.InvalidArgumentError):
            self.store.write_to_online_store("user_stats", rows.drop(columns=["ts"]))


class S3Source(unittest.TestCase):
    """A FileSource on s3:// (a real `strata server`): apply checks it, the join reads it."""

    def test_historical_from_s3(self):
        with Server() as srv:
            url = srv.url("features/stats.parquet")
            sf.write_table(stats_frame(), url)
            repo = new_repo(self)
            store = FeatureStore(repo_path=repo)
            self.addCleanup(store.close)
            o = Objects(path=url)
            store.apply([o.user, o.view])
            ent = pd.DataFrame({"user_id": [1, 2],
                                "event_timestamp": pd.to_datetime([T0 + timedelta(hours=1), T0],
                                                                  utc=True)})
            df = store.get_historical_features(ent, ["user_stats:score"]).to_df()
            self.assertEqual(df["score"].tolist(), [0.25, 0.9])
            missing = Objects(path=srv.url("features/missing.parquet"))
            with self.assertRaises(strata.InvalidArgumentError):
                store.apply([missing.user, missing.view])


class CliReadsPython(unittest.TestCase):
    """`strata features plan/apply` on repositories with .py definitions."""

    def write(self, repo, name, text):
        with open(os.path.join(repo, name), "w") as f:
            f.write(textwrap.dedent(text))

    def test_plan_apply_and_errors(self):
        repo = new_repo(self)
        sf.write_table(stats_frame(), os.path.join(repo, "data", "stats.parquet"))
        self.write(repo, "defs.py", """\
            from datetime import timedelta
            from strata.features import Entity, FeatureView, Field, FileSource
            from strata.features.types import Float64
            user = Entity(name="user", join_keys=["user_id"])
            src = FileSource(path="data/stats.parquet", timestamp_field="ts")
            v = FeatureView(name="user_stats", entities=[user], ttl=timedelta(hours=2),
                            schema=[Field(name="score", dtype=Float64)], source=src)
            print("printed by the definitions")
            """)
        p = fu.cli("plan", "--repo", repo)
        self.assertIn("Will create feature view user_stats", p.stdout)
        self.assertNotIn("printed by", p.stdout)
        fu.cli("apply", "--repo", repo)
        self.assertEqual(FeatureStore(repo_path=repo).get_feature_view("user_stats").ttl,
                         timedelta(hours=2))
        # a bad reference: file:line of the view
        self.write(repo, "more.py", """\
            from strata.features import FeatureView, Field, FileSource
            from strata.features.types import Float64
            src = FileSource(path="data/stats.parquet", timestamp_field="ts")

            bad = FeatureView(name="bad", entities=["ghost"], source=src,
                              schema=[Field(name="score", dtype=Float64)])
            """)
        p = fu.cli("plan", "--repo", repo, check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("more.py:5: feature view \"bad\": unknown entity \"ghost\"", p.stderr)
        # a Python error: file:line of the raising line
        self.write(repo, "more.py", "x = 1\nraise RuntimeError('boom')\n")
        p = fu.cli("apply", "--repo", repo, check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("more.py:2: RuntimeError: boom", p.stderr)
        self.write(repo, "more.py", "def f(:\n")
        p = fu.cli("plan", "--repo", repo, check=False)
        self.assertIn("more.py:1: SyntaxError", p.stderr)
        # on-demand inputs are refused, pointing at the definition
        self.write(repo, "more.py", """\
            from strata.features import Field, RequestSource
            from strata.features.types import Int64
            req = RequestSource(name="vals", schema=[Field(name="v", dtype=Int64)])
            """)
        p = fu.cli("plan", "--repo", repo, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("more.py:3: RequestSource \"vals\"", p.stderr.replace("'", "\""))
        # .feastignore
        with open(os.path.join(repo, ".feastignore"), "w") as f:
            f.write("more.py\n")
        self.assertEqual(fu.cli("plan", "--repo", repo).returncode, 0)


if __name__ == "__main__":
    unittest.main()
