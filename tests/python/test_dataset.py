"""strata.ShardDataset (splits per rank and worker, per-epoch shuffle, a real
DataLoader with 2 workers) and strata.Warmer from Python."""
import os
import unittest

from _util import strata, tmpdir

N_SHARDS = 24


def make_shards(url, n=N_SHARDS, size=20_000):
    store = strata.ObjectStore(url)
    keys = []
    for i in range(n):
        k = f"train/shard-{i:05d}.bin"
        # Each shard: 4 samples of size/4 bytes, the first 2 bytes the shard number.
        store.put(k, bytes([i >> 8, i & 0xFF]) * (size // 2))
        keys.append(k)
    return store, keys


def decode_four(key, data):
    q = len(data) // 4
    for j in range(4):
        yield (key, j, data[j * q:(j + 1) * q])


class Splits(unittest.TestCase):
    def setUp(self):
        self.keys = [f"s{i:03d}" for i in range(N_SHARDS + 1)]  # 25: uneven on purpose

    def parts(self, ds, epoch):
        return {(r, w): ds.shards_for(epoch=epoch, rank=r, world_size=2, worker=w, num_workers=2)
                for r in range(2) for w in range(2)}

    def test_disjoint_complete_deterministic(self):
        ds = strata.ShardDataset("mem://unused", self.keys, seed=7)
        for epoch in range(3):
            parts = self.parts(ds, epoch)
            flat = [k for p in parts.values() for k in p]
            self.assertEqual(len(flat), len(set(flat)), "splits overlap")
            self.assertEqual(sorted(flat), sorted(self.keys), "splits miss shards")
            # Same seed+epoch on another "rank" process: the same order.
            again = strata.ShardDataset("mem://unused", self.keys, seed=7)
            self.assertEqual(self.parts(again, epoch), parts)
        self.assertNotEqual(self.parts(ds, 0), self.parts(ds, 1), "epochs not reshuffled")
        other_seed = strata.ShardDataset("mem://unused", self.keys, seed=8)
        self.assertNotEqual(self.parts(other_seed, 0), self.parts(ds, 0))
        no_shuffle = strata.ShardDataset("mem://unused", self.keys, shuffle=False)
        self.assertEqual(no_shuffle.shards_for(epoch=0, rank=0, world_size=1),
                         no_shuffle.shards_for(epoch=5, rank=0, world_size=1))
        self.assertEqual(no_shuffle.shards_for(epoch=0, rank=0, world_size=1), self.keys)

    def test_drop_last_even_ranks(self):
        ds = strata.ShardDataset("mem://unused", self.keys, drop_last=True)
        a = ds.shards_for(epoch=0, rank=0, world_size=2, worker=0, num_workers=1)
        b = ds.shards_for(epoch=0, rank=1, world_size=2, worker=0, num_workers=1)
        self.assertEqual(len(a), len(b))
        self.assertEqual(len(a) + len(b), N_SHARDS)

    def test_pickles_without_the_store(self):
        """DataLoader workers started with "spawn" get a pickled copy: it reopens the URL."""
        import pickle
        store = strata.ObjectStore("mem://py-pickle")
        ds = strata.ShardDataset(store, self.keys, seed=2, decode=decode_four)
        ds.set_epoch(3)
        back = pickle.loads(pickle.dumps(ds))
        self.assertIsInstance(back, strata.ShardDataset)
        self.assertEqual(back.shards_for(rank=0, world_size=1, worker=0, num_workers=1),
                         ds.shards_for(rank=0, world_size=1, worker=0, num_workers=1))
        self.assertEqual(back._url, store.url)

    def test_explicit_rank_and_bad_args(self):
        ds = strata.ShardDataset("mem://unused", self.keys, rank=1, world_size=2)
        self.assertEqual(ds.shards_for(epoch=0),
                         strata.split_shards(strata.shard_order(self.keys, 0, 0), 1, 2))
        with self.assertRaises(ValueError):
            strata.split_shards(self.keys, rank=2, world_size=2)
        with self.assertRaises(TypeError):
            strata.ShardDataset("mem://unused", "s000")


DIST_CHILD = r"""
import json, sys
import torch.distributed as dist
import strata
rank, init = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
keys = [f"s{i:03d}" for i in range(25)]
ds = strata.ShardDataset("mem://unused", keys, seed=3)
ds.set_epoch(4)
print(json.dumps(ds.shards_for()))
dist.barrier()
dist.destroy_process_group()
"""


class Distributed(unittest.TestCase):
    def test_rank_from_torch_distributed(self):
        """Two real processes in a gloo process group: each takes its rank's split."""
        import json
        import subprocess
        import sys
        init = "file://" + os.path.join(tmpdir(self), "pg")
        env = dict(os.environ, OMP_NUM_THREADS="1")
        procs = [subprocess.Popen([sys.executable, "-c", DIST_CHILD, str(r), init],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
                 for r in range(2)]
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, err.decode()[-2000:])
            outs.append(json.loads(out.decode().strip().splitlines()[-1]))
        keys = [f"s{i:03d}" for i in range(25)]
        order = strata.shard_order(keys, 4, 3)
        self.assertEqual(outs[0], order[0::2])
        self.assertEqual(outs[1], order[1::2])


class Iteration(unittest.TestCase):
    def test_iterate_in_process_with_and_without_warmer(self):
        store, keys = make_shards("mem://py-ds-inproc")
        for lookahead in (0, 3):
            ds = strata.ShardDataset(store, keys, seed=3, lookahead=lookahead, decode=decode_four)
            ds.set_epoch(2)
            got = list(ds)
            self.assertEqual(len(got), 4 * N_SHARDS)
            order = [k for k, j, _ in got if j == 0]
            self.assertEqual(order, strata.shard_order(keys, 2, 3))
            for k, j, d in got:
                i = int(k[-9:-4])
                self.assertEqual(d[:2], bytes([i >> 8, i & 0xFF]))
        plain = list(strata.ShardDataset(store, keys[:2], shuffle=False, lookahead=0))
        self.assertEqual([k for k, _ in plain], keys[:2])
        self.assertEqual(len(plain[0][1]), 20_000)

    def test_dataloader_two_workers(self):
        import torch
        from torch.utils.data import DataLoader
        url = "mem://py-ds-loader"
        store, keys = make_shards(url)  # stays open: forked workers reopen the same mem://

        def decode(key, data):
            i = int(key[-9:-4])
            yield torch.tensor([i, data[0] * 256 + data[1]])

        seen_by_epoch = []
        for rank in (0, 1):
            ds = strata.ShardDataset(url, keys, seed=11, lookahead=2, decode=decode,
                                     rank=rank, world_size=2, ram_size="4M")
            for epoch in (0, 1):
                ds.set_epoch(epoch)
                loader = DataLoader(ds, batch_size=None, num_workers=2)
                got = [tuple(t.tolist()) for t in loader]
                for i, first in got:
                    self.assertEqual(i, first)  # the bytes belong to the shard named
                ids = [i for i, _ in got]
                expect = set()
                for w in range(2):
                    expect |= {int(k[-9:-4]) for k in ds.shards_for(epoch=epoch, rank=rank,
                                                                   world_size=2, worker=w,
                                                                   num_workers=2)}
                self.assertEqual(sorted(ids), sorted(expect))
                self.assertEqual(len(ids), len(set(ids)))
                seen_by_epoch.append((rank, epoch, ids))
        for epoch in (0, 1):
            both = [i for r, e, ids in seen_by_epoch if e == epoch for i in ids]
            self.assertEqual(sorted(both), list(range(N_SHARDS)), f"epoch {epoch}")
        orders = {(r, e): ids for r, e, ids in seen_by_epoch}
        self.assertNotEqual(orders[(0, 0)], orders[(0, 1)])


class WarmerTests(unittest.TestCase):
    def test_yields_every_shard_in_order(self):
        store, keys = make_shards("mem://py-warmer", n=10, size=300_000)
        slow = strata.FaultInjectionStore(store, latency_ms=5)
        cache = strata.CachedObjectStore(slow, ram_size="16M", block_size="1M", policy="priority")
        order = []
        with strata.Warmer(cache, keys, lookahead=3) as w:
            self.assertEqual(len(w), 10)
            for shard in w:
                self.assertEqual(shard.position, len(order))
                self.assertEqual(shard.size, 300_000)
                i = int(shard.key[-9:-4])
                self.assertEqual(shard.data[:2], bytes([i >> 8, i & 0xFF]))
                with shard.open() as f:
                    f.seek(1000)
                    self.assertEqual(f.read(2), bytes([i >> 8, i & 0xFF]))
                order.append(shard.key)
            self.assertEqual(w.stats()["handed_out"], 10)
        self.assertEqual(order, keys)

    def test_epochs_seed_and_state_file(self):
        store, keys = make_shards("mem://py-warmer2", n=6, size=10_000)
        cache = strata.CachedObjectStore(store, ram_size="8M", policy="priority")
        w = strata.Warmer(cache, keys, lookahead=2, epochs=2, seed=5)
        got = [s.key for s in w]
        self.assertEqual(got, strata.epoch_order(keys, 2, 5))
        self.assertEqual(sorted(got[:6]), sorted(keys))
        state = os.path.join(tmpdir(self), "warm.state")
        w = strata.Warmer(cache, keys, lookahead=2, state_file=state)
        next(w), next(w), next(w)  # the third is in progress
        w.close()
        w = strata.Warmer(cache, keys, lookahead=2, state_file=state)
        self.assertEqual([s.key for s in w], keys[2:])  # resumes at the one in progress

    def test_needs_a_cache(self):
        with self.assertRaises(TypeError):
            strata.Warmer(strata.ObjectStore("mem://x"), ["a"])


if __name__ == "__main__":
    unittest.main()
