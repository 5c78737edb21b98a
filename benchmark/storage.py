"""The one rule for files that outlive a request: they live in Django's default storage.

Local disk (FileSystemStorage under MEDIA_ROOT) is the default; setting
AWS_STORAGE_BUCKET_NAME puts them on S3-compatible object storage (django-storages), so any
web or worker machine reads any file. Code that needs a real folder (unpacking a zip, reading
a run folder, writing a release) works in a local folder and moves it to or from storage here:

- ``storage_put_tree(local_dir, prefix)``: upload every file below ``local_dir``;
- ``storage_get_tree(prefix, local_dir)``: download every file below ``prefix``;
- ``storage_files(prefix)``: the relative names of every file below ``prefix``;
- ``storage_delete_prefix(prefix)``: remove every file below ``prefix``;
- ``local_tree(prefix)``: a local folder holding the files below ``prefix`` while the block
  runs (the storage's own folder on local disk, else a temporary download).

On local disk (``storage_is_local()``) the storage's folder is the local folder, so moving a
tree is nothing at all and every existing path keeps working. Storage names always use "/"."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.files import File
from django.core.files.storage import FileSystemStorage, default_storage

_CHUNK = 1024 * 1024
#: Files moved to or from object storage at once.
TRANSFER_THREADS = 8


def storage_is_local() -> bool:
    """True when the default storage is the local folder MEDIA_ROOT (no copying needed)."""
    storage = default_storage
    if not isinstance(storage, FileSystemStorage):
        return False
    return Path(storage.location).resolve() == Path(settings.MEDIA_ROOT).resolve()


def _clean(prefix: str) -> str:
    parts = [p for p in PurePosixPath(prefix.replace("\\", "/")).parts if p not in ("/", ".")]
    if ".." in parts:
        raise ValueError(f"storage prefix {prefix!r} leaves the storage")
    return "/".join(parts)


def _join(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix else rel


def storage_files(prefix: str) -> list[str]:
    """Every file below ``prefix``, as names relative to it ("a/b.json"), sorted."""
    prefix = _clean(prefix)
    found: list[str] = []

    def walk(rel: str) -> None:
        where = _join(prefix, rel)
        try:
            dirs, files = default_storage.listdir(where)
        except (FileNotFoundError, NotADirectoryError):
            return
        found.extend(_join(rel, f) if rel else f for f in files)
        for d in dirs:
            walk(_join(rel, d) if rel else d)

    walk("")
    return sorted(found)


def _each(names: list[str], work: Callable[[str], object]) -> None:
    """``work`` for every name: in a few threads on object storage (each request waits on
    the network; django-storages keeps one connection per thread), in order on local disk."""
    if storage_is_local() or len(names) < 2:
        for name in names:
            work(name)
        return
    with ThreadPoolExecutor(max_workers=TRANSFER_THREADS) as pool:
        for _ in pool.map(work, names):
            pass  # re-raises the first error


def _put(name: str, path: Path) -> None:
    # A storage that keeps both copies (FileSystemStorage) gets the old file removed first;
    # S3Storage with file_overwrite replaces it in one request.
    if not getattr(default_storage, "file_overwrite", False) and default_storage.exists(name):
        default_storage.delete(name)
    with path.open("rb") as fh:
        stored = default_storage.save(name, File(fh, name=path.name))
    if stored != name:  # a storage that renamed it after all
        raise OSError(f"storage kept {name!r} as {stored!r}")


def storage_put_tree(local_dir: Path | str, prefix: str) -> list[str]:
    """Upload every file below ``local_dir`` to ``prefix``/<relative path>, replacing what is
    there; returns the names stored. Nothing to do on local disk when ``local_dir`` already is
    the storage's folder for ``prefix``."""
    prefix, root = _clean(prefix), Path(local_dir)
    if storage_is_local() and root.resolve() == Path(default_storage.path(prefix)).resolve():
        return [_join(prefix, r) for r in storage_files(prefix)]
    paths = {
        _join(prefix, p.relative_to(root).as_posix()): p
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }
    _each(list(paths), lambda name: _put(name, paths[name]))
    return list(paths)


def storage_get_tree(prefix: str, local_dir: Path | str) -> Path:
    """Download every file below ``prefix`` into ``local_dir`` (made if missing)."""
    prefix, root = _clean(prefix), Path(local_dir)
    root.mkdir(parents=True, exist_ok=True)

    def get(rel: str) -> None:
        target = root.joinpath(*rel.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        with default_storage.open(_join(prefix, rel), "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, _CHUNK)

    _each(storage_files(prefix), get)
    return root


def storage_delete_prefix(prefix: str) -> None:
    """Remove every file below ``prefix`` (and, on local disk, the folder itself)."""
    prefix = _clean(prefix)
    if not prefix:
        raise ValueError("refusing to delete the whole storage")
    if storage_is_local():
        shutil.rmtree(default_storage.path(prefix), ignore_errors=True)
        return
    _each(storage_files(prefix), lambda rel: default_storage.delete(_join(prefix, rel)))


@contextmanager
def local_tree(prefix: str) -> Iterator[Path]:
    """A local folder with the files below ``prefix`` for the duration of the block: the
    storage's own folder on local disk, else a temporary download removed afterwards."""
    prefix = _clean(prefix)
    if storage_is_local():
        yield Path(default_storage.path(prefix))
        return
    with tempfile.TemporaryDirectory(prefix="bw-storage-") as tmp:
        yield storage_get_tree(prefix, tmp)
