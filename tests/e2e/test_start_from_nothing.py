"""Issue 12's "Done when", in a real browser: from an empty database with one staff user, a
benchmark starts in Benchwright. The staff user creates a project of each kind, creates two
accounts and adds them as members (an annotator and a reviewer), writes one item of each kind
with the "New item" forms (the m&m's plan built in the plan editor, a verifier finding seen and
fixed), has the local test model draft an ATP-Bench query and keeps it, and exports each project
in its format. Each exported file then imports into a fresh project of the same format, whose
export is byte for byte the same.

Nothing exists beforehand but the staff user: the built-in toolsets and taxonomies appear when
the first project is created (as ``seed_builtin`` would make them). Celery runs eagerly, so the
POST that starts a model draft returns once the model has answered."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from playwright.sync_api import expect

from benchmark.datasets.services import dataset_export_file
from benchmark.models import (
    AuditAction,
    AuditEvent,
    Item,
    Membership,
    Plan,
    Project,
    Response,
    Role,
    Taxonomy,
    Toolset,
)
from tests.factories import UserFactory, png_bytes
from tests.llm_server import MODEL, FakeModelServer, point_at

pytestmark = pytest.mark.django_db(transaction=True)

STAFF = "founder"
PROJECTS = {
    "atp": "Assistant queries",
    "llmi": "Illustrated answers",
    "agentic-mme": "Agent tasks",
    "mms": "Tool plans",
}
DRAFTED = "Which spices go into a classic garam masala, and how are they roasted?"


def settle(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until no htmx request is under way."""
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def create_project(page, name: str, data_format: str) -> Project:  # type: ignore[no-untyped-def]
    page.goto("/")
    page.get_by_role("link", name="New project").click()
    expect(page.locator("h1")).to_have_text("New project")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Benchmark").select_option(data_format)
    page.get_by_label("Description").fill(f"A {data_format} benchmark started from nothing.")
    page.get_by_role("button", name="Create the project").click()
    expect(page.locator("h1")).to_have_text(name)
    settle(page)
    return Project.objects.get(name=name)


def open_new_item(page, ready, project: Project) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"/projects/{project.pk}/")
    page.get_by_role("link", name="New item").click()
    expect(page).to_have_url(re.compile(rf"/projects/{project.pk}/items/new/$"))
    ready(page)


def create_item(page, project: Project, landing: str = "[data-created]") -> Item:  # type: ignore[no-untyped-def]
    """Create the item; the page lands on ``landing`` (the form with its "created" notice, or
    the editor that comes next)."""
    page.get_by_role("button", name="Create item").click()
    expect(page.locator(landing)).to_be_visible()
    settle(page)
    item = Item.objects.get(project=project)
    assert (item.provenance, item.status) == (f"written by {STAFF}", "draft")
    return item


def export(page, project: Project, folder: Path) -> Path:  # type: ignore[no-untyped-def]
    """Download the project's export (with its images) from the project page."""
    page.goto(f"/projects/{project.pk}/")
    page.locator("details.export-menu > summary").click()  # the Data group's "Export…"
    form = page.locator("form.export-form")
    form.get_by_label("with images").check()
    with page.expect_download() as download:
        form.get_by_role("button", name="Export").click()
    target = folder / download.value.suggested_filename
    download.value.save_as(target)
    return target


