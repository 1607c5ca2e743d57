"""Feast's definition objects (Entity, Field, FileSource, PushSource,
RequestSource, FeatureView, FeatureService) and their rendering into the
definitions document the C++ repository loader reads (repo.h:
DefinitionDocument). Each object remembers where it was created (file:line of
the first caller outside this package), and errors about it point there."""

import enum
import json
import os
import sys
from datetime import timedelta

from . import types as _t

__all__ = ["Entity", "Field", "FileSource", "PushSource", "RequestSource", "FeatureView",
           "FeatureService", "FeatureViewProjection", "PushMode", "ValueType", "ParquetFormat",
           "CsvFormat", "render"]

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def _caller_loc():
    f = sys._getframe(1)
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _PKG_DIR:
        f = f.f_back
    if f is None:
        return ("<unknown>", 0)
    return (os.path.abspath(f.f_code.co_filename), f.f_lineno)


def _tags(tags, what):
    if tags is None:
        return {}
    if not isinstance(tags, dict):
        raise TypeError(f"{what}: tags must be a dict of strings")
    return {str(k): str(v) for k, v in tags.items()}


class ValueType(enum.Enum):
    """Feast's entity value types (feast.ValueType); the list types are not supported."""
    UNKNOWN = 0
    BYTES = 1
    STRING = 2
    INT32 = 3
    INT64 = 4
    DOUBLE = 5
    FLOAT = 6
    BOOL = 7
    UNIX_TIMESTAMP = 8


_VALUE_TYPE_NAMES = {ValueType.BYTES: "Bytes", ValueType.STRING: "String", ValueType.INT32: "Int32",
                     ValueType.INT64: "Int64", ValueType.DOUBLE: "Float64",
                     ValueType.FLOAT: "Float32", ValueType.BOOL: "Bool",
                     ValueType.UNIX_TIMESTAMP: "UnixTimestamp"}


class PushMode(enum.Enum):
    """Where push() writes (feast.data_source.PushMode). Strata's offline store
    reads the batch source's files, so only ONLINE is supported."""
    ONLINE = 1
    OFFLINE = 2
    ONLINE_AND_OFFLINE = 3


class ParquetFormat:
    """feast.data_format.ParquetFormat"""
    name = "parquet"


class CsvFormat:
    """A CSV file source (DuckDB's dialect; see docs/features.md)."""
    name = "csv"


class Entity:
    """Entity(name, join_keys=[key], value_type=None, description, tags, owner).
    Exactly one join key, as in Feast; it defaults to the entity's name."""

    def __init__(self, *, name, join_keys=None, value_type=None, description="", tags=None,
                 owner=""):
        self._loc = _caller_loc()
        if not isinstance(name, str):
            raise TypeError("Entity name must be a string")
        if isinstance(join_keys, str):
            raise TypeError("join_keys must be a list with one name, e.g. join_keys=[\"driver_id\"]")
        self.name = name
        self.join_keys = list(join_keys) if join_keys else [name]
        if value_type is not None and not isinstance(value_type, (ValueType, _t.PrimitiveFeastType)):
            raise TypeError("value_type must be a ValueType (e.g. ValueType.INT64) or a dtype")
        self.value_type = value_type
        self.description = description
        self.tags = _tags(tags, f"entity {name!r}")
        self.owner = owner

    @property
    def join_key(self):
        return self.join_keys[0]

    def __repr__(self):
        return f"Entity(name={self.name!r}, join_keys={self.join_keys!r})"


class Field:
    """Field(name, dtype): one column of a feature view's schema."""

    def __init__(self, *, name, dtype, description="", tags=None):
        if not isinstance(name, str):
            raise TypeError("Field name must be a string")
        if not isinstance(dtype, (_t.PrimitiveFeastType, _t.Array)):
            raise TypeError(f"Field {name!r}: dtype must come from strata.features.types "
                            f"(Float32, Int64, ...), not {dtype!r}")
        self.name = name
        self.dtype = dtype
        self.description = description
        self.tags = _tags(tags, f"field {name!r}")

    def __repr__(self):
        return f"Field(name={self.name!r}, dtype={self.dtype!r})"

    def __eq__(self, other):
        return isinstance(other, Field) and (other.name, other.dtype) == (self.name, self.dtype)


