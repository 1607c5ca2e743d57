"""strata.vector.MilvusClient: pymilvus's MilvusClient over the Milvus
protocol, embedded (the service in-process, over a directory) or remote (a
`strata server`'s Milvus gRPC port). Imported by strata.vector."""

import enum
import json
import os
import threading
import concurrent.futures as _futures

import numpy as np

from . import _strata
from ._milvus_pb import common_pb2 as _common
from ._milvus_pb import milvus_pb2 as _milvus
from ._milvus_pb import schema_pb2 as _schema

_SERVICE = "/milvus.proto.milvus.MilvusService/"


class MilvusException(Exception):
    """A Milvus API error: .code (Milvus's error code: 100 collection not
    found, 1100 invalid parameter, ...) and .message, as pymilvus's."""

    def __init__(self, code=-1, message=""):
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self):
        return f"<{type(self).__name__}: (code={self.code}, message={self.message})>"


class ParamError(MilvusException, ValueError):
    """A client-side argument error (pymilvus's ParamError)."""

    def __init__(self, message):
        super().__init__(1, message)


class NotSupportedError(MilvusException, NotImplementedError):
    """An argument pymilvus accepts that Strata does not implement: refused,
    never ignored."""

    def __init__(self, message):
        super().__init__(1, message)


class DataType(enum.IntEnum):
    """pymilvus's DataType (the protocol's schema.DataType numbers)."""
    NONE = 0
    BOOL = 1
    INT8 = 2
    INT16 = 3
    INT32 = 4
    INT64 = 5
    FLOAT = 10
    DOUBLE = 11
    STRING = 20
    VARCHAR = 21
    ARRAY = 22
    JSON = 23
    BINARY_VECTOR = 100
    FLOAT_VECTOR = 101
    FLOAT16_VECTOR = 102
    BFLOAT16_VECTOR = 103
    SPARSE_FLOAT_VECTOR = 104
    INT8_VECTOR = 105
    UNKNOWN = 999


class LoadState(enum.IntEnum):
    NotExist = 0
    NotLoad = 1
    Loading = 2
    Loaded = 3

    def __repr__(self):
        return f"<LoadState: {self.name}>"

    __str__ = __repr__


_CONSISTENCY = {"Strong": 0, "Session": 1, "Bounded": 2, "Eventually": 3, "Customized": 4}


def _consistency(v):
    if v is None:
        return None
    if isinstance(v, int):
        return v
    if v not in _CONSISTENCY:
        raise ParamError(f"consistency_level must be one of {list(_CONSISTENCY)}, not {v!r}")
    return _CONSISTENCY[v]


def _no_extra(method, kwargs):
    if kwargs:
        raise NotSupportedError(f"{method}: argument(s) {sorted(kwargs)} are not supported by "
                                "strata.vector.MilvusClient")


# ---------------------------------------------------------------------------
# Schema and index parameters

_FIELD_KW = {"dim", "max_length", "description", "auto_id", "nullable", "default_value",
             "is_partition_key", "is_clustering_key", "element_type", "max_capacity",
             "mmap_enabled"}


class FieldSchema:
    def __init__(self, name, dtype, description="", **kwargs):
        unknown = set(kwargs) - _FIELD_KW - {"is_primary"}
        if unknown:
            raise NotSupportedError(f"add_field({name!r}): argument(s) {sorted(unknown)} are not "
                                    "supported")
        self.name = name
        self.dtype = DataType(dtype)
        self.description = description
        self.is_primary = bool(kwargs.pop("is_primary", False))
        self.auto_id = bool(kwargs.pop("auto_id", False))
        self.params = {k: kwargs[k] for k in ("dim", "max_length", "max_capacity") if k in kwargs}
        self.nullable = bool(kwargs.get("nullable", False))
        self.is_partition_key = bool(kwargs.get("is_partition_key", False))
        self.is_clustering_key = bool(kwargs.get("is_clustering_key", False))
        self.default_value = kwargs.get("default_value")
        self.element_type = kwargs.get("element_type")
        self.mmap_enabled = kwargs.get("mmap_enabled")

    def to_proto(self, schema_auto_id=False):
        f = _schema.FieldSchema(name=self.name, description=self.description,
                                data_type=int(self.dtype), is_primary_key=self.is_primary,
                                autoID=self.auto_id or (self.is_primary and schema_auto_id),
                                nullable=self.nullable, is_partition_key=self.is_partition_key,
                                is_clustering_key=self.is_clustering_key)
        for k, v in self.params.items():
            f.type_params.add(key=k, value=str(v))
        if self.mmap_enabled is not None:
            f.type_params.add(key="mmap.enabled", value=str(bool(self.mmap_enabled)).lower())
        if self.element_type is not None:
            f.element_type = int(DataType(self.element_type))
        if self.default_value is not None:
            _set_value_field(f.default_value, self.default_value)
        return f

    def to_dict(self):
        d = {"name": self.name, "description": self.description, "type": self.dtype}
        if self.params:
            d["params"] = dict(self.params)
        if self.is_primary:
            d["is_primary"] = True
        if self.auto_id:
            d["auto_id"] = True
        return d

    def __repr__(self):
        return f"FieldSchema({self.to_dict()})"


