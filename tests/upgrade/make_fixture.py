"""Make the upgrade test's fixture: a database of a release with the demo and a realistic
amount of work in it, written down (see tests/upgrade/snapshot.py for what a fixture holds).

Run it once per release, from a checkout OF THAT RELEASE (with this project's virtualenv),
and commit what it writes as the next branch's ``tests/upgrade/previous/`` (the fixture the
upgrade test migrates from):

    mkdir /tmp/bw-release && git archive v1.4 | tar -x -C /tmp/bw-release   # the release made
    .venv/bin/python /tmp/bw-release/tests/upgrade/make_fixture.py /tmp/previous --release v1.4
    rm -rf tests/upgrade/previous && mv /tmp/previous tests/upgrade/previous
    rm -rf /tmp/bw-release

(The script imports the code of the checkout it lives in, whichever folder it is run from.)
It builds a fresh SQLite database and media folder in a temporary folder (nothing of yours is
touched): migrates, loads the demo (``load_demo``), then does what a team does with it through
the services (``work``): people join by invitation and change roles, the guidelines are
written, annotators judge every task's items (and rate model answers in a human evaluation),
a reviewer settles the disputes, items are written, edited, verified and discarded, answers,
plans and a reference trajectory get new versions, the judge settings change, a judge run and
a model draft go to a local fake model server, bulk actions run, uploads are imported as jobs
(one fails), and every project is released. Then it writes the rows, the files they name and
every project's exports (made by that release's code) to OUT. About a minute.

    .venv/bin/python tests/upgrade/make_fixture.py --accept-exports

is the other use, after an export format changes ON PURPOSE (not after a migration): it
upgrades the committed fixture to this checkout's head as the test does, refuses if any row
was lost or changed, and replaces the fixture's recorded exports with this code's. The change
is then in ``git diff tests/upgrade/previous/``, to be reviewed like any other.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.upgrade import snapshot  # noqa: E402

DEMO_PASSWORD = "upgrade-fixture-only"


# --------------------------------------------------------------------------- the work


def work() -> dict[str, Any]:
    """What a team does with the demo, through the services. Returns what it did."""
    from django.contrib.auth import get_user_model

    from benchmark.models import Project

    users = {u.username: u for u in get_user_model().objects.all()}
    projects = {p.data_format: p for p in Project.objects.all()}
    done: dict[str, Any] = {}
    done["people"] = _people(projects, users)
    done["judgments"] = _judge_everything(projects, users)
    done["items"] = _edit_items(projects, users)
    done["versions"] = _answer_and_plan_versions(projects, users)
    done["discarding"] = _discard(projects, users)
    done["judges"] = _judges(projects, users)
    done["bulk"] = _bulk(projects, users)
    done["jobs"] = _jobs(projects, users)
    done["releases"] = _releases(projects, users)
    return done


def _people(projects: dict[str, Any], users: dict[str, Any]) -> dict[str, Any]:
    """A new annotator joins by invitation, another invitation is revoked, a role changes
    and the guidelines are written (each an audit event)."""
    from benchmark.models import Membership
    from benchmark.people import services as people
    from benchmark.projects.services import project_update

    admin = users["admin"]
    atp = projects["atp"]
    _, token = people.invitation_create(project=atp, actor=admin, role="annotator")
    newcomer = people.invitation_signup(token=token, username="annotator4", password=DEMO_PASSWORD)
    revoked, _ = people.invitation_create(project=atp, actor=admin, role="reviewer")
    people.invitation_revoke(project=atp, actor=admin, invitation_id=revoked.pk)
    membership = Membership.objects.get(project=projects["mms"], user=users["annotator3"])
    people.member_role_set(
        project=projects["mms"], actor=admin, membership_id=membership.pk, role="reviewer"
    )
    for project in projects.values():
        project_update(
            project=project,
            user=admin,
            description=project.description,
            guidelines=f"Read the whole item before judging it ({project.name}).",
        )
    return {"joined": newcomer.username}


def _value_for(task: Any, item: Any, turn: int) -> Any:
    """An annotator's answer: mostly the accepted one, now and then another (disputes)."""
    disagree = (item.pk + turn) % 4 == 0
    if task.scheme == "binary":
        return 0 if disagree else 1
    if task.scheme == "text":
        return "something else" if disagree else (item.expected_answer or "yes")
    if task.scheme == "scores":
        return {entry["value"]: (turn + item.pk) % 3 for entry in task.labels}
    values = task.label_values
    return values[(item.pk + turn) % len(values)] if disagree else values[0]


