"""How fast a folder moves to and from S3-compatible storage (benchmark/storage.py), one file
at a time and with TRANSFER_THREADS threads.

The server is moto's in-process S3 server on 127.0.0.1 (as in
tests/integration/test_object_storage.py), so the figures measure the app's own overhead
(requests per file, threads) more than a real network; against MinIO or S3 the threaded
figure gains more, since each request waits on the network.

    BENCHWRIGHT_SHARED_DATA=... .venv/bin/python tests/perf/bench_object_storage.py [FILES] [KB]
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    kb = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    os.environ.update(
        DJANGO_SETTINGS_MODULE="benchmark.settings",
        AWS_STORAGE_BUCKET_NAME="bench",
        AWS_S3_ENDPOINT_URL=endpoint,
        AWS_S3_REGION_NAME="us-east-1",
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_LOCATION="bw",
    )
    import boto3
    import django

    django.setup()
    from benchmark import storage

    boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    ).create_bucket(Bucket="bench")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        for i in range(files):
            path = src / f"d{i % 10}" / f"f{i}.bin"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(os.urandom(kb * 1024))
        print(f"{files} files of {kb} kB, moto on localhost")
        for threads in (1, storage.TRANSFER_THREADS):
            storage.TRANSFER_THREADS = threads
            prefix = f"t{threads}"
            t0 = time.perf_counter()
            storage.storage_put_tree(src, prefix)
            t1 = time.perf_counter()
            storage.storage_get_tree(prefix, Path(tmp) / prefix)
            t2 = time.perf_counter()
            storage.storage_delete_prefix(prefix)
            t3 = time.perf_counter()
            print(
                f"threads={threads}: put {t1 - t0:.2f} s, get {t2 - t1:.2f} s, "
                f"delete {t3 - t2:.2f} s"
            )
    server.stop()


if __name__ == "__main__":
    main()
