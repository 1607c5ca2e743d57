"""Strata's data path for Python: object stores, the tiered cache, the shard
warmer, checkpoints, and PyTorch datasets over shards (strata/data.py).

The I/O runs in C++ (the `_strata` extension) with the GIL released, so Python
threads and DataLoader workers overlap their reads. See docs/datapath.md.

    import strata
    store = strata.ObjectStore("s3://data/imagenet?endpoint=http://10.0.0.5:9000")
    with store.open("shard-00000.tar") as f:   # file-like, seekable
        header = f.read(512)
"""

import io
import os
import random

from ._strata import (  # noqa: F401  (re-exported)
    AlreadyExistsError,
    CachedObjectStore,
    CheckpointFile,
    CheckpointInfo,
    CheckpointManager,
    Error,
    FaultInjectionStore,
    InvalidArgumentError,
    LoadedCheckpoint,
    NotFoundError,
    NotSupportedError,
    ObjectInfo,
    ObjectStore,
    PreconditionFailedError,
    WarmShard,
    epoch_order,
    parse_size,
    set_log_level,
)
from . import _strata

__all__ = [
    "ObjectStore", "CachedObjectStore", "FaultInjectionStore", "ObjectInfo",
    "ObjectReader", "ObjectWriter", "Warmer", "WarmShard", "CheckpointManager",
    "CheckpointInfo", "CheckpointFile", "LoadedCheckpoint", "ShardDataset",
    "shard_order", "split_shards", "epoch_order", "parse_size", "Error",
    "NotFoundError", "InvalidArgumentError", "AlreadyExistsError", "NotSupportedError",
    "PreconditionFailedError", "set_log_level", "IndexedShardDataset", "ShardLoader",
    "TarIndex", "tar_samples", "group_samples", "split_key", "buffer_shuffle", "ShardedCheckpoint",
]


# ---------------------------------------------------------------------------
# File objects

class ObjectReader(io.RawIOBase):
    """A read-only, seekable raw file over one version of one object (the one
    current when it was opened: a rewrite meanwhile makes reads fail with
    PreconditionFailedError rather than mix versions). Works with torch.load,
    io.BufferedReader, zipfile, tarfile, pickle. Reads go through a chunk
    buffer (or the cache's blocks and readahead for a CachedObjectStore)."""

    def __init__(self, core, name):
        super().__init__()
        self._core = core
        self._pos = 0
        self.name = name

    @property
    def info(self):
        return self._core.info

    @property
    def size(self):
        return self._core.size

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, b):
        self._checkClosed()
        n = self._core.readinto_at(self._pos, b)
        self._pos += n
        return n

    def read(self, size=-1):
        self._checkClosed()
        if size is None or size < 0:
            size = max(self._core.size - self._pos, 0)
        buf = bytearray(min(size, max(self._core.size - self._pos, 0)))
        n = self.readinto(buf) if buf else 0
        del buf[n:]
        return bytes(buf)

    def readall(self):
        return self.read(-1)

    def seek(self, offset, whence=io.SEEK_SET):
        self._checkClosed()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._core.size + offset
        else:
            raise ValueError(f"invalid whence ({whence})")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def tell(self):
        self._checkClosed()
        return self._pos

    def __repr__(self):
        return f"<strata.ObjectReader name={self.name!r} size={self.size}>"


class ObjectWriter(io.RawIOBase):
    """A write-only stream into one object: parts of part_size bytes are
    uploaded as they fill (multipart); close() commits the object (a single
    PUT when it fit in one part). An exception inside a `with` block, or
    abort(), aborts the upload: no object is left behind."""

    def __init__(self, core, name):
        super().__init__()
        self._core = core
        self.name = name
        self.info = None

    def writable(self):
        return True

    def write(self, b):
        self._checkClosed()
        return self._core.write(b)

    def tell(self):
        return self._core.written

    def abort(self):
        if not self.closed:
            self._core.abort()
            super().close()

    def close(self):
        if self.closed:
            return
        try:
            self.info = self._core.close()
        finally:
            super().close()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
            return False
        self.close()
        return False

    def __repr__(self):
        return f"<strata.ObjectWriter name={self.name!r} written={self._core.written}>"


def _open(self, key, mode="rb", buffer_size=8 << 20, part_size=8 << 20, content_type=""):
    """open(key, "rb") -> ObjectReader (seekable), open(key, "wb") -> ObjectWriter.
    buffer_size: the reader's chunk (ranged GET) size; part_size: the writer's
    multipart part size (>= 5 MiB)."""
    if mode in ("rb", "r"):
        return ObjectReader(self._open_reader(key, buffer_size), key)
    if mode in ("wb", "w"):
        return ObjectWriter(self._open_writer(key, part_size, content_type), key)
    raise ValueError(f"mode must be 'rb' or 'wb' (binary only), not {mode!r}")


