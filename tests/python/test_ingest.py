"""strata.vector.insert_batches: the embedding ingest pipeline. Killed with
kill -9 mid-ingest and run again, it leaves every row exactly once (no
duplicates, no gaps) and does not embed again what was stored."""
import hashlib
import os
import signal
import subprocess
import sys
import time
import unittest

import numpy as np

from _util import tmpdir

from strata.vector import Collection, MilvusClient, insert_batches, row_id

DIM = 8
N = 3000

CHILD = r"""
import os, sys, time
sys.path[:0] = [os.environ["TEST_DIR"]]
import test_ingest as t
from strata.vector import MilvusClient
c = MilvusClient(os.environ["DB"])
if not c.has_collection("docs"):
    c.create_collection("docs", dimension=t.DIM, metric_type="L2")
count = open(os.environ["COUNT"], "a")
def embed(texts):
    count.write(f"{len(texts)}\n"); count.flush()
    time.sleep(float(os.environ.get("SLOW", "0")))
    return t.embed(texts)
stats = c.insert_batches("docs", t.texts(), embed=embed, batch_size=50, concurrency=3,
                         progress=True)
print("STATS", stats, flush=True)
"""


def texts():
    return [f"document number {i}: " + "lorem ipsum " * (i % 7) for i in range(N)]


def embed(batch):
    """Deterministic: the vector of a text is a function of its bytes only."""
    out = np.empty((len(batch), DIM), np.float32)
    for i, t in enumerate(batch):
        h = hashlib.sha256(t.encode()).digest()
        out[i] = np.frombuffer(h[:DIM * 4], dtype=np.uint32) / 2**32
    return out


def embedded(path):
    with open(path) as f:
        return sum(int(x) for x in f.read().split())


class IngestTest(unittest.TestCase):
    def run_child(self, env, kill_after=None):
        p = subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        if kill_after is None:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, err[-3000:])
            return out, err
        deadline = time.time() + 60
        while time.time() < deadline and p.poll() is None:
            if os.path.exists(env["COUNT"]) and embedded(env["COUNT"]) >= kill_after:
                break
            time.sleep(0.01)
        self.assertIsNone(p.poll(), "the ingest finished before it could be killed")
        os.kill(p.pid, signal.SIGKILL)
        p.communicate()
        self.assertEqual(p.returncode, -signal.SIGKILL)
        return None, None

    def test_kill9_mid_ingest_then_resume(self):
        d = tmpdir(self)
        env = dict(os.environ, TEST_DIR=os.path.dirname(os.path.abspath(__file__)),
                   DB=os.path.join(d, "vectors.db"), COUNT=os.path.join(d, "count1"), SLOW="0.02")
        self.run_child(env, kill_after=N // 3)
        first = embedded(env["COUNT"])
        self.assertLess(first, N)

        env.update(COUNT=os.path.join(d, "count2"), SLOW="0")
        out, err = self.run_child(env)
        self.assertIn("insert_batches", err)  # the tqdm bar
        second = embedded(env["COUNT"])
        # Rows stored before the kill are not embedded again.
        self.assertLess(second, N)
        self.assertGreaterEqual(first + second, N)

        c = MilvusClient(env["DB"])
        self.addCleanup(c.close)
        self.assertEqual(c.query("docs", filter="", output_fields=["count(*)"]),
                         [{"count(*)": N}])
        rows = c.query("docs", filter="id >= 0", output_fields=["text", "vector"], limit=N)
        self.assertEqual(len(rows), N)
        want = {row_id(t): t for t in texts()}
        self.assertEqual(len(want), N)
        got = {r["id"]: r for r in rows}
        self.assertEqual(set(got), set(want))  # no gaps, no strays
        for i, t in list(want.items())[::97]:
            self.assertEqual(got[i]["text"], t)
            np.testing.assert_allclose(got[i]["vector"], embed([t])[0], rtol=1e-6)

    def test_duplicates_and_collection_target(self):
        d = tmpdir(self)
        col = Collection(os.path.join(d, "c"), dim=DIM, metric="l2", index="flat")
        self.addCleanup(col.close)
        data = ["a", "b", "a", "c", "b"] * 10
        calls = []

        def emb(batch):
            calls.append(len(batch))
            return embed(batch)

        stats = insert_batches(col, None, data, embed=emb, batch_size=4, concurrency=2,
                               progress=False)
        self.assertEqual(stats["rows"], 50)
        self.assertEqual(len(col), 3)
        got = col.get([row_id("a")])
        self.assertEqual(got[0]["payload"], {"text": "a"})
        # A second run finds everything stored and embeds nothing.
        calls.clear()
        stats = insert_batches(col, None, data, embed=emb, batch_size=4, progress=False)
        self.assertEqual((stats["written"], stats["skipped"], calls), (0, 50, []))
        with self.assertRaises(ValueError):
            insert_batches(col, "name", data, embed=emb)

    def test_embedding_overlaps(self):
        col = Collection(os.path.join(tmpdir(self), "o"), dim=DIM, metric="l2", index="flat")
        self.addCleanup(col.close)
        active, peak = [0], [0]

        def slow(batch):
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            time.sleep(0.1)  # an embedding model releasing the GIL
            active[0] -= 1
            return embed(batch)

        t0 = time.perf_counter()
        insert_batches(col, None, [f"t{i}" for i in range(80)], embed=slow, batch_size=10,
                       concurrency=4, progress=False)
        wall = time.perf_counter() - t0
        self.assertEqual(len(col), 80)
        self.assertGreater(peak[0], 1)  # batches were embedded at the same time
        self.assertLess(wall, 8 * 0.1 * 0.75, "8 batches of 0.1 s ran one after another")

    def test_rows_with_ids_and_bad_embed(self):
        c = MilvusClient(os.path.join(tmpdir(self), "db"))
        self.addCleanup(c.close)
        c.create_collection("r", dimension=DIM)
        rows = [{"id": i, "text": f"t{i}", "lang": "en"} for i in range(20)]
        st = c.insert_batches("r", rows, embed=lambda b: embed([r["text"] for r in b]),
                              batch_size=6, progress=False)
        self.assertEqual(st["written"], 20)
        self.assertEqual(sorted(r["id"] for r in c.query("r", filter='lang == "en"',
                                                         limit=100)), list(range(20)))
        with self.assertRaisesRegex(ValueError, "vectors for"):
            c.insert_batches("r", [{"id": 100, "text": "x"}], embed=lambda b: embed(["a", "b"]),
                             progress=False)


if __name__ == "__main__":
    unittest.main()
