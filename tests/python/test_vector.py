"""strata.vector.Collection: the engine from Python, checked against brute
force numpy, with its zero-copy and error contracts."""
import os
import threading
import time
import unittest
import warnings

import numpy as np

from _util import tmpdir

import strata
from strata.vector import Collection, CopyWarning


def brute_force(data, queries, k, metric):
    if metric == "l2":
        d = ((queries[:, None, :] - data[None, :, :]) ** 2).sum(-1)
        order = np.argsort(d, axis=1, kind="stable")[:, :k]
        return order, np.sqrt(np.take_along_axis(d, order, 1))
    if metric == "cosine":
        data = data / np.linalg.norm(data, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    s = queries @ data.T
    order = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(s, order, 1)


class CollectionTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(7)
        self.data = self.rng.standard_normal((3000, 32)).astype(np.float32)
        self.queries = self.rng.standard_normal((50, 32)).astype(np.float32)

    def make(self, metric, index="flat", **kw):
        c = Collection(os.path.join(tmpdir(self), "c"), dim=32, metric=metric, index=index, **kw)
        self.addCleanup(c.close)
        payloads = [{"cat": i % 3, "name": f"p{i}"} for i in range(len(self.data))]
        self.assertEqual(c.add(np.arange(len(self.data)), self.data, payloads), len(self.data))
        return c

    def test_batch_search_matches_brute_force(self):
        for metric in ("l2", "ip", "cosine"):
            with self.subTest(metric=metric):
                c = self.make(metric)
                ids, scores = c.search(self.queries, k=10)
                self.assertEqual(ids.shape, (50, 10))
                self.assertEqual(ids.dtype, np.int64)
                self.assertEqual(scores.dtype, np.float32)
                want_ids, want_scores = brute_force(self.data, self.queries, 10, metric)
                np.testing.assert_array_equal(ids, want_ids)
                np.testing.assert_allclose(scores, want_scores, rtol=1e-4, atol=1e-4)

    def test_hnsw_sealed_recall_and_exact(self):
        c = self.make("cosine", index="hnsw", segment_rows=1000)
        c.compact(seal_growing=True)  # every row in HNSW-indexed sealed segments
        self.assertEqual(c.info()["indexed_points"], len(self.data))
        want, _ = brute_force(self.data, self.queries, 10, "cosine")
        ids, _ = c.search(self.queries, k=10, ef=128)
        recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, want)])
        self.assertGreaterEqual(recall, 0.95)
        ids, _ = c.search(self.queries, k=10, exact=True)
        np.testing.assert_array_equal(ids, want)

    def test_filters_expression_and_qdrant_dict(self):
        c = self.make("l2")
        subset = np.arange(len(self.data))[np.arange(len(self.data)) % 3 == 1]
        order, _ = brute_force(self.data[subset], self.queries, 5, "l2")
        want = subset[order]
        for f in ("cat == 1", {"must": [{"key": "cat", "match": {"value": 1}}]}):
            ids, _ = c.search(self.queries, k=5, filter=f)
            np.testing.assert_array_equal(ids, want)
        self.assertEqual(c.count("cat == 1"), len(subset))
        self.assertEqual(c.count({"must": [{"key": "name", "match": {"value": "p4"}}]}), 1)

    def test_rows_padded_when_fewer_match(self):
        c = self.make("l2")
        ids, scores = c.search(self.queries[:2], k=4, filter='name in ["p1", "p2"]')
        self.assertEqual(sorted(ids[0, :2].tolist()), [1, 2])
        self.assertEqual(ids[:, 2:].tolist(), [[-1, -1], [-1, -1]])
        self.assertTrue(np.isnan(scores[:, 2:]).all())

    def test_get_delete_count_and_reopen(self):
        d = os.path.join(tmpdir(self), "c")
        c = Collection(d, dim=32, metric="l2", index="flat", payload_schema={"cat": "integer"})
        c.add(np.arange(100), self.data[:100], [{"cat": i % 3} for i in range(100)])
        got = c.get([5, 999, 7], with_vectors=True)
        self.assertEqual([g["id"] for g in got], [5, 7])
        self.assertEqual(got[0]["payload"], {"cat": 2})
        np.testing.assert_array_equal(got[0]["vector"], self.data[5])
        self.assertEqual(c.delete([5, 6, 12345]), 2)
        self.assertEqual(len(c), 98)
        c.add([7], self.data[:1], [{"cat": 9}])  # replaces point 7
        self.assertEqual(len(c), 98)
        c.close()
        with self.assertRaises(strata.Error):
            c.search(self.queries, k=1)
        c2 = Collection(d)
        self.addCleanup(c2.close)
        self.assertEqual((c2.dim, len(c2)), (32, 98))
        self.assertEqual(c2.get([7])[0]["payload"], {"cat": 9})
        self.assertEqual(c2.count("cat == 9"), 1)
        ids, _ = c2.search(self.data[8], k=1)
        self.assertEqual(ids[0, 0], 8)

    def test_float32_contiguous_is_not_copied_others_warn(self):
        c = self.make("l2")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no CopyWarning for float32 C-contiguous input
            c.search(self.queries, k=3)
            c.add([1], self.data[1:2])
        with self.assertWarns(CopyWarning):
            ids64, _ = c.search(self.queries.astype(np.float64), k=3)
        with self.assertWarns(CopyWarning):
            idsf, _ = c.search(np.asfortranarray(self.queries), k=3)
        ids, _ = c.search(self.queries, k=3)
        np.testing.assert_array_equal(ids64, ids)
        np.testing.assert_array_equal(idsf, ids)

    def test_search_releases_the_gil(self):
        rng = np.random.default_rng(1)
        big = rng.standard_normal((20000, 64)).astype(np.float32)
        c = Collection(os.path.join(tmpdir(self), "g"), dim=64, metric="l2", index="flat")
        self.addCleanup(c.close)
        c.add(np.arange(len(big)), big)
        q = rng.standard_normal((100, 64)).astype(np.float32)
        alone = 0.0
        while alone < 0.4:  # a search long enough to see
            q = np.concatenate([q, q])
            t0 = time.perf_counter()
            c.search(q, k=10, exact=True)
            alone = time.perf_counter() - t0
        done = threading.Event()
        th = threading.Thread(target=lambda: (c.search(q, k=10, exact=True), done.set()))
        last = time.perf_counter()
        gap = 0.0
        th.start()
        while not done.is_set():
            now = time.perf_counter()
            gap, last = max(gap, now - last), now
        th.join()
        # Holding the GIL, the search would stop this loop for its whole
        # length; released, the loop only waits for the interpreter's switch
        # interval (5 ms) and the OS scheduler.
        self.assertLess(gap, alone / 2, f"the main thread stalled {gap:.3f}s during a "
                                        f"{alone:.3f}s search")

    def test_errors(self):
        d = tmpdir(self)
        with self.assertRaises(FileNotFoundError):
            Collection(os.path.join(d, "none"))
        with self.assertRaisesRegex(ValueError, "not supported"):
            Collection(os.path.join(d, "x"), dim=4, index_params={"bogus": 1})
        with self.assertRaises(ValueError):
            Collection(os.path.join(d, "y"), dim=4, metric="manhattan")
        c = self.make("l2")
        with self.assertRaisesRegex(ValueError, "dimension 16"):
            c.search(np.zeros((2, 16), np.float32), k=1)
        with self.assertRaisesRegex(ValueError, "k must"):
            c.search(self.queries, k=0)
        with self.assertRaisesRegex(ValueError, "ids"):
            c.add([1, 2], self.data[:3])
        with self.assertRaisesRegex(ValueError, "negative"):
            c.add([-1], self.data[:1])
        with self.assertRaises(TypeError):
            c.add([1.5], self.data[:1])
        bad = self.data[:2].copy()
        bad[1, 3] = np.nan
        with self.assertRaises(strata.InvalidArgumentError):
            c.add([10, 11], bad)
        self.assertEqual(c.get([10, 11]), [{"id": 10, "payload": {"cat": 1, "name": "p10"}},
                                           {"id": 11, "payload": {"cat": 2, "name": "p11"}}])
        with self.assertRaises(strata.InvalidArgumentError):
            c.search(self.queries, k=1, filter="cat === 1")
        with self.assertRaises(TypeError):
            c.search(self.queries, k=1, filter=42)
        with self.assertRaisesRegex(ValueError, "dimension 32, not 8"):
            Collection(c.path, dim=8)


if __name__ == "__main__":
    unittest.main()
