"""docs/python.md, section "## Data path": its python code blocks, run in
order as one script by Debian's interpreter, must succeed (their asserts
check the numbers the text gives)."""
import os
import re
import subprocess
import sys
import unittest

from _util import ROOT, strata, tmpdir

DOC = os.path.join(ROOT, "docs", "python.md")


def section_code(path, heading):
    """The ```python blocks between `heading` and the next level-2 heading."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    body = text[start:end if end >= 0 else len(text)]
    return re.findall(r"^```python\n(.*?)^```$", body, re.S | re.M)


class DocsDataPath(unittest.TestCase):
    def test_examples_run(self):
        blocks = section_code(DOC, "## Data path")
        self.assertGreaterEqual(len(blocks), 4)
        script = os.path.join(tmpdir(self), "datapath_examples.py")
        with open(script, "w") as f:
            f.write("\n\n".join(blocks))
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(strata.__file__)))
        p = subprocess.run([sys.executable, script], capture_output=True, text=True,
                           timeout=150, cwd=os.path.dirname(script), env=env)
        self.assertEqual(p.returncode, 0, f"{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
        self.assertIn("48 152", p.stdout)


if __name__ == "__main__":
    unittest.main()
