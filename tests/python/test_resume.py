"""Mid-epoch resume of strata.ShardDataset: after state_dict() /
load_state_dict() the run yields exactly the samples not yet seen — each once —
with 2 ranks x 2 DataLoader workers, on the same world size and elastically on
3 ranks (and again on 1), with a sample-level shuffle buffer."""
import json
import os
import subprocess
import sys
import unittest

from _util import strata, tmpdir
from test_webdataset import ident, make_tar_shards

URL = "mem://resume"
STORE, EXPECT = make_tar_shards(URL, n_shards=9, per_shard=lambda i: 7 + 3 * i)
ALL = [ident(s) for s in EXPECT]
OPTS = dict(seed=13, shuffle_buffer=10, lookahead=2, ram_size="8M")


def collate(batch):
    return [ident(s) for s in batch]


def dataset(rank, world_size, epoch=3):
    ds = strata.ShardDataset.from_prefix(URL, "wds/", rank=rank, world_size=world_size, **OPTS)
    ds.set_epoch(epoch)
    return ds


def run_partial(world_size, num_workers, batch_size, batches, state=None):
    """Every rank takes `batches[rank]` batches (None: to the end); returns
    (what each rank saw, the merged state)."""
    seen, states = [], []
    for r in range(world_size):
        ds = dataset(r, world_size)
        loader = strata.ShardLoader(ds, batch_size=batch_size, num_workers=num_workers,
                                    collate_fn=collate)
        if state is not None:
            loader.load_state_dict(state)
        got = []
        for k, batch in enumerate(loader):
            got += batch
            if batches[r] is not None and k + 1 == batches[r]:
                break
        seen.append(got)
        states.append(loader.state_dict())
    return seen, strata.ShardDataset.merge_state_dicts(states)


class Resume(unittest.TestCase):
    def check_exact(self, *parts):
        flat = [x for part in parts for ranks in part for x in ranks]
        self.assertEqual(len(flat), len(set(flat)), "a sample was produced twice")
        self.assertEqual(sorted(flat), sorted(ALL), "a sample was lost")

    def test_full_epoch_two_ranks_two_workers(self):
        seen, state = run_partial(2, 2, 4, [None, None])
        self.check_exact(seen)
        self.assertEqual(dataset(0, 1).remaining(), len(ALL))
        fresh = dataset(0, 2)
        fresh.load_state_dict(state)
        self.assertEqual(fresh.remaining(), 0)
        self.assertEqual(list(fresh), [])

    def test_same_world_size(self):
        first, state = run_partial(2, 2, 4, [5, 3])
        self.assertEqual([len(s) for s in first], [20, 12])
        self.assertEqual(dataset(0, 2).remaining(), len(ALL))
        ds = dataset(1, 2)
        ds.load_state_dict(state)
        self.assertEqual(ds.remaining(), len(ALL) - 32)
        rest, _ = run_partial(2, 2, 4, [None, None], state)
        self.check_exact(first, rest)
        # Deterministic: the same resume yields the same order.
        again, _ = run_partial(2, 2, 4, [None, None], state)
        self.assertEqual(again, rest)

    def test_elastic_two_to_three_to_one(self):
        first, state = run_partial(2, 2, 4, [4, 6])
        second, state2 = run_partial(3, 1, 3, [2, 5, 1], state)
        self.assertEqual(state2["history"][0], state["history"][0])
        self.assertEqual(len(state2["history"]), 2)
        third, state3 = run_partial(1, 2, 5, [None], state2)
        self.check_exact(first, second, third)
        self.assertGreater(len(third[0]), 0)
        done = dataset(0, 4)
        done.load_state_dict(state3)
        self.assertEqual(done.remaining(), 0)

    def test_loader_drop_last_leaves_the_dropped_for_later(self):
        """DataLoader(drop_last=True) drops each worker's short last batch: those
        samples were not seen, so a resume yields exactly them."""
        ds = dataset(0, 1)
        loader = strata.ShardLoader(ds, batch_size=8, num_workers=2, drop_last=True,
                                    collate_fn=collate)
        seen = [x for batch in loader for x in batch]
        self.assertLess(len(seen), len(ALL))
        again = dataset(0, 1)
        again.load_state_dict(loader.state_dict())
        rest = [ident(s) for s in again]
        self.assertEqual(len(rest), len(ALL) - len(seen))
        self.check_exact([seen], [rest])

    def test_in_process_iteration_counts_itself(self):
        seen = []
        states = []
        for r in range(2):
            ds = dataset(r, 2)
            it = iter(ds)
            seen.append([ident(next(it)) for _ in range(9 + r)])
            states.append(ds.state_dict())
        state = strata.ShardDataset.merge_state_dicts(states)
        rest = []
        for r in range(3):
            ds = dataset(r, 3)
            ds.load_state_dict(state)
            rest.append([ident(s) for s in ds])
        self.check_exact(seen, rest)

    def test_next_epoch_starts_fresh_and_errors(self):
        _, state = run_partial(2, 1, 4, [2, 2])
        ds = dataset(0, 1)
        ds.load_state_dict(state)
        self.assertEqual(ds.remaining(), len(ALL) - 16)
        ds.set_epoch(4)
        self.assertEqual(len(list(ds)), len(ALL))
        with self.assertRaisesRegex(ValueError, "lacks rank"):
            dataset(0, 2).load_state_dict(dict(state, history=[
                dict(state["history"][0], ranks=[0])]))
        other = strata.ShardDataset.from_prefix(URL, "wds/", **dict(OPTS, seed=14))
        with self.assertRaisesRegex(ValueError, "seed=13"):
            other.load_state_dict(state)
        raw = strata.ShardDataset("mem://resume", ["wds/README.txt"], format="raw")
        with self.assertRaises(NotImplementedError):
            raw.state_dict()
        with self.assertRaises(ValueError):
            strata.ShardLoader(dataset(0, 1), batch_size=2, num_workers=1,
                               persistent_workers=True)


