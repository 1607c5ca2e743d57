#!/usr/bin/python3
"""rclone (/usr/bin/rclone, s3 backend, provider Other) against a real `strata server`:
mkdir, copy (multipart above 16 MiB), check (sizes/MD5 and --download), copy back,
size, cat, copyto/moveto within the remote, deletefile, sync with deletions, purge.

Usage: /usr/bin/python3 test_rclone.py --strata build/strata
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

MiB = H.MiB
BUCKET = "rclone-bucket"


class RcloneTests:
    def __init__(self, srv, work):
        self.srv = srv
        self.work = work
        self.env = H.clean_env({
            "HOME": work,
            "RCLONE_CONFIG": os.path.join(work, "rclone.conf"),  # empty: remotes come from env
            "RCLONE_CONFIG_STRATA_TYPE": "s3",
            "RCLONE_CONFIG_STRATA_PROVIDER": "Other",
            "RCLONE_CONFIG_STRATA_ENV_AUTH": "false",
            "RCLONE_CONFIG_STRATA_ACCESS_KEY_ID": srv.access_key,
            "RCLONE_CONFIG_STRATA_SECRET_ACCESS_KEY": srv.secret_key,
            "RCLONE_CONFIG_STRATA_ENDPOINT": srv.endpoint,
            "RCLONE_CONFIG_STRATA_REGION": "us-east-1",
            "RCLONE_CONFIG_STRATA_FORCE_PATH_STYLE": "true",
            # Multipart above 16 MiB, in 5 MiB chunks.
            "RCLONE_CONFIG_STRATA_UPLOAD_CUTOFF": "16M",
            "RCLONE_CONFIG_STRATA_CHUNK_SIZE": "5M",
        })
        open(self.env["RCLONE_CONFIG"], "w").close()
        self.src = os.path.join(work, "src")
        self.files = {}
        for i in range(60):
            rel = os.path.join(f"d{i % 4}", f"e{i % 3}", f"f{i}.dat") if i % 5 else f"root{i}.txt"
            self.files[rel] = 37 * i + 1 if i != 7 else 200_000
        self.files["large/big.bin"] = 21 * MiB + 333
        self.files["special/with space \u00fc+&=.txt"] = 1234
        self.files["special/100%/\u65e5\u672c.txt"] = 99
        for rel, size in self.files.items():
            p = os.path.join(self.src, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            if size > MiB:
                H.write_random_file(p, size)
            else:
                with open(p, "wb") as f:
                    f.write(os.urandom(size))

    def rclone(self, *args, check=True):
        return H.run_tool([H.RCLONE, "--retries", "1", "--low-level-retries", "1", *args],
                          self.env, timeout=240, check=check)

    def mkdir(self):
        self.rclone("mkdir", f"strata:{BUCKET}")
        p = self.rclone("lsd", "strata:")
        assert BUCKET in p.stdout, p.stdout

    def copy(self):
        self.rclone("copy", "--transfers", "8", "--checkers", "8", self.src, f"strata:{BUCKET}/tree")
        p = self.rclone("lsjson", "--recursive", "--files-only", f"strata:{BUCKET}/tree")
        listed = {e["Path"]: e["Size"] for e in json.loads(p.stdout)}
        want = {rel.replace(os.sep, "/"): size for rel, size in self.files.items()}
        assert listed == want, f"listed {len(listed)} objects, want {len(want)}; " \
                               f"diff {set(listed.items()) ^ set(want.items())}"
        etag = self.srv.client().head_object(Bucket=BUCKET, Key="tree/large/big.bin")["ETag"]
        assert etag.endswith('-5"'), f"the 21 MiB file was not a 5-part multipart upload: {etag}"

    def check(self):
        p = self.rclone("check", self.src, f"strata:{BUCKET}/tree", check=False)
        out = p.stdout + p.stderr
        assert p.returncode == 0, f"rclone check exited {p.returncode}"
        assert "0 differences found" in out, out[-1000:]
        assert f"{len(self.files)} matching files" in out, out[-1000:]
        # Byte-for-byte as well (multipart objects have no plain MD5 ETag).
        p = self.rclone("check", "--download", self.src, f"strata:{BUCKET}/tree", check=False)
        out = p.stdout + p.stderr
        assert p.returncode == 0 and "0 differences found" in out, out[-1000:]

    def check_detects_difference(self):
        """The oracle can fail: a changed object is reported."""
        c = self.srv.client()
        # Same size, different bytes: only the MD5 comparison can catch it.
        c.put_object(Bucket=BUCKET, Key="tree/root5.txt", Body=os.urandom(self.files["root5.txt"]))
        p = self.rclone("check", self.src, f"strata:{BUCKET}/tree", check=False)
        out = p.stdout + p.stderr
        assert p.returncode != 0 and "1 differences found" in out, out[-1000:]

    def copy_back(self):
        dst = os.path.join(self.work, "back")
        self.rclone("copy", f"strata:{BUCKET}/tree/large", dst)
        assert H.sha256_file(os.path.join(dst, "big.bin")) == H.sha256_file(os.path.join(self.src, "large/big.bin"))

    def server_side_ops(self):
        """size, cat, copyto/moveto inside the remote (CopyObject), deletefile, lsf."""
        p = self.rclone("size", "--json", f"strata:{BUCKET}/tree")
        size = json.loads(p.stdout)
        assert size["count"] == len(self.files) and size["bytes"] == sum(self.files.values()), size
        rel = "d1/e1/f1.dat"
        want = open(os.path.join(self.src, rel), "rb").read()
        p = subprocess.run([H.RCLONE, "cat", f"strata:{BUCKET}/tree/{rel}"], env=self.env, capture_output=True,
                           timeout=60)
        assert p.returncode == 0 and p.stdout == want, (p.returncode, p.stderr[-500:])
        self.rclone("copyto", f"strata:{BUCKET}/tree/{rel}", f"strata:{BUCKET}/other/copy.dat")
        self.rclone("moveto", f"strata:{BUCKET}/other/copy.dat", f"strata:{BUCKET}/other/moved.dat")
        p = self.rclone("lsf", f"strata:{BUCKET}/other")
        assert p.stdout.split() == ["moved.dat"], p.stdout
        self.rclone("deletefile", f"strata:{BUCKET}/other/moved.dat")
        p = self.rclone("lsf", f"strata:{BUCKET}/other", check=False)
        assert p.stdout.strip() == "", p.stdout

    def sync_deletes(self):
        tree = os.path.join(self.work, "mirror")
        for rel in ["keep/a.txt", "keep/b.txt", "gone.txt"]:
            os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
            with open(os.path.join(tree, rel), "wb") as f:
                f.write(rel.encode() * 3)
        self.rclone("sync", tree, f"strata:{BUCKET}/mirror")
        os.unlink(os.path.join(tree, "gone.txt"))
        self.rclone("sync", tree, f"strata:{BUCKET}/mirror")
        p = self.rclone("lsf", "--recursive", "--files-only", f"strata:{BUCKET}/mirror")
        assert sorted(p.stdout.split()) == ["keep/a.txt", "keep/b.txt"], p.stdout
        p = self.rclone("check", tree, f"strata:{BUCKET}/mirror", check=False)
        assert p.returncode == 0, p.stderr
        self.rclone("delete", f"strata:{BUCKET}/mirror")

    def purge(self):
        self.rclone("purge", f"strata:{BUCKET}")
        p = self.rclone("lsd", "strata:")
        assert BUCKET not in p.stdout, p.stdout


def main():
    args = H.parse_args()
    runner = H.Runner("rclone")
    srv = H.StrataServer(args.strata)
    try:
        srv.start()
        with H.tempdir() as work:
            t = RcloneTests(srv, work)
            for name in ["mkdir", "copy", "check", "copy_back", "server_side_ops", "sync_deletes",
                         "check_detects_difference", "purge"]:
                if not runner.case(name, getattr(t, name)) and name in ("mkdir", "copy"):
                    break
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
