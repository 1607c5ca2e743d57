#!/usr/bin/python3
"""ShardDataset samples/s over a local `strata server` (S3 API) against the
same WebDataset tar shards read from local disk with Python's tarfile.

    ninja -C build _strata strata
    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_shard_dataset.py \
        --shards 32 --samples 1000 --sample-kib 16 --workers 2

Both sides do the same per-sample work (tar parse, group by key); the local
side is the floor the object-store path is measured against. The sides run
in interleaved rounds (one epoch each, the order alternating, so load from
other processes falls on both); prints each round, the medians and the median
of the per-round ratios ShardDataset / local disk.
"""
import argparse
import io
import os
import shutil
import statistics
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))

import strata  # noqa: E402


def make_shard(i, samples, sample_bytes):
    buf = io.BytesIO()
    payload = os.urandom(sample_bytes)
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for j in range(samples):
            for ext, data in (("bin", payload), ("cls", str(j % 10).encode())):
                ti = tarfile.TarInfo(f"{i:05d}{j:06d}.{ext}")
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def count(loader):
    n = 0
    for batch in loader:
        n += len(batch)
    return n


def ident(batch):
    return batch


def local_disk(paths, workers):
    """The baseline: a plain IterableDataset over local tar files, same split."""
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    class LocalTars(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            w, k = (info.id, info.num_workers) if info else (0, 1)
            for p in paths[w::k]:
                with open(p, "rb") as f:
                    yield from strata.tar_samples(f, p)

    return DataLoader(LocalTars(), batch_size=64, num_workers=workers, collate_fn=ident)


def cpu_seconds(pid):
    """utime + stime of a process (/proc/PID/stat), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--samples", type=int, default=1000, help="samples per shard")
    ap.add_argument("--sample-kib", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    ap.add_argument("--lookahead", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds (each: one epoch per side, the order alternating)")
    ap.add_argument("--strata-bin", default=os.path.join(ROOT, "build", "strata"))
    args = ap.parse_args()
    from torch.utils.data import DataLoader
    import strata_harness as h

    tmp = tempfile.mkdtemp(prefix="strata-bench-shards-")
    srv = h.StrataServer(args.strata_bin)
    srv.start()
    try:
        srv.client().create_bucket(Bucket="bench")
        url = (f"s3://bench?endpoint={srv.endpoint}&region=us-east-1"
               f"&access_key={srv.access_key}&secret_key={srv.secret_key}")
        store = strata.ObjectStore(url)
        paths = []
        for i in range(args.shards):
            blob = make_shard(i, args.samples, args.sample_kib << 10)
            store.put(f"train/shard-{i:05d}.tar", blob)
            paths.append(os.path.join(tmp, f"shard-{i:05d}.tar"))
            with open(paths[-1], "wb") as f:
                f.write(blob)
        total = args.shards * args.samples
        sides = (
            ("local disk (tarfile)", lambda: local_disk(paths, args.workers)),
            ("ShardDataset over S3", lambda: DataLoader(
                strata.ShardDataset.from_prefix(url, "train/", shuffle=False,
                                                lookahead=args.lookahead, ram_size="512M"),
                batch_size=64, num_workers=args.workers, collate_fn=ident)),
        )
        rates = {name: [] for name, _ in sides}
        server_cpu = []  # the S3 server's CPU seconds per S3 epoch
        ratios = []
        print(f"{args.shards} shards x {args.samples} samples x {args.sample_kib} KiB, "
              f"{args.workers} workers, {args.rounds} interleaved rounds, {os.cpu_count()} cores")
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            for name, make in order:
                c0 = cpu_seconds(srv.proc.pid)
                t0 = time.perf_counter()
                n = count(make())
                dt = time.perf_counter() - t0
                if name == sides[1][0]:
                    server_cpu.append((cpu_seconds(srv.proc.pid) - c0, dt))
                assert n == total, (name, n, total)
                rates[name].append(total / dt)
            ratios.append(rates[sides[1][0]][-1] / rates[sides[0][0]][-1])
            print(f"round {r}: local {rates[sides[0][0]][-1]:.0f}/s, S3 "
                  f"{rates[sides[1][0]][-1]:.0f}/s, ratio {ratios[-1]:.2f}, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
        print(f"{'reader':<24}{'samples/s':>12}{'MB/s':>10}   (medians)")
        for name, _ in sides:
            sps = statistics.median(rates[name])
            print(f"{name:<24}{sps:>12.0f}{sps * (args.sample_kib << 10) / 1e6:>10.1f}")
        cpu, wall = statistics.median(c for c, _ in server_cpu), statistics.median(w for _, w in server_cpu)
        print(f"S3 server CPU per S3 epoch: {cpu:.2f} s of a {wall:.2f} s epoch "
              f"({cpu / wall / (os.cpu_count() or 1):.0%} of the machine's cores)")
        print(f"median ratio ShardDataset / local disk: {statistics.median(ratios):.2f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f}), load {os.getloadavg()[0]:.1f}")
    finally:
        srv.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
