"""The PyTorch data path: ShardDataset (an IterableDataset over shards, with
WebDataset-style tar samples, a sample-level shuffle buffer and exact
mid-epoch resume), IndexedShardDataset (map-style, random access by global
sample index) and ShardLoader (a DataLoader that can say what it consumed).

Imported on first use of one of these names (strata.__getattr__), so that
`import strata` does not import torch. See docs/python.md, "Data path".

Sample numbering. The shards are numbered in the order given (from_prefix:
ascending by key) and the samples of a shard in tar order; sample i of the
dataset is the i-th in that order. Identities never depend on the world size,
which is what lets a run resume on a different number of ranks.

The order of an epoch. Generation 0 of epoch E: the shards are permuted by
(seed, E) (shard_order), split over ranks and DataLoader workers
(split_shards); each (rank, worker) "stream" reads its shards in order and
passes its samples through a shuffle buffer seeded by (seed, E, generation,
rank, worker). Because the buffer's choices depend only on the seed and the
arrival order, the whole sequence of sample ids of every stream can be
computed from the tar index alone, without reading any data. A state_dict
records how many samples each stream handed out; load_state_dict makes the
next iteration a new generation over exactly the samples no stream handed out,
split over the new run's ranks and workers (the world size may differ).
"""

import bisect
import concurrent.futures
import hashlib
import json
import os
import random
import re
import tarfile
import threading

from . import (CachedObjectStore, NotFoundError, ObjectStore, Warmer, shard_order,
               split_shards)

try:
    from torch.utils.data import Dataset as _MapBase
    from torch.utils.data import IterableDataset as _IterBase
except ImportError:  # the datasets still work as plain Python iterables / sequences
    _MapBase = _IterBase = object

STATE_FORMAT = "strata.ShardDataset/1"

# webdataset's split of a member name into (key, extension): the key is the
# path up to the first dot of the basename, the extension everything after it.
_KEY_RE = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")


def split_key(name):
    """("dir/000123", "seg.png") for "dir/000123.seg.png"; (None, None) for a
    name whose basename has no dot (such members are not part of a sample)."""
    m = _KEY_RE.match(name)
    return (m.group(1), m.group(2)) if m else (None, None)


def _is_meta(name):
    # webdataset skips top-level "__name__" members (archive metadata).
    return "/" not in name and name.startswith("__") and name.endswith("__")


def group_samples(members, url=None):
    """Groups (member name, value) pairs, in archive order, into sample dicts
    {"__key__": key, "__url__": url, ext: value, ...}: consecutive members with
    the same key form one sample; extensions are lower-cased. Two members with
    the same key and extension in one sample are an error (ValueError)."""
    current = None
    for name, value in members:
        key, ext = split_key(name)
        if key is None:
            continue
        ext = ext.lower()
        if current is None or key != current["__key__"]:
            if current is not None:
                yield current
            current = {"__key__": key, "__url__": url}
        if ext in current:
            raise ValueError(
                f"{url}: member {name!r}: sample {key!r} already has a {ext!r} member; the "
                f"members of one sample need distinct extensions (rename or re-shard the file)")
        current[ext] = value
    if current is not None:
        yield current


def _stream_members(fileobj, url):
    try:
        with tarfile.open(fileobj=fileobj, mode="r|*") as tf:
            for m in tf:
                if m.isreg() and not _is_meta(m.name):
                    yield m.name, tf.extractfile(m).read()
    except tarfile.TarError as e:
        raise ValueError(f"{url}: not a readable tar archive ({e})") from e


def tar_samples(fileobj, url=None):
    """The samples of one tar archive read as a stream (no seeks; gzip and
    other compressions tarfile knows are detected), grouped as webdataset
    groups them: see group_samples."""
    return group_samples(_stream_members(fileobj, url), url)


def buffer_shuffle(items, size, rng):
    """A shuffle buffer of `size` items: fills up, then each new item takes
    the place of a uniformly chosen one, which is yielded; the rest is emptied
    in random order at the end. A permutation of `items`, determined by rng's
    seed and the number of items only (not by their values)."""
    if size <= 1:
        yield from items
        return
    buf = []
    for item in items:
        if len(buf) < size:
            buf.append(item)
            continue
        i = rng.randrange(size)
        out, buf[i] = buf[i], item
        yield out
    rng.shuffle(buf)
    yield from buf


