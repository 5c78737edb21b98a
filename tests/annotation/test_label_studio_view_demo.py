"""The demo projects exported for Label Studio show what Benchwright's judge page shows for
the same item: Agentic-MME tasks and ATP-Bench image queries their images (as URLs Label
Studio can load, each naming a file the export wrote), ATP-Bench documents their text and
images, m&m's plan-validity its plan's steps beside the request and the 1/0 choice."""

from __future__ import annotations

import io
import json
import re
import zipfile
from html import unescape
from io import StringIO
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.etree import ElementTree

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.judgment_tasks.models import JudgmentTask
from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from benchmark.datasets.services import dataset_import
from benchmark.formats import label_studio as ls
from benchmark.models import Project, ProjectKind, Role
from review.demo import DEMO_PROJECTS, DEMO_ROOT
from tests.benchmark.formats.test_label_studio_format import _check_task
from tests.factories import (
    JudgmentTaskFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _demo(folder: str) -> Project:
    spec = next(s for s in DEMO_PROJECTS if s.folder == folder)
    project = ProjectFactory(
        name=spec.name, kind=spec.kind, data_format=spec.data_format, tag_syntax=spec.tag_syntax
    )
    dataset_import(project=project, path=DEMO_ROOT / spec.folder)
    judgment_task_ensure_defaults(project=project)
    return project


def _export(project: Project, out: Path, *more: str) -> tuple[list[dict[str, Any]], Any]:
    call_command(
        "export_dataset", "--format", "label-studio", "--project", project.name, *more,
        str(out / "tasks.json"), stdout=StringIO(),
    )  # fmt: skip
    tasks = json.loads((out / "tasks.json").read_text())
    config = ElementTree.fromstring((out / "tasks.config.xml").read_text())
    for task in tasks:
        _check_task(task, config)
    return tasks, config


def _local_file(url: str, root: Path) -> Path:
    """The file a Label Studio local-files URL names, with ``root`` as its document root."""
    parts = urlsplit(url)
    assert parts.path == "/data/local-files/"
    (relative,) = parse_qs(parts.query)["d"]
    return root / relative


def _judge_page(project: Project, task_name: str, external_id: str) -> str:
    reviewer = UserFactory(username=f"rev-{project.pk}")
    if not project.memberships.filter(user=reviewer).exists():
        MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    client = Client()
    client.force_login(reviewer)
    task = JudgmentTask.objects.get(project=project, name=task_name)
    item = project.items.get(external_id=external_id)
    response = client.get(f"/judgment-tasks/{task.pk}/items/{item.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def _shown_images(page: str) -> tuple[list[str], list[str]]:
    """The image paths the judge page shows: with the query, and with the documents."""
    start = page.index("<h2>Query</h2>")
    end = page.index("</section>", start)
    alts = re.compile(r'<img src="[^"]*" alt="([^"]*)"')
    query_card, documents = page[start:end], page[end:]
    return (
        [unescape(a) for a in alts.findall(query_card)],
        [unescape(a) for a in alts.findall(documents)],
    )


def test_agentic_mme_tasks_show_their_images(tmp_path: Path) -> None:
    project = _demo("agentic-mme")
    # a labelled task (the blind "Solve" task has its own screen and free-text answers)
    JudgmentTaskFactory(project=project, name="Keep?")
    tasks, config = _export(project, tmp_path)
    assert [el.get("valueList") for el in config.iter("Image")] == [f"${ls.QUERY_IMAGES_KEY}"]
    assert len(tasks) == 4
    for task in tasks:
        (url,) = task["data"][ls.QUERY_IMAGES_KEY]
        image = _local_file(url, tmp_path)  # the export folder as the document root
        assert image.is_file() and image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # what the judge page shows with the query
    shown, _ = _shown_images(_judge_page(project, "Keep?", "demo01"))
    assert shown == ["images/image_demo01.png"]
    (first,) = [t for t in tasks if t["data"]["external_id"] == "demo01"]
    assert [
        _local_file(u, Path("")).as_posix() for u in first["data"][ls.QUERY_IMAGES_KEY]
    ] == shown


def test_atp_image_queries_and_documents_show_as_on_the_judge_page(tmp_path: Path) -> None:
    project = _demo("atp")
    tasks, config = _export(project, tmp_path, "--image-base-url", "https://files.example.org/bw")
    names = [el.get("name") for el in config]
    assert names[:1] == ["query"] and {"query_images", "documents", "document_images"} <= set(names)
    by_id = {t["data"]["external_id"]: t["data"] for t in tasks}
    placeholder = ls.VIEW_PLACEHOLDERS[ls.QUERY_IMAGES_KEY]
    with_query_image = [i for i, d in by_id.items() if d[ls.QUERY_IMAGES_KEY] != placeholder]
    assert with_query_image == ["atp_demo_04", "atp_demo_05"]

    def paths(urls: list[str]) -> list[str]:
        """The image paths the URLs name ([] for the placeholder of no image)."""
        if urls[0].startswith("data:image/"):
            assert len(urls) == 1
            return []
        prefix = "https://files.example.org/bw/"
        assert all(u.startswith(prefix) for u in urls)
        return [unquote(u[len(prefix) :]) for u in urls]

    for external_id in ("atp_demo_04", "atp_demo_01"):
        data = by_id[external_id]
        query_shown, documents_shown = _shown_images(
            _judge_page(project, "Query verification", external_id)
        )
        assert paths(data[ls.QUERY_IMAGES_KEY]) == query_shown
        assert paths(data[ls.DOCUMENT_IMAGES_KEY]) == documents_shown
        item = project.items.get(external_id=external_id)
        assert [d["text"] for d in data[ls.DOCUMENTS_KEY]] == [d["text"] for d in item.documents]


def test_mms_plan_validity_shows_the_plan_as_numbered_steps(tmp_path: Path) -> None:
    project = _demo("mms")
    assert project.kind == ProjectKind.PLAN
    tasks, config = _export(project, tmp_path, "--with-judgments", "Plan validity")
    assert [c.get("value") for c in config.iter("Choice")] == ["1", "0"]
    assert config.find("Text").get("value") == "$query"
    (plan,) = [p for p in config.iter("Paragraphs") if p.get("name") == "plan"]
    assert plan.get("value") == f"${ls.PLAN_KEY}"
    by_id = {t["data"]["external_id"]: t["data"] for t in tasks}
    assert [p["text"] for p in by_id["7002"][ls.PLAN_KEY]] == [
        '1. wikipedia simple search(text="Ada Lovelace")',
        '2. text summarization(text="<node-0>.text")',
    ]
    # the same tools, in the same order, as the judge page's plan
    page = _judge_page(project, "Plan validity", "7002")
    tools = re.findall(r'<span class="tool-name">([^<]*)</span>', page)
    assert [t["text"].split(". ", 1)[1].split("(")[0] for t in by_id["7002"][ls.PLAN_KEY]] == tools
    no_plan = ls.VIEW_PLACEHOLDERS[ls.PLAN_KEY]
    assert all(t["data"][ls.PLAN_KEY] != no_plan for t in tasks)  # every demo item has its plan


def test_a_bad_image_base_url_is_refused_naming_the_option(tmp_path: Path) -> None:
    ProjectFactory(name="P")
    with pytest.raises(CommandError, match="image base URL 'javascript:alert"):
        call_command("export_dataset", "--format", "label-studio", "--project", "P",
                     "--image-base-url", "javascript:alert(1)", str(tmp_path / "t.json"))  # fmt: skip
    with pytest.raises(CommandError, match="--image-base-url goes with --format label-studio"):
        call_command("export_dataset", "--format", "jsonl", "--project", "P",
                     "--image-base-url", "https://x/", str(tmp_path / "t.jsonl"))  # fmt: skip


def test_the_export_page_writes_label_studio_tasks_with_images(tmp_path: Path) -> None:
    """The project page's export with "Label Studio" and an image base URL: a .zip of the
    tasks, their labeling config and the images the URLs name."""
    project = _demo("atp")
    reviewer = UserFactory(username="web-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    client = Client()
    client.force_login(reviewer)
    response = client.get(
        f"/projects/{project.pk}/datasets/export/",
        {"format": "label-studio", "images": "on", "image_base_url": "/data/local-files/?d=bw",
         "with_judgments": "Query verification"},
    )  # fmt: skip
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert "label-studio" in response["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as zf:
        names = zf.namelist()
        (tasks_name,) = [n for n in names if n.endswith("/tasks.json")]
        folder = tasks_name.rsplit("/", 1)[0]
        tasks = json.loads(zf.read(tasks_name))
        config = ElementTree.fromstring(zf.read(f"{folder}/tasks.config.xml"))
        for task in tasks:
            _check_task(task, config)
            for url in task["data"][ls.QUERY_IMAGES_KEY] + task["data"][ls.DOCUMENT_IMAGES_KEY]:
                if url.startswith("data:image/"):  # the placeholder of an item with none
                    continue
                (relative,) = parse_qs(urlsplit(url).query)["d"]
                assert relative.startswith("bw/")  # the zip's folder, unpacked as bw/
                assert f"{folder}/{relative.removeprefix('bw/')}" in names
    assert {c.get("value") for c in config.iter("Choice")} >= {"keep"}


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"format": "label-studio", "image_base_url": "javascript:alert(1)"}, "image_base_url"),
        ({"image_base_url": "https://x/"}, "goes with the Label Studio format"),
        ({"format": "label-studio", "with_judgments": "Nope"}, "no judgment task 'Nope'"),
    ],
)
def test_bad_label_studio_export_options_answer_400_naming_them(
    query: dict[str, str], message: str
) -> None:
    project = ProjectFactory(name="P")
    admin = UserFactory(username="p-admin")
    MembershipFactory(project=project, user=admin, role=Role.ADMIN)
    client = Client()
    client.force_login(admin)
    response = client.get(f"/projects/{project.pk}/datasets/export/", query)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    assert message in response.content.decode()
