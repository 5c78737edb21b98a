"""An import that leaves every image out says so first (issue 25, finding 5): the job is "done
with warnings", the count of missing images leads its result, and importing the .zip with the
images afterwards fills them in on the items already there."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from benchmark.models import Item, Project, Role, Toolset
from tests.factories import MembershipFactory, UserFactory, png_bytes

pytestmark = pytest.mark.django_db(transaction=True)


def _row(i: int) -> dict[str, object]:
    image = f"images/web_{i:04d}_0.png"
    return {
        "trace_id": f"web_{i:04d}",
        "query": f"How does gadget {i} work?",
        "image_query": None,
        "doc": [{"text": f"Gadget {i} manual.", "images": [image]}],
        "images": [image],
        "gt": f'Gadget {i} works.\n\n<tool>{{"tool_name": "Reference", "description": "d", '
        f'"params": {{"img_index": 0}}}}</tool>',
        "category": "Manual",
        "intent": "Function",
    }


def test_missing_images_warn_first_and_a_reimport_fills_them_in(  # type: ignore[no-untyped-def]
    login_page, tmp_path: Path
) -> None:
    toolset = Toolset.objects.create(name="atp-e2e")
    project = Project.objects.create(
        name="Gadgets", kind="interleaved", tag_syntax="atp", data_format="atp", toolset=toolset
    )
    admin = UserFactory(username="boss")
    MembershipFactory(project=project, user=admin, role=Role.ADMIN)
    records = "".join(json.dumps(_row(i)) + "\n" for i in (1, 2, 3)).encode()
    bare = tmp_path / "data.jsonl"
    bare.write_bytes(records)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("gadgets/data.jsonl", records)
        for i in (1, 2, 3):
            zf.writestr(f"gadgets/images/web_{i:04d}_0.png", png_bytes(i))
    full = tmp_path / "gadgets.zip"
    full.write_bytes(buf.getvalue())

    page = login_page(admin)
    page.goto(f"/projects/{project.pk}/datasets/import/")
    page.locator('input[type="file"]').set_input_files(str(bare))
    page.get_by_role("button", name="Upload and import").click()
    card = page.locator(".job").first
    expect(card.locator("[data-warnings]")).to_have_text("Done with warnings")
    warning = card.locator("#images-missing")
    expect(warning).to_contain_text("3 images missing")
    expect(warning).to_contain_text("images/web_0002_0.png")
    # Shown first, open: above the counts, not folded into a <details>.
    assert card.evaluate(
        "c => c.querySelector('#images-missing').compareDocumentPosition("
        "c.querySelector('.result-counts')) & Node.DOCUMENT_POSITION_FOLLOWING"
    )
    expect(warning).to_be_visible()
    assert all(ref["sha256"] is None for item in Item.objects.all() for ref in item.image_refs)

    # The same records again, with their images: nothing added, the images filled in.
    page.goto(f"/projects/{project.pk}/datasets/import/")
    page.locator('input[type="file"]').set_input_files(str(full))
    page.get_by_role("button", name="Upload and import").click()
    card = page.locator(".job").first
    expect(card.locator("#images-filled")).to_contain_text("3 on 3 items already present")
    expect(card.locator(".job-status-succeeded")).to_have_text("Succeeded")
    expect(card.locator("#images-missing")).to_have_count(0)
    assert all(ref["sha256"] for item in Item.objects.all() for ref in item.image_refs)
