#!/usr/bin/env python3
"""Keeps the house the shape ../shared/DESIGN.md draws.

  check_layers.py layers [--root DIR]     no component includes a component above it
  check_layers.py sizes [--root DIR]      no file under src/ over 1,200 lines, no function over 150
  check_layers.py selftest                each check fails on a tree made to break it

A component is a directory src/<name>/ with its public headers in
include/strata/<name>/. Its sources and headers may include its own headers
and those of the components the layer map puts below it (ALLOWED), as
<strata/<name>/...> (public) or "<name>/..." (private; only its own). The
CMake DEPS of each strata_add_component() are held to the same map.
Exit status: 0 when the tree keeps the rules, 1 with one line per breach.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The layer map of DESIGN.md, bottom up. Each component may use those listed.
DOMAIN = ["core", "objstore", "cache", "fsmeta", "fs", "vector", "features"]
FRONTENDS = ["s3", "qdrant", "milvus", "feast", "console"]
ALLOWED = {
    "core": [],
    "objstore": ["core"],
    "cache": ["core", "objstore"],
    "fsmeta": ["core"],
    "fs": ["core", "objstore", "cache", "fsmeta"],
    "vector": ["core", "objstore", "cache"],
    "features": ["core", "objstore", "cache"],
    # Protocol frontends: adapters over the domain libraries, never over each other.
    **{f: DOMAIN for f in FRONTENDS},
    "server": DOMAIN + FRONTENDS,
    "cli": DOMAIN + FRONTENDS + ["server"],
}
# Not components but edges of the house: they may use everything.
EDGES = {"python": DOMAIN + FRONTENDS + ["server"]}

MAX_FILE_LINES = 1200
MAX_FUNCTION_LINES = 150

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def components(root):
    src = os.path.join(root, "src")
    return sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))


def sources(top):
    for dirpath, _, files in os.walk(top):
        for f in sorted(files):
            if f.endswith((".cc", ".h")):
                yield os.path.join(dirpath, f)


def check_includes(root, comp, path, allowed, known, errors):
    text = open(path, encoding="utf-8", errors="replace").read()
    rel = os.path.relpath(path, root)
    for m in INCLUDE.finditer(text):
        kind, target = m.group(1), m.group(2)
        line = text.count("\n", 0, m.start()) + 1
        parts = target.split("/")
        if kind == "<" and parts[0] == "strata" and len(parts) > 2:
            other, private = parts[1], False
        elif kind == '"' and len(parts) > 1 and parts[0] in known:
            other, private = parts[0], True
        else:
            continue
        if other == comp:
            continue
        if private:
            errors.append(f'{rel}:{line}: includes "{target}", a private header of {other} '
                          f"(use its public headers, include/strata/{other}/)")
        elif other not in allowed:
            errors.append(f"{rel}:{line}: {comp} includes <{target}>, but {other} is not below "
                          f"{comp} in the layer map (DESIGN.md); {comp} may use: "
                          f"{', '.join(allowed) or 'nothing'}")


def check_cmake(root, errors):
    path = os.path.join(root, "CMakeLists.txt")
    if not os.path.exists(path):
        return
    text = open(path).read()
    for m in re.finditer(r"strata_add_component\((\w+)(.*?)\)", text, re.S):
        comp, args = m.group(1), m.group(2)
        for dep in re.findall(r"strata::(\w+)", args):
            if comp in ALLOWED and dep not in ALLOWED[comp]:
                line = text.count("\n", 0, m.start()) + 1
                errors.append(f"CMakeLists.txt:{line}: strata_{comp} links strata::{dep}, "
                              f"which is not below it in the layer map")


def layers(root):
    errors = []
    known = set(components(root))
    for comp in sorted(known):
        if comp not in ALLOWED:
            errors.append(f"src/{comp}/: a component the layer map does not know; "
                          "add it to DESIGN.md and to ALLOWED in tests/arch/check_layers.py")
            continue
        for top in (os.path.join(root, "src", comp), os.path.join(root, "include", "strata", comp)):
            for path in sources(top):
                check_includes(root, comp, path, ALLOWED[comp], known, errors)
    for edge, allowed in EDGES.items():
        for path in sources(os.path.join(root, edge)):
            check_includes(root, edge, path, allowed, known, errors)
    check_cmake(root, errors)
    return errors


def strip_code(src):
    """Blanks comments, string and character literals, keeping line breaks."""
    out, i, n = [], 0, len(src)
    blank = lambda s: re.sub(r"[^\n]", " ", s)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(src[i:j])); i = j
        elif src.startswith('R"', i) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', src[i:])
            if not m:
                out.append(c); i += 1; continue
            end = src.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(blank(src[i:j])); i = j
        elif c == "'" and i > 0 and src[i - 1].isalnum() and i + 1 < n and src[i + 1].isalnum():
            out.append(" "); i += 1  # a digit separator: 1'000'000
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(c + blank(src[i + 1:j]) + c); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


CONTROL = re.compile(r"\b(if|for|while|switch|catch)\s*\([^;{}]*\)\s*$")
FUNCTION_HEAD = re.compile(r"\)\s*(const|override|noexcept|final|mutable|->\s*[\w:<>, *&]+|\s)*$")


def long_functions(text, limit):
    """(line, length) of each outermost function body (named or lambda) over limit lines."""
    s = strip_code(text)
    stack, found = [], []
    for m in re.finditer(r"[{}]", s):
        if m.group() == "{":
            head = s[max(0, m.start() - 400):m.start()].rstrip()
            stack.append((m.start(), bool(FUNCTION_HEAD.search(head)) and not CONTROL.search(head)))
        elif stack:
            start, is_function = stack.pop()
            if is_function and not any(f for _, f in stack):
                first = s.count("\n", 0, start) + 1
                length = s.count("\n", 0, m.start()) + 1 - first
                if length > limit:
                    found.append((first, length))
    return found


def sizes(root):
    errors = []
    for path in sources(os.path.join(root, "src")):
        rel = os.path.relpath(path, root)
        text = open(path, encoding="utf-8", errors="replace").read()
        lines = text.count("\n")
        if lines > MAX_FILE_LINES:
            errors.append(f"{rel}: {lines} lines (at most {MAX_FILE_LINES}: split it by concept)")
        for line, length in long_functions(text, MAX_FUNCTION_LINES):
            errors.append(f"{rel}:{line}: a function of {length} lines (at most {MAX_FUNCTION_LINES})")
    return errors


def selftest():
    """Each check must fail on a tree built to break it, and pass on a clean one."""
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        def write(rel, text):
            p = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)

        write("src/core/a.cc", "#include <strata/core/a.h>\n#include <vector>\n")
        write("include/strata/core/a.h", "#pragma once\n")
        write("src/vector/b.cc", "#include <strata/core/a.h>\n#include \"vector/b.h\"\n")
        write("src/vector/b.h", "#pragma once\nint F() {\n  return 1;\n}\n")
        write("CMakeLists.txt", "strata_add_component(vector DEPS strata::core)\n")
        if layers(tmp) or sizes(tmp):
            failures.append(f"a clean tree fails: {layers(tmp) + sizes(tmp)}")
        cases = {
            "upward include": ("src/core/a.cc", "#include <strata/vector/index.h>\n", layers),
            "sibling include": ("src/vector/c.cc", "#include <strata/features/table.h>\n", layers),
            "private include": ("src/vector/d.cc", '#include "core/md5_tables.h"\n', layers),
            "upward CMake dep": ("CMakeLists.txt", "strata_add_component(core DEPS strata::vector)\n", layers),
            "unknown component": ("src/newthing/e.cc", "\n", layers),
            "long file": ("src/core/big.cc", "int x;\n" * (MAX_FILE_LINES + 1), sizes),
            "long function": ("src/core/f.cc",
                              "void F() {\n" + "  G();\n" * (MAX_FUNCTION_LINES + 1) + "}\n", sizes),
            "long lambda": ("src/core/g.cc", "auto h = [](int a) {\n" +
                            "  G(a);\n" * (MAX_FUNCTION_LINES + 1) + "};\n", sizes),
        }
        for name, (rel, text, check) in cases.items():
            p = os.path.join(tmp, rel)
            old = open(p).read() if os.path.exists(p) else None
            write(rel, (old or "") + text)
            if not check(tmp):
                failures.append(f"{name} ({rel}) was not reported")
            if old is None:
                os.remove(p)
                if rel.startswith("src/newthing"):
                    shutil.rmtree(os.path.join(tmp, "src/newthing"))
            else:
                write(rel, old)
        # Strings, comments and digit separators are not code.
        write("src/core/h.cc", 'const char* s = "{{{{";  // }\nint n = 1\'000;\nvoid F() {\n}\n')
        if sizes(tmp):
            failures.append(f"literals confused the function scan: {sizes(tmp)}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("check", choices=["layers", "sizes", "selftest"])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    errors = {"layers": layers, "sizes": sizes}[args.check](root) if args.check != "selftest" else selftest()
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} breach(es) of the layout rules", file=sys.stderr)
        return 1
    print(f"{args.check}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