def _stream_rng(seed, epoch, generation, rank, worker):
    # A string seed goes through SHA-512: the same in every process (no hash randomisation).
    return random.Random(f"strata/{seed}/{epoch}/{generation}/{rank}/{worker}")


# ---------------------------------------------------------------------------
# The tar index: member offsets from the headers, cached per (store, key, etag)

_index_memo = {}
_index_lock = threading.Lock()


def _store_id(url):
    # The URL without its query (credentials) names the store in cache keys.
    return url.split("?", 1)[0]


def _read_tar_index(store, key):
    """[(sample key, [(ext, data offset, size), ...]), ...] from the headers of
    an uncompressed tar (seeks over the data; 1 MiB ranged reads)."""
    with store.open(key, buffer_size=1 << 20) as f:
        etag = f.info.etag
        try:
            with tarfile.open(fileobj=f, mode="r:") as tf:
                members = [(m.name, (m.offset_data, m.size)) for m in tf
                           if m.isreg() and not _is_meta(m.name)]
        except tarfile.TarError as e:
            raise ValueError(f"{key}: random access needs an uncompressed tar archive ({e}); "
                             f"compressed shards can only be streamed") from e
    samples = [(s["__key__"], [(ext, v[0], v[1]) for ext, v in s.items()
                               if not ext.startswith("__")])
               for s in group_samples(members, key)]
    return etag, samples


class TarIndex:
    """The samples of a list of tar shards: counts, global numbering and where
    each member's bytes are. Built from the tar headers in parallel, kept in
    memory per process and, with index_dir, as JSON files keyed by the store,
    the key and the object's ETag (a rewritten shard is re-indexed)."""

    def __init__(self, store, shards, index_dir=None, concurrency=8):
        self.shards = list(shards)
        url = _store_id(store.url)

        def one(key):
            memo_key = (url, key, store.head(key).etag)
            with _index_lock:
                hit = _index_memo.get(memo_key)
            if hit is None and index_dir is not None:
                hit = self._load_file(index_dir, memo_key)
            if hit is None:
                etag, hit = _read_tar_index(store, key)
                memo_key = (url, key, etag)
                if index_dir is not None:
                    self._save_file(index_dir, memo_key, hit)
            with _index_lock:
                _index_memo[memo_key] = hit
            return hit

        workers = max(1, min(concurrency, len(self.shards)))
        with concurrent.futures.ThreadPoolExecutor(workers) as ex:
            self.samples = list(ex.map(one, self.shards))
        self.counts = [len(s) for s in self.samples]
        self.base = [0]
        for c in self.counts:
            self.base.append(self.base[-1] + c)

    @staticmethod
    def _path(index_dir, memo_key):
        h = hashlib.sha256("\0".join(memo_key).encode()).hexdigest()[:32]
        return os.path.join(os.fspath(index_dir), f"{h}.json")

    @classmethod
    def _load_file(cls, index_dir, memo_key):
        try:
            with open(cls._path(index_dir, memo_key)) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return None
        if doc.get("id") != list(memo_key):
            return None
        return [(k, [tuple(m) for m in ms]) for k, ms in doc["samples"]]

    @classmethod
    def _save_file(cls, index_dir, memo_key, samples):
        os.makedirs(os.fspath(index_dir), exist_ok=True)
        path = cls._path(index_dir, memo_key)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump({"id": list(memo_key), "samples": samples}, f)
        os.replace(tmp, path)

    def __len__(self):
        return self.base[-1]

    def locate(self, index):
        """(shard number, sample number in the shard) of global sample `index`."""
        if not 0 <= index < len(self):
            raise IndexError(f"sample {index} is out of range (the dataset has {len(self)})")
        s = bisect.bisect_right(self.base, index) - 1
        return s, index - self.base[s]


def _read_sample(store, key, entry):
    """Reads one indexed sample's members: one ranged GET over all of them
    when they are close together (the usual tar layout), else one per member."""
    name, members = entry
    sample = {"__key__": name, "__url__": key}
    if not members:
        return sample
    start = min(off for _, off, _ in members)
    end = max(off + size for _, off, size in members)
    if end - start <= sum(size for _, _, size in members) + 4096 * len(members):
        blob = store.get(key, offset=start, length=end - start)
        for ext, off, size in members:
            sample[ext] = blob[off - start:off - start + size]
    else:
        for ext, off, size in members:
            sample[ext] = store.get(key, offset=off, length=size)
    return sample


