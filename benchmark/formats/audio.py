"""Audio files a task takes as input (m&m's speech): which names are audio, and what a file's
bytes are, by their magic bytes. Pure Python: no Django.

``inspect_audio`` accepts FLAC (``fLaC``), WAV (``RIFF....WAVE``) and MP3 (an ``ID3`` tag or an
MPEG audio frame sync) and reads the duration where the header gives it cheaply (FLAC's
STREAMINFO, WAV's ``fmt `` and ``data`` chunks); anything else raises ``AudioRejected`` saying
what the bytes are not. ``audio_names`` lists the audio files an m&m's task names: its
``input_files`` and the plain file names its plans pass as arguments (what m&m's released rows
carry: ``{"audio": "1284-1180-0003.flac"}``).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AUDIO_EXTENSIONS",
    "AudioInfo",
    "AudioRejected",
    "audio_names",
    "inspect_audio",
    "is_audio_name",
]

#: File name endings m&m's tasks use for audio inputs (and the three formats stored).
AUDIO_EXTENSIONS = (".flac", ".wav", ".mp3")

CONTENT_TYPES = {"flac": "audio/flac", "wav": "audio/wav", "mp3": "audio/mpeg"}


class AudioRejected(ValueError):
    """The bytes are not an audio file Benchwright stores (the message says why)."""


@dataclass(frozen=True)
class AudioInfo:
    sha256: str
    format: str  # flac | wav | mp3
    size_bytes: int
    duration_seconds: float | None

    @property
    def extension(self) -> str:
        return self.format

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.format]


def is_audio_name(name: Any) -> bool:
    """Whether ``name`` is a plain file name (or path) ending like an audio file."""
    if not isinstance(name, str):
        return False
    value = name.strip()
    return (
        bool(value)
        and "<node-" not in value
        and " " not in value
        and value.lower().endswith(AUDIO_EXTENSIONS)
    )


def audio_names(input_files: Iterable[Any], plans: Iterable[Iterable[Any]]) -> list[str]:
    """The audio files a task names, each once in order of first mention: its input files,
    then the file names its plans' steps pass as arguments."""
    names: dict[str, None] = {}
    for name in input_files:
        if is_audio_name(name):
            names[name.strip()] = None
    for steps in plans:
        for step in steps:
            args = step.get("args") if isinstance(step, dict) else None
            for value in args.values() if isinstance(args, dict) else ():
                if is_audio_name(value):
                    names[value.strip()] = None
    return list(names)


def _format_of(data: bytes) -> str:
    if data[:4] == b"fLaC":
        return "flac"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "wav"
    if data[:3] == b"ID3":
        return "mp3"
    if len(data) >= 2 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0 and data[1] & 0x06:
        return "mp3"  # an MPEG audio frame sync with a layer set
    return ""


def _flac_duration(data: bytes) -> float | None:
    # fLaC, then the STREAMINFO block: a 4-byte block header, 10 bytes of block and frame
    # sizes, then 20 bits sample rate, 3 channels, 5 bits per sample, 36 total samples.
    if len(data) < 8 + 18 or data[4] & 0x7F != 0:
        return None
    bits = int.from_bytes(data[18:26], "big")
    rate = bits >> 44
    samples = bits & ((1 << 36) - 1)
    return samples / rate if rate and samples else None


def _wav_duration(data: bytes) -> float | None:
    offset, byte_rate = 12, 0
    while offset + 8 <= len(data):
        chunk, size = (
            data[offset : offset + 4],
            struct.unpack("<I", data[offset + 4 : offset + 8])[0],
        )
        body = offset + 8
        if chunk == b"fmt " and size >= 12 and body + 12 <= len(data):
            byte_rate = struct.unpack("<I", data[body + 8 : body + 12])[0]
        elif chunk == b"data":
            size = min(size, len(data) - body)
            return size / byte_rate if byte_rate else None
        offset = body + size + (size & 1)
    return None


def inspect_audio(data: bytes, *, max_bytes: int | None = None) -> AudioInfo:
    """What ``data`` is: FLAC, WAV or MP3 by its magic bytes, with its duration where cheap.
    Raises ``AudioRejected`` for an empty file, one over ``max_bytes``, or other bytes."""
    if not data:
        raise AudioRejected("the file is empty")
    if max_bytes is not None and len(data) > max_bytes:
        raise AudioRejected(
            f"file is {len(data) / 1e6:.1f} MB; the limit for audio is {max_bytes / 1e6:.1f} MB"
        )
    fmt = _format_of(data)
    if not fmt:
        raise AudioRejected("not a FLAC, WAV or MP3 file (its first bytes are none of theirs)")
    duration = {"flac": _flac_duration, "wav": _wav_duration}.get(fmt, lambda _: None)(data)
    return AudioInfo(
        sha256=hashlib.sha256(data).hexdigest(),
        format=fmt,
        size_bytes=len(data),
        duration_seconds=round(duration, 3) if duration is not None else None,
    )
