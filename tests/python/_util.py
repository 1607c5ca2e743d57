"""Shared bits of the Python tests: the strata module from build/python, the
server binary, and the integration harness (real `strata server`)."""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD_PY = os.path.join(ROOT, "build", "python")
if "strata" not in sys.modules and BUILD_PY not in sys.path and not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, BUILD_PY)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import strata  # noqa: E402


def strata_bin():
    """The strata binary: $STRATA_BIN (set by ctest) or build/strata."""
    path = os.environ.get("STRATA_BIN") or os.path.join(ROOT, "build", "strata")
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest(f"no strata binary at {path} (build it, or set STRATA_BIN)")
    return path


class Server:
    """A real `strata server` with one bucket; .url(prefix) is an s3:// store URL."""

    def __init__(self, bucket="pytest"):
        import strata_harness as h
        self.h = h
        self.srv = h.StrataServer(strata_bin())
        self.bucket = bucket

    def __enter__(self):
        self.srv.start()
        try:
            self.srv.client().create_bucket(Bucket=self.bucket)
        except BaseException:
            self.srv.cleanup()
            raise
        return self

    def __exit__(self, *exc):
        self.srv.cleanup()
        return False

    def url(self, prefix=""):
        p = f"/{prefix}" if prefix else ""
        return (f"s3://{self.bucket}{p}?endpoint={self.srv.endpoint}&region=us-east-1"
                f"&access_key={self.srv.access_key}&secret_key={self.srv.secret_key}")


def tmpdir(test):
    d = tempfile.TemporaryDirectory(prefix="strata-py-")
    test.addCleanup(d.cleanup)
    return d.name
