"""FeatureStore: Feast's SDK entry point over Strata's feature store.

FeatureStore(repo_path=DIR) works in-process: apply/plan load the repository
(feature_store.yaml, its YAML files, the objects given) with the same C++ code
as `strata features apply`; get_historical_features runs the C++
point-in-time join on the frames (numpy columns in and out); the online
operations open the repository's online store (RocksDB: locked by this
process until close()).

FeatureStore(url="http://host:6566") talks to a running feature server
(`strata features serve`, Feast's HTTP API) for the online operations."""

import collections
import datetime as _dt
import json
import os
import urllib.error
import urllib.request

from .. import _strata
from . import _frames
from . import definitions as _d
from . import types as _t

_core = _strata._features

__all__ = ["FeatureStore", "RetrievalJob", "OnlineResponse", "PlanChange"]

PlanChange = collections.namedtuple("PlanChange", "kind object name detail")
_UTC = _dt.timezone.utc


def _micros(t, what):
    if isinstance(t, str):
        t = _dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    if hasattr(t, "to_pydatetime"):  # pandas.Timestamp
        t = t.to_pydatetime()
    if not isinstance(t, _dt.datetime):
        raise TypeError(f"{what} must be a datetime, not {type(t).__name__}")
    if t.tzinfo is None:
        t = t.replace(tzinfo=_UTC)  # naive times are UTC, as in Feast
    delta = t - _dt.datetime(1970, 1, 1, tzinfo=_UTC)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _as_list(objects):
    if objects is None:
        return []
    if isinstance(objects, (list, tuple)):
        return list(objects)
    return [objects]


def _feature_args(features):
    """features=[...] | FeatureService -> (refs, service name)."""
    if isinstance(features, _d.FeatureService):
        return [], features.name
    if isinstance(features, str):
        raise TypeError("features must be a list of \"view:feature\" references or a FeatureService")
    refs = list(features or [])
    for r in refs:
        if not isinstance(r, str):
            raise TypeError(f"feature references are \"view:feature\" strings, not {r!r}")
    return refs, ""


class RetrievalJob:
    """The result of get_historical_features, computed on first use."""

    def __init__(self, run, full_feature_names):
        self._run = run
        self._cols = None
        self.stats = None
        self.full_feature_names = full_feature_names

    def _columns(self):
        if self._cols is None:
            self._cols, self.stats = self._run()
        return self._cols

    def to_df(self):
        """A pandas.DataFrame: the entity columns as given, then the features."""
        return _frames.to_pandas(self._columns())

    def to_dict(self):
        """{"column": [values]} with None for NULL and datetimes for timestamps."""
        return _frames.to_pydict(self._columns())

    def to_parquet(self, path, codec="zstd"):
        """Writes the training set with Strata's Parquet writer (local or s3://)."""
        _core.write_table(os.fspath(path), self._columns(), codec)

    def to_csv(self, path):
        path = os.fspath(path)
        if not path.lower().endswith(".csv"):
            raise ValueError(f"to_csv writes a .csv file, not {path!r}")
        _core.write_table(path, self._columns(), "none")

    def to_arrow(self):
        raise NotImplementedError("to_arrow needs pyarrow, which Debian 12 does not package; use "
                                  "to_df(), to_dict() or to_parquet(path)")


class OnlineResponse:
    """get_online_features' answer: to_dict() / to_df(); statuses per feature
    (PRESENT, NULL_VALUE, NOT_FOUND, OUTSIDE_MAX_AGE) in .statuses."""

    def __init__(self, names, columns):
        self.names = list(names)
        self._values = {n: list(c[0]) for n, c in zip(names, columns)}
        self.statuses = {n: list(c[1]) for n, c in zip(names, columns)}
        self.event_timestamps = {n: list(c[2]) for n, c in zip(names, columns)}

    def to_dict(self, include_event_timestamps=False):
        out = {}
        for n in self.names:
            out[n] = list(self._values[n])
            if include_event_timestamps:
                out[f"{n}__ts"] = list(self.event_timestamps[n])
        return out

    def to_df(self, include_event_timestamps=False):
        import pandas as pd
        return pd.DataFrame(self.to_dict(include_event_timestamps))


