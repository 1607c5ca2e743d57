"""strata.ObjectStore / CachedObjectStore / FaultInjectionStore from Python:
round trips on mem://, file:// and a real `strata server`, file objects
(torch.load, io.BufferedReader, streamed multipart writes), the cache, and the
GIL released during I/O."""
import io
import os
import threading
import time
import unittest

from _util import Server, strata, tmpdir

MiB = 1 << 20


def pattern(n, seed=0):
    return bytes((i * 31 + seed) & 0xFF for i in range(256)) * (n // 256) + b"x" * (n % 256)


class RoundTrips:
    """Mixed into one TestCase per backend; self.store is set by setUp."""

    def test_put_get_head_list_delete(self):
        s = self.store
        info = s.put("a/one", b"hello")
        self.assertEqual(info.size, 5)
        s.put("a/two", bytearray(b"world!"))
        s.put("b/three", memoryview(b"abc"))
        self.assertEqual(s.get("a/one"), b"hello")
        self.assertEqual(s.get("a/two", offset=2), b"rld!")
        self.assertEqual(s.get("a/two", offset=1, length=3), b"orl")
        self.assertEqual(s.get("a/two", offset=100), b"")
        h = s.head("a/two")
        self.assertEqual((h.key, h.size), ("a/two", 6))
        self.assertTrue(h.etag)
        keys = [(k, n) for k, n, _ in s.list("a/")]
        self.assertEqual(keys, [("a/one", 5), ("a/two", 6)])
        self.assertEqual([o.key for o in s.list()], ["a/one", "a/two", "b/three"])
        self.assertEqual(s.list_prefixes(""), ["a/", "b/"])
        self.assertEqual([o.key for o in s.list("", recursive=False)], [])
        self.assertTrue(s.exists("a/one"))
        s.delete("a/one")
        self.assertFalse(s.exists("a/one"))
        s.delete("a/one")  # missing: fine
        with self.assertRaises(strata.NotFoundError) as cm:
            s.get("a/one")
        self.assertIsInstance(cm.exception, FileNotFoundError)
        self.assertIn("a/one", str(cm.exception))
        with self.assertRaises(strata.NotFoundError):
            s.head("nope")

    def test_open_read_seek(self):
        s = self.store
        data = pattern(3 * MiB + 123)
        s.put("blob", data)
        with s.open("blob", buffer_size=256 * 1024) as f:
            self.assertEqual(f.size, len(data))
            self.assertEqual(f.read(10), data[:10])
            f.seek(MiB)
            self.assertEqual(f.read(5), data[MiB:MiB + 5])
            f.seek(-7, io.SEEK_END)
            self.assertEqual(f.read(), data[-7:])
            self.assertEqual(f.read(), b"")
            f.seek(0)
            self.assertEqual(f.read(), data)
            buf = bytearray(1000)
            f.seek(100)
            self.assertEqual(f.readinto(buf), 1000)
            self.assertEqual(bytes(buf), data[100:1100])
        br = io.BufferedReader(s.open("blob"), buffer_size=64 * 1024)
        self.assertEqual(br.read(), data)
        br.close()

    def test_reader_pinned_to_version(self):
        s = self.store
        if isinstance(s, strata.CachedObjectStore):
            self.skipTest("the cache's reader has its own test (tests/cache)")
        data = pattern(1 << 20)
        s.put("v", data)
        with s.open("v", buffer_size=4096) as f:
            self.assertEqual(f.read(100), data[:100])
            s.put("v", b"rewritten")
            f.seek(500_000)
            with self.assertRaises(strata.PreconditionFailedError):
                f.read(100)
        with s.open("v") as f:
            self.assertEqual(f.read(), b"rewritten")

    def test_open_write_multipart(self):
        s = self.store
        data = pattern(13 * MiB + 5, seed=3)
        with s.open("big", "wb", part_size=5 * MiB) as f:
            for i in range(0, len(data), 1 << 20):
                f.write(data[i:i + (1 << 20)])
        self.assertEqual(f.info.size, len(data))
        self.assertEqual(s.get("big"), data)
        with s.open("small", "wb") as f:
            f.write(b"tiny")
        self.assertEqual(s.get("small"), b"tiny")
        # An exception inside the block aborts: no object appears.
        with self.assertRaises(RuntimeError):
            with s.open("aborted", "wb", part_size=5 * MiB) as f:
                f.write(data[:6 * MiB])  # one part already uploaded
                raise RuntimeError("boom")
        self.assertFalse(s.exists("aborted"))
        # Many parts in flight at once, then close: every byte in order.
        big = pattern(23 * MiB + 77, seed=9)
        with s.open("many", "wb", part_size=5 * MiB) as f:
            f.write(big)
        self.assertEqual(s.get("many"), big)
        with self.assertRaises(ValueError):
            s.open("x", "wb", part_size=1 * MiB)

    def test_torch_load_from_open(self):
        import torch
        t = {"w": torch.arange(10000, dtype=torch.float32).reshape(100, 100), "step": 7}
        with self.store.open("model.pt", "wb") as f:
            torch.save(t, f)
        with self.store.open("model.pt") as f:
            back = torch.load(f)
        self.assertTrue(torch.equal(back["w"], t["w"]))
        self.assertEqual(back["step"], 7)


class MemStore(RoundTrips, unittest.TestCase):
    def setUp(self):
        self.store = strata.ObjectStore(f"mem://py-{self.id()}")


class FileStore(RoundTrips, unittest.TestCase):
    def setUp(self):
        d = tmpdir(self)
        self.store = strata.ObjectStore(f"file://{d}?bucket=b&sync=false")


class CachedStore(RoundTrips, unittest.TestCase):
    def setUp(self):
        self.base = strata.ObjectStore(f"mem://pyc-{self.id()}")
        self.store = strata.CachedObjectStore(self.base, cache_dir=os.path.join(tmpdir(self), "c"),
                                              cache_size="64M", ram_size="8M",
                                              block_size="1M")
        # Dropped before its directory goes (cleanups run last-in first-out):
        # its filler thread may still be writing blocks read a moment ago.
        self.addCleanup(delattr, self, "store")

    def test_cache_hits_and_rewrite_not_stale(self):
        data = pattern(4 * MiB)
        self.base.put("k", data)
        self.assertEqual(self.store.get("k"), data)
        self.assertEqual(self.store.get("k"), data)
        st = self.store.stats()
        self.assertGreater(sum(t["hits"] for t in st["tiers"]), 0)
        self.assertTrue(self.store.is_resident("k"))
        self.base.put("k", b"new version")  # behind the cache's back
        self.assertEqual(self.store.get("k"), b"new version")

    def test_bad_options(self):
        with self.assertRaises(ValueError):
            strata.CachedObjectStore(self.base, policy="fifo")
        with self.assertRaises(ValueError):
            strata.CachedObjectStore(self.base, ram_size="lots")
        with self.assertRaises(TypeError):
            strata.CachedObjectStore(42)


class RealServer(RoundTrips, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server().__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def setUp(self):
        # Each test under its own prefix of the one bucket.
        self.store = strata.ObjectStore(self.server.url(self._testMethodName))

    def test_bad_credentials(self):
        bad = self.server.url().replace(self.server.srv.secret_key, "wrong-secret-0000000000")
        with self.assertRaises(strata.Error):
            strata.ObjectStore(bad).put("k", b"v")


class Misc(unittest.TestCase):
    def test_log_level_and_sizes(self):
        strata.set_log_level("error")
        strata.set_log_level("warn")
        with self.assertRaises(ValueError):
            strata.set_log_level("loud")
        self.assertEqual(strata.parse_size("512M"), 512 << 20)
        self.assertEqual(strata.parse_size("2G"), 2 << 30)
        with self.assertRaises(ValueError):
            strata.parse_size("lots")
        with self.assertRaises(ValueError):
            strata.ObjectStore("ftp://nowhere")


class Gil(unittest.TestCase):
    def test_threads_overlap_io(self):
        """2 threads x N gets on a 40 ms store take about half the serial time:
        get() does not hold the GIL while it waits."""
        base = strata.ObjectStore("mem://py-gil")
        base.put("k", b"v" * 1000)
        slow = strata.FaultInjectionStore(base, latency_ms=40)
        n = 6

        def work():
            for _ in range(n):
                assert slow.get("k") == b"v" * 1000

        t0 = time.monotonic()
        work()
        work()
        serial = time.monotonic() - t0
        t0 = time.monotonic()
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        parallel = time.monotonic() - t0
        self.assertGreaterEqual(serial, 2 * n * 0.040)
        self.assertLess(parallel, 0.7 * serial, f"serial {serial:.3f}s, 2 threads {parallel:.3f}s")
        self.assertEqual(slow.stats()["requests"], 4 * n)


if __name__ == "__main__":
    unittest.main()