def _judge_queue(task: Any, people: list[Any], limit: int) -> int:
    """Each person takes leases from the queue and judges, ``limit`` judgments each at most."""
    from annotation.judgment_tasks.services import assignment_next_for_user, judgment_submit
    from benchmark.models import Item

    made = 0
    for turn, person in enumerate(people):
        for _ in range(limit):
            lease = assignment_next_for_user(task=task, user=person)
            if lease is None:
                break
            item = Item.objects.get(pk=lease.item_id)
            value = _value_for(task, item, turn)
            reason = ""
            if task.scheme == "nominal":
                accepted = {e["value"]: e.get("accept") for e in task.labels}
                reason = "" if accepted.get(value) else "the query can be answered without it"
            judgment_submit(
                task=task,
                item=item,
                user=person,
                value=value,
                reason=reason,
                comment="checked against the documents" if turn == 0 else "",
                seconds=20.0 + 7 * turn + item.pk % 5,
                unit=lease.unit,
            )
            made += 1
    return made


def _judge_everything(projects: dict[str, Any], users: dict[str, Any]) -> dict[str, Any]:
    """Every default task judged by the annotators (one lease left open), the disputes
    settled by the reviewer, and a human evaluation task on LLM-I's model answers."""
    from annotation.judgment_tasks.models import JudgmentTask, Outcome
    from annotation.judgment_tasks.services import assignment_next_for_user
    from review.adjudication.services import outcome_decide
    from review.human_eval.services import human_eval_task_create

    annotators = [users[f"annotator{n}"] for n in (1, 2, 3)]
    made = {}
    for task in JudgmentTask.objects.order_by("pk"):
        people = [u for u in [*annotators, users.get("annotator4")] if u is not None]
        people = [u for u in people if task.project.memberships.filter(user=u).exists()]
        made[task.name] = _judge_queue(task, people, limit=6)
    disputed = Outcome.objects.filter(verdict="disputed").order_by("pk")
    for n, outcome in enumerate(disputed):
        outcome_decide(
            task=outcome.task,
            item=outcome.item,
            reviewer=users["reviewer"],
            verdict=("accepted", "rejected")[n % 2],
            value=outcome.value,
            reason="read the documents again",
        )
    llmi = projects["llmi"]
    from benchmark.models import Origin, Response

    answers = Response.objects.filter(item__project=llmi, origin=Origin.MODEL)
    models = sorted(set(answers.values_list("model_name", flat=True)) - {""})
    human = human_eval_task_create(
        project=llmi, user=users["reviewer"], scale="likert", models=models[:2], overlap=2
    )
    made[human.name] = _judge_queue(human, annotators, limit=4)
    open_task = JudgmentTask.objects.get(project=projects["atp"], name="Query verification")
    assignment_next_for_user(task=open_task, user=users["reviewer"])  # a lease left open
    return {"judgments": made, "decided": len(disputed)}