class FileSource:
    """FileSource(path, timestamp_field, created_timestamp_column, field_mapping,
    file_format, s3_endpoint_override, name). `path`: relative to the
    repository, absolute, or s3://bucket/key (Parquet, or CSV by a .csv name or
    file_format=CsvFormat())."""

    def __init__(self, *, path, timestamp_field="", created_timestamp_column="", field_mapping=None,
                 file_format=None, s3_endpoint_override=None, name="", description="", tags=None,
                 owner="", event_timestamp_column=None):
        self._loc = _caller_loc()
        path = os.fspath(path)
        if event_timestamp_column:  # Feast's old name
            timestamp_field = timestamp_field or event_timestamp_column
        if s3_endpoint_override:
            if not path.startswith("s3://"):
                raise ValueError(f"s3_endpoint_override is for s3:// paths, not {path!r}")
            sep = "&" if "?" in path else "?"
            path = f"{path}{sep}endpoint={s3_endpoint_override}"
        if file_format is not None and not (isinstance(file_format, str) or hasattr(file_format, "name")):
            raise TypeError("file_format must be ParquetFormat(), CsvFormat(), 'parquet' or 'csv'")
        self.path = path
        self.name = name or path
        self.timestamp_field = timestamp_field
        self.created_timestamp_column = created_timestamp_column or ""
        self.field_mapping = dict(field_mapping or {})
        self.file_format = file_format
        self.description = description
        self.tags = _tags(tags, f"source {self.name!r}")
        self.owner = owner

    def _doc(self, loc):
        d = {"name": self.name, "path": self.path, "timestamp_field": self.timestamp_field,
             "__loc__": loc(self._loc)}
        if self.created_timestamp_column:
            d["created_timestamp_column"] = self.created_timestamp_column
        if self.field_mapping:
            d["field_mapping"] = {str(k): str(v) for k, v in self.field_mapping.items()}
        if self.file_format is not None:
            d["file_format"] = self.file_format if isinstance(self.file_format, str) else self.file_format.name
        if self.description:
            d["description"] = self.description
        return d

    def __repr__(self):
        return f"FileSource(name={self.name!r}, path={self.path!r})"


class PushSource:
    """PushSource(name, batch_source): rows pushed with FeatureStore.push(name,
    df) go to the online store of every view fed by it; historical retrieval
    reads batch_source."""

    def __init__(self, *, name, batch_source, description="", tags=None, owner=""):
        self._loc = _caller_loc()
        if not isinstance(batch_source, FileSource):
            raise TypeError(f"PushSource {name!r}: batch_source must be a FileSource")
        self.name = name
        self.batch_source = batch_source
        self.description = description
        self.tags = _tags(tags, f"push source {name!r}")
        self.owner = owner

    def __repr__(self):
        return f"PushSource(name={self.name!r}, batch_source={self.batch_source!r})"


class RequestSource:
    """RequestSource(name, schema): request-time inputs of on-demand feature
    views. Strata has no on-demand views, so applying one is refused with
    NotImplementedError; the class exists so that Feast repositories import."""

    def __init__(self, *, name, schema, description="", tags=None, owner=""):
        self._loc = _caller_loc()
        self.name = name
        self.schema = list(schema)
        for f in self.schema:
            if not isinstance(f, Field):
                raise TypeError(f"RequestSource {name!r}: schema must be a list of Field")
        self.description = description
        self.tags = _tags(tags, f"request source {name!r}")
        self.owner = owner

    def __repr__(self):
        return f"RequestSource(name={self.name!r})"


