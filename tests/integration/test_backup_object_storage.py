"""Backup and restore with media on S3-compatible object storage: ``manage.py backup`` reads
every object through Django's storage API, ``manage.py restore`` writes them back into an
empty bucket (moto's local S3 server, as in test_object_storage.py)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import call_command

from benchmark.backup.manifest import manifest_read
from benchmark.models import Item
from tests.factories import ItemFactory, png_bytes
from tests.integration.test_object_storage import (  # noqa: F401 (fixtures)
    BUCKET,
    PREFIX,
    body,
    bucket,
    keys,
    s3_endpoint,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_the_bucket_round_trips_through_a_backup(bucket: Any, tmp_path: Path) -> None:  # noqa: F811
    files = {f"images/{n:02d}/picture-{n}.png": png_bytes(n) for n in range(12)}
    for name, data in files.items():
        default_storage.save(name, ContentFile(data))
    ItemFactory.create_batch(2)

    call_command("backup", str(tmp_path / "b"), stdout=StringIO())
    manifest = manifest_read(tmp_path / "b")
    assert manifest["storage"] == "object storage"
    assert {f["path"] for f in manifest["files"]} >= {f"media/{name}" for name in files}

    for key in keys(bucket):
        bucket.delete_object(Bucket=BUCKET, Key=key)
    call_command("flush", interactive=False, verbosity=0)

    call_command("restore", str(tmp_path / "b"), stdout=StringIO())
    assert Item.objects.count() == 2
    assert keys(bucket) == sorted(f"{PREFIX}/{name}" for name in files)
    assert all(body(bucket, f"{PREFIX}/{name}") == data for name, data in files.items())
