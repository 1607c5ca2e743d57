"""strata.CheckpointManager from Python: save/load of files and bytes, and
save_state_dict / load_state_dict of a small PyTorch model, including a load
from the remote store after the local copy was deleted."""
import os
import unittest

from _util import Server, strata, tmpdir


def small_model(seed):
    import torch
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


class CheckpointTests:
    """Mixed into one TestCase per remote; self.remote is a store URL."""

    def test_state_dict_round_trip_and_remote_load(self):
        import torch
        local = os.path.join(tmpdir(self), "ckpt")
        mgr = strata.CheckpointManager(local, self.remote, prefix="run1/", keep_local=2)
        model = small_model(1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        model(torch.randn(8, 16)).sum().backward()
        opt.step()
        state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": 10}
        mgr.save_state_dict(10, state)
        mgr.wait()
        infos = mgr.list()
        self.assertEqual([(c.step, c.local, c.remote, c.uploading) for c in infos],
                         [(10, True, True, False)])
        self.assertEqual([f.name for f in infos[0].files], ["state.pt"])

        back = mgr.load_state_dict(10)
        self.assertEqual(back["step"], 10)
        for k, v in state["model"].items():
            self.assertTrue(torch.equal(back["model"][k], v), k)
        self.assertEqual(back["optim"]["param_groups"], state["optim"]["param_groups"])

        # Drop the local copy: "latest" now comes from the remote store, verified.
        mgr.remove(10, local=True, remote=False)
        self.assertEqual([(c.local, c.remote) for c in mgr.list()], [(False, True)])
        ck = mgr.load("latest")
        self.assertTrue(ck.from_remote)
        model2 = small_model(2)
        model2.load_state_dict(mgr.load_state_dict("latest", map_location="cpu")["model"])
        for (k, v), (k2, v2) in zip(model.state_dict().items(), model2.state_dict().items()):
            self.assertTrue(torch.equal(v, v2), k)

        # A new manager over a fresh local dir sees the remote checkpoint.
        mgr2 = strata.CheckpointManager(os.path.join(tmpdir(self), "other"), self.remote,
                                        prefix="run1/")
        self.assertEqual(mgr2.latest(), 10)
        self.assertEqual(mgr2.load_state_dict(10)["step"], 10)

    def test_files_bytes_keep_and_errors(self):
        d = tmpdir(self)
        src = os.path.join(d, "weights.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(300_000))
        mgr = strata.CheckpointManager(os.path.join(d, "ckpt"), self.remote, prefix="run2/",
                                       keep_local=1, keep_remote=2)
        for step in (1, 2, 3):
            mgr.save(step, {"weights.bin": src, "meta.json": b'{"step": %d}' % step})
        mgr.wait()
        self.assertEqual([(c.step, c.local, c.remote) for c in mgr.list()],
                         [(2, False, True), (3, True, True)])
        self.assertEqual(mgr.read_file(3, "meta.json"), b'{"step": 3}')
        out = os.path.join(d, "restored")
        ck = mgr.load(2, dest=out)
        self.assertTrue(ck.from_remote)
        with open(os.path.join(out, "weights.bin"), "rb") as f, open(src, "rb") as g:
            self.assertEqual(f.read(), g.read())
        with self.assertRaises(strata.AlreadyExistsError):
            mgr.save(3, {"x": b"y"})
        with self.assertRaises(strata.NotFoundError):
            mgr.load(99)
        with self.assertRaises(ValueError):
            mgr.load("newest")
        mgr.save(4, [src])  # a list of paths: named by basename
        self.assertEqual([f.name for f in mgr.load(4).files], ["weights.bin"])
        mgr.wait()


class FileRemote(CheckpointTests, unittest.TestCase):
    def setUp(self):
        self.remote = f"file://{tmpdir(self)}?bucket=ckpt&sync=false"


class ServerRemote(CheckpointTests, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server().__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def setUp(self):
        self.remote = strata.ObjectStore(self.server.url(self._testMethodName))


class LocalOnly(unittest.TestCase):
    def test_no_remote(self):
        import torch
        mgr = strata.CheckpointManager(tmpdir(self), keep_local=0)
        mgr.save_state_dict(5, {"t": torch.ones(3)})
        self.assertTrue(torch.equal(mgr.load_state_dict(5)["t"], torch.ones(3)))
        self.assertEqual([(c.step, c.local, c.remote) for c in mgr.list()], [(5, True, False)])


if __name__ == "__main__":
    unittest.main()
