#!/usr/bin/python3
"""Strata and Feast read each other's Redis online data (online_store.layout: feast).

A redis-server is started on a loopback port. `strata features materialize`
loads a CSV source into Redis with the Feast layout; a reader written here from
Feast's published format (the "Online Store Format" spec, key_encoding_utils.py
and Value.proto) -- its own RESP client, MurmurHash3 and protobuf decoding, no
Strata code -- finds every entity's latest values. The reverse: hashes written
here the way Feast's Redis store writes them are read back by
`strata features snapshot` (Strata's get_online_features).

Only the Python standard library: nothing here shares code with the C++.

Usage: /usr/bin/python3 test_features_feast_redis.py --strata build/strata
"""

import csv
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

PROJECT = "feastcompat"

# --- the published format, implemented independently -------------------------


def mmh3_32(data, seed=0):
    """MurmurHash3 x86_32, as Python's mmh3.hash(..., signed=False)."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & mask

    h = seed
    n = len(data)
    for i in range(0, n - n % 4, 4):
        k = struct.unpack_from("<I", data, i)[0]
        k = rotl((k * c1) & mask, 15) * c2 & mask
        h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & mask
    tail = data[n - n % 4:]
    k = 0
    for i, b in enumerate(tail):
        k |= b << (8 * i)
    if tail:
        h ^= rotl((k * c1) & mask, 15) * c2 & mask
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h


def feature_field(view, feature):
    return struct.pack("<I", mmh3_32(f"{view}:{feature}".encode()))


def entity_key_v3(keys):
    """serialize_entity_key v3 of {join_key: int64 or str}, join keys sorted."""
    items = sorted(keys.items())
    out = [struct.pack("<I", len(items))]
    for k, _ in items:
        out += [struct.pack("<II", 2, len(k.encode())), k.encode()]
    for _, v in items:
        if isinstance(v, int):
            b = struct.pack("<q", v)
            out += [struct.pack("<II", 4, len(b)), b]
        else:
            b = v.encode()
            out += [struct.pack("<II", 2, len(b)), b]
    return b"".join(out)


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def parse_fields(buf):
    """Protobuf message -> list of (field number, wire type, value)."""
    i, out = 0, []
    while i < len(buf):
        tag, i = read_varint(buf, i)
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            v, i = read_varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        elif wire == 2:
            n, i = read_varint(buf, i)
            v, i = buf[i:i + n], i + n
        else:
            raise AssertionError(f"wire type {wire}")
        out.append((num, wire, v))
    return out


def decode_value(buf):
    """feast.types.Value -> (oneof name, python value); the empty message -> (None, None)."""
    name, val = None, None
    for num, wire, v in parse_fields(buf):
        if num == 1:
            name, val = "bytes_val", bytes(v)
        elif num == 2:
            name, val = "string_val", v.decode()
        elif num in (3, 4, 8):
            signed = v - (1 << 64) if v >= 1 << 63 else v
            name, val = {3: "int32_val", 4: "int64_val", 8: "unix_timestamp_val"}[num], signed
        elif num == 5:
            name, val = "double_val", struct.unpack("<d", v)[0]
        elif num == 6:
            name, val = "float_val", struct.unpack("<f", v)[0]
        elif num == 7:
            name, val = "bool_val", bool(v)
    return name, val


def encode_value(kind, v):
    if kind == "int64_val":
        return b"\x20" + varint(v)
    if kind == "float_val":
        return b"\x35" + struct.pack("<f", v)
    if kind == "string_val":
        b = v.encode()
        return b"\x12" + varint(len(b)) + b
    if kind == "bool_val":
        return b"\x38" + varint(1 if v else 0)
    raise AssertionError(kind)


def decode_timestamp(buf):
    seconds = nanos = 0
    for num, _, v in parse_fields(buf):
        if num == 1:
            seconds = v
        elif num == 2:
            nanos = v
    return seconds, nanos


def encode_timestamp(seconds):
    return b"\x08" + varint(seconds)


class Resp:
    """A minimal RESP2 client (commands as arrays of bulk strings)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.s.makefile("rb")

    def cmd(self, *args):
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(parts))
        return self._reply()

    def _reply(self):
        line = self.f.readline().rstrip(b"\r\n")
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise AssertionError("redis error: " + rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data
        if t == b"*":
            return [self._reply() for _ in range(int(rest))]
        raise AssertionError(f"bad reply {line!r}")


# --- the scenario -------------------------------------------------------------

DEFS = """entities:
  - {name: driver, join_keys: [driver_id]}
feature_views:
  - name: driver_hourly_stats
    entities: [driver]
    ttl: 0
    schema:
      - {name: conv_rate, dtype: Float32}
      - {name: trips, dtype: Int64}
      - {name: city, dtype: String}
      - {name: active, dtype: Bool}
    source: {path: data/stats.csv, timestamp_field: event_timestamp}
"""

BASE = 1704067200  # 2024-01-01T00:00:00Z


def start_redis(work):
    port = H.free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", work], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            r = Resp(port)
            if r.cmd("PING") == "PONG":
                return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("redis-server did not start")


def write_repo(repo, port):
    os.makedirs(os.path.join(repo, "data"))
    with open(os.path.join(repo, "feature_store.yaml"), "w") as f:
        f.write(f"project: {PROJECT}\nregistry: data/registry.json\n"
                f"online_store:\n  type: redis\n  layout: feast\n  connection_string: \"127.0.0.1:{port}\"\n")
    with open(os.path.join(repo, "defs.yaml"), "w") as f:
        f.write(DEFS)
    latest = {}
    rows = ["driver_id,event_timestamp,conv_rate,trips,city,active"]
    for d in range(1, 41):
        for h in range(3):  # three hourly rows per driver; the last one is the latest
            ts = BASE + h * 3600 + d
            rate, trips, city, active = round(0.01 * d + 0.1 * h, 4), d * 10 + h, f"city{d % 5}", (d + h) % 2 == 0
            rows.append(f"{d},{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(ts))},{rate},{trips},{city},"
                        f"{'true' if active else 'false'}")
            latest[d] = (ts, rate, trips, city, active)
    with open(os.path.join(repo, "data", "stats.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    return latest


def check_strata_wrote_feast_layout(r, latest):
    view = "driver_hourly_stats"
    fields = {n: feature_field(view, n) for n in ("conv_rate", "trips", "city", "active")}
    for d, (ts, rate, trips, city, active) in latest.items():
        key = entity_key_v3({"driver_id": d}) + PROJECT.encode()
        h = r.cmd("HGETALL", key)
        assert h, f"no hash for driver {d} (key {key!r}); keys: {r.cmd('KEYS', '*')[:5]}"
        got = dict(zip(h[0::2], h[1::2]))
        assert set(got) == set(fields.values()) | {b"_ts:" + view.encode()}, sorted(got)
        sec, nanos = decode_timestamp(got[b"_ts:" + view.encode()])
        assert (sec, nanos) == (ts, 0), (d, sec, nanos, ts)
        kind, v = decode_value(got[fields["conv_rate"]])
        assert kind == "float_val" and abs(v - rate) < 1e-6, (d, kind, v, rate)
        assert decode_value(got[fields["trips"]]) == ("int64_val", trips), (d, decode_value(got[fields["trips"]]))
        assert decode_value(got[fields["city"]]) == ("string_val", city)
        assert decode_value(got[fields["active"]]) == ("bool_val", active)
    print(f"feast-format reader: {len(latest)} drivers match the source's latest rows", flush=True)


def write_feast_hashes(r):
    """Hashes as Feast's Redis store writes them (HSET of _ts and mmh3 fields)."""
    view = "driver_hourly_stats"
    want = {}
    for d in range(100, 110):
        key = entity_key_v3({"driver_id": d}) + PROJECT.encode()
        vals = {"conv_rate": 0.5 + d / 1000.0, "trips": -d, "city": f"feast{d}", "active": d % 3 == 0}
        r.cmd("HSET", key, f"_ts:{view}", encode_timestamp(BASE + d),
              feature_field(view, "conv_rate"), encode_value("float_val", vals["conv_rate"]),
              feature_field(view, "trips"), encode_value("int64_val", vals["trips"]),
              feature_field(view, "city"), encode_value("string_val", vals["city"]),
              feature_field(view, "active"), encode_value("bool_val", vals["active"]))
        want[d] = vals
    return want


def check_strata_reads_feast_hashes(args, repo, work, want):
    ents = os.path.join(work, "entities.csv")
    with open(ents, "w") as f:
        f.write("driver_id\n" + "\n".join(str(d) for d in list(want) + [999]) + "\n")
    out = os.path.join(work, "snapshot.csv")
    H.run_tool([args.strata, "features", "snapshot", "--repo", repo, "--entities", ents, "--out", out,
                "--features", "driver_hourly_stats:conv_rate,driver_hourly_stats:trips,"
                "driver_hourly_stats:city,driver_hourly_stats:active"], H.clean_env(), timeout=60)
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(want) + 1, rows
    print("snapshot columns:", list(rows[0]), flush=True)
    by_id = {int(row["driver_id"]): row for row in rows}
    for d, vals in want.items():
        row = by_id[d]
        assert abs(float(row["conv_rate"]) - struct.unpack("<f", struct.pack("<f", vals["conv_rate"]))[0]) < 1e-6, row
        assert int(row["trips"]) == vals["trips"], row
        assert row["city"] == vals["city"], row
        assert all(row[f + "__status"] == "PRESENT" for f in ("conv_rate", "trips", "city", "active")), row
        assert row["active"].lower() in ("true", "1") if vals["active"] else row["active"].lower() in ("false", "0"), row
    missing = by_id[999]
    assert missing["trips"] == "" and missing["trips__status"] == "NOT_FOUND", missing
    print(f"strata read {len(want)} Feast-written hashes", flush=True)


def main():
    args = H.parse_args()
    if not shutil.which("redis-server"):
        print("redis-server is not installed (scripts/install-deps.sh test)")
        return 1
    work = tempfile.mkdtemp(prefix="strata-it-feastredis-")
    proc = None
    try:
        proc, port = start_redis(work)
        r = Resp(port)
        assert mmh3_32(b"foo") == (-156908512) & 0xFFFFFFFF  # mmh3's documented value
        repo = os.path.join(work, "repo")
        latest = write_repo(repo, port)
        env = H.clean_env()
        H.run_tool([args.strata, "features", "apply", "--repo", repo], env, timeout=60)
        H.run_tool([args.strata, "features", "materialize", "--repo", repo, "2023-12-31T00:00:00",
                    "2024-01-02T00:00:00"], env, timeout=120)
        check_strata_wrote_feast_layout(r, latest)
        want = write_feast_hashes(r)
        check_strata_reads_feast_hashes(args, repo, work, want)
        # A bad value under a feature's field is a clear error, not a wrong answer.
        key = entity_key_v3({"driver_id": 100}) + PROJECT.encode()
        r.cmd("HSET", key, feature_field("driver_hourly_stats", "trips"), encode_value("string_val", "x"))
        p = H.run_tool([args.strata, "features", "snapshot", "--repo", repo, "--entities",
                        os.path.join(work, "entities.csv"), "--out", os.path.join(work, "bad.csv"),
                        "--features", "driver_hourly_stats:trips"], env, timeout=60, check=False)
        assert p.returncode != 0 and "driver_hourly_stats:trips" in (p.stdout + p.stderr), p
        print("PASS")
        return 0
    finally:
        if proc:
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