def _edit_items(projects: dict[str, Any], users: dict[str, Any]) -> dict[str, Any]:
    """Items written in Benchwright (one per benchmark), imported items edited (item
    versions), and some verified by hand."""
    from benchmark.items.services import item_create, item_update
    from benchmark.models import ItemStatus
    from benchmark.projects.services import item_status_set
    from tests.factories import png_bytes

    author, editor, reviewer = users["annotator1"], users["admin"], users["reviewer"]
    created = {
        "atp": {
            "query": "How is the filter of the coffee machine descaled?",
            "category": "Manual",
            "intent": "OperationGuide",
            "documents": [
                {"text": "Descale monthly.", "images": [("descale.png", png_bytes(501))]},
                {"text": "Run the cycle twice.", "images": [("cycle.png", png_bytes(502))]},
            ],
            "gt": "Run the descaling cycle twice, once a month.",
        },
        "llmi": {
            "query": "Draw the water cycle in four stages.",
            "images": [("sketch.png", png_bytes(503))],
            "rubric": [f"The answer shows stage {n} of the cycle clearly." for n in range(10)],
        },
        "agentic-mme": {
            "query": "Which street is on the sign?",
            "format_instruction": "Answer with the name only.",
            "images": [("street.png", png_bytes(504))],
            "expected_answer": "Willow St",
            "match_type": "contains",
            "accepted_variants": ["Willow Street"],
            "level": 2,
            "domain": "Life",
        },
        "mms": {
            "query": "Caption image.jpg and read the caption aloud.",
            "images": [("image.jpg", png_bytes(505))],
        },
    }
    made = []
    for fmt, data in created.items():
        made.append(item_create(project=projects[fmt], user=author, data=data).external_id)
    edited = []
    for project in projects.values():
        first, second = project.items.order_by("position", "id")[:2]
        item_update(
            item=first,
            user=editor,
            changes={"query": f"{first.query} (checked)"},
            base_version=None,
            note="clearer",
        )
        item_update(
            item=first,
            user=users["reviewer"],
            changes={"query": first.query},
            base_version=2,
            note="back to the original wording",
        )
        item_update(
            item=second,
            user=editor,
            changes={"category": second.category, "query": second.query + " "},
            base_version=None,
        )
        edited += [first.external_id, second.external_id]
        for item in project.items.filter(status=ItemStatus.DRAFT).order_by("-position")[:2]:
            item_status_set(item=item, user=reviewer, status="verified", reason="checked by hand")
    return {"created": made, "edited": edited}


def _answer_and_plan_versions(projects: dict[str, Any], users: dict[str, Any]) -> dict[str, Any]:
    """New versions of answers (tag review, with decisions), of a plan (m&m's plan editor)
    and of a reference trajectory (Agentic-MME editor)."""
    from annotation.plan_editor.services import plan_save
    from annotation.tag_review.services import response_save_version
    from annotation.trajectories import document as td
    from annotation.trajectories.selectors import (
        editor_choices,
        reference_of,
        trajectory_item_get,
        version_state,
    )
    from annotation.trajectories.services import task_document, trajectory_save
    from benchmark.models import Plan, Response

    reviewer = users["reviewer"]
    answers = 0
    for fmt in ("atp", "llmi"):
        response = (
            Response.objects.filter(item__project=projects[fmt]).order_by("item_id", "id").first()
        )
        assert response is not None
        response_save_version(
            response=response,
            user=reviewer,
            text=response.text + "\n\nChecked against the documents.",
            base_number=1,
            decisions=[{"tag": 0, "tool": "", "decision": "kept", "reason": "needed"}],
            note="a closing line",
        )
        answers += 1
    plans = Plan.objects.filter(item__project=projects["mms"], key="gold").order_by("item_id")
    plan = next(p for p in plans if len(p.steps) >= 2)
    steps = list(plan.steps)
    added = {"id": len(steps), "name": "image generation", "args": {"text": "a picture of "}}
    added["args"]["text"] += f"<node-{len(steps) - 1}>.text"
    plan_save(
        item=plan.item,
        user=reviewer,
        steps=[*steps, added],
        key=plan.key,
        base_number=1,
        note="a picture of the summary",
    )
    plan_save(item=plan.item, user=reviewer, steps=steps, key=plan.key, base_number=2)
    project = projects["agentic-mme"]
    first = project.items.order_by("position", "id").first()
    item = trajectory_item_get(user=reviewer, project=project, pk=first.pk)
    document = task_document(item=item, reference=reference_of(item))
    state = version_state(item=item, document=document)
    draft = td.draft_from_document(document)
    draft.question = f"{draft.question} Answer in one word."
    choices = editor_choices(user=reviewer, project=project, item=item, extra_shas=[])
    saved = trajectory_save(
        user=reviewer,
        project=project,
        item=item,
        draft=draft,
        base_number=state.number,
        base_fingerprint=state.fingerprint,
        tools=choices.tools,
        domains=choices.domains,
        note="one word",
    )
    assert saved.changed, saved
    return {"answers": answers, "plans": 2, "trajectories": 1}


