"""Response-level human evaluation (ATP-Bench App. B.2, LLM-I App. C, pairwise preference):
the task and its seeded sample, the queue (overlap, leases, each rater's own order), blind
rating pages and the checks on every rating, the results computed by hand (means with
bootstrap intervals, the average scoring rate, Krippendorff's alpha per scale, win rates and
Bradley-Terry), Spearman's rho against a judge run, the raw ratings, permissions and query
counts."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.judgment_tasks import services as judging
from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask, Outcome, TaskUnit
from annotation.judgment_tasks.services import rater_rank
from annotation.judgment_tasks.units import (
    pair_key,
    pair_parse,
    unit_key,
    unit_parse,
    unit_responses,
)
from benchmark.exceptions import Forbidden, ValidationFailed
from benchmark.models import Origin, Response
from review.human_eval import selectors
from review.human_eval.services import human_eval_task_create
from tests.factories import (
    ImageFactory,
    ItemFactory,
    JudgeRunFactory,
    JudgmentFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
    UserFactory,
    image_ref,
    mam_judgment,
)

pytestmark = pytest.mark.django_db

MODELS = ("Orchid-9000", "Basalt-XL")
BLIND = re.compile("orchid|basalt|cobalt", re.I)


class World:
    """An ATP project with eight items (each with a document image), answers of two models
    (whose names also sit in the answers' keys and source files, never on a rater's page),
    a reviewer, three raters and an outsider."""

    def __init__(self, models: tuple[str, ...] = MODELS, n_items: int = 8) -> None:
        self.project = ProjectFactory(name="Human evaluation", data_format="atp")
        self.image = ImageFactory(projects=[self.project])
        ref = image_ref(self.image, position=0)
        self.users: dict[str, Any] = {}
        for name, role in [("admin", "admin"), ("rev", "reviewer"), ("r1", "annotator"),
                           ("r2", "annotator"), ("r3", "annotator")]:  # fmt: skip
            self.users[name] = UserFactory(username=name)
            MembershipFactory(project=self.project, user=self.users[name], role=role)
        self.outsider = UserFactory(username="outsider")
        MembershipFactory(user=self.outsider, role="admin")
        self.items = [
            ItemFactory(
                project=self.project,
                position=n,
                external_id=f"q{n}",
                query=f"Explain the nave of church {n}.",
                image_refs=[ref],
                documents=[{"text": f"Document about church {n}.", "images": [ref["path"]]}],
            )
            for n in range(n_items)
        ]
        self.answers: dict[str, list[Response]] = {}
        for model in models:
            self.answers[model] = [
                ResponseFactory(
                    item=item,
                    origin=Origin.MODEL,
                    model_name=model,
                    key=f"model:{model}",
                    source_file=f"answers-{model}.jsonl",
                    text=f"The nave of church {n} is long.\n\n"
                    '<tool>{"tool_name": "Reference", "description": "the nave", '
                    '"params": {"img_index": 0}}</tool>\n\nIt ends in an apse.',
                )
                for n, item in enumerate(self.items)
            ]

    def task(self, scale: str = "atp", **kwargs: Any) -> JudgmentTask:
        options = {"models": list(self.answers), "seed": 7, "overlap": 3, **kwargs}
        return human_eval_task_create(
            project=self.project, user=self.users["rev"], scale=scale, **options
        )

    def client(self, name: str) -> Client:
        client = Client()
        client.force_login(self.users.get(name, self.outsider))
        return client


@pytest.fixture
def world() -> World:
    return World()


def _responses(task: JudgmentTask) -> list[int]:
    keys = TaskUnit.objects.filter(task=task).values_list("key", flat=True)
    return sorted(pk for key in keys for pk in unit_responses(key))


def _model_of(pk: int) -> str:
    return Response.objects.get(pk=pk).model_name


# =========================================================================== unit keys


def test_pair_keys_sit_beside_the_existing_unit_keys() -> None:
    assert pair_key(first=12, second=5) == "pair:12:5"
    assert pair_parse("pair:12:5") == (12, 5)
    assert unit_responses("pair:12:5") == (12, 5)
    assert unit_responses(unit_key(response_id=9, label="atp")) == (9,)
    assert unit_parse("response:9:chief") == (9, "chief")  # the keys of before still parse
    for bad in ("pair:5:5", "pair:0:3", "pair:1", "pair:1:2:3", "response:1:atp"):
        with pytest.raises(ValidationFailed, match="pair key"):
            pair_parse(bad)
    with pytest.raises(ValidationFailed):
        pair_key(first=3, second=3)


# =========================================================================== the sample


def test_the_sample_is_drawn_again_by_its_seed(world: World) -> None:
    first = world.task(per_model=3, seed=41, name="first")
    again = world.task(per_model=3, seed=41, name="again")
    other = world.task(per_model=3, seed=42, name="other")
    assert _responses(first) == _responses(again)
    assert _responses(first) != _responses(other)
    assert first.unit_params["seed"] == 41 and first.unit_params["rater_order_seed"] == 41
    # The same items for every model: three items, each with both models' answers.
    units = TaskUnit.objects.filter(task=first)
    assert units.count() == 6
    by_item: dict[int, list[str]] = {}
    for unit in units:
        (pk,) = unit_responses(unit.key)
        by_item.setdefault(unit.item_id, []).append(_model_of(pk))
        assert unit.key == f"response:{pk}:atp"
    assert len(by_item) == 3 and all(sorted(m) == sorted(MODELS) for m in by_item.values())
    assert first.scheme == "scores" and first.consensus == "median"
    assert first.unit_kind == "answer-eval" and not first.updates_item_status


def test_each_model_drawn_on_its_own(world: World) -> None:
    task = world.task(per_model=3, seed=3, same_items=False)
    chosen = _responses(task)
    per_model = {m: [r for r in chosen if _model_of(r) == m] for m in MODELS}
    assert all(len(v) == 3 for v in per_model.values())
    items = {m: {Response.objects.get(pk=pk).item_id for pk in v} for m, v in per_model.items()}
    assert items[MODELS[0]] != items[MODELS[1]]  # drawn separately (seed 3 differs)
    assert _responses(world.task(per_model=3, seed=3, same_items=False, name="b")) == chosen


def test_pairs_put_two_models_answers_to_one_item_side_by_side(world: World) -> None:
    task = world.task(scale="pair", per_model=6, seed=5)
    units = list(TaskUnit.objects.filter(task=task))
    assert len(units) == 6 and task.unit_kind == "answer-pair" and task.scheme == "nominal"
    sides = set()
    for unit in units:
        a, b = pair_parse(unit.key)
        ra, rb = Response.objects.get(pk=a), Response.objects.get(pk=b)
        assert ra.item_id == rb.item_id == unit.item_id
        assert ra.model_name != rb.model_name
        sides.add(ra.model_name)
    assert sides == set(MODELS)  # which model is A is drawn per pair
    again = world.task(scale="pair", per_model=6, seed=5, name="again")
    assert sorted(TaskUnit.objects.filter(task=again).values_list("key", flat=True)) == sorted(
        u.key for u in units
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"scale": "stars"}, "scale: 'stars' is not one of atp, likert, pair"),
        ({"models": []}, "choose at least one model"),
        ({"scale": "pair", "models": ["Orchid-9000"]}, "at least two models to compare"),
        ({"models": ["Orchid-9000", "Nope"]}, "no answers of 'Nope'"),
        ({"per_model": 0}, "answers per model: at least 1"),
        ({"seed": -1}, "seed: a whole number"),
        ({"overlap": 0}, "overlap"),
        ({"name": "Orchid-9000 against the rest"}, "leave 'Orchid-9000' out of it"),
    ],
)
def test_bad_choices_are_refused_with_what_is_wrong(
    world: World, options: dict[str, Any], message: str
) -> None:
    scale = options.pop("scale", "atp")
    with pytest.raises(ValidationFailed, match=re.escape(message)):
        world.task(scale=scale, **options)
    assert not JudgmentTask.objects.filter(project=world.project).exists()


def test_only_reviewers_create_a_human_evaluation(world: World) -> None:
    with pytest.raises(Forbidden):
        human_eval_task_create(
            project=world.project, user=world.users["r1"], scale="atp", models=list(MODELS)
        )
    response = world.client("r1").post(
        reverse("review:human_eval_new", args=[world.project.pk]), {"scale": "atp"}
    )
    assert response.status_code == 403
    assert (
        world.client("outsider")
        .get(reverse("review:human_eval_new", args=[world.project.pk]))
        .status_code
        == 404
    )


def test_the_form_creates_the_task_and_shows_the_seed(world: World) -> None:
    client = world.client("rev")
    page = client.get(reverse("review:human_eval_new", args=[world.project.pk]))
    assert page.status_code == 200
    assert "Orchid-9000 (8 answers)" in page.content.decode()
    bad = client.post(
        reverse("review:human_eval_new", args=[world.project.pk]),
        {"scale": "pair", "models": ["Orchid-9000"], "seed": "4", "overlap": "2"},
    )
    assert bad.status_code == 400
    assert "at least two models to compare" in bad.content.decode()
    made = client.post(
        reverse("review:human_eval_new", args=[world.project.pk]),
        {"scale": "likert", "models": list(MODELS), "per_model": "2", "seed": "123",
         "same_items": "on", "overlap": "2"},
    )  # fmt: skip
    task = JudgmentTask.objects.get(project=world.project)
    assert made.status_code == 302 and made["Location"] == reverse(
        "review:human_eval_results", args=[task.pk]
    )
    assert (task.overlap, task.unit_params["seed"], task.unit_params["per_model"]) == (2, 123, 2)
    assert task.labels[0] == {"value": 1, "label": "1 · Very poor", "accept": False}
    results = client.get(made["Location"]).content.decode()
    assert '<dd class="mono" id="he-seed">123</dd>' in results
    listing = client.get(reverse("annotation:task_list", args=[world.project.pk])).content.decode()
    assert reverse("review:human_eval_results", args=[task.pk]) in listing


def test_no_model_ticked_means_every_model_as_for_judge_runs(world: World) -> None:
    """The form once refused an empty model choice ("This field is required") where a judge
    run takes every model; now none ticked is all, and the form says so."""
    client = world.client("rev")
    url = reverse("review:human_eval_new", args=[world.project.pk])
    assert "None ticked: every model listed" in client.get(url).content.decode()
    made = client.post(url, {"scale": "likert", "per_model": "1", "seed": "5", "overlap": "1"})
    assert made.status_code == 302, made.content.decode()
    task = JudgmentTask.objects.get(project=world.project)
    assert sorted({_model_of(pk) for pk in _responses(task)}) == sorted(MODELS)


# =========================================================================== the queue


def _rate_all(task: JudgmentTask, user: Any, value: Any) -> list[str]:
    """Lease and rate until the queue is empty; the units in the order they came."""
    seen = []
    while (lease := judging.assignment_next_for_user(task=task, user=user)) is not None:
        seen.append(lease.unit)
        judging.judgment_submit(task=task, item=lease.item, user=user, unit=lease.unit, value=value)
    return seen


def test_each_rater_meets_the_answers_in_an_order_of_their_own(world: World) -> None:
    task = world.task(scale="likert", per_model=4, overlap=3)
    keys = list(TaskUnit.objects.filter(task=task).values_list("key", flat=True))
    orders = {}
    for name in ("r1", "r2", "r3"):
        user = world.users[name]
        orders[name] = _rate_all(task, user, 3)
        expected = sorted(keys, key=lambda k, u=user: rater_rank(seed=7, user_id=u.pk, key=k))
        assert orders[name] == expected
    assert len({tuple(o) for o in orders.values()}) == 3  # three different orders
    assert sorted(orders["r1"]) == sorted(keys)


def test_overlap_and_leases_as_for_any_task(world: World) -> None:
    task = world.task(scale="likert", per_model=1, overlap=2)  # two answers, k = 2
    r1, r2, r3 = (world.users[n] for n in ("r1", "r2", "r3"))
    first = judging.assignment_next_for_user(task=task, user=r1)
    assert first is not None
    assert judging.assignment_next_for_user(task=task, user=r1).pk == first.pk  # held
    _rate_all(task, r2, 4)
    _rate_all(task, r3, 4)  # r1's lease still counts: r3 gets only the other unit
    assert Judgment.objects.filter(task=task, user=r3).count() == 1
    # r1's lease runs out unrated: the unit goes back to the pool, to r3.
    Assignment.objects.filter(pk=first.pk).update(expires_at=timezone.now() - timedelta(1))
    again = judging.assignment_next_for_user(task=task, user=r3)
    assert again is not None and again.unit == first.unit
    for unit in TaskUnit.objects.filter(task=task):
        live = Assignment.objects.filter(task=task, unit=unit.key).exclude(
            status="active", expires_at__lte=timezone.now()
        )
        assert live.count() <= 2


def test_every_rating_is_checked(world: World) -> None:
    task = world.task(per_model=1, overlap=1)
    user = world.users["r1"]
    lease = judging.assignment_next_for_user(task=task, user=user)

    def submit(value: Any) -> Any:
        return judging.judgment_submit(
            task=task, item=lease.item, user=user, unit=lease.unit, value=value
        )

    for value, message in [
        ({"inappr": 0, "mi": 0, "fs": 6}, "FS: 6 is above 5 (give 1 to 5)"),
        ({"inappr": 0, "mi": 0, "fs": 0}, "FS: 0 is below 1 (give 1 to 5)"),
        ({"inappr": -1, "mi": 0, "fs": 3}, "# Inappr.: -1 is below 0 (give 0 to 50)"),
        ({"inappr": 0, "mi": "-2", "fs": 3}, "MI: -2 is below 0"),
        ({"inappr": 0, "mi": 2.5, "fs": 3}, "MI: 2.5 is not a whole number"),
        ({"inappr": "two", "mi": 0, "fs": 3}, "# Inappr.: 'two' is not a whole number"),
        ({"inappr": 0, "mi": 0, "fs": True}, "FS: True is not a whole number"),
        ({"inappr": 0, "fs": 3}, "missing score: MI"),
        ({"inappr": 0, "mi": 0, "fs": 3, "vibe": 1}, "unknown score 'vibe'"),
        (4, "give one score for each of inappr, mi, fs"),
    ]:
        with pytest.raises(ValidationFailed, match=re.escape(message)):
            submit(value)
    judgment = submit({"inappr": "1", "mi": 0, "fs": "4"})
    assert judgment.value == {"inappr": 1, "mi": 0, "fs": 4}

    likert = world.task(scale="likert", per_model=1, overlap=1, name="likert")
    lease = judging.assignment_next_for_user(task=likert, user=user)
    with pytest.raises(ValidationFailed, match="not one of the labels: 1, 2, 3, 4, 5"):
        judging.judgment_submit(task=likert, item=lease.item, user=user, unit=lease.unit, value=0)
    pair = world.task(scale="pair", per_model=1, overlap=1, name="pair")
    lease = judging.assignment_next_for_user(task=pair, user=user)
    with pytest.raises(ValidationFailed, match="not one of the labels: a, b, tie"):
        judging.judgment_submit(
            task=pair, item=lease.item, user=user, unit=lease.unit, value="left"
        )


def test_the_outcome_is_the_median_of_each_score(world: World) -> None:
    task = world.task(per_model=1, overlap=3)
    unit = TaskUnit.objects.filter(task=task).first()
    triples = [{"inappr": 0, "mi": 2, "fs": 4}, {"inappr": 3, "mi": 0, "fs": 5},
               {"inappr": 1, "mi": 1, "fs": 1}]  # fmt: skip
    for name, value in zip(("r1", "r2", "r3"), triples, strict=True):
        user = world.users[name]
        Assignment.objects.create(
            task=task, item=unit.item, unit=unit.key, user=user, leased_at=timezone.now(),
            expires_at=timezone.now() + timedelta(minutes=5),
        )  # fmt: skip
        judging.judgment_submit(task=task, item=unit.item, user=user, unit=unit.key, value=value)
    outcome = Outcome.objects.get(task=task, unit=unit.key)
    assert (outcome.verdict, outcome.value) == ("accepted", {"inappr": 1, "mi": 1, "fs": 4})


def test_the_scale_of_a_task_cannot_be_edited_away(world: World) -> None:
    task = world.task(per_model=1)
    admin = world.users["admin"]
    with pytest.raises(ValidationFailed, match="scale, labels and rule were set"):
        judging.judgment_task_save(
            project=world.project, user=admin, task=task, labels=[{"value": "fs", "min": 1}]
        )
    task.refresh_from_db()
    with pytest.raises(ValidationFailed, match="leave 'Basalt-XL' out"):
        judging.judgment_task_save(
            project=world.project, user=admin, task=task, question="Is basalt-xl good?"
        )
    task.refresh_from_db()
    saved = judging.judgment_task_save(project=world.project, user=admin, task=task, overlap=4)
    assert saved.overlap == 4 and saved.scheme == "scores"
    with pytest.raises(ValidationFailed, match="several scores per judgment are for"):
        judging.judgment_task_save(
            project=world.project, user=admin, task=None, name="x", question="q",
            scheme="scores", consensus="median", labels=[],
        )  # fmt: skip
    with pytest.raises(ValidationFailed, match="the median needs numeric ratings"):
        judging.judgment_task_save(
            project=world.project, user=admin, task=None, name="y", question="q",
            scheme="binary", consensus="median",
        )  # fmt: skip


# =========================================================================== the rating page


def _lease(world: World, task: JudgmentTask, name: str = "r1") -> Assignment:
    lease = judging.assignment_next_for_user(task=task, user=world.users[name])
    assert lease is not None
    return lease


def _unit_url(task: JudgmentTask, unit: str) -> str:
    return reverse("annotation:judge_unit", args=[task.pk, unit])


@pytest.mark.parametrize("scale", ["atp", "likert", "pair"])
def test_raters_never_see_which_model_wrote_an_answer(
    world: World, scale: str, django_assert_max_num_queries: Any
) -> None:
    task = world.task(scale=scale, per_model=2, overlap=2)
    client = world.client("r1")
    start = client.post(reverse("annotation:task_next", args=[task.pk]))
    lease = Assignment.objects.get(task=task, user=world.users["r1"])
    assert start["Location"] == _unit_url(task, lease.unit)
    with django_assert_max_num_queries(20):
        page = client.get(start["Location"])
    html = page.content.decode()
    assert page.status_code == 200
    assert not BLIND.findall(html), "a model's name is on the rater's page"
    assert not BLIND.findall(start["Location"])
    assert "Explain the nave of church" in html and "Document about church" in html
    assert "The nave of church" in html and "It ends in an apse." in html
    # The Reference call is drawn as the item's image, sanitised markdown around it.
    assert reverse("benchmark:image_thumb", args=[world.image.sha256]) in html
    assert "&lt;tool&gt;" not in html and "<tool>" not in html
    if scale == "pair":
        assert 'id="answer-a"' in html and 'id="answer-b"' in html
        assert "<kbd>t</kbd>" in html
    if scale == "atp":
        assert "coherence" in html and "aesthetic utility" in html  # FS criteria on screen
        assert 'name="inappr"' in html and "<kbd>I</kbd>" in html
    if scale == "likert":
        assert "5 · Excellent" in html and "Does everything the prompt asks" in html
    # The task list a rater sees names no model either.
    listing = client.get(reverse("annotation:task_list", args=[world.project.pk]))
    assert not BLIND.findall(listing.content.decode())


def test_a_bad_rating_answers_400_with_what_is_wrong(world: World) -> None:
    task = world.task(per_model=1, overlap=1)
    lease = _lease(world, task)
    client = world.client("r1")
    url = _unit_url(task, lease.unit)
    bad = client.post(url, {"inappr": "-1", "mi": "0", "fs": "3"})
    assert bad.status_code == 400
    html = bad.content.decode()
    assert "# Inappr.: -1 is below 0 (give 0 to 50)" in html
    assert 'value="-1"' in html  # what the rater typed is kept
    bad = client.post(url, {"inappr": "0", "mi": "0", "fs": "9"})
    assert bad.status_code == 400 and "FS: 9 is above 5" in bad.content.decode()
    assert not Judgment.objects.filter(task=task).exists()
    good = client.post(url, {"inappr": "2", "mi": "1", "fs": "4", "comment": "ok", "seconds": "12"})
    assert good.status_code == 302
    assert good["Location"] == reverse("annotation:task_next", args=[task.pk])
    judgment = Judgment.objects.get(task=task)
    assert (judgment.value, judgment.comment, judgment.seconds) == (
        {"inappr": 2, "mi": 1, "fs": 4}, "ok", 12.0,
    )  # fmt: skip
    done = client.get(url).content.decode()
    assert "# Inappr. 2 · MI 1 · FS 4" in done


def test_only_the_leaseholder_and_reviewers_open_a_unit(world: World) -> None:
    task = world.task(scale="pair", per_model=1, overlap=1)
    lease = _lease(world, task)
    url = _unit_url(task, lease.unit)
    assert world.client("r2").get(url).status_code == 403
    assert world.client("r2").post(url, {"value": "a"}).status_code == 403
    assert world.client("outsider").get(url).status_code == 404
    world.client("r1").post(url, {"value": "b"})
    reviewer = world.client("rev").get(url)
    html = reviewer.content.decode()
    assert reviewer.status_code == 200 and "B is better" in html and "r1" in html
    assert not BLIND.findall(html)


# =========================================================================== results


def _judge(task: JudgmentTask, unit: str, user: Any, value: Any) -> None:
    item_id = TaskUnit.objects.get(task=task, key=unit).item_id
    JudgmentFactory(
        task=task, item_id=item_id, user=user, unit=unit, assignment__unit=unit,
        assignment__item_id=item_id, value=value,
    )  # fmt: skip


def _units_by_model(task: JudgmentTask) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for unit in TaskUnit.objects.filter(task=task).order_by("position"):
        out.setdefault(_model_of(unit_responses(unit.key)[0]), []).append(unit.key)
    return out


# Per model, per answer, per rater (r1, r2): (# Inappr., MI, FS).
ATP_RATINGS = {
    "Orchid-9000": [[(0, 0, 4), (1, 0, 5)], [(2, 1, 3), (2, 0, 4)]],
    "Basalt-XL": [[(0, 2, 2), (0, 1, 2)], [(0, 1, 1), (0, 1, 3)]],
}


def _rated_atp_task(world: World) -> JudgmentTask:
    task = world.task(per_model=2, overlap=2)
    units = _units_by_model(task)
    for model, answers in ATP_RATINGS.items():
        for unit, ratings in zip(units[model], answers, strict=True):
            for name, (inappr, mi, fs) in zip(("r1", "r2"), ratings, strict=True):
                _judge(task, unit, world.users[name], {"inappr": inappr, "mi": mi, "fs": fs})
    return task


def test_table_11_means_intervals_and_agreement_by_hand(world: World) -> None:
    task = _rated_atp_task(world)
    results = selectors.human_eval_results(task=task)
    cells = {row["model"]: {c["field"].key: c for c in row["cells"]} for row in results["rows"]}
    orchid, basalt = cells["Orchid-9000"], cells["Basalt-XL"]
    # # Inappr.: (0+1+2+2)/4, (0+0+0+0)/4; MI: (0+0+1+0)/4, (2+1+1+1)/4; FS: 16/4, 8/4.
    assert (orchid["inappr"]["mean"], basalt["inappr"]["mean"]) == (1.25, 0.0)
    assert (orchid["mi"]["mean"], basalt["mi"]["mean"]) == (0.25, 1.25)
    assert (orchid["fs"]["mean"], basalt["fs"]["mean"]) == (4.0, 2.0)
    assert (orchid["fs"]["n_units"], orchid["fs"]["n_ratings"]) == (2, 4)
    # Two answers with mean FS 4.5 and 3.5: the resampled means run from 3.5 to 4.5.
    assert (orchid["fs"]["ci"]["low"], orchid["fs"]["ci"]["high"]) == (3.5, 4.5)
    assert selectors.human_eval_results(task=task)["rows"] == results["rows"]  # seeded
    assert results["progress"] == {"units": 4, "done": 4, "ratings": 8, "raters": 2}
    alpha = {a["field"].key: a["alpha"] for a in results["agreement"]}
    # Ratio alpha of # Inappr. over (0,1) (2,2) (0,0) (0,0): D_o = 2/8, D_e = (274/9)/56,
    # alpha = 1 - 63/137 = 74/137; MI over (0,0) (1,0) (2,1) (1,1): 1 - 70/139 = 69/139.
    assert alpha["inappr"]["level"] == "ratio" and alpha["mi"]["level"] == "ratio"
    assert alpha["inappr"]["value"] == pytest.approx(74 / 137)
    assert alpha["mi"]["value"] == pytest.approx(69 / 139)
    # FS at the ordinal level, against the reference implementation on the same matrix.
    import krippendorff
    import numpy as np

    fs = np.array([[4, 3, 2, 1], [5, 4, 2, 3]], dtype=float)
    expected = krippendorff.alpha(
        reliability_data=fs, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert alpha["fs"]["level"] == "ordinal"
    assert alpha["fs"]["value"] == pytest.approx(expected)
    assert alpha["fs"]["ci"]["low"] <= alpha["fs"]["value"] <= alpha["fs"]["ci"]["high"]


def test_the_results_page_lays_out_table_11(
    world: World, django_assert_max_num_queries: Any
) -> None:
    task = _rated_atp_task(world)
    client = world.client("rev")
    with django_assert_max_num_queries(16):
        page = client.get(reverse("review:human_eval_results", args=[task.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    row = re.search(r'<tr data-model="Orchid-9000">(.*?)</tr>', html, re.S).group(1)
    assert re.search(r'data-field="inappr">1\.25<span class="ci">', row)
    assert re.search(r'data-field="fs">4\.00<span class="ci">3\.50 – 4\.50</span>', row)
    assert 'data-field="n">2 / 4<' in row
    assert "# Inappr. ↓" in html and "MI ↓" in html and "FS ↑" in html
    assert f"{74 / 137:.3f}" in html  # alpha of # Inappr.


def test_likert_reports_the_average_scoring_rate(world: World) -> None:
    task = world.task(scale="likert", per_model=2, overlap=2)
    scores = {"Orchid-9000": [(5, 4), (4, 3)], "Basalt-XL": [(2, 2), (1, 3)]}
    units = _units_by_model(task)
    for model, answers in scores.items():
        for unit, pair in zip(units[model], answers, strict=True):
            for name, score in zip(("r1", "r2"), pair, strict=True):
                _judge(task, unit, world.users[name], score)
    results = selectors.human_eval_results(task=task)
    cells = {row["model"]: row["cells"][0] for row in results["rows"]}
    assert (cells["Orchid-9000"]["mean"], cells["Orchid-9000"]["rate"]) == (4.0, 80.0)
    assert (cells["Basalt-XL"]["mean"], cells["Basalt-XL"]["rate"]) == (2.0, 40.0)
    # Answer means 4.5 and 3.5: the rate's interval is 70 % to 90 %.
    assert cells["Orchid-9000"]["rate_ci"] == (70.0, 90.0)
    assert results["agreement"][0]["alpha"]["level"] == "ordinal"
    html = world.client("rev").get(reverse("review:human_eval_results", args=[task.pk]))
    assert re.search(
        r'data-field="rate">80\.0<span class="ci">70\.0 – 90\.0', html.content.decode()
    )
    assert "100 × mean Likert score / 5" in html.content.decode()


def test_pairwise_win_rates_and_bradley_terry(world: World) -> None:
    task = world.task(scale="pair", per_model=2, overlap=2)
    # Two pairs; r1 and r2 judge each. The first: Orchid wins twice; the second: a tie and
    # an Orchid win. Orchid: 3 wins + 1 tie of 4 = 87.5 %; Basalt 12.5 %.
    units = list(TaskUnit.objects.filter(task=task).order_by("position"))
    for unit, votes in zip(units, [("Orchid-9000", "Orchid-9000"), ("Orchid-9000", None)],
                           strict=True):  # fmt: skip
        a, b = pair_parse(unit.key)
        side = {_model_of(a): "a", _model_of(b): "b"}
        for name, winner in zip(("r1", "r2"), votes, strict=True):
            _judge(task, unit.key, world.users[name], side[winner] if winner else "tie")
    results = selectors.human_eval_results(task=task)
    rows = {r["model"]: r for r in results["wins"]["models"]}
    assert (rows["Orchid-9000"]["wins"], rows["Orchid-9000"]["ties"]) == (3, 1)
    assert rows["Orchid-9000"]["rate"] == 87.5 and rows["Basalt-XL"]["rate"] == 12.5
    # Bradley-Terry: Orchid 3.5 of 4, Basalt 0.5 of 4: p_O / p_B = 7.
    bt = {m["model"]: m for m in results["bt"]["models"]}
    assert bt["Orchid-9000"]["theta"] - bt["Basalt-XL"]["theta"] == pytest.approx(
        __import__("math").log(7), abs=1e-6
    )
    assert bt["Orchid-9000"]["rank"] == 1 and results["bt"]["alpha"] == 0.0
    assert results["agreement"][0]["alpha"]["level"] == "nominal"
    html = world.client("rev").get(reverse("review:human_eval_results", args=[task.pk]))
    body = html.content.decode()
    row = re.search(r'<tr data-model="Orchid-9000">(.*?)</tr>', body, re.S).group(1)
    assert 'data-field="rate">87.5' in row and 'data-field="rank">1<' in row


def test_preference_agreement_is_nominal_alpha_by_hand(world: World) -> None:
    # Two raters on three pairs: (a, a), (b, b), (a, b): alpha = 1 - (2/6) / (18/30) = 4/9.
    task = world.task(scale="pair", per_model=3, overlap=2)
    units = list(TaskUnit.objects.filter(task=task).order_by("position"))
    for unit, (first, second) in zip(units, [("a", "a"), ("b", "b"), ("a", "b")], strict=True):
        _judge(task, unit.key, world.users["r1"], first)
        _judge(task, unit.key, world.users["r2"], second)
    alpha = selectors.human_eval_results(task=task)["agreement"][0]["alpha"]
    assert alpha["value"] == pytest.approx(4 / 9)


# =========================================================================== against a judge


def test_rho_against_a_judge_run_on_the_same_answers(
    django_assert_max_num_queries: Any,
) -> None:
    world = World(models=("Orchid-9000", "Basalt-XL", "Cobalt-7"), n_items=2)
    task = world.task(per_model=2, overlap=1)
    units = _units_by_model(task)
    # One rater. FS per answer: Orchid 5, 4; Basalt 3, 3; Cobalt 2, 2 -> people rank O, B, C.
    # MI per answer: Orchid 0, 0; Basalt 1, 2; Cobalt 1, 0 -> fewest missed: O, C, B.
    people = {"Orchid-9000": [(5, 0), (4, 0)], "Basalt-XL": [(3, 1), (3, 2)],
              "Cobalt-7": [(2, 1), (2, 0)]}  # fmt: skip
    # The judge's Chief score and missed images: FS O 87.5, B 45, C 65 -> O, C, B;
    # MI O 0.5, B 2, C 0 -> C, O, B.
    judge = {"Orchid-9000": [(90, 0), (85, 1)], "Basalt-XL": [(40, 2), (50, 2)],
             "Cobalt-7": [(60, 0), (70, 0)]}  # fmt: skip
    run = JudgeRunFactory(project=world.project, model="mam-judge")
    other = JudgeRunFactory(project=world.project, judge="llmi-rubric")
    for model, keys in units.items():
        for key, (fs, mi), (score, missed) in zip(keys, people[model], judge[model], strict=True):
            _judge(task, key, world.users["r1"], {"inappr": 0, "mi": mi, "fs": fs})
            answer = Response.objects.get(pk=unit_responses(key)[0])
            mam_judgment(run, answer, score=score, missed=missed)
    found = selectors.judge_comparison(task=task, run=run)
    assert (found["shared"], found["rated"]) == (6, 6)
    rows = {row["key"]: row for row in found["rows"]}
    # Ranks (1, 2, 3) against (1, 3, 2): rho = 1 - 6 * 2 / (3 * 8) = 0.5, p = 2/3 (n = 3).
    assert rows["fs"]["models"]["rho"] == pytest.approx(0.5)
    assert rows["fs"]["models"]["p"] == pytest.approx(2 / 3)
    assert rows["mi"]["models"]["rho"] == pytest.approx(0.5)
    assert rows["fs"]["models"]["n"] == 3
    # Over the six answers: ranks (1, 2, 3.5, 3.5, 5.5, 5.5) against (1, 2, 6, 5, 4, 3).
    assert rows["fs"]["answers"]["rho"] == pytest.approx(8.5 / (16.5 * 17.5) ** 0.5)
    assert rows["fs"]["answers"]["n"] == 6
    assert dict((m, j) for m, _, j in rows["fs"]["table"]) == {
        "Basalt-XL": 45.0, "Cobalt-7": 65.0, "Orchid-9000": 87.5,
    }  # fmt: skip

    client = world.client("rev")
    url = reverse("review:human_eval_results", args=[task.pk])
    with django_assert_max_num_queries(24):
        page = client.get(url, {"run": run.pk})
    html = page.content.decode()
    assert page.status_code == 200
    section = re.search(r'data-compare="fs">(.*?)</div>', html, re.S).group(1)
    assert re.search(r'data-over="models">.*?data-field="rho">0\.5000<.*?0\.6667', section, re.S)
    assert f'<option value="{other.pk}"' not in html  # a rubric run has nothing to compare
    fragment = client.get(
        url, {"run": other.pk}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="judge-compare"
    )
    assert (
        fragment.status_code == 400 and "is not a finished judge run" in fragment.content.decode()
    )
    assert "<html" not in fragment.content.decode()

    # A run over part of the answers: both sides over those answers only.
    part = JudgeRunFactory(project=world.project)
    for model in ("Orchid-9000", "Basalt-XL", "Cobalt-7"):
        answer = Response.objects.get(pk=unit_responses(units[model][0])[0])
        mam_judgment(part, answer, score=50, missed=0)
    partial = selectors.judge_comparison(task=task, run=part)
    assert partial["shared"] == 3 and "judged 3 of the 6 answers" in partial["note"]
    table = {m: h for m, h, _ in {r["key"]: r for r in partial["rows"]}["fs"]["table"]}
    assert table == {"Orchid-9000": 5.0, "Basalt-XL": 3.0, "Cobalt-7": 2.0}
    assert {r["key"]: r for r in partial["rows"]}["fs"]["models"]["rho"] is None  # all 50


# =========================================================================== raw ratings


def test_raw_ratings_as_csv_and_jsonl(world: World) -> None:
    task = _rated_atp_task(world)
    Judgment.objects.filter(task=task, user=world.users["r1"]).update(comment="=HYPERLINK(1)")
    client = world.client("rev")
    response = client.get(reverse("review:human_eval_export", args=[task.pk, "csv"]))
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 8
    assert list(rows[0]) == ["task", "unit", "item", "scale", "answer", "model", "rater",
                             "inappr", "mi", "fs", "comment", "seconds", "created_at"]  # fmt: skip
    assert {r["model"] for r in rows} == set(MODELS)
    assert {r["comment"] for r in rows} == {"'=HYPERLINK(1)", ""}
    first = next(r for r in rows if r["model"] == "Orchid-9000" and r["rater"] == "r1")
    assert (first["inappr"], first["mi"], first["fs"]) == ("0", "0", "4")
    response = client.get(reverse("review:human_eval_export", args=[task.pk, "jsonl"]))
    lines = [json.loads(x) for x in b"".join(response.streaming_content).splitlines()]
    assert len(lines) == 8 and {line["scale"] for line in lines} == {"atp"}
    assert lines[0]["fs"] in (1, 2, 3, 4, 5)


def test_pair_export_names_the_preferred_model(world: World) -> None:
    task = world.task(scale="pair", per_model=1, overlap=1)
    unit = TaskUnit.objects.get(task=task)
    _judge(task, unit.key, world.users["r1"], "b")
    response = world.client("rev").get(reverse("review:human_eval_export", args=[task.pk, "jsonl"]))
    (line,) = [json.loads(x) for x in b"".join(response.streaming_content).splitlines()]
    a, b = pair_parse(unit.key)
    assert (line["answer_a"], line["answer_b"]) == (a, b)
    assert line["preferred_model"] == _model_of(b) and line["preference"] == "b"


@pytest.mark.parametrize("name", ["r1", "outsider"])
def test_results_and_exports_are_for_reviewers(world: World, name: str) -> None:
    task = world.task(per_model=1)
    expected = 403 if name == "r1" else 404
    client = world.client(name)
    assert client.get(reverse("review:human_eval_results", args=[task.pk])).status_code == expected
    for fmt in ("csv", "jsonl"):
        url = reverse("review:human_eval_export", args=[task.pk, fmt])
        assert client.get(url).status_code == expected


def test_other_tasks_have_no_human_evaluation_results(world: World) -> None:
    other = JudgmentTask.objects.create(
        project=world.project, name="plain", question="Keep?", scheme="binary",
        consensus="unanimous",
    )  # fmt: skip
    client = world.client("rev")
    assert client.get(reverse("review:human_eval_results", args=[other.pk])).status_code == 404


def test_the_generic_agreement_page_takes_several_scores(world: World) -> None:
    task = _rated_atp_task(world)
    page = world.client("rev").get(reverse("review:agreement", args=[task.pk]))
    assert page.status_code == 200


def test_the_api_takes_the_three_scores_as_one_object(world: World) -> None:
    from rest_framework.test import APIClient

    task = world.task(per_model=1, overlap=1)
    client = APIClient()
    client.force_authenticate(world.users["r1"])
    base = f"/api/judgment-tasks/{task.pk}"
    lease = client.post(f"{base}/next/").json()
    assert lease["unit"].endswith(":atp")
    bad = client.post(
        f"{base}/judgments/",
        {"unit": lease["unit"], "value": {"inappr": 0, "mi": -3, "fs": 4}},
        format="json",
    )
    assert bad.status_code == 400 and bad.json()["detail"] == "MI: -3 is below 0 (give 0 to 50)"
    done = client.post(
        f"{base}/judgments/",
        {"unit": lease["unit"], "value": {"inappr": 0, "mi": 3, "fs": 4}},
        format="json",
    )
    assert done.status_code == 201 and done.json()["value"] == {"inappr": 0, "mi": 3, "fs": 4}
    assert not BLIND.findall(json.dumps(client.get(f"/api/judgment-tasks/{task.pk}/").json()))


@pytest.mark.parametrize("scale", ["atp", "likert", "pair"])
def test_results_before_any_rating(world: World, scale: str) -> None:
    task = world.task(scale=scale, per_model=2)
    page = world.client("rev").get(reverse("review:human_eval_results", args=[task.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "0 of " in html and "no judgments" in html


def test_bradley_terry_against_a_judge_run() -> None:
    world = World(models=("Orchid-9000", "Basalt-XL", "Cobalt-7"), n_items=1)
    task = world.task(scale="pair", overlap=1)
    # r1: Orchid beats both, Basalt beats Cobalt; r2 calls every pair a tie (so each model
    # also half-wins every pair and the estimate exists). People rank O, B, C.
    wins = {frozenset({"Orchid-9000", "Basalt-XL"}): "Orchid-9000",
            frozenset({"Orchid-9000", "Cobalt-7"}): "Orchid-9000",
            frozenset({"Basalt-XL", "Cobalt-7"}): "Basalt-XL"}  # fmt: skip
    for unit in TaskUnit.objects.filter(task=task):
        a, b = pair_parse(unit.key)
        winner = wins[frozenset({_model_of(a), _model_of(b)})]
        _judge(task, unit.key, world.users["r1"], "a" if _model_of(a) == winner else "b")
        _judge(task, unit.key, world.users["r2"], "tie")
    run = JudgeRunFactory(project=world.project)
    for model, score in (("Orchid-9000", 90), ("Basalt-XL", 30), ("Cobalt-7", 60)):
        mam_judgment(run, world.answers[model][0], score=score)
    found = selectors.judge_comparison(task=task, run=run)
    (row,) = found["rows"]
    assert (row["human"], row["judge"], "answers" in row) == ("Bradley-Terry strength", "FS", False)
    # People: O, B, C; the judge: O, C, B. rho = 0.5.
    assert row["models"]["rho"] == pytest.approx(0.5)
    assert [m for m, _, _ in row["table"]] == ["Basalt-XL", "Cobalt-7", "Orchid-9000"]
