"""`python3 -m strata.features._collect REPO_DIR`: runs the repository's Python
definition files (every *.py below it, as `feast apply` does; hidden
directories, __pycache__ and .feastignore patterns skipped) and prints one
JSON object on stdout:

    {"documents": [{"file": ..., "text": ...}], "files": [...], "errors": ["file.py:12: ..."]}

`strata features plan/apply` runs it and loads the documents with the YAML
definitions. What the files print goes to stderr."""

import fnmatch
import json
import os
import runpy
import sys
import traceback

from . import definitions as _d


def repo_files(root):
    ignore = []
    try:
        with open(os.path.join(root, ".feastignore"), encoding="utf-8") as f:
            ignore = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    except OSError:
        pass
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x not in ("__pycache__", "node_modules"))
        for name in sorted(files):
            if not name.endswith(".py") or name.startswith("."):
                continue
            rel = os.path.relpath(os.path.join(d, name), root)
            if any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, p.rstrip("/") + "/*") for p in ignore):
                continue
            out.append(rel)
    return out


def _where(root, exc):
    """file:line of the innermost frame in the repository (or of a SyntaxError)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{os.path.relpath(exc.filename, root)}:{exc.lineno or 0}"
    best = None
    for fr in traceback.extract_tb(exc.__traceback__):
        path = os.path.abspath(fr.filename)
        if path.startswith(root + os.sep):
            best = f"{os.path.relpath(path, root)}:{fr.lineno}"
    return best or "<python>"


def collect(root):
    root = os.path.abspath(root)
    errors, objects, seen = [], [], set()
    files = repo_files(root)
    sys.path.insert(0, root)
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        for rel in files:
            try:
                mod = runpy.run_path(os.path.join(root, rel), run_name=rel[:-3].replace(os.sep, "."))
            except BaseException as e:  # noqa: BLE001  (a repository file failed: report where)
                errors.append(f"{_where(root, e)}: {type(e).__name__}: {e}")
                continue
            for value in mod.values():
                if isinstance(value, (_d.Entity, _d.FeatureView, _d.FeatureService,
                                      _d.RequestSource)) and id(value) not in seen:
                    seen.add(id(value))
                    objects.append(value)
        docs = []
        if objects:
            try:
                docs.append({"file": "<python definitions>", "text": _d.render(objects, root)})
            except (NotImplementedError, ValueError, TypeError) as e:
                errors.append(str(e))
    finally:
        sys.stdout = real_stdout
    return {"documents": docs, "files": files, "errors": errors}


def main(argv):
    if len(argv) != 2:
        print("usage: python3 -m strata.features._collect REPO_DIR", file=sys.stderr)
        return 2
    out = collect(argv[1])
    sys.stdout.write(json.dumps(out))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
