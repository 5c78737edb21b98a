"""Writes for audio files: store bytes once by sha256 (checked by their magic bytes, within
``BENCHWRIGHT_MAX_AUDIO_BYTES``), and attach an uploaded file to an item by the name its task
uses. Files are content-addressed, so a rolled-back write leaves at most an unused file that
the next store of the same bytes reuses."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, cast

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.utils.module_loading import import_string

from benchmark import permissions
from benchmark.exceptions import ValidationFailed
from benchmark.formats.audio import AudioInfo, AudioRejected, inspect_audio, is_audio_name
from benchmark.models import AudioFile, Item, Project
from benchmark.typing import AnyUser, User

__all__ = ["audio_check", "audio_store", "audio_store_inspected", "item_audio_attach"]


#: The one versioned save of an item's fields for its audio list, named by its path (as job
#: runners are): the item services sit above this package (their imports store audio).
ITEM_AUDIO_SAVE = "benchmark.items.services.item_audio_refs_save"


def max_audio_bytes() -> int:
    return int(settings.BENCHWRIGHT_MAX_AUDIO_BYTES)


def audio_check(*, data: bytes, name: str) -> AudioInfo:
    """What the bytes are, or ``ValidationFailed`` naming the file and why it is refused."""
    try:
        return inspect_audio(data, max_bytes=max_audio_bytes())
    except AudioRejected as exc:
        raise ValidationFailed(f"{name or 'upload'}: {exc}") from None


def audio_store(*, data: bytes, name: str = "", project: Project | None = None) -> AudioFile:
    """Store audio bytes once by sha256 (FLAC, WAV or MP3 by their magic bytes), linked to
    ``project``. A bad or too large file raises ``ValidationFailed`` naming it."""
    info = audio_check(data=data, name=name)
    return audio_store_inspected(data=data, info=info, project=project)


def audio_store_inspected(
    *, data: bytes, info: AudioInfo, project: Project | None = None
) -> AudioFile:
    """The row for bytes already inspected, created with its file if new; safe against two
    requests storing the same bytes at once."""
    audio = AudioFile.objects.filter(sha256=info.sha256).first()
    if audio is None:
        audio = AudioFile(
            sha256=info.sha256,
            format=info.format,
            size_bytes=info.size_bytes,
            duration_seconds=info.duration_seconds,
        )
        audio.file.save(
            f"{info.sha256[:2]}/{info.sha256}.{info.extension}", ContentFile(data), save=False
        )
        try:
            with transaction.atomic():
                audio.save()
        except IntegrityError:  # stored meanwhile by another request
            audio = AudioFile.objects.get(sha256=info.sha256)
    if project is not None:
        audio.projects.add(project)
    return audio


def _read(file: Any) -> tuple[str, bytes]:
    name = str(getattr(file, "name", "") or "upload")
    limit = max_audio_bytes()
    size = getattr(file, "size", None)
    if isinstance(size, int) and size > limit:
        raise ValidationFailed(
            f"{name}: file is {size / 1e6:.1f} MB; the limit for audio is {limit / 1e6:.1f} MB"
        )
    return name, file.read(limit + 1)


def item_audio_attach(*, user: AnyUser, item: Item, file: Any) -> AudioFile:
    """Store an uploaded audio file and attach it to ``item`` under its file name: it fills
    the item's missing file of that name, or adds one, as a new version of the item like any
    other edit (``benchmark.items.services.item_audio_refs_save``). Refused (400, naming the file) when
    it is not FLAC, WAV or MP3, is over the limit, or its name is not an audio file name."""
    permissions.require(user=user, project=item.project, action="edit", item=item)
    if file is None:
        raise ValidationFailed("no file: choose a FLAC, WAV or MP3 file to attach")
    name, data = _read(file)
    name = PurePosixPath(name.replace("\\", "/")).name
    if not is_audio_name(name):
        raise ValidationFailed(f"{name}: the name must end in .flac, .wav or .mp3")
    info = audio_check(data=data, name=name)
    item_audio_refs_save = import_string(ITEM_AUDIO_SAVE)

    def attached(refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for ref in refs:
            if ref.get("path") == name or PurePosixPath(str(ref.get("path"))).name == name:
                ref["sha256"] = info.sha256
                return refs
        return [*refs, {"sha256": info.sha256, "path": name}]

    with transaction.atomic():
        audio = audio_store_inspected(data=data, info=info, project=item.project)
        saved = item_audio_refs_save(
            item=item, user=cast("User", user), refs=attached, note=f"Attached audio {name}"
        )
        item.audio_refs = saved.audio_refs
        item.version = saved.version  # type: ignore[attr-defined]
    return audio
