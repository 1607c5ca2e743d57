"""strata.vector.MilvusClient: pymilvus's MilvusClient flow, embedded (a
directory, in-process) and remote (a real `strata server`'s Milvus port).
The expectations are pymilvus's documented return shapes and Milvus's
semantics (squared L2 distances, pk in [...] expressions, partitions,
load state), checked against brute force numpy where there are numbers."""
import os
import unittest

import numpy as np

from _util import strata_bin, tmpdir

from strata.vector import (DataType, LoadState, MilvusClient, MilvusException,
                           NotSupportedError, ParamError)

DIM = 8


class FlowMixin:
    def client(self):
        raise NotImplementedError

    def setUp(self):
        self.c = self.client()
        self.addCleanup(self.c.close)
        rng = np.random.default_rng(3)
        self.vecs = rng.standard_normal((200, DIM)).astype(np.float32)

    def test_quick_create_insert_search_query(self):
        c = self.c
        c.create_collection("quick", dimension=DIM, metric_type="L2")
        self.assertTrue(c.has_collection("quick"))
        self.assertIn("quick", c.list_collections())
        self.assertEqual(c.get_load_state("quick"), {"state": LoadState.Loaded})
        d = c.describe_collection("quick")
        self.assertEqual(d["collection_name"], "quick")
        self.assertTrue(d["enable_dynamic_field"])
        by_name = {f["name"]: f for f in d["fields"]}
        self.assertEqual(by_name["id"]["type"], DataType.INT64)
        self.assertTrue(by_name["id"]["is_primary"])
        self.assertEqual(by_name["vector"]["type"], DataType.FLOAT_VECTOR)
        self.assertEqual(by_name["vector"]["params"]["dim"], DIM)

        rows = [{"id": i, "vector": self.vecs[i], "color": ["red", "blue"][i % 2], "n": i}
                for i in range(200)]
        r = c.insert("quick", rows)
        self.assertEqual(r["insert_count"], 200)
        self.assertEqual(r["ids"], list(range(200)))

        q = self.vecs[:3] + 0.01
        res = c.search("quick", data=q, limit=5, output_fields=["color"])
        self.assertEqual(len(res), 3)
        d2 = ((q[:, None, :] - self.vecs[None]) ** 2).sum(-1)
        want = np.argsort(d2, axis=1)[:, :5]
        for qi, hits in enumerate(res):
            self.assertEqual([h["id"] for h in hits], want[qi].tolist())
            for h in hits:
                self.assertEqual(set(h), {"id", "distance", "entity"})
                self.assertEqual(h["entity"], {"color": ["red", "blue"][h["id"] % 2]})
                self.assertAlmostEqual(h["distance"], float(d2[qi, h["id"]]), places=3)

        res = c.search("quick", data=[self.vecs[10].tolist()], limit=3, filter='color == "red"',
                       search_params={"metric_type": "L2", "params": {"ef": 64}})
        self.assertEqual(res[0][0]["id"], 10)
        self.assertTrue(all(h["id"] % 2 == 0 for h in res[0]))
        self.assertEqual(res[0][0]["entity"], {})

        got = c.query("quick", filter="n >= 195", output_fields=["n", "color"])
        self.assertEqual(sorted(g["id"] for g in got), [195, 196, 197, 198, 199])
        self.assertEqual({g["id"]: g["n"] for g in got}[197], 197)
        self.assertEqual(c.query("quick", filter="", output_fields=["count(*)"]),
                         [{"count(*)": 200}])
        got = c.get("quick", ids=[3, 4, 9999], output_fields=["vector"])
        self.assertEqual(sorted(g["id"] for g in got), [3, 4])
        v3 = next(g for g in got if g["id"] == 3)["vector"]
        np.testing.assert_allclose(v3, self.vecs[3], rtol=1e-6)
        self.assertEqual(len(c.query("quick", filter="n < 100", limit=7)), 7)

    def test_schema_index_upsert_delete_partitions(self):
        c = self.c
        schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=32)
        schema.add_field("emb", DataType.FLOAT_VECTOR, dim=DIM)
        schema.add_field("year", DataType.INT64)
        schema.add_field("score", DataType.FLOAT, nullable=True)
        ip = c.prepare_index_params()
        ip.add_index(field_name="emb", index_type="HNSW", metric_type="IP",
                     params={"M": 8, "efConstruction": 64})
        c.create_collection("docs", schema=schema, index_params=ip)
        self.assertEqual(c.list_indexes("docs"), ["emb"])
        idx = c.describe_index("docs", "emb")
        self.assertEqual((idx["index_type"], idx["metric_type"]), ("HNSW", "IP"))

        rows = [{"pk": f"d{i}", "emb": self.vecs[i], "year": 2000 + i % 20,
                 "score": None if i % 5 == 0 else float(i)} for i in range(100)]
        self.assertEqual(c.insert("docs", rows)["insert_count"], 100)
        got = c.get("docs", ids=["d5", "d6"], output_fields=["score", "year"])
        self.assertEqual({g["pk"]: g["score"] for g in got}, {"d5": None, "d6": 6.0})

        # upsert replaces by primary key: still 100 rows, new values
        r = c.upsert("docs", [{"pk": "d1", "emb": self.vecs[1], "year": 1999, "score": 1.5}])
        self.assertEqual(r["upsert_count"], 1)
        self.assertEqual(c.query("docs", filter="", output_fields=["count(*)"])[0]["count(*)"],
                         100)
        self.assertEqual(c.get("docs", "d1", output_fields=["year"])[0]["year"], 1999)

        # IP distances are inner products, larger first
        res = c.search("docs", [self.vecs[7]], limit=4, output_fields=["year"])
        ips = self.vecs[:100] @ self.vecs[7]
        self.assertEqual(res[0][0]["id"], f"d{int(np.argmax(ips))}")
        self.assertAlmostEqual(res[0][0]["distance"], float(ips.max()), places=3)

        self.assertEqual(c.delete("docs", ids=["d2", "d3", "nope"])["delete_count"], 2)
        self.assertEqual(c.delete("docs", filter="year >= 2018")["delete_count"], 10)
        self.assertEqual(c.get_collection_stats("docs")["row_count"], 88)

        # partitions
        c.create_partition("docs", "p2024")
        self.assertTrue(c.has_partition("docs", "p2024"))
        self.assertFalse(c.has_partition("docs", "other"))
        self.assertEqual(sorted(c.list_partitions("docs")), ["_default", "p2024"])
        c.insert("docs", [{"pk": "x1", "emb": self.vecs[150], "year": 2024, "score": 1.0}],
                 partition_name="p2024")
        c.load_partitions("docs", ["p2024"])
        res = c.search("docs", [self.vecs[150]], limit=3, partition_names=["p2024"])
        self.assertEqual([h["id"] for h in res[0]], ["x1"])
        self.assertEqual(len(c.query("docs", filter='pk == "x1"', partition_names=["_default"])),
                         0)
        c.release_partitions("docs", ["p2024"])
        c.drop_partition("docs", "p2024")
        self.assertEqual(c.list_partitions("docs"), ["_default"])

        c.drop_collection("docs")
        self.assertFalse(c.has_collection("docs"))

    def test_errors_are_raised_not_ignored(self):
        c = self.c
        with self.assertRaises(MilvusException) as e:
            c.describe_collection("missing")
        self.assertEqual(e.exception.code, 100)
        c.create_collection("e", dimension=DIM)
        with self.assertRaises(NotSupportedError):
            c.search("e", [self.vecs[0]], limit=3, ranker=object())
        with self.assertRaises(MilvusException) as e:  # no such field to group by
            c.search("e", [self.vecs[0]], limit=3, group_by_field="x")
        with self.assertRaises(NotSupportedError):
            c.insert("e", [{"id": 1, "vector": self.vecs[0]}], bogus=True)
        with self.assertRaises(MilvusException) as e:  # the server refuses unknown params
            c.search("e", [self.vecs[0]], limit=3, search_params={"params": {"bogus": 0.5}})
        self.assertIn("bogus", e.exception.message)
        with self.assertRaises(ParamError):
            c.delete("e")
        with self.assertRaises(ParamError):
            c.insert("e", [{"id": 1}])
        with self.assertRaises(MilvusException) as e:
            c.search("e", [np.zeros(DIM + 1)], limit=3)
        self.assertIn("dimension", e.exception.message)
        with self.assertRaises(NotSupportedError):
            MilvusClient(self.uri, token="root:Milvus")


