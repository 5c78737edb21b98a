"""The demo: files that are complete and consistent, and a loader that creates users, projects,
memberships and items once, and only once."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage
from django.core.management import call_command

from benchmark.models import Image, Item, Membership, Plan, Project, Response, Trajectory
from review.demo import DEMO_PROJECTS, DEMO_ROOT, PASSWORD_ENV, demo_load

User = get_user_model()


@pytest.fixture(autouse=True)
def _fast_and_isolated(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    # The demo creates five users per test; the default hasher takes about a second each.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _json(rel: str) -> Any:
    return json.loads((DEMO_ROOT / rel).read_text(encoding="utf-8"))


def _jsonl(rel: str) -> list[Any]:
    lines = (DEMO_ROOT / rel).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _record_counts() -> dict[str, int]:
    """Items each demo folder should give: one per benchmark record in its files."""
    return {
        "ATP-Bench demo": len(_jsonl("atp/data.jsonl")),
        "LLM-I demo": sum(
            len(_json(f"llmi/{name}"))
            for name in ("text_only.json", "mm_input.json", "train_sample.json")
        ),
        "Agentic-MME demo": len(list((DEMO_ROOT / "agentic-mme" / "json").glob("*.json"))),
        "m&m's demo": len(_json("mms/tasks.json")),
    }


def _referenced_images() -> list[Path]:
    paths = []
    for row in _jsonl("atp/data.jsonl"):
        refs = row["images"] + [p for doc in row["doc"] for p in doc["images"]]
        refs += [row["image_query"]] if row["image_query"] else []
        paths += [DEMO_ROOT / "atp" / p for p in refs]
    for row in _json("llmi/mm_input.json"):
        paths += [DEMO_ROOT / "llmi" / p for p in row["images"]]
    for row in _json("llmi/train_sample.json"):
        paths += [DEMO_ROOT / "llmi" / i["image"] for i in row.get("images", [])]
    mme = DEMO_ROOT / "agentic-mme"
    for task in (mme / "json").glob("*.json"):
        paths.append(mme / json.loads(task.read_text())["input"]["image"])
    for run in (mme / "runs").iterdir():
        for event in json.loads((run / "tool_use_list.json").read_text()):
            if "output_path" in event["output"]:
                paths.append(run / event["output"]["output_path"])
    return paths


# --------------------------------------------------------------------------- the files


def test_every_demo_image_a_record_refers_to_exists() -> None:
    paths = _referenced_images()
    assert len(paths) > 30
    missing = [str(p.relative_to(DEMO_ROOT)) for p in paths if not p.is_file()]
    assert missing == []


def test_demo_crops_contain_their_details_and_run_images_come_from_the_logged_ops() -> None:
    """The image tool lives in bin/, outside the apps; its check runs as the README says."""
    tool = Path(__file__).resolve().parents[2] / "bin" / "make_demo_images.py"
    checked = subprocess.run(
        [sys.executable, str(tool), "--check"], capture_output=True, text=True, timeout=300
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.strip().endswith("OK")
    assert not (DEMO_ROOT / "make_images.py").exists()


def test_demo_files_cover_what_the_review_features_need() -> None:
    atp = _jsonl("atp/data.jsonl")
    assert {r["category"] for r in atp} == {
        "Academic", "Manual", "Recipe", "Fashion", "Renovation", "Product", "Travel", "Encyclopedia"
    }  # fmt: skip
    assert sum(1 for r in atp if r["image_query"]) == 2  # VQA rows
    gt = "".join(r["gt"] for r in atp)
    for tool in ("Reference", "Diffusion", "Search", "Code", "Edit"):
        assert f'"tool_name": "{tool}"' in gt
    train = _json("llmi/train_sample.json")
    assert sorted(r["extra_info"]["image_num"] for r in train) == [-1, 0, 1, 2, 99]
    levels = {
        json.loads(p.read_text())["meta"]["level"]
        for p in (DEMO_ROOT / "agentic-mme" / "json").glob("*.json")
    }
    assert levels == {1, 2, 3}
    assert len(_jsonl("mms/predictions.jsonl")) == len(_json("mms/tasks.json"))


def test_demo_folder_stays_small() -> None:
    files = [p for p in DEMO_ROOT.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert sum(p.stat().st_size for p in files) < 1.5 * 1024 * 1024
    assert max(p.stat().st_size for p in files if p.suffix == ".png") < 30 * 1024


# --------------------------------------------------------------------------- the loader


@pytest.mark.django_db
def test_demo_load_creates_projects_items_images_and_memberships() -> None:
    out = StringIO()
    result = demo_load(stdout=out)

    assert set(result["passwords"]) == {
        "admin",
        "reviewer",
        "annotator1",
        "annotator2",
        "annotator3",
    }
    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff
    assert not User.objects.get(username="annotator1").is_staff
    for username, password in result["passwords"].items():
        assert f"{username} / {password}" in out.getvalue()
        assert User.objects.get(username=username).check_password(password)

    counts = _record_counts()
    assert set(counts) == {spec.name for spec in DEMO_PROJECTS}
    for name, expected in counts.items():
        project = Project.objects.get(name=name)
        assert expected > 0
        assert project.items.count() == expected, name
        assert result["projects"][name]["items"] == expected
        roles = dict(
            Membership.objects.filter(project=project).values_list("user__username", "role")
        )
        assert roles == {
            "admin": "admin",
            "reviewer": "reviewer",
            "annotator1": "annotator",
            "annotator2": "annotator",
            "annotator3": "annotator",
        }

    atp = Project.objects.get(name="ATP-Bench demo")
    assert (atp.kind, atp.tag_syntax, atp.toolset.name, atp.taxonomy.name) == (
        "interleaved", "atp", "atp", "atp"
    )  # fmt: skip
    assert Project.objects.get(name="m&m's demo").toolset.edges.count() == 149
    # Ground-truth answers, model answers, reference trajectories, runs, gold plans, predictions.
    assert Response.objects.filter(item__project=atp, key="gt").count() == 8
    assert Response.objects.filter(item__project__name="LLM-I demo").count() == 6
    assert Trajectory.objects.filter(item__project__name="Agentic-MME demo").count() == 5
    assert Plan.objects.filter(item__project__name="m&m's demo", key="gold").count() == 8


@pytest.mark.django_db
def test_demo_images_are_stored_once_and_linked_to_their_project() -> None:
    demo_load()
    for name in ("ATP-Bench demo", "LLM-I demo", "Agentic-MME demo"):
        project = Project.objects.get(name=name)
        refs = [ref for item in project.items.all() for ref in item.image_refs]
        refs += [
            ref for t in Trajectory.objects.filter(item__project=project) for ref in t.image_refs
        ]
        assert refs, name
        assert all(ref["sha256"] for ref in refs), name
        shas = {ref["sha256"] for ref in refs}
        linked = set(project.images.values_list("sha256", flat=True))
        assert shas <= linked
        for image in Image.objects.filter(sha256__in=shas):
            assert default_storage.exists(image.file.name)
    query = Item.objects.get(external_id="atp_demo_04").image_refs
    assert [r["role"] for r in query].count("query") == 1


@pytest.mark.django_db
def test_demo_load_twice_adds_nothing_and_keeps_passwords() -> None:
    demo_load()
    before = {u.username: u.password for u in User.objects.all()}
    counts = [
        m.objects.count()
        for m in (Project, Item, Image, Membership, Response, Plan, Trajectory, User)
    ]

    out = StringIO()
    result = demo_load(stdout=out)

    assert result["passwords"] == {}
    assert {u.username: u.password for u in User.objects.all()} == before
    assert [
        m.objects.count()
        for m in (Project, Item, Image, Membership, Response, Plan, Trajectory, User)
    ] == counts
    assert "admin: already exists, password unchanged" in out.getvalue()
    assert all(p["items_created"] == 0 for p in result["projects"].values())


@pytest.mark.django_db
def test_demo_load_keeps_an_existing_users_password_and_a_changed_role() -> None:
    User.objects.create_user("reviewer", password="my-own-secret")
    demo_load()
    project = Project.objects.get(name="LLM-I demo")
    Membership.objects.filter(project=project, user__username="annotator3").update(role="reviewer")

    result = demo_load()

    assert "reviewer" not in result["passwords"]
    assert User.objects.get(username="reviewer").check_password("my-own-secret")
    assert Membership.objects.get(project=project, user__username="annotator3").role == "reviewer"


@pytest.mark.django_db
def test_demo_password_comes_from_the_environment_when_set(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(PASSWORD_ENV, "demo-pass-for-browser-tests")
    result = demo_load()
    assert set(result["passwords"].values()) == {"demo-pass-for-browser-tests"}
    assert User.objects.get(username="annotator2").check_password("demo-pass-for-browser-tests")


@pytest.mark.django_db
def test_load_demo_command_prints_users_and_no_address_it_does_not_serve() -> None:
    """Issue 25, finding 13: load_demo serves nothing, so it names no address (bin/run prints
    the one it serves, PORT included)."""
    out = StringIO()
    call_command("load_demo", stdout=out)
    text = out.getvalue()
    assert "annotator1 / " in text
    assert "runserver" not in text and "http://" not in text
    assert Project.objects.count() == 4


@pytest.mark.django_db
def test_load_demo_reset_passwords_gives_every_demo_user_a_new_printed_password() -> None:
    """Issue 25, finding 13: re-running keeps the passwords and says how to reset them;
    --reset-passwords gives new ones, printed, and the old ones stop working."""
    first = StringIO()
    call_command("load_demo", stdout=first)
    old = re.search(r"annotator1 / (\S+)", first.getvalue())
    assert old is not None
    again = StringIO()
    call_command("load_demo", stdout=again)
    assert "password unchanged" in again.getvalue()
    assert "load_demo --reset-passwords" in again.getvalue()
    assert "bin/run --reset-demo-passwords" in again.getvalue()
    reset = StringIO()
    call_command("load_demo", "--reset-passwords", stdout=reset)
    printed = dict(re.findall(r"^  (\w+) / (\S+)", reset.getvalue(), flags=re.M))
    assert set(printed) == {"admin", "reviewer", "annotator1", "annotator2", "annotator3"}
    user = User.objects.get(username="annotator1")
    assert user.check_password(printed["annotator1"])
    assert not user.check_password(old[1])
    assert Project.objects.count() == 4


@pytest.mark.django_db
def test_demo_items_use_terms_of_their_projects_taxonomy() -> None:
    from benchmark.builtin import atp_intent_term_name

    demo_load()
    atp = Project.objects.get(name="ATP-Bench demo")
    terms = set(atp.taxonomy.terms.values_list("kind", "parent__name", "name"))
    for item in atp.items.all():
        assert ("category", None, item.category) in terms
        assert ("intent", item.category, atp_intent_term_name(item.category, item.intent)) in terms
    mme = Project.objects.get(name="Agentic-MME demo")
    domains = set(mme.taxonomy.terms.filter(kind="domain").values_list("name", flat=True))
    levels = set(mme.taxonomy.terms.filter(kind="level").values_list("name", flat=True))
    for item in mme.items.all():
        assert item.domain in domains
        assert str(item.level) in levels


@pytest.mark.django_db
def test_demo_gives_every_new_feature_something_to_show(client) -> None:  # type: ignore[no-untyped-def]
    """The run-scoring page lists the demo's scored agent run, the Agentic-MME demo has its
    "Solve blind" task, and a second load scores nothing again."""
    from annotation.judgment_tasks.models import JudgmentTask
    from review.demo import DEMO_RUNS_NAME
    from review.runs.models import AgentRun, RunSet

    result = demo_load()
    mme = Project.objects.get(name="Agentic-MME demo")
    assert result["projects"]["Agentic-MME demo"]["runs_created"] == 1
    run_set = RunSet.objects.get(project=mme, name=DEMO_RUNS_NAME)
    run = AgentRun.objects.get(run_set=run_set)
    assert run.item.external_id == "demo03"
    assert run.acc is True  # the authored run answers 1.072, the expected answer
    assert len(run.images) == 3
    assert run_set.job is not None and run_set.job.status == "succeeded"
    assert "Solve blind" in set(
        JudgmentTask.objects.filter(project=mme).values_list("name", flat=True)
    )

    client.force_login(User.objects.get(username="reviewer"))
    page = client.get(f"/projects/{mme.pk}/runs/")
    assert page.status_code == 200
    assert DEMO_RUNS_NAME in page.content.decode()
    assert "No runs scored yet" not in page.content.decode()
    assert client.get(f"/runs/{run_set.pk}/").status_code == 200
    assert client.get(f"/runs/agent-runs/{run.pk}/").status_code == 200

    again = demo_load()
    assert again["projects"]["Agentic-MME demo"]["runs_created"] == 0
    assert RunSet.objects.filter(project=mme).count() == 1
    assert AgentRun.objects.filter(run_set__project=mme).count() == 1


@pytest.mark.django_db
def test_demo_load_still_completes_when_the_runs_task_was_deleted() -> None:
    from review.runs.models import RunSet

    demo_load()
    mme = Project.objects.get(name="Agentic-MME demo")
    RunSet.objects.filter(project=mme).delete()
    Item.objects.filter(project=mme, external_id="demo03").delete()
    out = StringIO()

    result = demo_load(stdout=out)

    # demo03 is imported again, so the run is scored again against it
    assert result["projects"]["Agentic-MME demo"]["runs_created"] == 1
    Item.objects.filter(project=mme, external_id="demo03").delete()
    RunSet.objects.filter(project=mme).delete()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("review.demo.dataset_import", lambda **kwargs: _NoImport())
        result = demo_load(stdout=out)
    assert result["projects"]["Agentic-MME demo"]["runs_created"] == 0
    assert "the demo agent run was not scored" in out.getvalue()
    assert "demo03" in out.getvalue()
    assert not RunSet.objects.filter(project=mme).exists()


class _NoImport:
    def as_dict(self) -> dict[str, int]:
        return {"items_created": 0, "attachments_created": 0}


@pytest.mark.django_db
def test_every_demo_project_has_guidelines_from_its_paper() -> None:
    """The demo projects once had empty guidelines: a new team met them with nothing to go by."""
    demo_load()
    facts = {
        "ATP-Bench demo": ["visual-critical", "paragraph boundary", "Reference", "relabel"],
        "LLM-I demo": ["<imgen>", "-1", "Inf", "ten criteria", "0** (not met)"],
        "Agentic-MME demo": ["at least two verifiers", "accepted variants", "human-verified URLs"],
        "m&m's demo": ["<node-N>.key", "all three rate it 1", "resolve the query perfectly"],
    }
    names = {spec.name for spec in DEMO_PROJECTS}
    assert names == set(facts)
    for name, words in facts.items():
        guidelines = Project.objects.get(name=name).guidelines
        for word in words:
            assert word in guidelines, (name, word)
    # A demo loaded before there were guidelines gets them on the next load; edited ones stay.
    atp = Project.objects.get(name="ATP-Bench demo")
    Project.objects.filter(pk=atp.pk).update(guidelines="")
    Project.objects.filter(name="m&m's demo").update(guidelines="Our own rules.")
    demo_load()
    assert "visual-critical" in Project.objects.get(pk=atp.pk).guidelines
    assert Project.objects.get(name="m&m's demo").guidelines == "Our own rules."
