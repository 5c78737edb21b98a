"""Speed of issue 26's model comparison and leaderboard trust: a comparison of two models on
``--pairs`` items (2 calls each) against a local scripted judge answering at once, 8 workers;
then the run's page, with two people's ratings of every pair (its agreement with people); then the Leaderboard of an LLM-I project whose rubric judge run covers
``--pairs`` answers x 2 criteria, rated by two people each (the trust row: kappa with a 1000-
resample bootstrap), against the same page with no ratings.

    python tests/perf/bench_model_compare.py                 # SQLite in a temporary folder
    python tests/perf/bench_model_compare.py --pairs 2000 --repeat 5
    python tests/perf/bench_model_compare.py --database-url postgres://postgres@127.0.0.1:5432/bw_perf_compare

What a web process does once when it starts (``benchmark.startup.warm_up``: the URLconf and
its views imported, the reverse map built) is timed apart (``process_warm_up_s``): before it
moved there, the first request of the process paid it, whatever the page. Pages are timed in
the server (Django's test client): the first request's wall time, the median
of ``--repeat`` requests after it, and the query count. The leaderboard's trust figure is
computed on the first view and then read from Django's cache (its key moves when a judgment or
the judge run changes), so ``first_s`` is the view after a change and ``median_s`` the others. Prints figures and the machine's load;
asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _support import child_phase, fresh_postgres, run_phase

ROOT = Path(__file__).resolve().parents[2]


def _timed(client: Any, url: str, repeat: int) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    start = time.perf_counter()
    client.get(url)  # warm-up (the leaderboard's trust is computed here, then read from the cache)
    first = time.perf_counter() - start
    times = []
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = client.get(url)
            times.append(time.perf_counter() - start)
        assert response.status_code == 200, response.status_code
    return {
        "first_s": round(first, 4),
        "median_s": round(statistics.median(times), 4),
        "queries": len(queries),
    }


def phase_all(args: argparse.Namespace) -> dict[str, Any]:
    from django.core.management import call_command
    from django.test import Client
    from django.utils import timezone

    from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask
    from benchmark.models import Item, Job, JobStatus, Origin, Project, Response, Toolset
    from benchmark.typing import User
    from review.evaluation.models import EvaluationRun
    from review.judges import services as judge_services
    from review.judges.models import JudgeCall, JudgeRun
    from review.judges.selectors import judge_run_report
    from review.model_compare.services import model_comparison_start
    from tests.llm_server import FakeModelServer, point_at

    call_command("migrate", verbosity=0)
    toolset, _ = Toolset.objects.get_or_create(name="llmi")
    project = Project.objects.create(
        toolset=toolset,
        name="perf compare",
        kind="interleaved",
        tag_syntax="llmi",
        data_format="llmi",
    )
    reviewer = User.objects.create_user("perf-reviewer", password="x")
    rater = User.objects.create_user("perf-rater", password="x")
    project.memberships.create(user=reviewer, role="reviewer")
    project.memberships.create(user=rater, role="annotator")
    rubric = [{"key": "r1", "text": "a"}, {"key": "r2", "text": "b"}]
    items = Item.objects.bulk_create(
        Item(project=project, external_id=f"q{n}", position=n, query=f"Q{n}?", rubric=rubric)
        for n in range(args.pairs)
    )
    answers = {
        model: Response.objects.bulk_create(
            Response(
                item=item,
                key=f"model:{model}",
                origin=Origin.MODEL,
                model_name=model,
                text=f"{model} answers {item.external_id}" + " more" * (n % 7),
                position=1000,
            )
            for n, item in enumerate(items)
        )
        for model in ("alpha", "beta")
    }
    server = FakeModelServer(answer="A\nIt is better.", keep_requests=False).start()
    point_at(project, server)
    try:
        start = time.perf_counter()
        run, job = model_comparison_start(
            project=project,
            user=None,
            model_a="alpha",
            model_b="beta",
            workers=8,
            enqueue=False,
        )
        job = judge_services.judge_run_execute(job=job)
        compare_s = time.perf_counter() - start
    finally:
        server.stop()
    assert job.status == JobStatus.SUCCEEDED, job.error
    # People rated every pair too (a pairwise human evaluation, two people each): the run page
    # shows their agreement with the judge (kappa with a 1000-resample bootstrap), computed on
    # its first view and then read from the cache.
    pairs = run.selection["pairs"]
    pair_eval = JudgmentTask.objects.create(
        project=project,
        name="Which is better?",
        question="Which answer is better?",
        scheme="nominal",
        labels=[{"value": "a"}, {"value": "b"}, {"value": "tie"}],
        unit_kind="answer-pair",
        unit_params={"pairs": pairs, "models": ["alpha", "beta"], "scale": "pair"},
        overlap=2,
    )
    item_of = {a.pk: a.item_id for a in answers["alpha"]}
    pair_leases, pair_votes = [], []
    for n, (a, b) in enumerate(pairs):
        for person, value in ((reviewer, "a"), (rater, "ab"[n % 2] if n % 3 else "tie")):
            lease = Assignment(
                task=pair_eval,
                item_id=item_of[a],
                user=person,
                unit=f"pair:{a}:{b}",
                status="submitted",
                leased_at=timezone.now(),
                expires_at=timezone.now(),
            )
            pair_leases.append(lease)
            pair_votes.append(
                Judgment(
                    task=pair_eval,
                    item_id=item_of[a],
                    user=person,
                    assignment=lease,
                    unit=f"pair:{a}:{b}",
                    value=value,
                )
            )
    Assignment.objects.bulk_create(pair_leases, batch_size=2000)
    Judgment.objects.bulk_create(pair_votes, batch_size=2000)
    # What a web process does when it starts (benchmark.wsgi): timed apart, so first_s is the
    # page's own first view, not the process's first request.
    from benchmark.startup import warm_up

    start = time.perf_counter()
    warm_up()
    warm_up_s = time.perf_counter() - start
    client = Client()
    client.force_login(reviewer)
    run_page = _timed(client, f"/judges/runs/{run.pk}/", args.repeat)

    for model in ("alpha", "beta"):
        EvaluationRun.objects.create(
            project=project,
            model=model,
            base_url="http://127.0.0.1:9/v1",
            settings={},
            finished_at=timezone.now(),
            summary={},
        )
    rjob = Job.objects.create(project=project, kind="judge", status=JobStatus.SUCCEEDED)
    rrun = JudgeRun.objects.create(
        project=project, judge="llmi-rubric", base_url="http://x/v1", model="judge-m", job=rjob
    )
    calls = []
    for n, answer in enumerate(answers["alpha"] + answers["beta"]):
        for label in ("r1", "r2"):
            calls.append(
                JudgeCall(
                    run=rrun,
                    response=answer,
                    label=label,
                    key=f"{n}{label}",
                    template_id="llmi.rubric",
                    template_version="v",
                    outputs=[json.dumps({"score": (n + len(label)) % 3, "justification": "j"})],
                    ok=True,
                )
            )
    JudgeCall.objects.bulk_create(calls, batch_size=2000)
    rjob.result = {"run_id": rrun.pk, "summary": judge_run_report(run=rrun)["summary"]}
    rjob.save(update_fields=["result"])
    board_url = f"/projects/{project.pk}/evaluation/leaderboard/"
    no_ratings = _timed(client, board_url, args.repeat)
    task = JudgmentTask.objects.create(
        project=project,
        name="Score the criteria",
        question="Met?",
        scheme="ordinal",
        labels=[{"value": 0}, {"value": 1}, {"value": 2}],
        unit_kind="answer-criterion",
        overlap=2,
        consensus="majority",
    )
    leases, judgments = [], []
    for n, answer in enumerate(answers["alpha"]):
        for label in ("r1", "r2"):
            unit = f"response:{answer.pk}:{label}"
            for person in (reviewer, rater):
                lease = Assignment(
                    task=task,
                    item_id=answer.item_id,
                    user=person,
                    unit=unit,
                    status="submitted",
                    leased_at=timezone.now(),
                    expires_at=timezone.now(),
                )
                leases.append(lease)
                judgments.append((lease, answer.item_id, person, unit, (n + len(label)) % 3))
    Assignment.objects.bulk_create(leases, batch_size=2000)
    Judgment.objects.bulk_create(
        (
            Judgment(task=task, item_id=i, user=p, assignment=a, unit=u, value=v)
            for a, i, p, u, v in judgments
        ),
        batch_size=2000,
    )
    with_ratings = _timed(client, board_url, args.repeat)
    return {
        "pairs": args.pairs,
        "compare_seconds": round(compare_s, 2),
        "calls": job.result["summary"]["calls"]["total"],
        "process_warm_up_s": round(warm_up_s, 4),
        "run_page": run_page,
        "leaderboard_no_ratings": no_ratings,
        "leaderboard_with_ratings": with_ratings,
        "ratings": len(judgments),
    }


PHASES = {"all": phase_all}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--child", default="")
    args = parser.parse_args()
    if args.child:
        child_phase(PHASES, args, args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{tmp}/bench.sqlite3"
        if args.database_url:
            fresh_postgres(url)
        env = {"DATABASE_URL": url, "MEDIA_ROOT": os.path.join(tmp, "media")}
        argv = ["--pairs", str(args.pairs), "--repeat", str(args.repeat)]
        figures = run_phase(__file__, "all", argv, env)
    print(json.dumps(figures, indent=2))
    print("load:", os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