def _set_value_field(vf, v):
    if isinstance(v, bool):
        vf.bool_data = v
    elif isinstance(v, int):
        vf.long_data = v
    elif isinstance(v, float):
        vf.double_data = v
    elif isinstance(v, str):
        vf.string_data = v
    else:
        raise ParamError(f"default_value {v!r}: unsupported type {type(v).__name__}")


class CollectionSchema:
    """pymilvus's CollectionSchema: create_schema(auto_id, enable_dynamic_field,
    description), then add_field(name, DataType, is_primary=..., dim=...,
    max_length=...) (chainable)."""

    def __init__(self, fields=None, description="", auto_id=False, enable_dynamic_field=False,
                 **kwargs):
        _no_extra("create_schema", {k: v for k, v in kwargs.items()
                                    if k not in ("primary_field",)})
        self.fields = list(fields or [])
        self.description = description
        self.auto_id = bool(auto_id)
        self.enable_dynamic_field = bool(enable_dynamic_field)
        if kwargs.get("primary_field"):
            for f in self.fields:
                f.is_primary = f.name == kwargs["primary_field"]

    def add_field(self, field_name, datatype, is_primary=False, **kwargs):
        self.fields.append(FieldSchema(field_name, datatype, is_primary=is_primary, **kwargs))
        return self

    def to_proto(self, name=""):
        s = _schema.CollectionSchema(name=name, description=self.description,
                                     autoID=self.auto_id,
                                     enable_dynamic_field=self.enable_dynamic_field)
        for f in self.fields:
            s.fields.append(f.to_proto(self.auto_id))
        return s

    def __repr__(self):
        return (f"CollectionSchema(auto_id={self.auto_id}, enable_dynamic_field="
                f"{self.enable_dynamic_field}, fields={[f.to_dict() for f in self.fields]})")


class IndexParams:
    """prepare_index_params(); add_index(field_name, index_type, index_name,
    metric_type=..., params={...})."""

    def __init__(self, field_name="", **kwargs):
        self._indexes = []
        if field_name:
            self.add_index(field_name, **kwargs)

    def add_index(self, field_name, index_type="", index_name="", **kwargs):
        params = dict(kwargs.pop("params", None) or {})
        metric = kwargs.pop("metric_type", "")
        params.update(kwargs)  # pymilvus folds other keywords into the index's params
        self._indexes.append({"field_name": field_name, "index_type": index_type,
                              "index_name": index_name, "metric_type": metric, "params": params})

    def __iter__(self):
        return iter(self._indexes)

    def __len__(self):
        return len(self._indexes)

    def __repr__(self):
        return f"IndexParams({self._indexes})"


# ---------------------------------------------------------------------------
# Transports: the same messages in-process or over gRPC


# One engine per directory in this process, shared by every embedded client
# on it (as Milvus Lite shares its server): the engine holds the directory's
# lock file (milvus/embedded.h), so another process opening it gets a clear
# PreconditionFailedError while this one has it open.
_open_dbs = {}  # (pid, realpath) -> [_MilvusEmbedded, clients]; guarded by _open_dbs_lock
_open_dbs_lock = threading.Lock()


class _SharedDb:
    """The engine of one directory, counted: closed with its last client."""

    def __init__(self, path):
        # By pid too: a forked child must not use the parent's engine (its
        # threads did not fork); it opens its own, and the lock refuses it.
        self._key = (os.getpid(), os.path.realpath(path))
        with _open_dbs_lock:
            entry = _open_dbs.get(self._key)
            if entry is None:
                os.makedirs(path, exist_ok=True)
                entry = _open_dbs[self._key] = [_strata._MilvusEmbedded(path), 0]
            entry[1] += 1
            self._db = entry[0]
        self._closed = False

    def call(self, method, data):
        if self._closed:
            raise _strata.Error("the MilvusClient is closed")
        return self._db.call(method, data)

    def close(self):
        with _open_dbs_lock:
            if self._closed:
                return
            self._closed = True
            entry = _open_dbs[self._key]
            entry[1] -= 1
            if entry[1] == 0:
                del _open_dbs[self._key]
                entry[0].close()


class _Embedded:
    def __init__(self, path):
        self._db = _SharedDb(path)
        self._pool = None
        self._lock = threading.Lock()
        self.path = path

    def call(self, method, req, resp_cls, timeout=None):
        data = req.SerializeToString()
        if timeout is None:
            out = self._db.call(method, data)
        else:  # as a gRPC deadline: the caller stops waiting; the call itself runs on
            with self._lock:
                if self._pool is None:
                    self._pool = _futures.ThreadPoolExecutor(4, thread_name_prefix="strata-milvus")
            fut = self._pool.submit(self._db.call, method, data)
            try:
                out = fut.result(timeout=timeout)
            except _futures.TimeoutError:
                raise MilvusException(
                    4, f"{method}: deadline exceeded after {timeout} s (the call still completes "
                       "in the background, as with a gRPC deadline)") from None
        return resp_cls.FromString(out)

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._db.close()