class RecreatedMixin:
    """Another client drops a collection and creates one of the same name
    with a different schema: this client's cached schema must not be used
    for the new one (pymilvus refreshes its schema cache on a mismatch)."""

    def test_schema_cache_follows_a_recreated_collection(self):
        c = self.c
        c.create_collection("re", dimension=DIM, metric_type="L2")
        c.insert("re", [{"id": i, "vector": self.vecs[i]} for i in range(5)])  # caches the schema
        self.assertEqual(len(c.get("re", ids=[1, 2])), 2)
        old_id = c.describe_collection("re")["collection_id"]

        other = MilvusClient(self.uri)
        self.addCleanup(other.close)
        other.drop_collection("re")
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=16)
        schema.add_field("emb", DataType.FLOAT_VECTOR, dim=DIM + 4)
        schema.add_field("n", DataType.INT64)
        idx = MilvusClient.prepare_index_params()
        idx.add_index("emb", index_type="FLAT", metric_type="L2")
        other.create_collection("re", schema=schema, index_params=idx)
        self.assertNotEqual(other.describe_collection("re")["collection_id"], old_id)

        wide = np.random.default_rng(9).standard_normal((3, DIM + 4)).astype(np.float32)
        rows = [{"pk": f"k{i}", "emb": wide[i], "n": i} for i in range(3)]
        self.assertEqual(c.insert("re", rows)["insert_count"], 3)  # encoded with the new schema
        got = c.get("re", ids=["k1"], output_fields=["n"])  # a VARCHAR key: quoted
        self.assertEqual(got, [{"pk": "k1", "n": 1}])
        self.assertEqual(c.delete("re", ids=["k0"])["delete_count"], 1)
        self.assertEqual(sorted(r["pk"] for r in other.query("re", filter="n >= 0")), ["k1", "k2"])
        # A row the new schema refuses is still refused (and nothing is written).
        with self.assertRaises(MilvusException):
            c.insert("re", [{"pk": "k9", "emb": wide[0]}])  # no "n"
        self.assertEqual(other.query("re", filter='pk == "k9"'), [])
        # Dropped without a successor: the answer is "collection not found".
        other.drop_collection("re")
        with self.assertRaises(MilvusException) as e:
            c.insert("re", rows)
        self.assertEqual(e.exception.code, 100)


