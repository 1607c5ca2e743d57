"""Strata's vector database from Python.

Two ways in (docs/python.md, "Vector database"):

* ``Collection``: the engine directly, in-process, over a directory. Batch
  calls take numpy arrays and run in C++ with the GIL released::

      from strata.vector import Collection
      col = Collection("./vecs", dim=128, metric="cosine")
      col.add(ids, vectors, payloads)              # vectors: float32 (n, 128)
      ids, scores = col.search(queries, k=10, filter='lang == "en"')

* ``MilvusClient``: pymilvus's ``MilvusClient`` methods and return shapes,
  embedded (``MilvusClient("./vectors.db")``: a directory, in-process, as
  Milvus Lite) or remote (``MilvusClient(uri="http://host:19530")``: a
  ``strata server``'s Milvus port). Both speak the Milvus protocol's
  messages (``strata._milvus_pb``) to the same service code, so they answer
  alike. ``insert_batches`` is an ingest pipeline for embeddings.
"""

import concurrent.futures as _futures
import hashlib
import json
import warnings

import numpy as np

from . import _strata

__all__ = [
    "Collection", "CopyWarning", "MilvusClient", "MilvusException", "ParamError",
    "NotSupportedError", "DataType", "LoadState", "CollectionSchema", "FieldSchema",
    "IndexParams", "insert_batches", "row_id",
]


class CopyWarning(UserWarning):
    """An array passed to a batch call had to be copied (not float32, or not
    C-contiguous). Pass ``np.ascontiguousarray(x, dtype=np.float32)`` once to
    avoid the copy on every call."""


def _as_matrix(x, what, dim=None):
    """x as a float32 C-contiguous (n, d) array: the same memory when it is
    one already (read in place by C++), else one copy with a CopyWarning."""
    a = x if isinstance(x, np.ndarray) else np.asarray(x, dtype=np.float32)
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2:
        raise ValueError(f"{what} must be a 2-D array (n, dim), got {a.ndim} dimensions")
    if a.dtype != np.float32 or not a.flags.c_contiguous:
        if isinstance(x, np.ndarray):
            why = f"dtype {a.dtype}" if a.dtype != np.float32 else "not C-contiguous"
            warnings.warn(f"{what}: copying a {a.shape[0]}x{a.shape[1]} array ({why}); pass "
                          "float32 C-contiguous arrays to avoid the copy",
                          CopyWarning, stacklevel=3)
        a = np.ascontiguousarray(a, dtype=np.float32)
    if dim is not None and a.shape[1] != dim:
        raise ValueError(f"{what} have dimension {a.shape[1]}, the collection's is {dim}")
    return a


def _as_ids(ids, n=None):
    a = np.asarray(ids)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1:
        raise ValueError("ids must be a 1-D sequence of integers")
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"ids must be integers (got dtype {a.dtype}); the engine's ids are "
                        "unsigned 64-bit numbers")
    if a.size and a.dtype.kind == "i" and int(a.min()) < 0:
        raise ValueError("ids must not be negative")
    if n is not None and a.size != n:
        raise ValueError(f"{a.size} ids for {n} vectors: pass one id per vector")
    return np.ascontiguousarray(a, dtype=np.uint64)


def _filter_text(f):
    if f is None:
        return None
    if isinstance(f, dict):
        return json.dumps(f)
    if isinstance(f, str):
        return f
    raise TypeError("filter must be a Milvus-style expression (str) or a Qdrant filter (dict)")


