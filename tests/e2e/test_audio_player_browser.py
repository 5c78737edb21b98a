"""An m&m's item's audio on its page: the player loads the stored file (its duration shows
once Chromium has read the header), a missing file says so, and "Attach audio" fills it in;
a file that is not audio is refused with a message naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from benchmark.builtin import toolsets_ensure
from benchmark.models import Project, Role
from tests.factories import (
    AudioFileFactory,
    ItemFactory,
    MembershipFactory,
    UserFactory,
    wav_bytes,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_item_page_plays_its_audio_and_attaches_a_missing_file(  # type: ignore[no-untyped-def]
    login_page, tmp_path: Path
) -> None:
    project = Project.objects.create(
        name="Speech",
        kind="plan",
        data_format="mms",
        tag_syntax="",
        toolset=toolsets_ensure()["mms"],
    )
    annotator = UserFactory(username="listener")
    MembershipFactory(project=project, user=annotator, role=Role.ANNOTATOR)
    stored = AudioFileFactory(data=wav_bytes(1, seconds=1.0), projects=[project])
    item = ItemFactory(
        project=project,
        external_id="36",
        query="Summarize speech.wav and other.wav.",
        audio_refs=[
            {"sha256": stored.sha256, "path": "speech.wav"},
            {"sha256": "", "path": "other.wav"},
        ],
    )
    page = login_page(annotator)
    page.goto(f"/projects/{project.pk}/items/{item.pk}/")
    section = page.locator("#item-audio")
    expect(section.locator("audio")).to_have_count(1)
    # The browser can fetch and decode it: the player's duration is the file's one second.
    page.locator("#item-audio audio").evaluate("a => { a.preload = 'metadata'; a.load(); }")
    expect(section.locator("audio")).to_have_js_property("duration", 1)
    expect(section.locator(".audio-missing")).to_have_count(1)

    bad = tmp_path / "other.wav"
    bad.write_bytes(b"<html>not audio</html>")
    page.locator("#audio-file").set_input_files(str(bad))
    page.get_by_role("button", name="Attach", exact=True).click()
    expect(page.locator("#audio-error")).to_contain_text("other.wav: not a FLAC, WAV or MP3 file")

    page.goto(f"/projects/{project.pk}/items/{item.pk}/")
    good = tmp_path / "good" / "other.wav"
    good.parent.mkdir()
    good.write_bytes(wav_bytes(2))
    page.locator("#audio-file").set_input_files(str(good))
    page.get_by_role("button", name="Attach", exact=True).click()
    expect(section.locator("audio")).to_have_count(2)
    expect(section.locator(".audio-missing")).to_have_count(0)