DIST_CHILD = r"""
import json, sys
import torch.distributed as dist
sys.path.insert(0, sys.argv[3])
from test_resume import dataset, collate, URL
import strata
rank, init = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
ds = strata.ShardDataset.from_prefix(URL, "wds/", seed=13, shuffle_buffer=10, lookahead=0)
ds.set_epoch(3)
loader = strata.ShardLoader(ds, batch_size=4, num_workers=0, collate_fn=collate)
seen = []
for k, batch in enumerate(loader):
    seen += batch
    if k + 1 == 3 + rank:
        break
state = loader.state_dict()    # gathered from both ranks
print(json.dumps({"seen": seen, "state": state}))
dist.destroy_process_group()
"""


class Distributed(unittest.TestCase):
    def test_state_dict_gathers_ranks(self):
        """Two gloo processes on loopback: state_dict() returns the state of both."""
        init = "file://" + os.path.join(tmpdir(self), "pg")
        here = os.path.dirname(os.path.abspath(__file__))
        procs = [subprocess.Popen([sys.executable, "-c", DIST_CHILD, str(r), init, here],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for r in range(2)]
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=150)
            self.assertEqual(p.returncode, 0, err.decode()[-2000:])
            outs.append(json.loads(out.decode().strip().splitlines()[-1]))
        self.assertEqual(outs[0]["state"], outs[1]["state"])
        state = outs[0]["state"]
        self.assertEqual(state["history"][-1]["ranks"], [0, 1])
        seen = [[tuple(x) for x in o["seen"]] for o in outs]
        rest = []
        for r in range(3):
            ds = dataset(r, 3)
            ds.load_state_dict(state)
            rest.append([ident(s) for s in ds])
        flat = [x for part in (seen, rest) for ranks in part for x in ranks]
        self.assertEqual(sorted(flat), sorted(ALL))


if __name__ == "__main__":
    unittest.main()