def _discard(projects: dict[str, Any], users: dict[str, Any]) -> dict[str, Any]:
    """Two proposals to discard an item: one accepted, one rejected."""
    from annotation.discarding.services import discard_propose
    from benchmark.models import ItemStatus
    from review.adjudication.services import discard_proposal_decide

    items = projects["llmi"].items.filter(status=ItemStatus.DRAFT).order_by("position", "id")
    first, second = items[:2]
    accepted = discard_propose(item=first, user=users["annotator2"], reason="a duplicate")
    discard_proposal_decide(proposal=accepted, reviewer=users["reviewer"], accept=True)
    rejected = discard_propose(item=second, user=users["annotator1"], reason="too easy")
    discard_proposal_decide(
        proposal=rejected, reviewer=users["reviewer"], accept=False, note="it is fine"
    )
    return {"discarded": first.external_id}


def _judges(projects: dict[str, Any], users: dict[str, Any]) -> dict[str, Any]:
    """LLM-I's judge settings changed (its model, a template, the reward weights), then its
    rubric judge run against a local fake model server (judge calls and their cache)."""
    from benchmark.judge_prompts.rubric import RUBRIC_TEMPLATE
    from benchmark.models import JobStatus
    from benchmark.projects.services import project_model_set
    from review.judge_settings.services import judge_template_save, judge_weights_save
    from review.judges import services as judges
    from tests.llm_server import MODEL, FakeModelServer

    llmi, admin, reviewer = projects["llmi"], users["admin"], users["reviewer"]
    server = FakeModelServer(answer='{"score": 1, "justification": "partly met"}').start()
    try:
        project_model_set(project=llmi, user=admin, values={"base_url": server.url, "model": MODEL})
        llmi.refresh_from_db()
        llmi.settings["model"]["backoff_base"] = 0.01
        llmi.save(update_fields=["settings"])
        judge_template_save(
            project=llmi,
            user=admin,
            template_id="llmi.rubric",
            system=RUBRIC_TEMPLATE.system + "\nWhen in doubt, score lower.",
            user_text=RUBRIC_TEMPLATE.user,
            base_number=0,
            note="stricter",
        )
        judge_weights_save(project=llmi, user=admin, base_number=0, preset="paper")
        run, job = judges.judge_run_create(
            project=llmi, user=reviewer, judge="llmi-rubric", workers=1
        )
        job = judges.judge_run_execute(job=job)
        assert job.status == JobStatus.SUCCEEDED, job.error
        drafts = _model_drafts(projects["atp"], users, server)
    finally:
        server.stop()
    return {"judge_run": run.pk, "calls": run.calls.count(), "drafts": drafts}


def _model_drafts(atp: Any, users: dict[str, Any], server: Any) -> dict[str, Any]:
    """ATP-Bench queries drafted by the model: one candidate kept (a new item), one
    rejected."""
    from annotation.model_drafts.services import candidate_decide, draft_queries_start
    from benchmark.projects.services import project_model_set
    from tests.llm_server import MODEL

    project_model_set(
        project=atp, user=users["admin"], values={"base_url": server.url, "model": MODEL}
    )
    server.answer = json.dumps(
        [
            "How does the FernNet paper's model compare in size with its baselines?",
            "Which noise level hurts keyword spotting most in the paper?",
        ]
    )
    annotator = users["annotator1"]
    draft = draft_queries_start(
        project=atp, user=annotator, category="Academic", intent="ComparativeAnalysis", n=2
    )
    draft.refresh_from_db()
    assert draft.status == "ready", draft.error
    kept, rejected = draft.candidates.order_by("position")
    candidate_decide(candidate=kept, user=annotator, action="keep")
    candidate_decide(candidate=rejected, user=annotator, action="reject")
    return {"draft": draft.pk}