class _Remote:
    def __init__(self, uri, secure):
        import grpc
        self._grpc = grpc
        target = uri.split("://", 1)[1].rstrip("/")
        opts = [("grpc.max_send_message_length", 256 << 20),
                ("grpc.max_receive_message_length", 256 << 20)]
        if secure:
            self._ch = grpc.secure_channel(target, grpc.ssl_channel_credentials(), options=opts)
        else:
            self._ch = grpc.insecure_channel(target, options=opts)
        self._stubs = {}
        self.target = target

    def call(self, method, req, resp_cls, timeout=None):
        stub = self._stubs.get(method)
        if stub is None:
            stub = self._ch.unary_unary(_SERVICE + method,
                                        request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=resp_cls.FromString)
            self._stubs[method] = stub
        try:
            return stub(req, timeout=timeout)
        except self._grpc.RpcError as e:
            raise MilvusException(
                -1, f"{method} to {self.target}: {e.code().name}: {e.details()}") from None

    def close(self):
        self._ch.close()


def _check(status):
    if status.code != 0 or status.error_code != 0:
        e = MilvusException(status.code or status.error_code, status.reason)
        e._refused = True  # the service answered no: nothing was applied
        raise e


# ---------------------------------------------------------------------------
# Field data: rows <-> the protocol's columns

_SCALAR = {
    DataType.BOOL: ("bool_data", bool),
    DataType.INT8: ("int_data", int),
    DataType.INT16: ("int_data", int),
    DataType.INT32: ("int_data", int),
    DataType.INT64: ("long_data", int),
    DataType.FLOAT: ("float_data", float),
    DataType.DOUBLE: ("double_data", float),
    DataType.VARCHAR: ("string_data", str),
    DataType.STRING: ("string_data", str),
}