ObjectStore.open = _open


# ---------------------------------------------------------------------------
# Warmer

class Warmer:
    """Keeps the next `lookahead` shards of a known order warm in a
    CachedObjectStore and yields each (a WarmShard: .key, .position, .data,
    .open()) as soon as it is ready, in order.

        cache = strata.CachedObjectStore(store, ram_size="2G", policy="priority")
        for shard in strata.Warmer(cache, keys, lookahead=3, epochs=2, seed=7):
            consume(shard.key, shard.data)

    With policy="priority" the cache evicts with the warmer's knowledge of the
    future (consumed shards first, then the furthest next use). epochs/seed:
    each epoch a deterministic permutation (seed 0 keeps the list order).
    state_file makes the position restart-safe (at-least-once)."""

    def __init__(self, store, shards, lookahead=3, concurrency=2, epochs=1, seed=0,
                 state_file=""):
        if isinstance(shards, str):
            raise TypeError("shards must be a list of keys, not a string")
        order = epoch_order(list(shards), epochs, seed) if (epochs != 1 or seed) else list(shards)
        self.order = order
        self._w = _strata._Warmer(store, order, lookahead, concurrency, os.fspath(state_file))

    def __iter__(self):
        return self

    def __next__(self):
        s = self._w.next()
        if s is None:
            raise StopIteration
        return s

    def __len__(self):
        return len(self._w)

    @property
    def position(self):
        return self._w.position

    def stats(self):
        return self._w.stats()

    def close(self):
        self._w.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _shard_open(self):
    """A seekable file over the shard's pinned version (reads hit the cache)."""
    return ObjectReader(self._reader(), self.key)


WarmShard.open = _shard_open


# ---------------------------------------------------------------------------
# Checkpoints with PyTorch

def _save_state_dict(self, step, state_dict, name="state.pt"):
    """torch.save(state_dict) as file `name` of checkpoint `step`. Returns once
    the checkpoint is durable on local disk (the time the training loop
    waits); the upload continues in the background (wait() to block on it).
    The state is serialized in memory and written once (no temp file)."""
    import torch
    buf = io.BytesIO()
    torch.save(state_dict, buf)
    self.save(step, {name: buf.getbuffer()})


def _load_state_dict(self, step="latest", map_location=None, name="state.pt", source="auto",
                     weights_only=False):
    """torch.load of file `name` of checkpoint `step` ("latest" = the newest
    local or remote): the local copy when complete and verified, else a
    parallel download first."""
    import torch
    ck = self.load(step, source=source)
    kwargs = {"map_location": map_location}
    if weights_only:
        kwargs["weights_only"] = True
    with open(ck.path(name), "rb") as f:
        return torch.load(f, **kwargs)


CheckpointManager.save_state_dict = _save_state_dict
CheckpointManager.load_state_dict = _load_state_dict


# ---------------------------------------------------------------------------
# Sharding and the PyTorch dataset

def shard_order(shards, epoch, seed=0, shuffle=True):
    """The global order of shards for one epoch: a permutation determined by
    (seed, epoch) only, so every rank and worker computes the same one."""
    order = list(shards)
    if shuffle:
        random.Random(seed * 1_000_003 + epoch).shuffle(order)
    return order


def split_shards(order, rank=0, world_size=1, worker=0, num_workers=1):
    """This (rank, worker)'s part of an epoch order: rank r of W takes every
    W-th shard from r, and worker w of K every K-th of those from w. The parts
    are disjoint and together cover the order."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in [0, {world_size})")
    if not 0 <= worker < num_workers:
        raise ValueError(f"worker {worker} is not in [0, {num_workers})")
    return list(order)[rank::world_size][worker::num_workers]


_DATA_NAMES = ("ShardDataset", "IndexedShardDataset", "ShardLoader", "TarIndex", "tar_samples",
               "group_samples", "split_key", "buffer_shuffle")


def __getattr__(name):
    if name in ("vector", "gpu"):  # strata.vector / strata.gpu without importing them first
        import importlib
        return importlib.import_module(f".{name}", __name__)
    # The data path (strata/data.py) imports torch: loaded on first use only.
    if name in _DATA_NAMES:
        from . import data
        return getattr(data, name)
    if name == "ShardedCheckpoint":
        from .sharded_checkpoint import ShardedCheckpoint
        return ShardedCheckpoint
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
