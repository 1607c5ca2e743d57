"""Plumbing for the Strata FS integration tests: format, mount (background or
foreground), readiness, unmount that always succeeds, fsck, a throwaway
redis-server. Used by test_fs_posix.py, test_fs_redis.py, test_fs_crash.py.

Conventions the tests rely on (tell the FS if they change):
  * `strata fs format META_URL NAME --storage s3://BUCKET/PREFIX?endpoint=URL`,
    credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in the environment.
  * `strata fs mount META_URL MOUNTPOINT [--background] --cache-dir D`: ready
    when MOUNTPOINT is a FUSE mount in /proc/self/mountinfo (polled, 30 s);
    without --background the process stays in the foreground and is the FUSE
    daemon (its pid is what test_fs_crash.py kills).
  * run as root, the mount must let other users in (allow_other) for the
    EACCES checks; extra mount arguments can be given in STRATA_FS_MOUNT_ARGS.
  * `strata fs umount MOUNTPOINT` and `strata fs fsck META_URL` exit 0 on success.
"""

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

SKIP_RC = 77   # ctest SKIP_RETURN_CODE: only for a machine without a FUSE device
REDIS_SERVER = "/usr/bin/redis-server"


def strata_has_fs(binary):
    """True when the binary has an `fs` subcommand (its --help lists it)."""
    p = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30,
                       env=H.clean_env())
    return re.search(r"^\s+fs\s", p.stdout + p.stderr, re.M) is not None


def skip_unless_fs(binary, name):
    """Fails when `strata fs` or fusermount3 is missing; skips (exit 77) only
    where the kernel offers no FUSE device (a container without /dev/fuse)."""
    if not os.path.exists("/dev/fuse"):
        print(f"SKIP {name}: /dev/fuse missing: this machine cannot mount FUSE "
              f"filesystems; exit {SKIP_RC} = skipped", flush=True)
        sys.exit(SKIP_RC)
    if not strata_has_fs(binary):
        print(f"FAIL {name}: `{binary} fs` does not exist (no `fs` subcommand in --help)", flush=True)
        sys.exit(1)
    for tool in ("/usr/bin/fusermount3",):
        if not os.access(tool, os.X_OK):
            print(f"FAIL {name}: {tool} missing (Debian fuse3; scripts/install-deps.sh test)", flush=True)
            sys.exit(1)


def fuse_mounts():
    """{mountpoint: fstype} of FUSE mounts, from /proc/self/mountinfo."""
    out = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            mp = left.split()[4].replace("\\040", " ")
            fstype = right.split()[0]
            if fstype.startswith("fuse"):
                out[mp] = fstype
    return out


def is_fuse_mounted(mp):
    return os.path.realpath(mp) in fuse_mounts()


def force_unmount(mp, quiet=False):
    """Unmounts mp however it can (fusermount3 -u, -uz, umount -l). Never raises."""
    mp = os.path.realpath(mp)
    for cmd in (["/usr/bin/fusermount3", "-u", mp], ["/usr/bin/fusermount3", "-uz", mp],
                ["/bin/umount", "-l", mp]):
        if not is_fuse_mounted(mp):
            return True
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
            if not quiet and p.returncode != 0:
                print(f"  ({' '.join(cmd)}: rc {p.returncode} {p.stderr.strip()})", flush=True)
        except (OSError, subprocess.TimeoutExpired) as e:
            if not quiet:
                print(f"  ({' '.join(cmd)}: {e})", flush=True)
    return not is_fuse_mounted(mp)


def pids_serving(mp):
    """Pids of processes whose command line names the mountpoint and 'mount'
    (the FUSE daemons we started for it)."""
    mp = os.path.realpath(mp)
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if "mount" in argv and any(os.path.realpath(a) == mp for a in argv if a.startswith("/")):
            pids.append(int(d))
    return pids