# ---------------------------------------------------------------------------
# Generations: which samples each (rank, worker) stream reads

class _Plan:
    """One generation of an epoch: the shards in epoch order and, after a
    resume, the samples of each still to be read (None: every sample)."""

    def __init__(self, order, remaining, generation):
        self.order = order
        self.remaining = remaining  # None or {shard number: sorted sample numbers}
        self.generation = generation

    def stream_shards(self, rank, world_size, worker, num_workers):
        """[(shard number, None | sample numbers to keep), ...] of one stream."""
        if self.remaining is None:
            return [(s, None) for s in split_shards(self.order, rank, world_size, worker,
                                                    num_workers)]
        live = [s for s in self.order if s in self.remaining]
        return [(s, self.remaining[s]) for s in split_shards(live, rank, world_size, worker,
                                                             num_workers)]

    def stream_len(self, counts, *stream):
        return sum(counts[s] if sel is None else len(sel)
                   for s, sel in self.stream_shards(*stream))

    def stream_ids(self, index, stream, shuffle_buffer, seed, epoch):
        """The global sample ids one stream hands out, in order."""
        rank, world_size, worker, num_workers = stream
        ids = []
        for s, sel in self.stream_shards(*stream):
            b = index.base[s]
            ids.extend(b + j for j in (range(index.counts[s]) if sel is None else sel))
        rng = _stream_rng(seed, epoch, self.generation, rank, worker)
        return list(buffer_shuffle(ids, shuffle_buffer, rng))


def _record_streams(record):
    w, k = record["world_size"], record["num_workers"]
    return [(r, w, i, k) for r in range(w) for i in range(k)]


def _replay(history, index, epoch_order, shuffle_buffer, seed, epoch):
    """The plan of the generation after `history` (records of what each stream
    of earlier generations handed out): every sample none of them did."""
    plan = _Plan(epoch_order(history[0]["world_size"]), None, 0)
    for g, record in enumerate(history):
        seen = set()
        for stream in _record_streams(record):
            n = record["consumed"].get(f"{stream[0]}:{stream[2]}", 0)
            ids = plan.stream_ids(index, stream, shuffle_buffer, seed, epoch)
            if n > len(ids):
                raise ValueError(
                    f"the state says rank {stream[0]} worker {stream[2]} handed out {n} samples "
                    f"in generation {g}, but its part has only {len(ids)}: the state_dict was "
                    f"saved for other shards or options")
            seen.update(ids[:n])
        remaining = {}
        for s in plan.order:
            keep = plan.remaining.get(s, ()) if plan.remaining is not None else range(index.counts[s])
            left = [j for j in keep if index.base[s] + j not in seen]
            if left:
                remaining[s] = left
        plan = _Plan(plan.order, remaining, g + 1)
    return plan


