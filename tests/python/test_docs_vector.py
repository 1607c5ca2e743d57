"""Runs the python blocks of docs/python.md's "## Vector database" section,
in order, in one namespace, in a fresh directory. The remote example's
http://localhost:19530 is pointed at a real `strata server` started here."""
import os
import re
import unittest

from _util import ROOT, strata_bin, tmpdir

DOC = os.path.join(ROOT, "docs", "python.md")


def section_blocks(text, title):
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not m:
        raise AssertionError(f"docs/python.md has no '## {title}' section")
    return re.findall(r"^```python\n(.*?)^```", m.group(1), re.S | re.M)


class DocsVectorTest(unittest.TestCase):
    def test_examples_run(self):
        import strata_harness as h
        with open(DOC, encoding="utf-8") as f:
            blocks = section_blocks(f.read(), "Vector database")
        self.assertGreaterEqual(len(blocks), 4)
        srv = h.StrataServer(strata_bin(), vector=True, milvus=True)
        srv.start()
        self.addCleanup(srv.cleanup)
        cwd = os.getcwd()
        os.chdir(tmpdir(self))
        self.addCleanup(os.chdir, cwd)
        ns = {"__name__": "__docs__"}
        for i, code in enumerate(blocks):
            code = code.replace("http://localhost:19530", f"http://127.0.0.1:{srv.milvus_port}")
            with self.subTest(block=i):
                exec(compile(code, f"docs/python.md (Vector database, block {i})", "exec"), ns)


if __name__ == "__main__":
    unittest.main()