def _column(field, values):
    """One schema field's FieldData from its values (None = null)."""
    t = field["type"]
    fd = _schema.FieldData(type=int(t), field_name=field["name"])
    nullable = field.get("nullable", False)
    if nullable:
        fd.valid_data.extend(v is not None for v in values)
    if t == DataType.FLOAT_VECTOR:
        dim = int(field["params"]["dim"])
        arr = np.asarray(values, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[1] != dim:
            raise ParamError(f"field {field['name']}: expected vectors of dimension {dim}, got "
                             f"an array of shape {arr.shape}")
        fd.vectors.dim = dim
        fd.vectors.float_vector.data.extend(arr.ravel().tolist())
        return fd
    if t == DataType.JSON:
        fd.scalars.json_data.data.extend(json.dumps(v).encode() for v in values)
        return fd
    if t not in _SCALAR:
        raise NotSupportedError(f"field {field['name']}: data type {t.name} is not supported by "
                                "Strata's Milvus API")
    attr, conv = _SCALAR[t]
    getattr(fd.scalars, attr).data.extend(conv(v) if v is not None else conv() for v in values)
    return fd


def _rows_to_columns(desc, rows, insert):
    """pymilvus's row-based insert: one column per schema field, the keys
    outside the schema into $meta when the collection has a dynamic field."""
    fields = desc["fields"]
    names = {f["name"] for f in fields}
    dynamic = desc["enable_dynamic_field"]
    cols = {f["name"]: [] for f in fields}
    extra = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ParamError(f"row {i} is a {type(row).__name__}: rows are dicts")
        for f in fields:
            n = f["name"]
            if n in row:
                v = row[n]
                cols[n].append(v.tolist() if isinstance(v, np.ndarray) else v)
            elif f.get("auto_id") and insert:
                continue
            elif f.get("nullable"):
                cols[n].append(None)
            else:
                raise ParamError(f"row {i}: field {n!r} is missing (the schema requires it)")
        others = {k: v for k, v in row.items() if k not in names}
        if others and not dynamic:
            raise ParamError(f"row {i}: field(s) {sorted(others)} are not in the schema and the "
                             "collection has no dynamic field")
        extra.append(others)
    out = []
    for f in fields:
        if f.get("auto_id") and insert:
            if cols[f["name"]]:
                raise ParamError(f"the primary key {f['name']!r} is auto_id: do not pass it")
            continue
        out.append(_column(f, cols[f["name"]]))
    if dynamic:
        fd = _schema.FieldData(type=int(DataType.JSON), field_name="$meta", is_dynamic=True)
        fd.scalars.json_data.data.extend(json.dumps(e).encode() for e in extra)
        out.append(fd)
    return out


def _column_values(fd, n):
    """A FieldData's values as Python values (None where not valid)."""
    if fd.HasField("vectors"):
        dim = fd.vectors.dim
        flat = np.asarray(fd.vectors.float_vector.data, dtype=np.float32)
        return [flat[i * dim:(i + 1) * dim].tolist() for i in range(n)]
    kind = fd.scalars.WhichOneof("data")
    if kind is None:
        vals = [None] * n
    elif kind == "json_data":
        vals = [json.loads(b) for b in fd.scalars.json_data.data]
    else:
        vals = list(getattr(fd.scalars, kind).data)
    if fd.valid_data:
        it = iter(vals)
        if len(vals) == n:
            vals = [v if ok else None for v, ok in zip(vals, fd.valid_data)]
        else:
            vals = [next(it) if ok else None for ok in fd.valid_data]
    return vals


def _rows_in(fd):
    if fd.valid_data:
        return len(fd.valid_data)
    if fd.HasField("vectors"):
        return len(fd.vectors.float_vector.data) // max(fd.vectors.dim, 1)
    kind = fd.scalars.WhichOneof("data")
    return len(getattr(fd.scalars, kind).data) if kind else 0


def _entities(fields_data, n, wanted=None):
    """Rows (dicts) from columns; $meta expanded into its keys. wanted: the
    names to keep (None = all)."""
    rows = [{} for _ in range(n)]
    for fd in fields_data:
        vals = _column_values(fd, n)
        if fd.is_dynamic or fd.field_name == "$meta":
            for r, meta in zip(rows, vals):
                for k, v in (meta or {}).items():
                    if wanted is None or k in wanted or "*" in wanted or "$meta" in wanted:
                        r[k] = v
            continue
        if wanted is not None and fd.field_name not in wanted and "*" not in wanted:
            continue
        for r, v in zip(rows, vals):
            r[fd.field_name] = v
    return rows


def _ids_list(ids):
    kind = ids.WhichOneof("id_field")
    if kind is None:
        return []
    return list(getattr(ids, kind).data)


def _kv(pairs):
    return {p.key: p.value for p in pairs}


# ---------------------------------------------------------------------------
# The client


def _param_value(v):
    return json.dumps(v) if isinstance(v, (dict, list)) else str(v)


class MilvusClient:
    """pymilvus's MilvusClient over Strata.

    MilvusClient("./vectors.db")                  embedded: a directory on disk,
                                                  the Milvus service in-process
    MilvusClient(uri="http://localhost:19530")    remote: a strata server's Milvus port

    Methods, arguments and return shapes follow pymilvus's MilvusClient; an
    argument Strata does not implement raises NotSupportedError, and the
    server's refusals (MilvusException with Milvus's code) name what is not
    supported. Vectors go in as lists or numpy arrays (encoded as the
    protocol's float32 bytes: one copy, as pymilvus); for zero-copy batch
    search use strata.vector.Collection."""

    def __init__(self, uri="http://localhost:19530", user="", password="", db_name="",
                 token="", timeout=None, **kwargs):
        _no_extra("MilvusClient", kwargs)
        if user or password or token:
            raise NotSupportedError("user/password/token: Strata's Milvus API has no "
                                    "authentication (bind it to a trusted network)")
        uri = os.fspath(uri)
        self._db_name = db_name
        self._timeout = timeout
        self._schemas = {}
        if uri.startswith(("http://", "tcp://", "grpc://")):
            self._t = _Remote(uri, secure=False)
        elif uri.startswith("https://"):
            self._t = _Remote(uri, secure=True)
        elif "://" in uri:
            raise ParamError(f"uri {uri!r}: use a directory path (embedded) or http://host:port")
        else:
            self._t = _Embedded(uri)
        self.uri = uri

    # -- plumbing

    def _call(self, method, req, resp_cls, timeout=None):
        t = timeout if timeout is not None else self._timeout
        resp = self._t.call(method, req, resp_cls, t)
        _check(resp if resp_cls is _common.Status else resp.status)
        return resp

    def close(self):
        self._t.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _desc(self, name, timeout=None):
        d = self._schemas.get(name)
        if d is None:
            d = self.describe_collection(name, timeout=timeout)
            self._schemas[name] = d
        return d

    def _with_schema(self, name, timeout, fn):
        """fn(description) with the cached schema; when that is refused (by
        the service, or while encoding the rows), the collection is described
        again and, if it is not the same collection any more (another client
        dropped and recreated it: a new collection id), fn runs once more
        with the new schema. A refusal by the same collection is the answer."""
        desc = self._desc(name, timeout)
        try:
            return fn(desc)
        except MilvusException as e:
            if not (isinstance(e, ParamError) or getattr(e, "_refused", False)):
                raise  # a transport error or a deadline: the call may have run
            self._schemas.pop(name, None)
            fresh = self._desc(name, timeout)  # raises "collection not found" if it is gone
            if fresh["collection_id"] == desc["collection_id"]:
                raise
        return fn(fresh)

    @staticmethod
    def _pk_of(desc):
        return next(f for f in desc["fields"] if f.get("is_primary"))

    # -- collections

    @staticmethod
    def create_schema(**kwargs):
        return CollectionSchema(**kwargs)

    @staticmethod
    def prepare_index_params(field_name="", **kwargs):
        return IndexParams(field_name, **kwargs)

    def create_collection(self, collection_name, dimension=None, primary_field_name="id",
                          id_type="int", vector_field_name="vector", metric_type="COSINE",
                          auto_id=False, timeout=None, schema=None, index_params=None, **kwargs):
        """The quick form (dimension=...: an id and a vector field, a dynamic
        field, an AUTOINDEX index, loaded) or with a schema (and
        index_params: indexed and loaded)."""
        if schema is None:
            if dimension is None:
                raise ParamError("create_collection needs dimension= (quick form) or schema=")
            max_length = kwargs.pop("max_length", 65535)
            schema = CollectionSchema(auto_id=auto_id, enable_dynamic_field=kwargs.pop(
                "enable_dynamic_field", True))
            if id_type in ("int", DataType.INT64):
                schema.add_field(primary_field_name, DataType.INT64, is_primary=True)
            elif id_type in ("str", "string", DataType.VARCHAR):
                schema.add_field(primary_field_name, DataType.VARCHAR, is_primary=True,
                                 max_length=max_length)
            else:
                raise ParamError(f"id_type must be 'int' or 'string', not {id_type!r}")
            schema.add_field(vector_field_name, DataType.FLOAT_VECTOR, dim=int(dimension))
            index_params = IndexParams()
            index_params.add_index(vector_field_name, index_type="AUTOINDEX",
                                   metric_type=metric_type)
        elif dimension is not None:
            raise ParamError("pass either dimension= (quick form) or schema=, not both")
        req = _milvus.CreateCollectionRequest(
            db_name=self._db_name, collection_name=collection_name,
            schema=schema.to_proto(collection_name).SerializeToString(),
            shards_num=int(kwargs.pop("num_shards", 1)))
        level = _consistency(kwargs.pop("consistency_level", "Bounded"))
        req.consistency_level = level
        for k, v in (kwargs.pop("properties", None) or {}).items():
            req.properties.add(key=k, value=str(v))
        if "num_partitions" in kwargs:
            req.num_partitions = int(kwargs.pop("num_partitions"))
        _no_extra("create_collection", kwargs)
        self._call("CreateCollection", req, _common.Status, timeout)
        self._schemas.pop(collection_name, None)
        if index_params is not None and len(index_params):
            self.create_index(collection_name, index_params, timeout=timeout)
            self.load_collection(collection_name, timeout=timeout)

    def describe_collection(self, collection_name, timeout=None, **kwargs):
        _no_extra("describe_collection", kwargs)
        r = self._call("DescribeCollection", _milvus.DescribeCollectionRequest(
            db_name=self._db_name, collection_name=collection_name), _milvus.
            DescribeCollectionResponse, timeout)
        fields = []
        for f in r.schema.fields:
            if f.is_dynamic:
                continue
            d = {"field_id": f.fieldID, "name": f.name, "description": f.description,
                 "type": DataType(f.data_type), "params": {}}
            for kv in f.type_params:
                d["params"][kv.key] = int(kv.value) if kv.value.isdigit() else kv.value
            if f.is_primary_key:
                d["is_primary"] = True
            if f.autoID:
                d["auto_id"] = True
            if f.nullable:
                d["nullable"] = True
            fields.append(d)
        return {
            "collection_name": r.collection_name or collection_name,
            "auto_id": any(f.get("auto_id") for f in fields),
            "num_shards": r.shards_num,
            "description": r.schema.description,
            "fields": fields,
            "functions": [],
            "aliases": list(r.aliases),
            "collection_id": r.collectionID,
            "consistency_level": r.consistency_level,
            "properties": _kv(r.properties),
            "num_partitions": r.num_partitions,
            "enable_dynamic_field": r.schema.enable_dynamic_field,
            "created_timestamp": r.created_timestamp,
        }

    def has_collection(self, collection_name, timeout=None, **kwargs):
        _no_extra("has_collection", kwargs)
        return self._call("HasCollection", _milvus.HasCollectionRequest(
            db_name=self._db_name, collection_name=collection_name), _milvus.BoolResponse,
            timeout).value

    def list_collections(self, timeout=None, **kwargs):
        _no_extra("list_collections", kwargs)
        return list(self._call("ShowCollections", _milvus.ShowCollectionsRequest(
            db_name=self._db_name), _milvus.ShowCollectionsResponse, timeout).collection_names)

    def drop_collection(self, collection_name, timeout=None, **kwargs):
        _no_extra("drop_collection", kwargs)
        self._schemas.pop(collection_name, None)
        self._call("DropCollection", _milvus.DropCollectionRequest(
            db_name=self._db_name, collection_name=collection_name), _common.Status, timeout)

    def rename_collection(self, old_name, new_name, target_db="", timeout=None, **kwargs):
        _no_extra("rename_collection", kwargs)
        self._schemas.pop(old_name, None)
        self._call("RenameCollection", _milvus.RenameCollectionRequest(
            db_name=self._db_name, oldName=old_name, newName=new_name, newDBName=target_db),
            _common.Status, timeout)

    def get_collection_stats(self, collection_name, timeout=None, **kwargs):
        _no_extra("get_collection_stats", kwargs)
        r = self._call("GetCollectionStatistics", _milvus.GetCollectionStatisticsRequest(
            db_name=self._db_name, collection_name=collection_name),
            _milvus.GetCollectionStatisticsResponse, timeout)
        return {k: int(v) if v.isdigit() else v for k, v in _kv(r.stats).items()}

    def load_collection(self, collection_name, timeout=None, **kwargs):
        req = _milvus.LoadCollectionRequest(db_name=self._db_name,
                                            collection_name=collection_name,
                                            replica_number=int(kwargs.pop("replica_number", 1)),
                                            refresh=bool(kwargs.pop("refresh", False)))
        req.resource_groups.extend(kwargs.pop("resource_groups", None) or [])
        req.load_fields.extend(kwargs.pop("load_fields", None) or [])
        req.skip_load_dynamic_field = bool(kwargs.pop("skip_load_dynamic_field", False))
        _no_extra("load_collection", kwargs)
        self._call("LoadCollection", req, _common.Status, timeout)

    def release_collection(self, collection_name, timeout=None, **kwargs):
        _no_extra("release_collection", kwargs)
        self._call("ReleaseCollection", _milvus.ReleaseCollectionRequest(
            db_name=self._db_name, collection_name=collection_name), _common.Status, timeout)

    def get_load_state(self, collection_name, partition_name="", timeout=None, **kwargs):
        _no_extra("get_load_state", kwargs)
        req = _milvus.GetLoadStateRequest(db_name=self._db_name, collection_name=collection_name)
        if partition_name:
            req.partition_names.append(partition_name)
        r = self._call("GetLoadState", req, _milvus.GetLoadStateResponse, timeout)
        return {"state": LoadState(r.state)}

    # -- indexes

    def create_index(self, collection_name, index_params, timeout=None, **kwargs):
        _no_extra("create_index", kwargs)
        for idx in index_params:
            req = _milvus.CreateIndexRequest(db_name=self._db_name,
                                             collection_name=collection_name,
                                             field_name=idx["field_name"],
                                             index_name=idx["index_name"])
            if idx["index_type"]:
                req.extra_params.add(key="index_type", value=str(idx["index_type"]))
            if idx["metric_type"]:
                req.extra_params.add(key="metric_type", value=str(idx["metric_type"]))
            if idx["params"]:
                req.extra_params.add(key="params", value=json.dumps(idx["params"]))
            self._call("CreateIndex", req, _common.Status, timeout)

    def list_indexes(self, collection_name, field_name="", timeout=None, **kwargs):
        _no_extra("list_indexes", kwargs)
        r = self._call("DescribeIndex", _milvus.DescribeIndexRequest(
            db_name=self._db_name, collection_name=collection_name),
            _milvus.DescribeIndexResponse, timeout)
        return [d.index_name for d in r.index_descriptions
                if not field_name or d.field_name == field_name]

    def describe_index(self, collection_name, index_name, timeout=None, **kwargs):
        _no_extra("describe_index", kwargs)
        r = self._call("DescribeIndex", _milvus.DescribeIndexRequest(
            db_name=self._db_name, collection_name=collection_name, index_name=index_name),
            _milvus.DescribeIndexResponse, timeout)
        if not r.index_descriptions:
            return None
        d = r.index_descriptions[0]
        out = _kv(d.params)
        if "params" in out:
            out.update(json.loads(out.pop("params")))
        out.update({"field_name": d.field_name, "index_name": d.index_name,
                    "total_rows": d.total_rows, "indexed_rows": d.indexed_rows,
                    "pending_index_rows": d.pending_index_rows,
                    "state": _common.IndexState.Name(d.state)})
        return out

    def drop_index(self, collection_name, index_name, timeout=None, **kwargs):
        _no_extra("drop_index", kwargs)
        self._call("DropIndex", _milvus.DropIndexRequest(
            db_name=self._db_name, collection_name=collection_name, index_name=index_name),
            _common.Status, timeout)

    # -- data

    def _write(self, method, collection_name, data, partition_name, timeout, insert):
        rows = [data] if isinstance(data, dict) else list(data)
        if not rows:
            return None
        cls = _milvus.InsertRequest if insert else _milvus.UpsertRequest

        def write(desc):
            req = cls(db_name=self._db_name, collection_name=collection_name,
                      partition_name=partition_name or "", num_rows=len(rows))
            req.fields_data.extend(_rows_to_columns(desc, rows, insert))
            return self._call(method, req, _milvus.MutationResult, timeout)
        return self._with_schema(collection_name, timeout, write)

    def insert(self, collection_name, data, timeout=None, partition_name="", **kwargs):
        """Rows (dicts, or one dict): {"insert_count": n, "ids": [...]}."""
        _no_extra("insert", kwargs)
        r = self._write("Insert", collection_name, data, partition_name, timeout, True)
        if r is None:
            return {"insert_count": 0, "ids": []}
        return {"insert_count": r.insert_cnt, "ids": _ids_list(r.IDs)}

    def upsert(self, collection_name, data, timeout=None, partition_name="", **kwargs):
        """Rows replacing those with the same primary keys: {"upsert_count": n, "ids": [...]}."""
        if kwargs.pop("partial_update", False):
            raise NotSupportedError("upsert(partial_update=True): an upsert must carry every "
                                    "field")
        _no_extra("upsert", kwargs)
        r = self._write("Upsert", collection_name, data, partition_name, timeout, False)
        if r is None:
            return {"upsert_count": 0, "ids": []}
        return {"upsert_count": r.upsert_cnt, "ids": _ids_list(r.IDs)}

    def _ids_expr(self, desc, ids):
        pk = self._pk_of(desc)
        ids = [ids] if isinstance(ids, (int, str, np.integer)) else list(ids)
        vals = [json.dumps(str(i)) if pk["type"] == DataType.VARCHAR else str(int(i))
                for i in ids]
        return f'{pk["name"]} in [{", ".join(vals)}]'

    def delete(self, collection_name, ids=None, timeout=None, filter=None, partition_name=None,
               **kwargs):
        """By ids or by a filter expression: {"delete_count": n}."""
        _no_extra("delete", kwargs)
        if (ids is None) == (not filter):
            raise ParamError("delete: pass ids or filter (exactly one of them)")

        def delete(expr):
            return self._call("Delete", _milvus.DeleteRequest(
                db_name=self._db_name, collection_name=collection_name,
                partition_name=partition_name or "", expr=expr), _milvus.MutationResult, timeout)
        if ids is None:
            r = delete(filter)
        else:
            r = self._with_schema(collection_name, timeout,
                                  lambda desc: delete(self._ids_expr(desc, ids)))
        return {"delete_count": r.delete_cnt}

    def search(self, collection_name, data, filter="", limit=10, output_fields=None,
               search_params=None, timeout=None, partition_names=None, anns_field=None,
               **kwargs):
        """Nearest neighbours of each query vector: a list per query of
        {"id", "distance", "entity": {output fields}}. distance: squared
        L2 distance (smaller is closer) or IP / cosine similarity (larger)."""
        for bad in ("ranker", "search_by_ids"):
            if kwargs.get(bad) is not None:
                raise NotSupportedError(f"search({bad}=...) is not supported by Strata")
        q = np.asarray(data, dtype=np.float32)
        if q.ndim == 1:
            q = q.reshape(1, -1)
        if q.ndim != 2 or q.shape[0] == 0:
            raise ParamError("data must be a list of query vectors (or an (n, dim) array)")
        group = _common.PlaceholderGroup()
        ph = group.placeholders.add(tag="$0", type=_common.FloatVector)
        ph.values.extend(row.tobytes() for row in np.ascontiguousarray(q))
        req = _milvus.SearchRequest(db_name=self._db_name, collection_name=collection_name,
                                    dsl=filter or "", dsl_type=_common.BoolExprV1,
                                    placeholder_group=group.SerializeToString(), nq=q.shape[0])
        req.partition_names.extend(partition_names or [])
        req.output_fields.extend(output_fields or [])
        self._search_params(req, limit, search_params, anns_field, kwargs)
        r = self._call("Search", req, _milvus.SearchResults, timeout)
        return self._hits(r.results, output_fields)

    def _search_params(self, req, limit, search_params, anns_field, kwargs):
        sp = dict(search_params or {})
        params = dict(sp.pop("params", None) or {})
        metric = sp.pop("metric_type", None)
        offset = kwargs.pop("offset", sp.pop("offset", 0))
        rd = kwargs.pop("round_decimal", sp.pop("round_decimal", -1))
        if sp.pop("ignore_growing", kwargs.pop("ignore_growing", False)):
            raise NotSupportedError("ignore_growing: Strata searches every segment")
        params.update(sp)  # pymilvus reads other keys (ef, nprobe, radius...) as params
        # pymilvus's keyword forms of grouping and range search travel as
        # top-level search params, as pymilvus sends them.
        grouping = []
        for k in ("group_by_field", "group_size", "strict_group_size", "radius", "range_filter"):
            v = kwargs.pop(k, None)
            if v is not None:
                grouping.append((k, json.dumps(v) if not isinstance(v, str) else v))
        level = _consistency(kwargs.pop("consistency_level", None))
        _no_extra("search", kwargs)
        if level is not None:
            req.consistency_level = level
        else:
            req.use_default_consistency = True
        kv = [("topk", int(limit)), ("round_decimal", int(rd)), ("offset", int(offset)),
              ("params", json.dumps(params))]
        kv += grouping
        if anns_field:
            kv.append(("anns_field", anns_field))
        if metric:
            kv.append(("metric_type", metric))
        for k, v in kv:
            req.search_params.add(key=k, value=str(v))

    @staticmethod
    def _hits(res, output_fields):
        ids = _ids_list(res.ids)
        wanted = set(output_fields or [])
        ents = _entities(res.fields_data, len(ids), wanted) if wanted else [{}] * len(ids)
        out, pos = [], 0
        for n in res.topks:
            out.append([{"id": ids[i], "distance": float(res.scores[i]), "entity": ents[i]}
                        for i in range(pos, pos + n)])
            pos += n
        return out

    def query(self, collection_name, filter="", output_fields=None, timeout=None, ids=None,
              partition_names=None, **kwargs):
        """Rows matching a filter expression (or with these ids): a list of
        dicts with the primary key and output_fields. limit=/offset= page."""
        if ids is not None and filter:
            raise ParamError("query: pass filter or ids, not both")
        req = _milvus.QueryRequest(db_name=self._db_name, collection_name=collection_name)
        req.output_fields.extend(output_fields or [])
        req.partition_names.extend(partition_names or [])
        for k in ("limit", "offset"):
            if k in kwargs:
                req.query_params.add(key=k, value=str(int(kwargs.pop(k))))
        level = _consistency(kwargs.pop("consistency_level", None))
        if level is not None:
            req.consistency_level = level
        else:
            req.use_default_consistency = True
        _no_extra("query", kwargs)

        def query(expr):
            req.expr = expr or ""
            return self._call("Query", req, _milvus.QueryResults, timeout)
        if ids is None:
            r = query(filter)
        else:
            r = self._with_schema(collection_name, timeout,
                                  lambda desc: query(self._ids_expr(desc, ids)))
        n = max((_rows_in(fd) for fd in r.fields_data), default=0)
        return _entities(r.fields_data, n)

    def get(self, collection_name, ids, output_fields=None, timeout=None, partition_names=None,
            **kwargs):
        """The rows with these primary keys (unknown ones skipped)."""
        _no_extra("get", kwargs)
        if isinstance(ids, (list, tuple, np.ndarray)) and len(ids) == 0:
            return []
        return self.query(collection_name, ids=ids, output_fields=output_fields,
                          timeout=timeout, partition_names=partition_names)

    def flush(self, collection_name, timeout=None, **kwargs):
        _no_extra("flush", kwargs)
        req = _milvus.FlushRequest(db_name=self._db_name)
        req.collection_names.append(collection_name)
        self._call("Flush", req, _milvus.FlushResponse, timeout)

    # -- partitions

    def create_partition(self, collection_name, partition_name, timeout=None, **kwargs):
        _no_extra("create_partition", kwargs)
        self._call("CreatePartition", _milvus.CreatePartitionRequest(
            db_name=self._db_name, collection_name=collection_name,
            partition_name=partition_name), _common.Status, timeout)

    def drop_partition(self, collection_name, partition_name, timeout=None, **kwargs):
        _no_extra("drop_partition", kwargs)
        self._call("DropPartition", _milvus.DropPartitionRequest(
            db_name=self._db_name, collection_name=collection_name,
            partition_name=partition_name), _common.Status, timeout)

    def has_partition(self, collection_name, partition_name, timeout=None, **kwargs):
        _no_extra("has_partition", kwargs)
        return self._call("HasPartition", _milvus.HasPartitionRequest(
            db_name=self._db_name, collection_name=collection_name,
            partition_name=partition_name), _milvus.BoolResponse, timeout).value

    def list_partitions(self, collection_name, timeout=None, **kwargs):
        _no_extra("list_partitions", kwargs)
        return list(self._call("ShowPartitions", _milvus.ShowPartitionsRequest(
            db_name=self._db_name, collection_name=collection_name),
            _milvus.ShowPartitionsResponse, timeout).partition_names)

    def load_partitions(self, collection_name, partition_names, timeout=None, **kwargs):
        _no_extra("load_partitions", kwargs)
        req = _milvus.LoadPartitionsRequest(db_name=self._db_name,
                                            collection_name=collection_name)
        req.partition_names.extend([partition_names] if isinstance(partition_names, str)
                                   else partition_names)
        self._call("LoadPartitions", req, _common.Status, timeout)

    def release_partitions(self, collection_name, partition_names, timeout=None, **kwargs):
        _no_extra("release_partitions", kwargs)
        req = _milvus.ReleasePartitionsRequest(db_name=self._db_name,
                                               collection_name=collection_name)
        req.partition_names.extend([partition_names] if isinstance(partition_names, str)
                                   else partition_names)
        self._call("ReleasePartitions", req, _common.Status, timeout)

    def get_partition_stats(self, collection_name, partition_name, timeout=None, **kwargs):
        _no_extra("get_partition_stats", kwargs)
        r = self._call("GetPartitionStatistics", _milvus.GetPartitionStatisticsRequest(
            db_name=self._db_name, collection_name=collection_name,
            partition_name=partition_name), _milvus.GetPartitionStatisticsResponse, timeout)
        return {k: int(v) if v.isdigit() else v for k, v in _kv(r.stats).items()}

    # -- aliases

    def create_alias(self, collection_name, alias, timeout=None, **kwargs):
        _no_extra("create_alias", kwargs)
        self._call("CreateAlias", _milvus.CreateAliasRequest(
            db_name=self._db_name, collection_name=collection_name, alias=alias),
            _common.Status, timeout)

    def drop_alias(self, alias, timeout=None, **kwargs):
        _no_extra("drop_alias", kwargs)
        self._schemas.pop(alias, None)
        self._call("DropAlias", _milvus.DropAliasRequest(db_name=self._db_name, alias=alias),
                   _common.Status, timeout)

    def alter_alias(self, collection_name, alias, timeout=None, **kwargs):
        _no_extra("alter_alias", kwargs)
        self._schemas.pop(alias, None)
        self._call("AlterAlias", _milvus.AlterAliasRequest(
            db_name=self._db_name, collection_name=collection_name, alias=alias),
            _common.Status, timeout)

    def describe_alias(self, alias, timeout=None, **kwargs):
        _no_extra("describe_alias", kwargs)
        r = self._call("DescribeAlias", _milvus.DescribeAliasRequest(
            db_name=self._db_name, alias=alias), _milvus.DescribeAliasResponse, timeout)
        return {"alias": r.alias, "collection_name": r.collection, "db_name": r.db_name}

    def list_aliases(self, collection_name="", timeout=None, **kwargs):
        _no_extra("list_aliases", kwargs)
        r = self._call("ListAliases", _milvus.ListAliasesRequest(
            db_name=self._db_name, collection_name=collection_name),
            _milvus.ListAliasesResponse, timeout)
        return {"aliases": list(r.aliases), "collection_name": r.collection_name,
                "db_name": r.db_name}

    # -- ingest

    def insert_batches(self, collection_name, rows_or_texts, embed, batch_size=64,
                       concurrency=2, **kwargs):
        """strata.vector.insert_batches into this client's collection."""
        from .vector import insert_batches
        return insert_batches(self, collection_name, rows_or_texts, embed,
                              batch_size=batch_size, concurrency=concurrency, **kwargs)

    def __repr__(self):
        return f"<strata.vector.MilvusClient {self.uri!r}>"
