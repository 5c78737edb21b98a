"""Small zip archives built in memory for the upload tests, including broken ones: the same
name twice, a file and a folder of one name, encrypted, a bad CRC, data cut short, an unknown
compression method, a name the file system cannot hold, a size that lies."""

from __future__ import annotations

import io
import struct
import warnings
import zipfile
from collections.abc import Iterable

_CENTRAL = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"
_END = b"PK\x05\x06"

# Offsets of a field in the central directory header and in the local file header.
_FIELDS = {
    "flags": (8, 6, "<H"),
    "method": (10, 8, "<H"),
    "crc": (16, 14, "<I"),
    "file_size": (24, 22, "<I"),
}


def zip_bytes(
    files: dict[str, bytes] | Iterable[tuple[str, bytes]],
    compression: int = zipfile.ZIP_STORED,
) -> bytes:
    """A zip of ``{name: data}`` (or pairs, to repeat a name); a name ending in / is a folder."""
    buf = io.BytesIO()
    pairs = files.items() if isinstance(files, dict) else files
    with zipfile.ZipFile(buf, "w", compression=compression) as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name" is what some tests want
        for name, data in pairs:
            zf.writestr(name, data)
    return buf.getvalue()


def _headers(data: bytes, signature: bytes) -> list[int]:
    found, start = [], 0
    while (at := data.find(signature, start)) >= 0:
        found.append(at)
        start = at + 4
    return found


def patched(data: bytes, field: str, value: int, *, local: bool = True) -> bytes:
    """``data`` with ``field`` of every member set to ``value`` in the central directory (and
    in the local headers unless ``local`` is False). For archives of stored, small members
    whose data does not happen to hold a header signature."""
    central_at, local_at, fmt = _FIELDS[field]
    out = bytearray(data)
    for at in _headers(data, _CENTRAL):
        struct.pack_into(fmt, out, at + central_at, value)
    if local:
        for at in _headers(data, _LOCAL):
            struct.pack_into(fmt, out, at + local_at, value)
    return bytes(out)


def renamed(data: bytes, old: bytes, new: bytes) -> bytes:
    """``data`` with a member's name bytes replaced (same length) in both headers."""
    assert len(old) == len(new)
    return data.replace(old, new)


def cut_short(data: bytes, keep: int) -> bytes:
    """The archive with only the first ``keep`` bytes of its first member's data left, its
    central directory kept: the member claims more data than the archive holds."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        info = zf.infolist()[0]
    header = info.header_offset
    name_len, extra_len = struct.unpack_from("<HH", data, header + 26)
    data_at = header + 30 + name_len + extra_len
    central = data.index(_CENTRAL)
    lost = info.compress_size - keep
    out = bytearray(data[: data_at + keep] + data[data_at + info.compress_size :])
    end = bytes(out).index(_END)
    (offset,) = struct.unpack_from("<I", out, end + 16)
    struct.pack_into("<I", out, end + 16, offset - lost)
    for at in _headers(bytes(out), _CENTRAL):  # later members moved forward too
        (member_at,) = struct.unpack_from("<I", out, at + 42)
        if member_at > header:
            struct.pack_into("<I", out, at + 42, member_at - lost)
    assert central - lost == bytes(out).index(_CENTRAL)
    return bytes(out)