class StrataFS:
    """One volume: its metadata URL, storage URL, and the mounts made of it."""

    def __init__(self, binary, server, work, meta_url, name="vol", bucket="fsvol", prefix="vol"):
        self.binary = os.path.abspath(binary)
        self.server = server
        self.work = work
        self.meta_url = meta_url
        self.name = name
        self.bucket = bucket
        self.storage_url = f"s3://{bucket}/{prefix}?endpoint={server.endpoint}"
        self.env = H.clean_env({"AWS_ACCESS_KEY_ID": server.access_key,
                                "AWS_SECRET_ACCESS_KEY": server.secret_key,
                                "AWS_REGION": H.REGION, "HOME": work})
        self.mounts = {}   # mountpoint -> Popen (foreground) or None (background)
        self.logs = {}       # mountpoint -> its latest log
        self.all_logs = []   # (mountpoint, log) of every mount made
        self.extra_mount_args = shlex.split(os.environ.get("STRATA_FS_MOUNT_ARGS", ""))

    def cli(self, *args, timeout=120, check=True):
        return H.run_tool([self.binary, "fs", *args], self.env, timeout=timeout, check=check)

    def create_bucket(self):
        self.server.client().create_bucket(Bucket=self.bucket)

    def format(self, *extra):
        return self.cli("format", self.meta_url, self.name, "--storage", self.storage_url, *extra)

    def fsck(self):
        p = self.cli("fsck", self.meta_url, check=False, timeout=300)
        assert p.returncode == 0, f"strata fs fsck exited {p.returncode}:\n{(p.stdout + p.stderr)[-3000:]}"
        return p

    def mount(self, mp, background=True, cache_dir=None, extra=(), timeout=30):
        """Mounts and waits until mp is a FUSE mount. Returns the Popen of a
        foreground mount (None for --background)."""
        os.makedirs(mp, exist_ok=True)
        os.chmod(mp, 0o755)
        assert not is_fuse_mounted(mp), f"{mp} is already mounted"
        cache_dir = cache_dir or os.path.join(self.work, "cache-" + os.path.basename(mp))
        args = [self.binary, "fs", "mount", self.meta_url, mp, "--cache-dir", cache_dir,
                *self.extra_mount_args, *extra]
        n = len(self.all_logs) + 1
        log_path = os.path.join(self.work, f"mount-{os.path.basename(mp)}-{n}.log")
        self.logs[mp] = log_path
        self.all_logs.append((mp, log_path))
        print("$", " ".join(args + (["--background"] if background else [])), flush=True)
        log = open(log_path, "wb")
        if background:
            if self._mount_has_log_option():
                args += ["--log", log_path + ".daemon"]
                self.all_logs.append((mp, log_path + ".daemon"))
            p = subprocess.run(args + ["--background"], stdout=log, stderr=subprocess.STDOUT,
                               env=self.env, timeout=timeout + 30)
            log.close()
            assert p.returncode == 0, f"mount --background exited {p.returncode}:\n{self.log_tail(mp)}"
            proc = None
        else:
            proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                    preexec_fn=H._die_with_parent)
            log.close()
        deadline = time.time() + timeout
        while not is_fuse_mounted(mp):
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"mount process exited {proc.returncode} before the mount was "
                                     f"ready:\n{self.log_tail(mp)}")
            if time.time() > deadline:
                if proc is not None:
                    proc.kill()
                    proc.wait()
                raise AssertionError(f"{mp} not mounted after {timeout}s:\n{self.log_tail(mp)}")
            time.sleep(0.05)
        os.stat(mp)   # the root answers
        self.mounts[mp] = proc
        return proc

    def _mount_has_log_option(self):
        """`strata fs mount --log FILE` (the daemon's log), when the binary has it."""
        if not hasattr(self, "_has_log"):
            p = subprocess.run([self.binary, "fs", "mount", "--help"], capture_output=True, text=True,
                               env=self.env, timeout=30)
            self._has_log = re.search(r"^\s+--log\b", p.stdout + p.stderr, re.M) is not None
        return self._has_log

    def umount(self, mp, timeout=60):
        """`strata fs umount`; asserts it worked (the mount is gone and a
        foreground daemon exited 0)."""
        self.cli("umount", mp, timeout=timeout)
        deadline = time.time() + timeout
        while is_fuse_mounted(mp) and time.time() < deadline:
            time.sleep(0.05)
        assert not is_fuse_mounted(mp), f"{mp} still mounted after strata fs umount"
        proc = self.mounts.pop(mp, None)
        if proc is not None:
            try:
                rc = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise AssertionError("mount process did not exit after umount")
            assert rc == 0, f"mount process exited {rc} after umount:\n{self.log_tail(mp)}"
        else:   # background daemon: wait for it to go away
            deadline = time.time() + timeout
            while pids_serving(mp) and time.time() < deadline:
                time.sleep(0.1)
            assert not pids_serving(mp), f"mount daemon for {mp} still running after umount"

    def kill9(self, mp):
        """SIGKILL the daemon(s) serving mp. Returns the pids killed."""
        pids = set(pids_serving(mp))
        proc = self.mounts.get(mp)
        if proc is not None and proc.poll() is None:
            pids.add(proc.pid)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc is not None:
            proc.wait()
        self.mounts.pop(mp, None)
        return sorted(pids)

    def cleanup(self):
        """Always unmounts everything and stops every daemon it started."""
        for mp in list(self.mounts):
            proc = self.mounts.pop(mp)
            if is_fuse_mounted(mp):
                try:
                    subprocess.run([self.binary, "fs", "umount", mp], env=self.env, timeout=20,
                                   capture_output=True)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            force_unmount(mp)
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            for pid in pids_serving(mp):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def dump_logs(self, n=60):
        """Prints the tail of every mount log (call when something failed)."""
        for mp, path in self.all_logs:
            try:
                with open(path, "rb") as f:
                    tail = "\n".join(f.read().decode("utf-8", "replace").splitlines()[-n:])
            except OSError:
                tail = "(unreadable)"
            print(f"---- mount log for {mp} ({path}), last {n} lines:\n{tail}", flush=True)

    def log_tail(self, mp, n=40):
        try:
            with open(self.logs[mp], "rb") as f:
                return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-n:])
        except (OSError, KeyError):
            return "(no mount log)"


