#!/usr/bin/python3
"""Transfers side by side: `strata cp` vs awscli (`aws s3 cp`) vs rclone
(`rclone copy`), same server, same data, in one run. Driven by run.sh (see
there for usage); standard library only.

Each tool runs at each of its concurrency values (awscli: s3.max_concurrent_requests
in a temporary AWS_CONFIG_FILE; rclone: --transfers/--checkers/--s3-upload-concurrency/
--multi-thread-streams; strata: --concurrency); a case reports each tool's best
time and the concurrency it came from. Before every upload the tool's prefix is
emptied (so every tool writes new objects), before every download the local
destination is removed (so every tool creates new files). Wall clock of the
whole command, including its start-up.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from strata_server import StrataServer  # noqa: E402

MiB = 1 << 20
GiB = 1 << 30
USER = "benchuser"
SECRET = "bench-secret-0123456789abcdef"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def make_dataset(root, count, size, seed):
    """count files of size bytes, every MiB distinct (so no tool can dedupe)."""
    os.makedirs(root, exist_ok=True)
    block = os.urandom(64 * MiB)
    n = 0
    for i in range(count):
        with open(os.path.join(root, f"f{i:05}.bin"), "wb") as f:
            left = size
            while left > 0:
                k = min(left, MiB)
                off = (n * 4099) % (len(block) - MiB)
                chunk = bytearray(block[off:off + k])
                chunk[:16] = (seed * 1_000_003 + n).to_bytes(16, "big")[:min(16, k)]
                f.write(chunk)
                left -= k
                n += 1


class Tools:
    def __init__(self, args, srv, work):
        self.args = args
        self.srv = srv
        self.work = work
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RCLONE_"))}
        self.env.update({
            "HOME": work,
            "AWS_ACCESS_KEY_ID": USER,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_SHARED_CREDENTIALS_FILE": os.path.join(work, "aws-credentials"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "RCLONE_CONFIG": os.path.join(work, "rclone.conf"),
            "RCLONE_CONFIG_BENCH_TYPE": "s3",
            "RCLONE_CONFIG_BENCH_PROVIDER": "Other",
            "RCLONE_CONFIG_BENCH_ENV_AUTH": "false",
            "RCLONE_CONFIG_BENCH_ACCESS_KEY_ID": USER,
            "RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY": SECRET,
            "RCLONE_CONFIG_BENCH_ENDPOINT": srv.endpoint,
            "RCLONE_CONFIG_BENCH_REGION": "us-east-1",
            "RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE": "true",
        })
        open(self.env["RCLONE_CONFIG"], "w").close()
        open(self.env["AWS_SHARED_CREDENTIALS_FILE"], "w").close()

    def aws_config(self, n):
        path = os.path.join(self.work, f"aws-config-{n}")
        env = dict(self.env, AWS_CONFIG_FILE=path)
        if not os.path.exists(path):
            subprocess.run([self.args.aws, "configure", "set", "default.s3.max_concurrent_requests", str(n)],
                           env=env, check=True)
            subprocess.run([self.args.aws, "configure", "set", "default.region", "us-east-1"], env=env, check=True)
        return env

    def command(self, tool, n, src, dst):
        if tool == "strata":
            return [self.args.strata, "cp", "--recursive", "--quiet", "--no-progress", "--concurrency", str(n),
                    "--endpoint-url", self.srv.endpoint, src, dst], self.env
        if tool == "awscli":
            return [self.args.aws, "--endpoint-url", self.srv.endpoint, "s3", "cp", "--recursive",
                    "--only-show-errors", "--no-progress", src, dst], self.aws_config(n)
        if tool == "rclone":
            conv = lambda p: p.replace("s3://", "bench:") if p.startswith("s3://") else p  # noqa: E731
            return [self.args.rclone, "copy", "--transfers", str(n), "--checkers", str(n),
                    "--s3-upload-concurrency", str(n), "--multi-thread-streams", str(n),
                    conv(src), conv(dst)], self.env
        raise ValueError(tool)

    def run(self, cmd, env):
        # Start from a clean page cache state: no run pays for the previous
        # one's dirty pages (the server runs with --no-fsync, so every upload
        # leaves gigabytes of them behind).
        os.sync()
        t0 = time.monotonic()
        p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=3600)
        dt = time.monotonic() - t0
        if p.returncode != 0:
            raise SystemExit(f"bench: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr.decode()[-3000:]}")
        return dt

    def empty(self, url):
        subprocess.run([self.args.strata, "rm", "--recursive", "--quiet", "--endpoint-url", self.srv.endpoint, url],
                       env=self.env, check=True, stdout=subprocess.DEVNULL)

    def verify(self, a, b):
        """Every file of a has an identical copy in b."""
        for dirpath, _d, files in os.walk(a):
            for f in files:
                pa = os.path.join(dirpath, f)
                pb = os.path.join(b, os.path.relpath(pa, a))
                if os.path.getsize(pa) != os.path.getsize(pb):
                    raise SystemExit(f"bench: {pb} differs from {pa}")
        subprocess.run(["cmp", os.path.join(a, sorted(os.listdir(a))[0]),
                        os.path.join(b, sorted(os.listdir(a))[0])], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--aws", default="/usr/bin/aws")
    ap.add_argument("--rclone", default="/usr/bin/rclone")
    ap.add_argument("--work", required=True)
    ap.add_argument("--cases", default="1m,1g,4k")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply file counts (quick runs: 0.1)")
    ap.add_argument("--strata-conc", default="16,32,64")
    ap.add_argument("--aws-conc", default="10,32,64")
    ap.add_argument("--rclone-conc", default="8,16,32")
    ap.add_argument("--tools", default="strata,awscli,rclone")
    ap.add_argument("--json-out", default="")
    args = ap.parse_args()

    datasets = {
        # name: (files, size, directions)
        "1m": (max(1, int(1000 * args.scale)), MiB, ("up", "down")),
        "1g": (4, GiB if args.scale >= 1 else 256 * MiB, ("up", "down")),
        "4k": (max(1, int(10000 * args.scale)), 4096, ("up",)),
    }
    conc = {"strata": [int(x) for x in args.strata_conc.split(",")],
            "awscli": [int(x) for x in args.aws_conc.split(",")],
            "rclone": [int(x) for x in args.rclone_conc.split(",")]}
    tools = args.tools.split(",")

    srv = StrataServer(args.strata, args.work, USER, SECRET)
    results = []  # dicts
    try:
        t = Tools(args, srv, args.work)
        for tool in tools:
            subprocess.run([args.strata, "mb", "--quiet", "--endpoint-url", srv.endpoint, f"s3://bench-{tool}"],
                           env=t.env, check=True)
        for case in args.cases.split(","):
            count, size, directions = datasets[case]
            src = os.path.join(args.work, "src", case)
            log(f"== {case}: generating {count} x {size} bytes")
            make_dataset(src, count, size, seed=hash(case) & 0xffff)
            # Tools take turns at each step of their concurrency lists, so a
            # change in background load hits all of them alike.
            for i in range(max(len(conc[tool]) for tool in tools)):
                for tool in tools:
                    if i >= len(conc[tool]):
                        continue
                    n = conc[tool][i]
                    url = f"s3://bench-{tool}/{case}/"
                    row = {"case": case, "files": count, "size": size, "tool": tool, "concurrency": n}
                    t.empty(url)
                    cmd, env = t.command(tool, n, src, url)
                    row["up"] = t.run(cmd, env)
                    log(f"   {tool:7} c={n:<3} up   {row['up']:7.2f}s")
                    if "down" in directions:
                        dst = os.path.join(args.work, "dl", f"{tool}-{case}")
                        shutil.rmtree(dst, ignore_errors=True)
                        cmd, env = t.command(tool, n, url, dst)
                        row["down"] = t.run(cmd, env)
                        log(f"   {tool:7} c={n:<3} down {row['down']:7.2f}s")
                        t.verify(src, dst)
                        shutil.rmtree(dst, ignore_errors=True)
                    results.append(row)
            for tool in tools:
                t.empty(f"s3://bench-{tool}/{case}/")
            shutil.rmtree(src, ignore_errors=True)
    finally:
        srv.stop()

    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)

    # Best of each tool per case and direction.
    names = {"1m": "{n} x 1 MiB", "1g": "{n} x {s}", "4k": "{n} x 4 KiB"}
    print("| case | strata | awscli | rclone | vs awscli | vs rclone |")
    print("|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        count, size, directions = datasets[case]
        for d in directions:
            best = {}
            for tool in tools:
                rows = [r for r in results if r["case"] == case and r["tool"] == tool and d in r]
                if rows:
                    r = min(rows, key=lambda r: r[d])
                    best[tool] = (r[d], r["concurrency"])
            label = names[case].format(n=count, s=f"{size // GiB} GiB" if size >= GiB else f"{size // MiB} MiB")
            mbps = lambda s: count * size / MiB / s  # noqa: E731
            cells = []
            for tool in ("strata", "awscli", "rclone"):
                if tool in best:
                    s, n = best[tool]
                    cells.append(f"{s:.2f} s ({mbps(s):.0f} MiB/s, c={n})")
                else:
                    cells.append("-")
            ratio = lambda other: (f"{best[other][0] / best['strata'][0]:.2f}x"  # noqa: E731
                                   if other in best and "strata" in best else "-")
            print(f"| {label} {d} | {cells[0]} | {cells[1]} | {cells[2]} | {ratio('awscli')} | {ratio('rclone')} |")


if __name__ == "__main__":
    main()