class Collection:
    """One collection of the vector engine in a directory: vectors of one
    dimension, a JSON payload per point, filtered k-NN search.

    Collection(path) opens an existing collection; with ``dim`` it creates
    one when the directory does not hold one yet. ``metric``: "cosine", "l2"
    or "ip"; ``index``: "hnsw" (default), "flat", "ivf_flat", "ivf_pq",
    "diskann", with their parameters in ``index_params`` (m,
    ef_construction, sq8, nlist, pq_m, diskann_r, diskann_l, seed).
    ``payload_schema`` ({"lang": "keyword", "year": "integer"}) types payload
    keys and indexes them for filters.

    Scores are the engine's: Euclidean distance for l2 (smaller is closer),
    the dot product / cosine similarity for ip / cosine (larger is closer).
    """

    def __init__(self, path, dim=None, metric="cosine", index="hnsw", index_params=None,
                 payload_schema=None, name=None, segment_rows=0):
        import os
        path = os.fspath(path)
        exists = os.path.exists(os.path.join(path, "config.json"))
        if exists:
            self._c = _strata._VectorCollection.open(path)
            info = self._c.info()
            if dim is not None and dim != info["dim"]:
                self._c.close()
                raise ValueError(f"{path} holds a collection of dimension {info['dim']}, not {dim}")
        elif dim is None:
            raise FileNotFoundError(f"{path} holds no collection: pass dim= to create one")
        else:
            self._c = _strata._VectorCollection.create(
                path, name or os.path.basename(os.path.abspath(path)), int(dim), metric, index,
                dict(index_params or {}), dict(payload_schema or {}), int(segment_rows))
        self.path = path
        self.dim = self._c.info()["dim"]

    def add(self, ids, vectors, payloads=None, wait=True):
        """Inserts or replaces points (an id added again replaces the point).
        vectors: float32 (n, dim), read in place; payloads: one dict (or
        None) per point. Returns the number of points written. wait=True
        returns once the write-ahead log is fsynced."""
        v = _as_matrix(vectors, "vectors", self.dim)
        i = _as_ids(ids, v.shape[0])
        p = None
        if payloads is not None:
            payloads = list(payloads)
            if len(payloads) != v.shape[0]:
                raise ValueError(f"{len(payloads)} payloads for {v.shape[0]} vectors")
            p = ["" if x is None else json.dumps(x) for x in payloads]
        return self._c.upsert(i, v, p, bool(wait))

    upsert = add

    def search(self, queries, k=10, filter=None, ef=0, nprobe=0, exact=False):
        """The k nearest points of each query: (ids int64 (n, k), scores
        float32 (n, k)), closest first; a row with fewer than k matches is
        padded with id -1 and score NaN. queries: float32 (n, dim) (or one
        vector). filter: a Milvus-style expression ('lang == "en" and year >
        2020') or a Qdrant filter dict ({"must": [...]})."""
        q = _as_matrix(queries, "queries", self.dim)
        if int(k) < 1:
            raise ValueError("k must be at least 1")
        return self._c.search(q, int(k), _filter_text(filter), int(ef), int(nprobe), bool(exact))

    def get(self, ids, with_vectors=False):
        """The points with these ids (unknown ids skipped), as dicts
        {"id", "payload"[, "vector"]}."""
        out = []
        for pid, payload, vec in self._c.get(_as_ids(ids), bool(with_vectors)):
            d = {"id": int(pid), "payload": json.loads(payload) if payload else {}}
            if with_vectors:
                d["vector"] = vec
            out.append(d)
        return out

    def delete(self, ids, wait=True):
        """Deletes points by id; returns how many existed."""
        return self._c.delete(_as_ids(ids), bool(wait))

    def count(self, filter=None):
        return self._c.count(_filter_text(filter))

    def __len__(self):
        return self._c.count(None)

    def info(self):
        return self._c.info()

    def compact(self, seal_growing=True):
        """Rewrites segments without their deleted rows; with seal_growing
        the growing segment is sealed and indexed too. Returns when done."""
        self._c.compact(bool(seal_growing))

    def wait_idle(self):
        self._c.wait_idle()

    def close(self):
        self._c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        i = self._c.info()
        return (f"<strata.vector.Collection {self.path!r} dim={i['dim']} metric={i['metric']} "
                f"index={i['index']} points={i['points']}>")


# ---------------------------------------------------------------------------
# MilvusClient (pymilvus's names and shapes)

from ._milvus_client import (  # noqa: E402,F401  (re-exported)
    CollectionSchema, DataType, FieldSchema, IndexParams, LoadState, MilvusClient,
    MilvusException, NotSupportedError, ParamError,
)


# ---------------------------------------------------------------------------
# Ingest pipeline