def _entity_columns(entity_rows):
    if isinstance(entity_rows, dict):  # already columns
        return [(k, [_scalar(v) for v in vals]) for k, vals in entity_rows.items()]
    rows = list(entity_rows)
    if not rows:
        raise ValueError("entity_rows is empty: give a list of {join_key: value} dicts")
    keys = list(rows[0].keys())
    for i, r in enumerate(rows):
        if set(r.keys()) != set(keys):
            raise ValueError(f"entity row {i} has keys {sorted(r)}, row 0 has {sorted(keys)}")
    return [(k, [_scalar(r[k]) for r in rows]) for k in keys]


def _scalar(v):
    return v.item() if hasattr(v, "item") and not isinstance(v, (bytes, str)) else v


class FeatureStore:
    """FeatureStore(repo_path=".") or FeatureStore(url="http://host:6566")."""

    def __init__(self, repo_path=None, config=None, fs_yaml_file=None, url=None, timeout=30):
        if config is not None or fs_yaml_file is not None:
            raise NotImplementedError("FeatureStore(config=...) / fs_yaml_file are not supported: "
                                      "give repo_path, a directory holding feature_store.yaml")
        self._online = None
        self.url = url.rstrip("/") if url else None
        self.timeout = timeout
        if self.url:
            if repo_path is not None:
                raise ValueError("give repo_path or url, not both")
            self.repo_path = None
            self.config = None
            self.project = None
            return
        self.repo_path = os.path.abspath(os.fspath(repo_path if repo_path is not None else "."))
        self.config = _core.config(self.repo_path)
        self.project = self.config["project"]

    def __repr__(self):
        return f"<strata.features.FeatureStore {self.url or self.repo_path}>"

    def _local(self, what):
        if self.url:
            raise NotImplementedError(
                f"{what} needs the repository: FeatureStore(url=...) talks to a feature server, "
                "which serves the online operations only; open it with FeatureStore(repo_path=...)")

    # -- registry ----------------------------------------------------------

    def _docs(self, objects):
        return [("<apply>", _d.render(_as_list(objects), base_dir=self.repo_path))]

    def apply(self, objects, objects_to_delete=None, partial=True, skip_source_validation=False):
        """Registers `objects` (with the repository's YAML definitions) and
        returns the changes (PlanChange). Nothing is deleted, as in Feast."""
        self._local("apply")
        if objects_to_delete:
            raise NotImplementedError("objects_to_delete is not supported: Strata's apply keeps "
                                      "every definition (delete from the registry file by hand)")
        changes = _core.apply(self.repo_path, self._docs(objects), not skip_source_validation)
        return [PlanChange(*c) for c in changes]

    def plan(self, objects, skip_source_validation=False):
        """What apply(objects) would change, without writing anything."""
        self._local("plan")
        changes = _core.plan(self.repo_path, self._docs(objects), not skip_source_validation)
        return [PlanChange(*c) for c in changes]

    def _registry(self):
        self._local("the registry")
        path = self.config["registry_path"]
        try:
            with open(path, encoding="utf-8") as f:
                reg = json.load(f)
        except FileNotFoundError:
            raise _strata.PreconditionFailedError(
                f"no registry at {path}: apply the definitions first (FeatureStore.apply or "
                f"`strata features apply --repo {self.repo_path}`)") from None
        if reg.get("format") != "strata-feature-registry/1":
            raise _strata.Error(f"{path} is not a Strata feature registry")
        return reg

    @staticmethod
    def _entity_obj(e):
        vt = _t.from_strata_type(e["value_type"]) if e.get("value_type") else None
        return _d.Entity(name=e["name"], join_keys=[e["join_key"]], value_type=vt,
                         description=e.get("description", ""), tags=e.get("tags"))

    def _view_obj(self, v, entities):
        s = v["source"]
        src = _d.FileSource(name=s.get("name", ""), path=s["path"], timestamp_field=s["timestamp_field"],
                            created_timestamp_column=s.get("created_timestamp_column", ""),
                            field_mapping=s.get("field_mapping") or None,
                            file_format=s.get("file_format"))
        if s.get("push_source"):
            src = _d.PushSource(name=s["push_source"], batch_source=src)
        schema = [_d.Field(name=f["name"], dtype=_t.from_strata_type(f["dtype"])) for f in v["features"]]
        view = _d.FeatureView(name=v["name"], source=src, schema=schema,
                              entities=[entities.get(n, n) for n in v["entities"]],
                              ttl=_dt.timedelta(seconds=v["ttl_seconds"]), online=v["online"],
                              tags=v.get("tags"), owner=v.get("owner", ""),
                              description=v.get("description", ""))
        view.materialization_intervals = [
            (_dt.datetime(1970, 1, 1, tzinfo=_UTC) + _dt.timedelta(microseconds=i["start_us"]),
             _dt.datetime(1970, 1, 1, tzinfo=_UTC) + _dt.timedelta(microseconds=i["end_us"]))
            for i in v.get("materialization_intervals", [])]
        return view

    def list_entities(self, tags=None):
        out = [self._entity_obj(e) for e in self._registry()["entities"]]
        return [o for o in out if _match(o.tags, tags)]

    def list_feature_views(self, tags=None):
        reg = self._registry()
        ents = {e["name"]: self._entity_obj(e) for e in reg["entities"]}
        out = [self._view_obj(v, ents) for v in reg["feature_views"]]
        return [o for o in out if _match(o.tags, tags)]

    list_batch_feature_views = list_feature_views

    def list_feature_services(self, tags=None):
        reg = self._registry()
        views = {v.name: v for v in self.list_feature_views()}
        out = []
        for s in reg["feature_services"]:
            feats = [views[p["view"]][p["features"]] if p["features"] else views[p["view"]]
                     for p in s["features"]]
            out.append(_d.FeatureService(name=s["name"], features=feats, tags=s.get("tags"),
                                         description=s.get("description", "")))
        return [o for o in out if _match(o.tags, tags)]

    def list_data_sources(self, tags=None):
        seen, out = set(), []
        for v in self.list_feature_views():
            for src in (v.batch_source, v.stream_source):
                if src is not None and src.name not in seen:
                    seen.add(src.name)
                    out.append(src)
        return [o for o in out if _match(o.tags, tags)]

    def _get(self, items, name, what):
        for o in items:
            if o.name == name:
                return o
        raise _strata.NotFoundError(f"{what} {name!r} is not in the registry of project "
                                    f"{self.project!r} (have: {', '.join(o.name for o in items) or 'none'})")

    def get_entity(self, name):
        return self._get(self.list_entities(), name, "entity")

    def get_feature_view(self, name):
        return self._get(self.list_feature_views(), name, "feature view")

    def get_feature_service(self, name):
        return self._get(self.list_feature_services(), name, "feature service")

    def get_data_source(self, name):
        return self._get(self.list_data_sources(), name, "data source")

    # -- offline -----------------------------------------------------------

    def get_historical_features(self, entity_df, features=None, full_feature_names=False,
                                feature_service=None, timestamp_column="", memory_budget=0,
                                spill_dir=""):
        """Point-in-time-correct features for each entity row (a DataFrame, or a
        Parquet/CSV path). features: ["view:feature", ...] or a FeatureService."""
        self._local("get_historical_features")
        if feature_service is not None:
            if features is not None:
                raise ValueError("give features or feature_service, not both")
            features = feature_service
        if features is None:
            raise ValueError("give features=[\"view:feature\", ...] or a FeatureService")
        refs, service = _feature_args(features)
        if isinstance(entity_df, (str, os.PathLike)):
            cols = _core.read_table(os.fspath(entity_df))
        elif hasattr(entity_df, "columns") and hasattr(entity_df, "dtypes"):
            cols = _frames.from_pandas(entity_df)
        else:
            raise TypeError("entity_df must be a pandas.DataFrame or the path of a Parquet/CSV file")
        repo = self.repo_path

        def run():
            return _core.historical(repo, cols, refs, service, bool(full_feature_names),
                                    timestamp_column, int(memory_budget), os.fspath(spill_dir))
        return RetrievalJob(run, full_feature_names)

    # -- online ------------------------------------------------------------

    def _store(self):
        if self._online is None:
            self._online = _core.OnlineStore(self.repo_path)
        return self._online

    def close(self):
        """Closes the online store (RocksDB: unlocks it for other processes)."""
        if self._online is not None:
            self._online.close()
            self._online = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass

    def materialize(self, start_date, end_date, feature_views=None):
        """Loads the latest row per entity with start <= ts <= end into the online store."""
        views = list(feature_views or [])
        start, end = _micros(start_date, "start_date"), _micros(end_date, "end_date")
        if self.url:
            return self._post("/materialize", {"start_ts": _iso(start), "end_ts": _iso(end),
                                               "feature_views": views or None})
        return self._store().materialize(start, end, views)

    def materialize_incremental(self, end_date, feature_views=None):
        """From each view's last materialized end (or end - ttl) to end_date."""
        views = list(feature_views or [])
        end = _micros(end_date, "end_date")
        if self.url:
            return self._post("/materialize-incremental", {"end_ts": _iso(end),
                                                           "feature_views": views or None})
        return self._store().materialize(None, end, views)

    def write_to_online_store(self, feature_view_name, df, allow_registry_cache=True):
        """Writes rows (join keys, the timestamp field, features) of one view."""
        if self.url:
            return self._post("/write-to-online-store", {"feature_view_name": feature_view_name,
                                                         "df": _df_json(df)})
        self._store().write(feature_view_name, _frames.from_pandas(df))

    def push(self, push_source_name, df, allow_registry_cache=True, to=_d.PushMode.ONLINE):
        """Writes rows to the online store of every view fed by the push source."""
        if to != _d.PushMode.ONLINE:
            raise NotImplementedError(f"push(to={to}): Strata's offline store reads the batch "
                                      "source's files; append the rows there (only "
                                      "PushMode.ONLINE is supported)")
        if self.url:
            return self._post("/push", {"push_source_name": push_source_name, "df": _df_json(df),
                                        "to": "online"})
        views = [v["name"] for v in self._registry()["feature_views"]
                 if v["source"].get("push_source") == push_source_name]
        if not views:
            raise _strata.NotFoundError(f"no feature view is fed by push source "
                                        f"{push_source_name!r}")
        cols = _frames.from_pandas(df)
        for v in views:
            self._store().write(v, cols)

    def get_online_features(self, features, entity_rows, full_feature_names=False):
        """The latest values for each entity row ([{join_key: value}, ...])."""
        refs, service = _feature_args(features)
        entities = _entity_columns(entity_rows)
        if self.url:
            return self._remote_online(refs, service, entities, full_feature_names)
        names, cols = self._store().get(refs, service, entities, bool(full_feature_names))
        return OnlineResponse(names, cols)

    # -- remote ------------------------------------------------------------

    def _post(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            # 422: the server's (and Feast's FastAPI) answer to rows that do not fit
            cls = {400: _strata.InvalidArgumentError, 404: _strata.NotFoundError,
                   422: _strata.InvalidArgumentError}.get(e.code, _strata.Error)
            raise cls(f"{self.url}{path}: HTTP {e.code}: {detail}") from None

    def _remote_online(self, refs, service, entities, full_feature_names):
        body = {"entities": {k: v for k, v in entities}, "full_feature_names": full_feature_names}
        if service:
            body["feature_service"] = service
        else:
            body["features"] = refs
        r = self._post("/get-online-features", body)
        names = r["metadata"]["feature_names"]
        cols = []
        for res in r["results"]:
            ts = [_dt.datetime.fromisoformat(t.replace("Z", "+00:00")) for t in res["event_timestamps"]]
            cols.append((res["values"], res["statuses"], ts))
        return OnlineResponse(names, cols)


def _iso(us):
    t = _dt.datetime(1970, 1, 1, tzinfo=_UTC) + _dt.timedelta(microseconds=us)
    return t.isoformat().replace("+00:00", "Z")


def _df_json(df):
    d = _frames.to_pydict(_frames.from_pandas(df))
    return {k: [v.isoformat() if isinstance(v, (_dt.datetime, _dt.date)) else
                (v.decode() if isinstance(v, bytes) else v) for v in vals]
            for k, vals in d.items()}


def _match(obj_tags, tags):
    return not tags or all(obj_tags.get(k) == v for k, v in tags.items())