class FeatureViewProjection:
    """Some features of a view: `view[["a", "b"]]`, for a FeatureService."""

    def __init__(self, view, features):
        self.view = view
        self.name = view.name
        self.features = list(features)


class FeatureView:
    """FeatureView(name, entities, ttl=timedelta, schema=[Field], online,
    source, tags, description, owner). Schema fields named like a join key
    are the entity columns (as in Feast), not features. ttl=timedelta(0): no
    lower bound on a feature row's age."""

    def __init__(self, *, name, source, schema=None, entities=None, ttl=timedelta(0), online=True,
                 offline=False, description="", tags=None, owner=""):
        self._loc = _caller_loc()
        if not isinstance(name, str):
            raise TypeError("FeatureView name must be a string")
        if not isinstance(source, (FileSource, PushSource, RequestSource)):
            raise TypeError(f"FeatureView {name!r}: source must be a FileSource or a PushSource, "
                            f"not {type(source).__name__}")
        if ttl is None:
            ttl = timedelta(0)
        if not isinstance(ttl, timedelta):
            raise TypeError(f"FeatureView {name!r}: ttl must be a datetime.timedelta")
        if offline:
            raise NotImplementedError(f"FeatureView {name!r}: offline=True (writing to the offline "
                                      "store) is not supported by Strata")
        self.name = name
        self.source = source
        self.entities = list(entities or [])
        for e in self.entities:
            if not isinstance(e, (Entity, str)):
                raise TypeError(f"FeatureView {name!r}: entities must be Entity objects")
        keys = {e.join_key for e in self.entities if isinstance(e, Entity)}
        self.schema = list(schema or [])
        for f in self.schema:
            if not isinstance(f, Field):
                raise TypeError(f"FeatureView {name!r}: schema must be a list of Field")
        self.entity_columns = [f for f in self.schema if f.name in keys]
        self.features = [f for f in self.schema if f.name not in keys]
        self.ttl = ttl
        self.online = bool(online)
        self.description = description
        self.tags = _tags(tags, f"feature view {name!r}")
        self.owner = owner

    @property
    def batch_source(self):
        return self.source.batch_source if isinstance(self.source, PushSource) else self.source

    @property
    def stream_source(self):
        return self.source if isinstance(self.source, PushSource) else None

    def __getitem__(self, features):
        if isinstance(features, str):
            features = [features]
        have = {f.name for f in self.features}
        for f in features:
            if f not in have:
                raise KeyError(f"feature view {self.name!r} has no feature {f!r} (it has: "
                               f"{', '.join(sorted(have))})")
        return FeatureViewProjection(self, features)

    def __repr__(self):
        return f"FeatureView(name={self.name!r}, features={[f.name for f in self.features]!r})"


class FeatureService:
    """FeatureService(name, features=[view, view[["a"]]], tags, description, owner)."""

    def __init__(self, *, name, features, tags=None, description="", owner="", logging_config=None):
        self._loc = _caller_loc()
        if logging_config is not None:
            raise NotImplementedError(
                f"FeatureService {name!r}: logging_config is not supported; Strata logs served "
                "vectors per server (feature_server.logging in feature_store.yaml)")
        self.name = name
        self.feature_view_projections = []
        for f in features:
            if isinstance(f, FeatureView):
                self.feature_view_projections.append(FeatureViewProjection(f, []))
            elif isinstance(f, FeatureViewProjection):
                self.feature_view_projections.append(f)
            else:
                raise TypeError(f"FeatureService {name!r}: features must be feature views or "
                                f"view[[...]] projections, not {type(f).__name__}")
        self.tags = _tags(tags, f"feature service {name!r}")
        self.description = description
        self.owner = owner

    def __repr__(self):
        return f"FeatureService(name={self.name!r})"


# ---------------------------------------------------------------------------
# Rendering

