#!/usr/bin/python3
"""`strata server --tls-cert/--tls-key`: boto3 over HTTPS (certificate verified),
single and multipart uploads, and a plain-HTTP client on the TLS port is refused
without harming the server.

Usage: /usr/bin/python3 test_tls.py --strata build/strata
"""

import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

BUCKET = "tls-bucket"


def make_cert(work):
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    return cert, key


def main():
    args = H.parse_args()
    runner = H.Runner("tls")
    with H.tempdir() as work:
        cert, key = make_cert(work)
        srv = H.StrataServer(args.strata, extra_args=["--tls-cert", cert, "--tls-key", key])
        try:
            srv.start()
            import boto3
            from botocore.config import Config
            s3 = boto3.session.Session(aws_access_key_id=srv.access_key,
                                       aws_secret_access_key=srv.secret_key,
                                       region_name=H.REGION).client(
                "s3", endpoint_url=f"https://127.0.0.1:{srv.port}", verify=cert,
                config=Config(s3={"addressing_style": "path"}))

            def small():
                s3.create_bucket(Bucket=BUCKET)
                body = os.urandom(1 << 20)
                s3.put_object(Bucket=BUCKET, Key="small", Body=body)
                got = s3.get_object(Bucket=BUCKET, Key="small")["Body"].read()
                assert got == body, "bytes differ over TLS"

            def multipart():
                from boto3.s3.transfer import TransferConfig
                src = os.path.join(work, "big.bin")
                H.write_random_file(src, 20 * H.MiB + 7)
                cfg = TransferConfig(multipart_threshold=8 * H.MiB, multipart_chunksize=8 * H.MiB,
                                     max_concurrency=4)
                s3.upload_file(src, BUCKET, "big", Config=cfg)
                dst = os.path.join(work, "big.out")
                s3.download_file(BUCKET, "big", dst, Config=cfg)
                assert H.sha256_file(dst) == H.sha256_file(src), "multipart object differs over TLS"
                etag = s3.head_object(Bucket=BUCKET, Key="big")["ETag"]
                assert etag.endswith('-3"'), etag

            def plain_http_refused():
                with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    try:
                        data = s.recv(4096)
                    except (ConnectionResetError, socket.timeout):
                        data = b""
                    assert not data.startswith(b"HTTP/1.1 200"), data[:100]
                # ... and TLS clients are still served.
                assert s3.head_object(Bucket=BUCKET, Key="small")["ContentLength"] == 1 << 20

            runner.case("small_object", small)
            runner.case("multipart", multipart)
            runner.case("plain_http_refused", plain_http_refused)
        finally:
            srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