def _consumed_from_batches(lens, batches, batch_size, drop_last):
    """Samples of each worker in `batches` batches of a DataLoader over an
    IterableDataset: batches come from the workers in turn, and a worker whose
    part is exhausted drops out of the rotation (torch's in-order loader)."""
    b = max(1, int(batch_size or 1))
    nb = [(n // b) if drop_last else -(-n // b) for n in lens]
    consumed = [0] * len(lens)
    left, t = batches, 0
    while left > 0 and any(x > t for x in nb):
        for w, x in enumerate(nb):
            if x > t and left > 0:
                consumed[w] += min(b, lens[w] - t * b)
                left -= 1
        t += 1
    if left > 0:
        raise ValueError(f"{batches} batches consumed, but this rank's part of the epoch has only "
                         f"{batches - left} (batch_size={b}, drop_last={drop_last})")
    return consumed


def _list_shards(store, prefix, suffix):
    st = ObjectStore(store) if isinstance(store, str) else store
    keys = [info.key for info in st.list(prefix)
            if suffix is None or info.key.endswith(suffix)]
    if not keys:
        what = f"ending in {suffix!r} " if suffix is not None else ""
        raise NotFoundError(f"no objects {what}under prefix {prefix!r} of {_store_id(st.url)}; "
                            f"check the prefix, or pass suffix=None to take every object")
    return keys


_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz")


def _rank_world(rank, world_size):
    if rank is not None or world_size is not None:
        return int(rank or 0), int(world_size or 1)
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    return 0, 1


def _worker():
    try:
        from torch.utils.data import get_worker_info
        info = get_worker_info()
    except ImportError:
        info = None
    return (info.id, info.num_workers) if info is not None else (0, 1)


class _StoreHolder:
    """A store given as a URL or an ObjectStore; DataLoader workers (a fork
    or a spawn) reopen the URL instead of sharing the parent's object."""

    def _init_store(self, store):
        if isinstance(store, str):
            self._url, self._store = store, None
        else:
            self._url, self._store = store.url, store
        self._pid = os.getpid()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_store"] = None
        return state

    def _open_store(self):
        if self._store is None or os.getpid() != self._pid:
            self._store, self._pid = ObjectStore(self._url), os.getpid()
        return self._store


class ShardDataset(_StoreHolder, _IterBase):
    """A torch.utils.data.IterableDataset over object-store shards.

    Every epoch the shards are shuffled by (seed, epoch) (call set_epoch(e)
    before each epoch, as with DistributedSampler), split across ranks
    (torch.distributed when initialised, or rank/world_size) and then across
    DataLoader workers (get_worker_info()). Each rank-worker reads its shards
    in order through a Warmer that keeps `lookahead` shards ahead warm in a
    cache (RAM, plus a disk tier with cache_dir); lookahead=0 reads directly.

    format="tar" (the default when every key ends in .tar, .tar.gz or .tgz and
    there is no decode): WebDataset shards, yielded sample by sample as dicts
    {"__key__", "__url__", ext: bytes} (see group_samples). format="raw":
    decode(key, data) turns one shard's bytes into an iterable of samples;
    without decode each shard is yielded as (key, data).

    shuffle_buffer=N mixes samples through a buffer of N (seeded, the same
    every run for the same epoch). transform(sample) is applied last.
    state_dict()/load_state_dict() resume an epoch at the exact sample, also
    on a different number of ranks or workers (tar shards only: it needs the
    sample counts of the index). With drop_last=True every rank gets the same
    number of shards (the tail of an uneven split is dropped)."""

    def __init__(self, store, shards, shuffle=True, seed=0, lookahead=3, decode=None,
                 rank=None, world_size=None, cache_dir=None, cache_size="10G",
                 ram_size="1G", concurrency=2, drop_last=False, format="auto",
                 shuffle_buffer=0, transform=None, index_dir=None):
        super().__init__()
        if isinstance(shards, str):
            raise TypeError("shards must be a list of keys, not a string")
        self.shards = list(shards)
        if format == "auto":
            tar = decode is None and self.shards and all(k.endswith(_TAR_SUFFIXES)
                                                          for k in self.shards)
            format = "tar" if tar else "raw"
        if format not in ("tar", "raw"):
            raise ValueError(f"format must be 'auto', 'tar' or 'raw', not {format!r}")
        if format == "tar" and decode is not None:
            raise ValueError("decode= is for format='raw' shards; with tar shards use "
                             "transform=, which gets each sample dict")
        self.format = format
        self.shuffle, self.seed, self.lookahead = shuffle, seed, lookahead
        self.decode, self.transform = decode, transform
        self.rank, self.world_size = rank, world_size
        self.cache_dir, self.cache_size, self.ram_size = cache_dir, cache_size, ram_size
        self.concurrency, self.drop_last = concurrency, drop_last
        self.shuffle_buffer = int(shuffle_buffer or 0)
        self.index_dir = index_dir
        self.epoch = 0
        self._index = None
        self._history, self._history_epoch = [], None
        self._consumed = {}
        self._init_store(store)

    @classmethod
    def from_prefix(cls, store, prefix, suffix=".tar", **kwargs):
        """Every object under `prefix` whose key ends with `suffix` (a string or
        a tuple; None: all), ascending by key, as the shard list."""
        return cls(store, _list_shards(store, prefix, suffix), **kwargs)

    def set_epoch(self, epoch):
        """The epoch to iterate next; a state loaded for another epoch no longer applies."""
        self.epoch = int(epoch)
        if self._history_epoch is not None and self._history_epoch != self.epoch:
            self._history, self._history_epoch = [], None
        self._consumed = {}

    def _rank_world(self):
        return _rank_world(self.rank, self.world_size)

    _worker = staticmethod(_worker)

    def index(self):
        """The TarIndex of the shards (built from the tar headers on first use)."""
        if self.format != "tar":
            raise NotImplementedError(
                "an index needs tar shards (format='tar'); the samples of format='raw' shards "
                "exist only after decode()")
        if self._index is None:
            self._index = TarIndex(self._open_store(), self.shards, self.index_dir,
                                   max(8, self.concurrency))
        return self._index

    def _epoch_order(self, world_size):
        order = shard_order(range(len(self.shards)), self.epoch, self.seed, self.shuffle)
        if self.drop_last and world_size > 1:
            order = order[:len(order) - len(order) % world_size]
        return order

    def _plan(self, world_size):
        if not self._history or self._history_epoch != self.epoch:
            return _Plan(self._epoch_order(world_size), None, 0)
        # Replaying is O(samples): done once per loaded state, not per state_dict().
        memo = getattr(self, "_plan_memo", None)
        if memo is None or memo[0] is not self._history:
            plan = _replay(self._history, self.index(), self._epoch_order, self.shuffle_buffer,
                           self.seed, self.epoch)
            self._plan_memo = memo = (self._history, plan)
        return memo[1]

    def shards_for(self, epoch=None, rank=None, world_size=None, worker=None, num_workers=None):
        """The shards (rank, worker) reads in `epoch` (generation 0: no resume
        state), in order (the current process's rank/worker and the current
        epoch when not given)."""
        r, w = self._rank_world()
        wid, nw = self._worker()
        rank = r if rank is None else rank
        world_size = w if world_size is None else world_size
        worker = wid if worker is None else worker
        num_workers = nw if num_workers is None else num_workers
        order = shard_order(self.shards, self.epoch if epoch is None else epoch, self.seed,
                            self.shuffle)
        if self.drop_last and world_size > 1:
            order = order[:len(order) - len(order) % world_size]
        return split_shards(order, rank, world_size, worker, num_workers)

    def _shard_files(self, keys):
        """(key, file object, bytes or None) per shard, in order."""
        store = self._open_store()
        if self.lookahead <= 0:
            for key in keys:
                if self.format == "tar":
                    with store.open(key) as f:
                        yield key, f, None
                else:
                    yield key, None, store.get(key)
            return
        cache = store
        if not isinstance(store, CachedObjectStore):
            cache_dir = None
            if self.cache_dir is not None:  # one disk tier per process (it is flock'ed)
                wid, _ = self._worker()
                r, _ = self._rank_world()
                cache_dir = os.path.join(os.fspath(self.cache_dir), f"rank{r}-worker{wid}")
            cache = CachedObjectStore(store, cache_dir=cache_dir, cache_size=self.cache_size,
                                      ram_size=self.ram_size, policy="priority")
        warmer = Warmer(cache, keys, lookahead=self.lookahead, concurrency=self.concurrency)
        try:
            for shard in warmer:
                if self.format == "tar":
                    with shard.open() as f:
                        yield shard.key, f, None
                else:
                    key, data = shard.key, shard.data
                    del shard  # unpinned once the next shard is taken
                    yield key, None, data
        finally:
            warmer.close()

    def _read(self, mine):
        keys = [self.shards[s] for s, _ in mine]
        for (_, sel), (key, f, data) in zip(mine, self._shard_files(keys)):
            if self.format == "raw":
                yield from (self.decode(key, data) if self.decode is not None else [(key, data)])
                continue
            keep = None if sel is None else set(sel)
            for j, sample in enumerate(tar_samples(f, key)):
                if keep is None or j in keep:
                    yield sample

    def __iter__(self):
        r, world = self._rank_world()
        wid, nw = self._worker()
        plan = self._plan(world)
        mine = plan.stream_shards(r, world, wid, nw)
        stream = f"{r}:{wid}"
        self._consumed = {stream: 0}
        rng = _stream_rng(self.seed, self.epoch, plan.generation, r, wid)
        for sample in buffer_shuffle(self._read(mine), self.shuffle_buffer, rng):
            if self.transform is not None:
                sample = self.transform(sample)
            self._consumed[stream] += 1
            yield sample

    # -- resume ------------------------------------------------------------

    def _state_header(self):
        keys = hashlib.sha256("\n".join(self.shards).encode()).hexdigest()
        return {"format": STATE_FORMAT, "epoch": self.epoch, "seed": self.seed,
                "shuffle": bool(self.shuffle), "shuffle_buffer": self.shuffle_buffer,
                "drop_last": bool(self.drop_last), "shards": len(self.shards),
                "shards_sha256": keys, "num_samples": len(self.index())}

    def state_dict(self, batches=None, batch_size=None, num_workers=None, drop_last=False,
                   gather=None):
        """Where this epoch is: what every stream of this rank handed out.

        Without arguments: the samples this dataset yielded in this process
        (iterating it directly or through a DataLoader with num_workers=0).
        With a multi-worker DataLoader pass what the training loop consumed:
        batches (the count), batch_size, num_workers and the loader's
        drop_last (ShardLoader does this for you).

        gather (default: when torch.distributed is initialised) all-gathers
        the ranks' states so that every rank returns the whole state; else
        merge the ranks' states with ShardDataset.merge_state_dicts."""
        r, world = self._rank_world()
        if batches is None:
            k = 1
            consumed = [self._consumed.get(f"{r}:0", 0)]
        else:
            k = int(num_workers or 1)
            plan = self._plan(world)
            counts = self.index().counts
            lens = [plan.stream_len(counts, r, world, w, k) for w in range(k)]
            consumed = _consumed_from_batches(lens, batches, batch_size, drop_last)
        record = {"world_size": world, "num_workers": k, "ranks": [r],
                  "consumed": {f"{r}:{w}": n for w, n in enumerate(consumed)}}
        state = self._state_header()
        history = self._history if self._history_epoch == self.epoch else []
        state["history"] = [dict(h) for h in history] + [record]
        if gather is None:
            try:
                import torch.distributed as dist
                gather = (self.rank is None and self.world_size is None and dist.is_available()
                          and dist.is_initialized() and world > 1)
            except ImportError:
                gather = False
        if gather:
            import torch.distributed as dist
            parts = [None] * world
            dist.all_gather_object(parts, state)
            state = self.merge_state_dicts(parts)
        return state

    @staticmethod
    def merge_state_dicts(states):
        """One state from the state_dicts of the ranks of one run."""
        states = list(states)
        if not states:
            raise ValueError("merge_state_dicts needs at least one state")
        first = states[0]
        merged = dict(first, history=[dict(h) for h in first["history"]])
        last = merged["history"][-1]
        last["ranks"], last["consumed"] = list(last["ranks"]), dict(last["consumed"])
        for s in states[1:]:
            if ({k: v for k, v in s.items() if k != "history"} !=
                    {k: v for k, v in first.items() if k != "history"} or
                    s["history"][:-1] != first["history"][:-1]):
                raise ValueError("these states are from different runs, epochs or resumes; "
                                 "merge only the state_dicts the ranks of one run saved together")
            rec = s["history"][-1]
            if (rec["world_size"], rec["num_workers"]) != (last["world_size"],
                                                           last["num_workers"]):
                raise ValueError("these states have different world sizes or worker counts")
            dup = set(rec["ranks"]) & set(last["ranks"])
            if dup:
                raise ValueError(f"rank(s) {sorted(dup)} appear in more than one state")
            last["ranks"] += rec["ranks"]
            last["consumed"].update(rec["consumed"])
        last["ranks"].sort()
        return merged

    def load_state_dict(self, state):
        """Resume: the next iteration of state's epoch yields exactly the
        samples no stream had handed out when the state was saved, split over
        this run's ranks and workers (which may differ in number)."""
        if state.get("format") != STATE_FORMAT:
            raise ValueError(f"not a ShardDataset state (format {state.get('format')!r})")
        mine = self._state_header()
        for k in ("seed", "shuffle", "shuffle_buffer", "drop_last", "shards", "shards_sha256",
                  "num_samples"):
            if state[k] != mine[k]:
                raise ValueError(f"the state was saved with {k}={state[k]!r}, this dataset has "
                                 f"{mine[k]!r}: resume with the same shards and options")
        for g, rec in enumerate(state["history"]):
            missing = sorted(set(range(rec["world_size"])) - set(rec["ranks"]))
            if missing:
                raise ValueError(
                    f"the state lacks rank(s) {missing} of {rec['world_size']} (generation {g}): "
                    f"merge every rank's state_dict (ShardDataset.merge_state_dicts), or save "
                    f"it with torch.distributed initialised")
        self.epoch = state["epoch"]
        self._history = [dict(h) for h in state["history"]]
        self._history_epoch = self.epoch
        self._consumed = {}

    def remaining(self):
        """How many samples the next iteration of this epoch yields in all (every rank)."""
        r, world = self._rank_world()
        plan = self._plan(world)
        counts = self.index().counts
        if plan.remaining is None:
            return sum(counts[s] for s in plan.order)
        return sum(len(v) for v in plan.remaining.values())


class IndexedShardDataset(_StoreHolder, _MapBase):
    """A map-style torch Dataset over the samples of uncompressed tar shards:
    ds[i] is global sample i (shards in the order given, samples in tar
    order), read with one ranged GET. The index comes from the tar headers
    (read in parallel on first use, cached per process and, with index_dir,
    on disk keyed by each shard's ETag). Use any Sampler with it."""

    def __init__(self, store, shards, transform=None, index_dir=None, concurrency=8):
        super().__init__()
        if isinstance(shards, str):
            raise TypeError("shards must be a list of keys, not a string")
        self.shards = list(shards)
        self.transform = transform
        self.index_dir = index_dir
        self.concurrency = concurrency
        self._init_store(store)
        self.index = TarIndex(self._open_store(), self.shards, index_dir, concurrency)

    @classmethod
    def from_prefix(cls, store, prefix, suffix=".tar", **kwargs):
        """Every object under `prefix` ending with `suffix`, ascending by key."""
        return cls(store, _list_shards(store, prefix, suffix), **kwargs)

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        i = int(i)
        if i < 0:
            i += len(self.index)
        s, j = self.index.locate(i)
        sample = _read_sample(self._open_store(), self.shards[s], self.index.samples[s][j])
        return self.transform(sample) if self.transform is not None else sample


class ShardLoader:
    """A torch DataLoader over a ShardDataset that counts the batches the
    training loop took, so that state_dict() is exact with any num_workers:

        loader = strata.ShardLoader(ds, batch_size=32, num_workers=4)
        for step, batch in enumerate(loader): ...
            if step % 1000 == 0: save({"data": loader.state_dict(), ...})
        # after a restart, on any number of ranks:
        loader.load_state_dict(saved["data"])   # then iterate: the rest of the epoch

    Other keyword arguments go to DataLoader. persistent_workers is refused:
    kept workers would not see set_epoch or load_state_dict."""

    def __init__(self, dataset, batch_size=1, num_workers=0, drop_last=False, **kwargs):
        from torch.utils.data import DataLoader
        if not isinstance(dataset, ShardDataset):
            raise TypeError("ShardLoader needs a strata.ShardDataset")
        if kwargs.get("persistent_workers"):
            raise ValueError("persistent_workers=True is not supported: kept workers would not "
                             "see set_epoch() or load_state_dict(); leave it off")
        self.dataset = dataset
        self.batch_size, self.num_workers, self.drop_last = batch_size, num_workers, drop_last
        self._loader = DataLoader(dataset, batch_size=batch_size, num_workers=num_workers,
                                  drop_last=drop_last, **kwargs)
        self.batches = 0

    def __iter__(self):
        self.batches = 0
        for batch in self._loader:
            self.batches += 1
            yield batch

    def set_epoch(self, epoch):
        self.dataset.set_epoch(epoch)
        self.batches = 0

    def state_dict(self, gather=None):
        """The dataset's state after the batches this loader handed out (see
        ShardDataset.state_dict for gather)."""
        return self.dataset.state_dict(batches=self.batches, batch_size=self.batch_size,
                                       num_workers=max(1, self.num_workers),
                                       drop_last=self.drop_last, gather=gather)

    def load_state_dict(self, state):
        self.dataset.load_state_dict(state)
        self.batches = 0