def row_id(row, id_field="id"):
    """The deterministic id of a row: row[id_field] when the row has one,
    else the first 63 bits of the BLAKE2b hash of the text (a str row) or of
    the row's canonical JSON. The same input always gets the same id, so a
    rerun upserts what it wrote before instead of adding copies."""
    if isinstance(row, dict):
        if id_field in row:
            return row[id_field]
        data = json.dumps(row, sort_keys=True, separators=(",", ":"), default=str)
    elif isinstance(row, str):
        data = row
    else:
        raise TypeError(f"rows must be str or dict, not {type(row).__name__}")
    h = hashlib.blake2b(data.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(h, "big") >> 1


def insert_batches(client, collection_name, rows_or_texts, embed, batch_size=64, concurrency=2,
                   id_field="id", vector_field="vector", text_field="text", resume=True,
                   progress=True, partition_name=""):
    """Embeds and writes rows in batches: ``embed(batch)`` (the batch's texts,
    or its rows when they are dicts) returns one vector per item; up to
    ``concurrency`` batches are embedded in threads while earlier ones are
    written. Every row gets a deterministic id (row_id) and is upserted, so
    running it again after a crash (even kill -9) leaves no duplicates and no
    gaps; with resume=True, rows already stored are not embedded again.

    client: a MilvusClient (collection_name names the collection) or a
    strata.vector.Collection (collection_name is ignored and must be None).
    A str row becomes {id_field: id, text_field: text, vector_field: v};
    a dict row gets id_field (if missing) and vector_field added.
    Returns {"rows": rows seen, "written": rows upserted, "skipped": rows
    already present, "batches": batches written}. A tqdm progress bar is shown
    with progress=True (when tqdm is installed)."""
    if batch_size < 1 or concurrency < 1:
        raise ValueError("batch_size and concurrency must be at least 1")
    is_coll = isinstance(client, Collection)
    if is_coll and collection_name is not None:
        raise ValueError("collection_name must be None when writing to a Collection")
    total = len(rows_or_texts) if hasattr(rows_or_texts, "__len__") else None
    bar = _progress(total, progress)
    stats = {"rows": 0, "written": 0, "skipped": 0, "batches": 0}

    def missing(ids):
        if not resume:
            return set(ids)
        if is_coll:
            have = {d["id"] for d in client.get(ids)}
        else:
            have = {d[id_field] for d in client.get(collection_name, ids=ids,
                                                     output_fields=[id_field])}
        return {i for i in ids if i not in have}

    def work(batch):
        ids = [row_id(r, id_field) for r in batch]
        todo = missing(ids)
        keep = [(i, r) for i, r in zip(ids, batch) if i in todo]
        if not keep:
            return ids, [], None
        vecs = embed([r for _, r in keep])
        return ids, keep, np.asarray(vecs, dtype=np.float32)

    def write(result):
        ids, keep, vecs = result
        if keep:
            if vecs.shape[0] != len(keep):
                raise ValueError(f"embed returned {vecs.shape[0]} vectors for {len(keep)} rows")
            if is_coll:
                payloads = [dict(r) if isinstance(r, dict) else {text_field: r} for _, r in keep]
                client.add([i for i, _ in keep], vecs, payloads)
            else:
                data = []
                for (i, r), v in zip(keep, vecs):
                    row = dict(r) if isinstance(r, dict) else {text_field: r}
                    row[id_field] = i
                    row[vector_field] = v
                    data.append(row)
                client.upsert(collection_name, data, partition_name=partition_name)
        stats["rows"] += len(ids)
        stats["written"] += len(keep)
        stats["skipped"] += len(ids) - len(keep)
        stats["batches"] += 1
        if bar is not None:
            bar.update(len(ids))

    pending = []
    try:
        with _futures.ThreadPoolExecutor(max_workers=concurrency,
                                         thread_name_prefix="strata-embed") as pool:
            for batch in _batches(rows_or_texts, batch_size):
                pending.append(pool.submit(work, batch))
                while len(pending) > concurrency:  # in order: write the oldest
                    write(pending.pop(0).result())
            while pending:
                write(pending.pop(0).result())
    finally:
        for f in pending:
            f.cancel()
        if bar is not None:
            bar.close()
    return stats


def _batches(rows, n):
    batch = []
    for r in rows:
        batch.append(r)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


def _progress(total, enabled):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="rows", desc="insert_batches")

