"""docs/python.md, section "## Feature store": its python code blocks, run in
order in one namespace in a temporary directory, so the examples stay true."""
import os
import re
import unittest

from _util import ROOT, tmpdir


def section_blocks(path, heading):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    body = text[start:end if end >= 0 else len(text)]
    return re.findall(r"```python\n(.*?)```", body, re.S)


class DocsFeatures(unittest.TestCase):
    def test_examples_run(self):
        blocks = section_blocks(os.path.join(ROOT, "docs", "python.md"), "## Feature store")
        self.assertGreaterEqual(len(blocks), 4)
        cwd = os.getcwd()
        os.chdir(tmpdir(self))
        self.addCleanup(os.chdir, cwd)
        ns = {"__name__": "__docs__"}
        for i, code in enumerate(blocks):
            with self.subTest(block=i):
                exec(compile(code, f"docs/python.md[feature store block {i}]", "exec"), ns)  # noqa: S102
        self.assertTrue(os.path.exists("training.parquet"))


if __name__ == "__main__":
    unittest.main()