class RedisServer:
    """A throwaway redis-server on a free loopback port, no persistence."""

    def __init__(self, work):
        self.work = work
        self.proc = None
        self.port = None

    def start(self, timeout=20):
        for _ in range(5):
            self.port = H.free_port()
            log = open(os.path.join(self.work, "redis.log"), "wb")
            self.proc = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self.work, "--protected-mode", "no"],
                stdout=log, stderr=subprocess.STDOUT, preexec_fn=H._die_with_parent)
            log.close()
            deadline = time.time() + timeout
            while time.time() < deadline and self.proc.poll() is None:
                if self.ping():
                    return self
                time.sleep(0.05)
            self.stop()
        raise RuntimeError("redis-server did not start:\n" + open(os.path.join(self.work, "redis.log")).read()[-2000:])

    def command(self, *args):
        """One RESP command; returns the raw reply bytes."""
        req = f"*{len(args)}\r\n".encode() + b"".join(
            f"${len(a.encode())}\r\n{a}\r\n".encode() for a in args)
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
            s.sendall(req)
            return s.recv(65536)

    def ping(self):
        try:
            return self.command("PING").startswith(b"+PONG")
        except OSError:
            return False

    def url(self, db=1):
        return f"redis://127.0.0.1:{self.port}/{db}"

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def postgres_bin_dir():
    """The newest /usr/lib/postgresql/*/bin with initdb and postgres, or None
    (Debian's postgresql not installed)."""
    import glob
    found = [os.path.dirname(p) for p in glob.glob("/usr/lib/postgresql/*/bin/postgres")
             if os.access(os.path.join(os.path.dirname(p), "initdb"), os.X_OK)]
    found.sort(key=lambda d: [int(x) if x.isdigit() else 0 for x in d.split("/")[3].split(".")])
    return found[-1] if found else None