def _bulk(projects: dict[str, Any], users: dict[str, Any]) -> dict[str, Any]:
    """Bulk actions on m&m's item list: two items pushed to an annotator's queue, two put
    back in review."""
    from annotation.bulk_actions.services import bulk_action_start
    from annotation.judgment_tasks.models import JudgmentTask

    mms, reviewer = projects["mms"], users["reviewer"]
    task = JudgmentTask.objects.get(project=mms, name="Plan validity")
    drafts = list(
        mms.items.filter(status="draft").order_by("position").values_list("pk", flat=True)
    )
    bulk_action_start(
        project=mms,
        user=reviewer,
        action="push",
        item_ids=drafts[:2],
        params={"task": task.pk, "users": [users["annotator1"].pk]},
    )
    verified = mms.items.filter(status="verified").order_by("position").values_list("pk", flat=True)
    bulk_action_start(
        project=mms,
        user=reviewer,
        action="status",
        item_ids=list(verified[:1]),
        params={"status": "in_review", "reason": "the plan needs a second look"},
    )
    return {"pushed": len(drafts[:2])}


def _jobs(projects: dict[str, Any], users: dict[str, Any]) -> dict[str, Any]:
    """An upload imported as a job (two more ATP-Bench records), an agreement job, and an
    import that failed on a bad record (the job keeps its error)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotation.judgment_tasks.models import JudgmentTask
    from benchmark.datasets.services import import_upload_start
    from benchmark.models import Job
    from review.agreement.services import agreement_start

    atp, admin = projects["atp"], users["admin"]
    records = [
        {
            "trace_id": f"atp_upload_{n}",
            "query": f"Which of the two charts shows the larger growth in year {n}?",
            "image_query": None,
            "doc": [{"text": f"Growth was {n}% in the first chart and {n + 1}% in the second."}],
            "gt": f"The second chart, {n + 1}% against {n}%.",
            "category": "Academic",
            "intent": "Comparison",
        }
        for n in (1, 2)
    ]
    upload = "\n".join(json.dumps(r) for r in records).encode() + b"\n"
    jobs = [
        import_upload_start(
            project=atp,
            user=admin,
            upload=SimpleUploadedFile("more.jsonl", upload, "application/x-ndjson"),
        ),
        import_upload_start(
            project=atp,
            user=admin,
            upload=SimpleUploadedFile("bad.jsonl", b'{"trace_id": 1}\n', "application/x-ndjson"),
        ),
    ]
    task = JudgmentTask.objects.get(project=atp, name="Query verification")
    jobs.append(agreement_start(task=task, user=users["reviewer"]))
    statuses = [Job.objects.get(pk=job.pk).status for job in jobs]
    assert statuses == ["succeeded", "failed", "succeeded"], statuses
    return {"jobs": statuses}


def _releases(projects: dict[str, Any], users: dict[str, Any]) -> dict[str, Any]:
    """Every project released (LLM-I with Parquet); ATP-Bench again after an edit."""
    from benchmark.items.services import item_update
    from review.releases.services import release_create

    reviewer = users["reviewer"]
    made = []
    for fmt, project in sorted(projects.items()):
        made.append(
            release_create(
                project=project, user=reviewer, name="first", parquet=fmt == "llmi"
            ).label
        )
    atp = projects["atp"]
    item = atp.items.filter(status="verified").order_by("position").first()
    assert item is not None
    item_update(
        item=item, user=users["admin"], changes={"query": item.query + "?"}, base_version=None
    )
    made.append(release_create(project=atp, user=reviewer, name="second").label)
    return {"releases": made}


# --------------------------------------------------------------------------- writing it down


def media_named(apps: Any) -> list[str]:
    """The storage names of the files the rows name (every FileField's value)."""
    from django.db import models

    names: set[str] = set()
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, models.FileField):
                names.update(
                    name
                    for name in model._base_manager.values_list(field.attname, flat=True)
                    if name
                )
    return sorted(names)