class EmbeddedTest(RecreatedMixin, FlowMixin, unittest.TestCase):
    def client(self):
        self.uri = os.path.join(tmpdir(self), "vectors.db")
        return MilvusClient(self.uri)

    def test_reopen_persists(self):
        self.c.create_collection("keep", dimension=DIM, metric_type="L2")
        self.c.insert("keep", [{"id": i, "vector": self.vecs[i]} for i in range(10)])
        self.c.close()
        c2 = MilvusClient(self.uri)
        self.addCleanup(c2.close)
        self.assertEqual(c2.list_collections(), ["keep"])
        self.assertEqual(c2.get_collection_stats("keep")["row_count"], 10)
        res = c2.search("keep", [self.vecs[4]], limit=1)
        self.assertEqual(res[0][0]["id"], 4)


class EmbeddedCallTest(unittest.TestCase):
    """milvus::Embedded's contract: an RPC the service lacks is refused as
    gRPC's UNIMPLEMENTED would be, bytes that are not the request message
    are an invalid argument, and the outcome of a real RPC is in its
    common.Status."""

    def test_call_contract(self):
        import strata
        from strata import _strata
        from strata._milvus_pb import milvus_pb2
        db = _strata._MilvusEmbedded(os.path.join(tmpdir(self), "db"))
        self.addCleanup(db.close)
        self.assertIn("Search", _strata._MilvusEmbedded.methods())
        with self.assertRaisesRegex(strata.Error, "CreateDatabase is not implemented"):
            db.call("CreateDatabase", b"")
        with self.assertRaisesRegex(strata.InvalidArgumentError, "HasCollectionRequest"):
            db.call("HasCollection", b"\xff\xff\xff")
        req = milvus_pb2.DescribeCollectionRequest(collection_name="nope")
        resp = milvus_pb2.DescribeCollectionResponse.FromString(
            db.call("DescribeCollection", req.SerializeToString()))
        self.assertEqual(resp.status.code, 100)
        self.assertIn("nope", resp.status.reason)
        db.close()
        with self.assertRaisesRegex(strata.Error, "closed"):
            db.call("ShowCollections", b"")


_HOLDER = """
import sys, time
from strata.vector import MilvusClient
c = MilvusClient(sys.argv[1])
c.create_collection("held", dimension=4)
print("ready", flush=True)
time.sleep(120)
"""