class _Renderer:
    def __init__(self, base_dir):
        self.base = os.path.abspath(base_dir) if base_dir else None
        self.entities, self.views, self.services = [], [], []
        self._seen = set()

    def loc(self, loc):
        path, line = loc
        if self.base and path.startswith(self.base + os.sep):
            path = os.path.relpath(path, self.base)
        return f"{path}:{line}"

    def where(self, obj):
        return self.loc(obj._loc)

    def entity(self, e):
        if id(e) in self._seen:
            return
        self._seen.add(id(e))
        d = {"name": e.name, "join_keys": e.join_keys, "__loc__": self.where(e)}
        vt = e.value_type
        if isinstance(vt, ValueType) and vt is not ValueType.UNKNOWN:
            d["value_type"] = _VALUE_TYPE_NAMES[vt]
        elif isinstance(vt, _t.PrimitiveFeastType):
            d["value_type"] = vt.name
        if e.description:
            d["description"] = e.description
        if e.tags:
            d["tags"] = e.tags
        if e.owner:
            d["owner"] = e.owner
        self.entities.append(d)

    def view(self, v):
        if id(v) in self._seen:
            return
        self._seen.add(id(v))
        if isinstance(v.source, RequestSource):
            raise NotImplementedError(f"{self.where(v)}: feature view {v.name!r}: a RequestSource "
                                      "feeds on-demand feature views, which Strata does not support")
        for e in v.entities:
            if isinstance(e, Entity):
                self.entity(e)
        schema = []
        for f in v.features:
            if isinstance(f.dtype, _t.Array):
                raise NotImplementedError(
                    f"{self.where(v)}: feature view {v.name!r}: feature {f.name!r} is {f.dtype!r}; "
                    "Strata's feature store has no list-valued features (use scalar columns)")
            schema.append({"name": f.name, "dtype": f.dtype.name})
        src = v.batch_source._doc(self.loc)
        if isinstance(v.source, PushSource):
            src["push_source"] = v.source.name
        d = {"name": v.name, "entities": [e.name if isinstance(e, Entity) else e for e in v.entities],
             "ttl": str(int(v.ttl.total_seconds())), "online": v.online, "schema": schema,
             "source": src, "__loc__": self.where(v)}
        if v.ttl.total_seconds() != int(v.ttl.total_seconds()):
            raise ValueError(f"{self.where(v)}: feature view {v.name!r}: ttl must be whole seconds")
        for key in ("tags", "owner", "description"):
            if getattr(v, key):
                d[key] = getattr(v, key)
        self.views.append(d)

    def service(self, s):
        if id(s) in self._seen:
            return
        self._seen.add(id(s))
        feats = []
        for p in s.feature_view_projections:
            self.view(p.view)
            feats.append({p.name: p.features} if p.features else p.name)
        d = {"name": s.name, "features": feats, "__loc__": self.where(s)}
        for key in ("tags", "description"):
            if getattr(s, key):
                d[key] = getattr(s, key)
        self.services.append(d)

    def add(self, obj):
        if isinstance(obj, Entity):
            self.entity(obj)
        elif isinstance(obj, FeatureView):
            self.view(obj)
        elif isinstance(obj, FeatureService):
            self.service(obj)
        elif isinstance(obj, RequestSource):
            raise NotImplementedError(f"{self.where(obj)}: RequestSource {obj.name!r}: on-demand "
                                      "feature views are not supported by Strata")
        elif isinstance(obj, (FileSource, PushSource)):
            pass  # registered through the views that use them
        else:
            raise TypeError(f"cannot apply a {type(obj).__name__} (use Entity, FeatureView, "
                            "FeatureService, FileSource, PushSource)")

    def document(self):
        return json.dumps({"entities": self.entities, "feature_views": self.views,
                           "feature_services": self.services}, indent=1)


def render(objects, base_dir=None):
    """The definitions document (JSON, which the YAML loader reads) of `objects`;
    the entities of a view and the views of a service come along. Locations are
    relative to base_dir when inside it."""
    r = _Renderer(base_dir)
    for obj in objects:
        r.add(obj)
    return r.document()
