"""WebDataset-style tar shards in strata.ShardDataset and
strata.IndexedShardDataset: members grouped into samples as the webdataset
package groups them (checked against Python's tarfile read independently),
from_prefix, the sample-level shuffle buffer, and map-style random access."""
import io
import os
import random
import tarfile
import unittest

from _util import strata, tmpdir


def tar_bytes(members, fmt=tarfile.GNU_FORMAT, compress=""):
    """A tar archive of members: (name, bytes) files, (name, None) a directory,
    (name, "->target") a symlink."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:" + compress, format=fmt) as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            if data is None:
                ti.type = tarfile.DIRTYPE
                tf.addfile(ti)
            elif isinstance(data, str):
                ti.type, ti.linkname = tarfile.SYMTYPE, data[2:]
                tf.addfile(ti)
            else:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def oracle_samples(blob, url):
    """The documented webdataset grouping, written independently of strata:
    regular files only, top-level __x__ files skipped, key = directory +
    basename up to its first dot, extension = the rest (lower-cased); a new
    sample starts whenever the key changes; names without a dot are skipped."""
    out = []
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:*") as tf:
        for m in tf.getmembers():
            if not m.isfile():
                continue
            d, base = os.path.split(m.name)
            if not d and base.startswith("__") and base.endswith("__"):
                continue
            if "." not in base:
                continue
            stem, ext = base.split(".", 1)
            key = f"{d}/{stem}" if d else stem
            if not out or out[-1]["__key__"] != key:
                out.append({"__key__": key, "__url__": url})
            out[-1][ext.lower()] = tf.extractfile(m).read()
    return out


TRICKY = [
    ("train", None),                                   # a directory: not a sample
    ("train/000001.jpg", b"jpeg-1"),
    ("train/000001.CLS", b"7"),                        # extension lower-cased
    ("train/000001.seg.png", b"png-1"),                # "seg.png": all after the first dot
    ("__meta__", b"archive metadata"),                 # top-level __x__: skipped
    ("README", b"no dot: skipped"),
    ("train/000002.jpg", b"jpeg-2"),
    ("train/000002.link", "->000001.jpg"),             # a symlink: not a regular file
    ("train/000002.json", b'{"a": 1}'),
    ("d" * 120 + "/x.y.txt", b"long name"),            # > 100 chars: a GNU long-name header
    ("train/000001.txt", b"again"),                    # key seen before, not adjacent: new sample
    ("big/000003.bin", os.urandom(200_000)),
]


class Grouping(unittest.TestCase):
    def test_tar_samples_match_tarfile_oracle(self):
        for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
            blob = tar_bytes(TRICKY, fmt)
            want = oracle_samples(blob, "s.tar")
            self.assertEqual(len(want), 5)
            got = list(strata.tar_samples(io.BytesIO(blob), "s.tar"))
            self.assertEqual(got, want)
        self.assertEqual(want[0], {"__key__": "train/000001", "__url__": "s.tar",
                                   "jpg": b"jpeg-1", "cls": b"7", "seg.png": b"png-1"})

    def test_gzip_is_streamed(self):
        blob = tar_bytes(TRICKY, compress="gz")
        got = list(strata.tar_samples(io.BytesIO(blob), "s.tar.gz"))
        self.assertEqual(got, oracle_samples(blob, "s.tar.gz"))

    def test_duplicate_extension_and_garbage(self):
        blob = tar_bytes([("a.jpg", b"1"), ("a.jpg", b"2")])
        with self.assertRaisesRegex(ValueError, "already has a 'jpg' member"):
            list(strata.tar_samples(io.BytesIO(blob), "dup.tar"))
        with self.assertRaisesRegex(ValueError, "not a readable tar"):
            list(strata.tar_samples(io.BytesIO(b"x" * 2000), "junk.tar"))

    def test_split_key(self):
        self.assertEqual(strata.split_key("a/b.c/000123.seg.png"), ("a/b.c/000123", "seg.png"))
        self.assertEqual(strata.split_key("000123.jpg"), ("000123", "jpg"))
        self.assertEqual(strata.split_key("dir/noext"), (None, None))


def make_tar_shards(url, n_shards=6, per_shard=lambda i: 5 + i, prefix="wds/"):
    """Shards of distinct sizes; sample j of shard i has members .cls (its id) and .bin."""
    store = strata.ObjectStore(url)
    expect = []
    for i in range(n_shards):
        members = []
        for j in range(per_shard(i)):
            key = f"{i:03d}{j:04d}"
            members += [(f"{key}.cls", f"{i},{j}".encode()),
                        (f"{key}.bin", bytes([i, j % 256]) * (50 + 7 * j))]
        blob = tar_bytes(members)
        store.put(f"{prefix}shard-{i:05d}.tar", blob)
        expect += oracle_samples(blob, f"{prefix}shard-{i:05d}.tar")
    store.put(f"{prefix}README.txt", b"not a shard")
    return store, expect


def ident(sample):
    return sample["__url__"], sample["__key__"]


class ShardDatasetTar(unittest.TestCase):
    def test_from_prefix_and_samples_with_and_without_warmer(self):
        store, expect = make_tar_shards("mem://wds-a")
        for lookahead in (0, 2):
            ds = strata.ShardDataset.from_prefix(store, "wds/", shuffle=False,
                                                 lookahead=lookahead)
            self.assertEqual(ds.format, "tar")
            self.assertEqual(len(ds.shards), 6)  # README.txt is not a .tar
            self.assertEqual(list(ds), expect)
        with self.assertRaises(strata.NotFoundError):
            strata.ShardDataset.from_prefix(store, "nothing/")
        every = strata.ShardDataset.from_prefix(store, "wds/", suffix=None, format="raw",
                                                shuffle=False, lookahead=0)
        self.assertEqual(len(every.shards), 7)
        with self.assertRaises(ValueError):
            strata.ShardDataset(store, ["a.tar"], format="tar", decode=lambda k, d: [])

    def test_shuffle_buffer_is_a_seeded_permutation(self):
        store, expect = make_tar_shards("mem://wds-b")
        base = dict(shuffle=True, seed=4, lookahead=0, rank=0, world_size=1)
        plain = strata.ShardDataset.from_prefix(store, "wds/", **base)
        plain.set_epoch(1)
        unbuffered = [ident(s) for s in plain]
        runs = []
        for _ in range(2):
            ds = strata.ShardDataset.from_prefix(store, "wds/", shuffle_buffer=16, **base)
            ds.set_epoch(1)
            runs.append([ident(s) for s in ds])
        self.assertEqual(runs[0], runs[1], "same seed and epoch: same order")
        self.assertEqual(sorted(runs[0]), sorted(ident(s) for s in expect), "a permutation")
        self.assertEqual(len(set(runs[0])), len(expect))
        self.assertNotEqual(runs[0], unbuffered, "the buffer mixes samples")
        ds.set_epoch(2)
        self.assertNotEqual([ident(s) for s in ds], runs[0], "another epoch, another order")
        # Samples leave the buffer at most N-1 places before their arrival.
        pos = {k: i for i, k in enumerate(unbuffered)}
        self.assertTrue(all(pos[k] - i < 16 for i, k in enumerate(runs[0])))

    def test_buffer_shuffle_properties(self):
        for n, size in ((0, 4), (3, 8), (100, 1), (100, 7), (1000, 64)):
            a = list(strata.buffer_shuffle(range(n), size, random.Random(1)))
            self.assertEqual(sorted(a), list(range(n)))
            self.assertEqual(a, list(strata.buffer_shuffle(range(n), size, random.Random(1))))
        self.assertEqual(list(strata.buffer_shuffle(range(9), 1, random.Random(1))),
                         list(range(9)))


class MapStyle(unittest.TestCase):
    def test_random_access_by_global_index(self):
        store, expect = make_tar_shards("mem://wds-map")
        ds = strata.IndexedShardDataset.from_prefix(store, "wds/")
        self.assertEqual(len(ds), len(expect))
        order = list(range(len(expect)))
        random.Random(3).shuffle(order)
        for i in order:
            self.assertEqual(ds[i], expect[i], i)
        self.assertEqual(ds[-1], expect[-1])
        with self.assertRaises(IndexError):
            ds[len(expect)]
        self.assertEqual(ds.index.counts, [5, 6, 7, 8, 9, 10])
        self.assertEqual(ds.index.locate(5), (1, 0))

    def test_dataloader_random_sampler_two_workers(self):
        from torch.utils.data import DataLoader
        url = "mem://wds-map-loader"
        store, expect = make_tar_shards(url)
        ds = strata.IndexedShardDataset.from_prefix(url, "wds/",
                                                    transform=lambda s: s["cls"].decode())
        loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2,
                            collate_fn=lambda b: b)
        got = [x for batch in loader for x in batch]
        self.assertEqual(sorted(got), sorted(s["cls"].decode() for s in expect))
        self.assertNotEqual(got, [s["cls"].decode() for s in expect])

    def test_index_cache_on_disk_follows_the_etag(self):
        store, expect = make_tar_shards("mem://wds-idx", n_shards=2)
        d = tmpdir(self)
        ds = strata.IndexedShardDataset.from_prefix(store, "wds/", index_dir=d)
        self.assertEqual(len(os.listdir(d)), 2)
        strata.data._index_memo.clear()  # a new process: only the files remain
        again = strata.IndexedShardDataset.from_prefix(store, "wds/", index_dir=d)
        self.assertEqual(again.index.samples, ds.index.samples)
        # Rewrite shard 1 with 2 samples: its ETag changes, so it is indexed again.
        store.put("wds/shard-00001.tar", tar_bytes([("k1.cls", b"x"), ("k2.cls", b"y")]))
        strata.data._index_memo.clear()
        third = strata.IndexedShardDataset.from_prefix(store, "wds/", index_dir=d)
        self.assertEqual(third.index.counts, [5, 2])
        self.assertEqual(third[6]["cls"], b"y")

    def test_compressed_shards_have_no_index(self):
        store = strata.ObjectStore("mem://wds-gz")
        store.put("z/a.tar", tar_bytes(TRICKY, compress="gz"))
        with self.assertRaisesRegex(ValueError, "uncompressed tar"):
            strata.IndexedShardDataset.from_prefix(store, "z/")


if __name__ == "__main__":
    unittest.main()