def zip_files(data: bytes) -> dict[str, bytes]:
    """Every file of an export .zip by its path below the export's own top folder (named after
    the project), so exports of two projects compare file by file."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {
            name.split("/", 1)[1]: zf.read(name) for name in zf.namelist() if not name.endswith("/")
        }


def test_start_a_benchmark_from_nothing(  # type: ignore[no-untyped-def]
    login_page, ready, model_server: FakeModelServer, tmp_path
) -> None:
    staff = UserFactory(username=STAFF, is_staff=True)
    assert not Project.objects.exists() and get_user_model().objects.count() == 1
    page = login_page(staff)

    # ------------------------------------------------------------------ projects
    projects = {fmt: create_project(page, name, fmt) for fmt, name in PROJECTS.items()}
    assert {p.data_format: p.kind for p in projects.values()} == {
        "atp": "interleaved",
        "llmi": "interleaved",
        "agentic-mme": "trajectory",
        "mms": "plan",
    }
    assert all(p.toolset.builtin and p.taxonomy.builtin for p in projects.values())
    atp = projects["atp"]

    # ------------------------------------------------------------------ people and members
    page.get_by_role("link", name="People").click()
    expect(page.locator("h1")).to_have_text("People")
    for username in ("annie", "rita"):
        form = page.locator("#user-create")
        form.get_by_label("Username").fill(username)
        form.get_by_label("Password").fill("a-long-pass-42")
        form.get_by_role("button", name="Create account").click()
        expect(page.locator(f"#users tr[data-username={username}]")).to_be_visible()
        settle(page)

    page.goto(f"/projects/{atp.pk}/")
    page.get_by_role("link", name="Members").click()
    expect(page.locator("h1")).to_have_text("Members")
    for username, role in (("annie", "annotator"), ("rita", "reviewer")):
        add = page.locator("#member-add")
        add.get_by_label("Username").fill(username)
        add.get_by_label("Role").select_option(role)
        add.get_by_role("button", name="Add member").click()
        expect(page.locator(".flash")).to_contain_text(f"{username} joined as {role}")
        expect(page.locator(f"#members tr[data-username={username}] select")).to_have_value(role)
        settle(page)
    # The audit trail shows both additions, by the staff user.
    page.reload()
    added = page.locator(f"#events tr[data-action={AuditAction.MEMBER_ADDED}]")
    expect(added).to_have_count(2)
    expect(added.filter(has_text="annie")).to_contain_text(STAFF)
    expect(added.filter(has_text="rita")).to_contain_text(STAFF)
    assert {(m.user.username, m.role) for m in Membership.objects.filter(project=atp)} == {
        (STAFF, Role.ADMIN),
        ("annie", Role.ANNOTATOR),
        ("rita", Role.REVIEWER),
    }
    assert set(
        AuditEvent.objects.filter(project=atp, action=AuditAction.MEMBER_ADDED).values_list(
            "actor__username", "target"
        )
    ) == {(STAFF, "annie"), (STAFF, "rita")}

    # ------------------------------------------------------------------ items by hand
    picture = tmp_path / "figure.png"
    picture.write_bytes(png_bytes(7))
    photo = tmp_path / "photo.png"
    photo.write_bytes(png_bytes(8))

    # ATP-Bench: query, category and intent, a document with an image, the ground truth.
    open_new_item(page, ready, atp)
    page.get_by_label("Query", exact=True).fill("Which herbs go into a proper pesto?")
    page.get_by_label("Category").select_option("Recipe")
    page.get_by_label("Intent").select_option("Ingredient")
    document = page.locator("[data-document]").nth(0)
    document.locator("textarea").fill("Pesto alla genovese: basil, pine nuts, garlic, cheese.")
    document.locator('input[type="file"]').set_input_files(str(picture))
    page.get_by_label("Ground-truth answer").fill("Basil, with pine nuts, garlic and cheese.")
    atp_item = create_item(page, atp)
    assert (atp_item.category, atp_item.intent) == ("Recipe", "Ingredient")
    assert len(atp_item.documents) == 1 and len(atp_item.documents[0]["images"]) == 1
    assert Response.objects.get(item=atp_item, key="gt").text.startswith("Basil")

    # LLM-I: prompt, an input image, the image-number constraint, ten criteria.
    llmi = projects["llmi"]
    open_new_item(page, ready, llmi)
    page.get_by_label("Prompt").fill("Explain how a bicycle gear works, with one picture.")
    page.get_by_label("Input images").set_input_files(str(picture))
    page.get_by_label("Image-number constraint").select_option("n")
    page.get_by_label("n (for").fill("1")
    for n in range(1, 11):
        page.locator(f"#id_r{n}").fill(f"The answer explains gear detail number {n} clearly.")
    llmi_item = create_item(page, llmi)
    assert len(llmi_item.rubric) == 10

    # Agentic-MME: image, question, answer, match type, level.
    mme = projects["agentic-mme"]
    open_new_item(page, ready, mme)
    page.get_by_label("Image", exact=True).set_input_files(str(photo))
    page.get_by_label("Question").fill("What colour is the square in the picture?")
    page.get_by_label("Answer", exact=True).fill("green")
    match = page.get_by_label("Match type")
    match.select_option(index=1)
    page.get_by_label("Level").select_option("1")
    # An Agentic-MME task goes on to its reference trajectory in the trajectory editor.
    mme_item = create_item(page, mme, landing="h1:has-text('Reference trajectory')")
    assert mme_item.level == 1 and mme_item.expected_answer == "green"

    # m&m's: the request and an input image, then the plan in the plan editor.
    mms = projects["mms"]
    open_new_item(page, ready, mms)
    page.get_by_label("User request").fill(
        "Write a short story about a lighthouse, illustrate it and describe the picture."
    )
    page.get_by_label("Input images").set_input_files(str(photo))
    # The new m&m's item goes on to the plan editor.
    mms_item = create_item(page, mms, landing="h1:has-text('· gold')")
    expect(page.locator(".plan-query")).to_contain_text("lighthouse")
    ready(page)
    steps = page.locator("#plan-steps > li.plan-step")
    for n in range(steps.count(), 3):
        page.get_by_role("button", name="Add a step").click()
        expect(steps).to_have_count(n + 1)
    page.get_by_label("Step 1 tool").select_option("text generation")
    page.get_by_label("Step 1 · text").fill("a short story about a lighthouse")
    page.get_by_label("Step 2 tool").select_option("image generation")
    page.get_by_label("Step 2 · text").fill("<node-0>.text")
    page.get_by_label("Step 3 tool").select_option("image captioning")
    argument = page.get_by_label("Step 3 · image")
    argument.fill("<node-1>.text")
    finding = steps.nth(2).locator(".plan-arg[data-arg='image'] .plan-finding")
    expect(finding).to_contain_text("image generation has no output 'text'")
    argument.fill("<node-1>.image")
    expect(finding).to_have_count(0)
    expect(page.locator("#plan-ok")).to_be_visible()
    settle(page)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#saved-message")).to_contain_text("version")
    plan = Plan.objects.get(item=mms_item)
    assert [s["name"] for s in plan.steps] == [
        "text generation",
        "image generation",
        "image captioning",
    ]
    assert plan.steps[2]["args"] == {"image": "<node-1>.image"}

    # The item page says who wrote each item.
    for project, item in ((atp, atp_item), (llmi, llmi_item), (mme, mme_item), (mms, mms_item)):
        page.goto(f"/projects/{project.pk}/items/{item.pk}/")
        expect(page.locator("dd", has_text=f"written by {STAFF}")).to_be_visible()

    # ------------------------------------------------------------------ a model draft
    point_at(atp, model_server)
    model_server.answer = "```json\n" + json.dumps([DRAFTED]) + "\n```"
    page.goto(f"/projects/{atp.pk}/")
    page.get_by_role("link", name="Draft queries").click()
    expect(page.locator("h1")).to_have_text("Draft queries")
    page.get_by_label("Category").select_option("Recipe")
    page.get_by_label("Intent").select_option("Ingredient")
    page.get_by_label("How many candidates").fill("1")
    page.get_by_role("button", name="Draft queries").click()
    expect(page.locator(".job[data-status=succeeded]")).to_be_visible()
    card = page.locator("[data-candidate]")
    expect(card).to_have_count(1)
    expect(card.locator(".draft-query")).to_have_text(DRAFTED)
    card.get_by_role("button", name="Keep").click()
    expect(card).to_have_attribute("data-status", "kept")
    settle(page)
    card.locator("[data-new-item]").click()
    expect(page.get_by_text(DRAFTED).first).to_be_visible()
    expect(page.locator("dd", has_text=f"drafted by {MODEL}")).to_be_visible()
    drafted = Item.objects.get(project=atp, query=DRAFTED)
    assert (drafted.provenance, drafted.status) == (f"drafted by {MODEL}", "draft")
    page.goto(f"/projects/{atp.pk}/")
    expect(page.get_by_text(drafted.external_id)).to_be_visible()
    expect(page.get_by_text(atp_item.external_id)).to_be_visible()

    # ------------------------------------------------------------------ export, import, export
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    written = {"atp": atp_item, "llmi": llmi_item, "agentic-mme": mme_item, "mms": mms_item}
    for fmt, project in projects.items():
        exported = export(page, project, downloads)
        first = zip_files(exported.read_bytes())
        assert first, f"{fmt}: the export is empty"
        data_files = b"".join(v for k, v in first.items() if not k.startswith("images/"))
        assert json.dumps(written[fmt].query)[1:-1].encode() in data_files, fmt
        assert any(k.startswith("images/") for k in first), f"{fmt}: no image exported"
        if fmt == "atp":
            assert json.dumps(DRAFTED)[1:-1].encode() in data_files
        unpacked = tmp_path / f"unpacked-{fmt}"
        with zipfile.ZipFile(exported) as zf:
            zf.extractall(unpacked)
        (root,) = list(unpacked.iterdir())
        # manage.py import_dataset --create makes the fresh project and imports into it.
        name = f"{PROJECTS[fmt]} again"
        output = io.StringIO()
        call_command(
            "import_dataset",
            str(root),
            "--format",
            fmt,
            "--project",
            name,
            "--create",
            "--admin",
            STAFF,
            stdout=output,
            stderr=io.StringIO(),
        )
        result = json.loads(output.getvalue())
        assert result["items_created"] == project.items.count(), result
        assert result["warnings"] == [], result
        fresh = Project.objects.get(name=name)
        again = dataset_export_file(project=fresh, user=staff, include_images=True)
        with again.handle:
            second = zip_files(again.handle.read())
        assert sorted(second) == sorted(first), fmt
        for path, data in first.items():
            assert second[path] == data, f"{fmt}: {path} differs after the round trip"

    # Nothing but the built-in rows was made along the way.
    assert Toolset.objects.filter(builtin=False).count() == 0
    assert Taxonomy.objects.filter(builtin=False).count() == 0