def fixture_write(out: Path, release: str, scratch: Path) -> dict[str, Any]:
    """Write the database of the environment (its media in MEDIA_ROOT) down as a fixture."""
    from django.conf import settings
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    targets = snapshot.leaf_targets(connection)
    apps = MigrationLoader(connection).project_state([tuple(t) for t in targets]).apps
    dump = snapshot.rows_dump(apps)
    out.mkdir(parents=True)
    snapshot.rows_write(dump, out / snapshot.ROWS)
    media = Path(settings.MEDIA_ROOT)
    for name in media_named(apps):
        target = out / snapshot.MEDIA / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(media / name, target)
    specs = snapshot.export_specs()
    exports = snapshot.exports_run(specs, scratch / "exports")
    failed = {name: e["error"] for name, e in exports.items() if "error" in e}
    if failed:
        raise SystemExit(f"exports failed at this release: {failed}")
    exports_keep(exports, scratch / "exports", out / snapshot.EXPORTS)
    manifest = {
        "release": release,
        "database": connection.vendor,
        "migrations": targets,
        "counts": {label: len(table["rows"]) for label, table in dump.items()},
        "exports": [{**spec, **exports[spec["name"]]} for spec in specs],
        "media": snapshot.files_listed(out / snapshot.MEDIA),
    }
    (out / snapshot.MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return manifest


def exports_keep(exports: dict[str, Any], made: Path, out: Path) -> None:
    """Copy the text files of the exports made into ``out`` (the others are listed by
    sha256 in the manifest)."""
    for name, result in exports.items():
        for rel in result["files"]:
            if snapshot.is_text(rel):
                target = out / name / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(made / name / rel, target)


def make(out: Path, release: str) -> None:
    """A fresh database of this checkout with the demo and the work, written to ``out``."""
    if out.exists():
        raise SystemExit(f"{out} exists; give a new folder")
    with tempfile.TemporaryDirectory(prefix="bw-upgrade-fixture-") as tmp:
        scratch = Path(tmp)
        os.environ.update(
            DATABASE_URL=f"sqlite:///{scratch / 'db.sqlite3'}",
            MEDIA_ROOT=str(scratch / "media"),
            BENCHWRIGHT_DEMO_PASSWORD=DEMO_PASSWORD,
            ALLOWED_HOSTS="testserver",  # the exports' downloads go through the test client
        )
        for name in ("CELERY_BROKER_URL", "AWS_STORAGE_BUCKET_NAME"):
            os.environ.pop(name, None)  # jobs run in this process; media on local disk
        snapshot.django_setup()
        from django.core.management import call_command

        from review.demo import demo_load

        call_command("migrate", verbosity=0, interactive=False)
        demo_load()
        done = work()
        manifest = fixture_write(out, release, scratch)
    print(json.dumps(done, indent=1, default=str))
    print(
        f"{out}: {sum(manifest['counts'].values())} rows of {len(manifest['counts'])} models, "
        f"{len(manifest['exports'])} exports, {len(manifest['media'])} media files"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, help="the folder to write (must not exist)")
    parser.add_argument("--release", default="", help="the release's name (default: git HEAD)")
    parser.add_argument(
        "--accept-exports",
        action="store_true",
        help="replace the committed fixture's exports with this checkout's (see above)",
    )
    args = parser.parse_args(argv)
    if args.accept_exports:
        from tests.upgrade import replay

        replay.accept_exports(snapshot.FIXTURE)
        return
    if args.out is None:
        parser.error("give the folder to write (or --accept-exports)")
    make(args.out, args.release or snapshot.git_head())


if __name__ == "__main__":
    main()