class PostgresServer:
    """A throwaway PostgreSQL: initdb in work/pg, postgres on a free loopback
    port with its socket in that directory, trust authentication for user
    strata, fsync off. Under root both run as the `postgres` user (they
    refuse to run as root)."""

    def __init__(self, work):
        self.work = work
        self.dir = os.path.join(work, "pg")
        self.bin = postgres_bin_dir()
        self.proc = None
        self.port = None

    def _user(self):
        if os.geteuid() != 0:
            return {}
        import pwd
        pw = pwd.getpwnam("postgres")

        def drop():
            H._die_with_parent()
            os.setgroups([])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
        return {"preexec_fn": drop, "uid_gid": (pw.pw_uid, pw.pw_gid)}

    def _run(self, *argv):
        u = self._user()
        p = subprocess.run([os.path.join(self.bin, argv[0]), *argv[1:]], capture_output=True,
                           text=True, timeout=120, preexec_fn=u.get("preexec_fn"))
        if p.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
        return p.stdout

    def start(self, databases=("v1", "v2")):
        if self.bin is None:
            raise RuntimeError("no /usr/lib/postgresql/*/bin (Debian's postgresql)")
        os.makedirs(self.dir)
        u = self._user()
        if "uid_gid" in u:
            os.chown(self.dir, *u["uid_gid"])
        self._run("initdb", "-D", os.path.join(self.dir, "data"), "-U", "strata", "--auth=trust",
                  "-E", "UTF8", "--no-sync", "--no-instructions")
        self.port = H.free_port()
        log = open(os.path.join(self.work, "postgres.log"), "wb")
        self.proc = subprocess.Popen(
            [os.path.join(self.bin, "postgres"), "-D", os.path.join(self.dir, "data"),
             "-p", str(self.port), "-k", self.dir, "-c", "listen_addresses=127.0.0.1",
             "-c", "fsync=off", "-c", "max_connections=300"],
            stdout=log, stderr=subprocess.STDOUT, preexec_fn=u.get("preexec_fn", H._die_with_parent))
        log.close()
        deadline = time.time() + 30
        while time.time() < deadline and self.proc.poll() is None:
            r = subprocess.run([os.path.join(self.bin, "pg_isready"), "-q", "-h", "127.0.0.1",
                                "-p", str(self.port)])
            if r.returncode == 0:
                for db in databases:
                    self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "strata", db)
                return self
            time.sleep(0.1)
        raise RuntimeError("postgres did not start:\n" +
                           open(os.path.join(self.work, "postgres.log")).read()[-2000:])

    def sql(self, db, statement):
        return self._run("psql", "-X", "-q", "-At", "-h", "127.0.0.1", "-p", str(self.port),
                         "-U", "strata", "-d", db, "-v", "ON_ERROR_STOP=1", "-c", statement)

    def url(self, db="v1"):
        return f"postgres://strata@127.0.0.1:{self.port}/{db}"

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown: ends client sessions
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def pick_seed(args, env_name):
    """--seed, else $env_name, else a random one; printed so a failure replays."""
    import random
    seed = args.seed if args.seed is not None else int(os.environ.get(env_name, random.randrange(1 << 30)))
    print(f"{env_name}={seed}", flush=True)
    return seed


def new_volume(strata, srv, work):
    """Starts srv and returns a StrataFS (SQLite metadata under work) whose
    bucket exists; formatting it is the caller's first test case."""
    srv.start()
    fs = StrataFS(strata, srv, work, f"sqlite3://{work}/meta.db")
    fs.create_bucket()
    return fs


def make_work_dir(prefix):
    """A temp dir other users can traverse (the EACCES checks run as 65534)."""
    import tempfile
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o755)
    return d


def teardown(runner, fs, srv, work, *others):
    """The end of every FS test's main(): unmount and clean the volume (its
    logs printed when a case failed), stop the servers, remove the work dir."""
    if fs is not None:
        fs.cleanup()
        if any(not ok for _, ok, _, _ in runner.results):
            fs.dump_logs()
    for o in others:
        o.stop()
    srv.cleanup()
    remove_work_dir(work)


def remove_work_dir(d):
    # Never recurse into a mount that is still there.
    stuck = []
    for mp in fuse_mounts():
        if mp.startswith(os.path.realpath(d) + "/") and not force_unmount(mp, quiet=True):
            stuck.append(mp)
    if stuck:
        print(f"WARNING: could not unmount {stuck}; leaving {d} in place", flush=True)
        return
    shutil.rmtree(d, ignore_errors=True)