class OneProcessPerDirectoryTest(unittest.TestCase):
    """An embedded database is one process's (Milvus Lite's rule): a second
    process gets a clear error naming the holder, while clients in the same
    process share the one engine; kill -9 of the holder frees the directory."""

    def start_holder(self, path):
        import subprocess
        import sys
        p = subprocess.Popen([sys.executable, "-c", _HOLDER, path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=os.environ.copy())
        self.addCleanup(lambda: (p.kill(), p.wait(), p.stdout.close(), p.stderr.close()))
        line = p.stdout.readline()
        self.assertEqual(line.strip(), "ready", p.stderr.read() if not line else line)
        return p

    def test_second_process_refused_until_the_holder_dies(self):
        import strata
        path = os.path.join(tmpdir(self), "vectors.db")
        p = self.start_holder(path)
        with self.assertRaises(strata.PreconditionFailedError) as e:
            MilvusClient(path)
        msg = str(e.exception)
        self.assertIn(f"process {p.pid}", msg)
        self.assertIn("one process at a time", msg)
        self.assertIn(path, msg)
        p.kill()  # SIGKILL: the kernel drops the lock with the process
        p.wait()
        c = MilvusClient(path)
        self.addCleanup(c.close)
        self.assertEqual(c.list_collections(), ["held"])

    def test_clients_in_one_process_share_the_engine(self):
        path = os.path.join(tmpdir(self), "vectors.db")
        a = MilvusClient(path)
        b = MilvusClient(path + "/")  # the same directory, spelled differently
        self.addCleanup(b.close)
        a.create_collection("shared", dimension=4)
        a.insert("shared", [{"id": 1, "vector": [0.1, 0.2, 0.3, 0.4]}])
        self.assertEqual(b.get("shared", ids=[1])[0]["id"], 1)
        a.close()
        a.close()  # twice is harmless and does not close b's engine
        self.assertEqual(b.list_collections(), ["shared"])
        with self.assertRaisesRegex(Exception, "closed"):
            a.list_collections()
        b.close()
        # Every client closed: the directory is free for another process.
        p = self.start_holder(path)
        p.kill()
        p.wait()

    def test_a_forked_child_does_not_reuse_the_parents_engine(self):
        import strata
        path = os.path.join(tmpdir(self), "vectors.db")
        c = MilvusClient(path)
        self.addCleanup(c.close)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: the directory is its parent's
            os.close(r)
            try:
                MilvusClient(path)
                code = b"opened"
            except strata.PreconditionFailedError as e:
                code = b"refused" if f"process {os.getppid()}" in str(e) else str(e).encode()
            except BaseException as e:  # noqa: BLE001
                code = repr(e).encode()
            os.write(w, code)
            os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            got = f.read()
        os.waitpid(pid, 0)
        self.assertEqual(got, b"refused")
        self.assertEqual(c.list_collections(), [])  # the parent's engine still serves

    def test_server_and_embedded_exclude_each_other(self):
        import strata
        import strata_harness as h
        data = os.path.join(tmpdir(self), "data")
        srv = h.StrataServer(strata_bin(), data_dir=data, vector=True, milvus=True)
        srv.start()
        self.addCleanup(srv.cleanup)
        with self.assertRaises(strata.PreconditionFailedError) as e:
            MilvusClient(os.path.join(data, "vector"))
        self.assertIn("uri=", str(e.exception))  # says what to do instead


class EmbeddedThenServedTest(unittest.TestCase):
    def test_server_serves_an_embedded_directory(self):
        import strata_harness as h
        data = os.path.join(tmpdir(self), "data")
        vecs = np.random.default_rng(5).standard_normal((20, DIM)).astype(np.float32)
        c = MilvusClient(os.path.join(data, "vector"))  # the server's DATA/vector
        c.create_collection("handover", dimension=DIM, metric_type="L2")
        c.insert("handover", [{"id": i, "vector": vecs[i], "tag": f"t{i}"} for i in range(20)])
        c.close()
        srv = h.StrataServer(strata_bin(), data_dir=data, vector=True, milvus=True)
        srv.start()
        self.addCleanup(srv.cleanup)
        r = MilvusClient(uri=f"http://127.0.0.1:{srv.milvus_port}")
        self.addCleanup(r.close)
        self.assertEqual(r.list_collections(), ["handover"])
        hits = r.search("handover", [vecs[11]], limit=1, output_fields=["tag"])
        self.assertEqual((hits[0][0]["id"], hits[0][0]["entity"]), (11, {"tag": "t11"}))


class RemoteTest(RecreatedMixin, FlowMixin, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import strata_harness as h
        cls.srv = h.StrataServer(strata_bin(), vector=True, milvus=True)
        cls.srv.start()

    @classmethod
    def tearDownClass(cls):
        cls.srv.cleanup()

    def client(self):
        self.uri = f"http://127.0.0.1:{self.srv.milvus_port}"
        c = MilvusClient(uri=self.uri)
        for name in c.list_collections():  # tests share the server
            c.drop_collection(name)
        return c


if __name__ == "__main__":
    unittest.main()
