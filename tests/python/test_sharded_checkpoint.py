"""strata.ShardedCheckpoint: two real processes in a gloo process group (on
loopback) save their shards of a step at the same time to a real `strata
server`; the step is complete once rank 0's marker is written; the shards load
back per rank, all at once, and a different world size is refused. Also the
path without torch.distributed (commit polls the store for the other ranks)."""
import os
import subprocess
import sys
import threading
import unittest

from _util import Server, strata, tmpdir

CHILD = r"""
import sys
import torch
import torch.distributed as dist
import strata
rank, init, url, local = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
ckpt = strata.ShardedCheckpoint(local, url, prefix="run/")
assert (ckpt.rank, ckpt.world_size) == (rank, 2)
for step in (1, 2):
    torch.manual_seed(100 * step + rank)
    ckpt.save(step, {"w": torch.randn(64, 33), "rank": rank, "step": step})
ckpt.commit()
assert ckpt.latest() == 2, ckpt.steps()
back = ckpt.load()
torch.manual_seed(200 + rank)
assert torch.equal(back["w"], torch.randn(64, 33)) and back["rank"] == rank
dist.destroy_process_group()
print("ok")
"""


class Sharded(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server().__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def test_two_gloo_ranks(self):
        import torch
        url = self.server.url("gloo")
        d = tmpdir(self)
        init = "file://" + os.path.join(d, "pg")
        procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(r), init, url,
                                   os.path.join(d, f"node{r}")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for r in range(2)]
        for p in procs:
            out, err = p.communicate(timeout=150)
            self.assertEqual(p.returncode, 0, err.decode()[-3000:])
            self.assertEqual(out.decode().strip(), "ok")
        # Another machine (fresh local dir): everything comes from the store.
        reader = strata.ShardedCheckpoint(os.path.join(d, "elsewhere"), url, prefix="run",
                                          rank=0, world_size=2)
        self.assertEqual(reader.steps(), [1, 2])
        self.assertEqual(reader.info(1)["world_size"], 2)
        shards = reader.load_all(1)
        for r, shard in enumerate(shards):
            torch.manual_seed(100 + r)
            self.assertTrue(torch.equal(shard["w"], torch.randn(64, 33)))
            self.assertEqual((shard["rank"], shard["step"]), (r, 1))
        self.assertEqual(reader.load(2, rank=1)["rank"], 1)
        single = strata.ShardedCheckpoint(os.path.join(d, "one"), url, prefix="run/",
                                          rank=0, world_size=1)
        with self.assertRaisesRegex(ValueError, "saved by 2 ranks"):
            single.load()
        with self.assertRaises(strata.NotFoundError):
            single.info(7)

    def test_without_torch_distributed_commit_polls(self):
        import torch
        url = self.server.url("poll")
        d = tmpdir(self)
        ranks = [strata.ShardedCheckpoint(os.path.join(d, f"n{r}"), url, prefix="p/", rank=r,
                                          world_size=2, keep_remote=1, timeout=60)
                 for r in range(2)]
        for step in (5, 6):
            errors = []

            def run(r, step=step):
                try:
                    ranks[r].save(step, {"t": torch.full((3,), float(step * 10 + r))})
                    ranks[r].commit()
                except Exception as e:  # reported below
                    errors.append(e)
            threads = [threading.Thread(target=run, args=(r,)) for r in (1, 0)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(errors, [])
        self.assertEqual(ranks[0].steps(), [6])  # keep_remote=1 dropped step 5's marker
        self.assertEqual([s["t"][0].item() for s in ranks[1].load_all()], [60.0, 61.0])
        self.assertEqual(ranks[1].load()["t"][0].item(), 61.0)
        # A rank that never saves: commit times out with a message naming it.
        lone = strata.ShardedCheckpoint(os.path.join(d, "lone"), url, prefix="q/", rank=0,
                                        world_size=2, timeout=0.5)
        lone.save(1, {"x": 1})
        with self.assertRaisesRegex(TimeoutError, "rank 1 has not published step 1"):
            lone.commit()
        self.assertIsNone(lone.latest())


class NoDcp(unittest.TestCase):
    def test_debian_torch_has_no_distributed_checkpoint(self):
        """What docs/python.md says about Debian's torch 1.13 (re-checked here)."""
        import importlib
        import torch
        if not torch.__version__.startswith("1.13"):
            self.skipTest(f"torch {torch.__version__} is not Debian's 1.13")
        with self.assertRaises(ImportError):
            importlib.import_module("torch.distributed.checkpoint")
        if sys.version_info < (3, 11):
            return
        with self.assertRaises(ValueError):  # the 1.13 predecessor fails on Python 3.11
            importlib.import_module("torch.distributed._shard.checkpoint")


if __name__ == "__main__":
    unittest.main()
