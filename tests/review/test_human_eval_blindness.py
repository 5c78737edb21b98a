"""Human evaluation is blind (issue 11: raters see the rendered answer with the query, "never
the model's name"): the identity-hiding rule registered with ``benchmark.visibility`` masks
the model's name, the key (``model:<name>``), the source file and the source record of every
answer under an active ``answer-eval``/``answer-pair`` task, for the project's members below
reviewer (the raters), in every selector that returns responses; reviewers and admins see
everything. The route matrix (``tests/test_route_matrix.py``, ``SECRET_MODEL``) checks every
page and API route for the name; these tests check the rule itself and the masking."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.judgment_tasks.models import JudgmentTask
from annotation.tag_review.selectors import response_get
from benchmark import selectors as project_selectors
from benchmark import visibility
from benchmark.models import Origin, Response
from review.answer_rendering.selectors import response_for_rendering
from review.human_eval.selectors import identity_hidden
from review.human_eval.services import human_eval_task_create
from tests.factories import (
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

MODELS = ("Orchid-9000", "Basalt-XL")


class World:
    """A project with three items answered by two models (names in key, source file and
    record), a reviewer, a rater (annotator) and a gold answer that is nobody's unit."""

    def __init__(self, n_items: int = 3, name: str = "Blind evaluation") -> None:
        self.project = ProjectFactory(name=name, data_format="atp")
        self.reviewer = UserFactory(username=f"rev-{name}")
        self.rater = UserFactory(username=f"rater-{name}")
        MembershipFactory(project=self.project, user=self.reviewer, role="reviewer")
        MembershipFactory(project=self.project, user=self.rater, role="annotator")
        self.items = [
            ItemFactory(project=self.project, position=n, external_id=f"q{n}")
            for n in range(n_items)
        ]
        self.answers: dict[str, list[Response]] = {
            model: [
                ResponseFactory(
                    item=item,
                    origin=Origin.MODEL,
                    model_name=model,
                    key=f"model:{model}",
                    source_file=f"answers-{model}.jsonl",
                    raw=f'{{"model": "{model}"}}',
                    extra={"scores": {"r1": 2}, "from": model},
                    text=f"Answer {n} of a model.",
                )
                for n, item in enumerate(self.items)
            ]
            for model in MODELS
        }
        self.gold = ResponseFactory(item=self.items[0], key="gt", text="The gold answer.")

    def task(self, scale: str = "likert", models: tuple[str, ...] = MODELS) -> JudgmentTask:
        return human_eval_task_create(
            project=self.project, user=self.reviewer, scale=scale, models=models, overlap=1
        )


def _hidden_ids(user: Any) -> set[int]:
    return set(identity_hidden(user=user).values_list("pk", flat=True))


def _all_answers(w: World) -> set[int]:
    return {r.pk for rows in w.answers.values() for r in rows}


def test_the_rule_hides_the_units_of_an_active_task_from_its_raters_only() -> None:
    w = World()
    assert _hidden_ids(w.rater) == set()  # no evaluation yet
    task = w.task()
    assert _hidden_ids(w.rater) == _all_answers(w)
    assert _hidden_ids(w.reviewer) == set()
    assert identity_hidden in visibility.identity_hiding_rules()
    task.active = False
    task.save(update_fields=["active"])
    assert _hidden_ids(w.rater) == set()


def test_pairs_hide_both_answers_and_ids_do_not_match_by_prefix() -> None:
    w = World(n_items=12)
    w.task(scale="pair")
    assert _hidden_ids(w.rater) == _all_answers(w)
    # One model only: the units name answers of that model; an answer whose id is a prefix
    # of a unit's id (1 of 12) or shares its digits stays shown.
    other = World(name="Another evaluation")
    MembershipFactory(project=other.project, user=w.rater, role="annotator")
    human_eval_task_create(
        project=other.project,
        user=other.reviewer,
        scale="likert",
        models=[MODELS[0]],
        overlap=1,
    )
    hidden = _hidden_ids(w.rater)
    assert {r.pk for r in other.answers[MODELS[0]]} <= hidden
    assert not {r.pk for r in other.answers[MODELS[1]]} & hidden
    assert other.gold.pk not in hidden and w.gold.pk not in hidden


def test_response_list_masks_the_model_in_the_database_in_one_query() -> None:
    w = World()
    w.task(models=(MODELS[0],))
    with CaptureQueriesContext(connection) as queries:
        rows = list(project_selectors.response_list(user=w.rater, project=w.project))
    # each rule's check for tasks that could hide anything from the rater (one small query
    # each), then the rows with the masking in them
    assert len(queries) == 3
    assert "CASE WHEN" in queries.captured_queries[-1]["sql"]
    by_pk = {r.pk: r for r in rows}
    for answer in w.answers[MODELS[0]]:
        shown = by_pk[answer.pk]
        assert shown.identity_hidden  # type: ignore[attr-defined]
        assert shown.model_name == visibility.HIDDEN_MODEL
        assert shown.key == f"answer-{answer.pk}"
        assert shown.source_file == "" and shown.raw == "" and shown.extra == {}
        assert shown.text == answer.text
    for answer in w.answers[MODELS[1]]:
        shown = by_pk[answer.pk]
        assert not shown.identity_hidden  # type: ignore[attr-defined]
        assert (shown.model_name, shown.key) == (MODELS[1], f"model:{MODELS[1]}")
        assert shown.extra == {"scores": {"r1": 2}, "from": MODELS[1]}
    reviewer_rows = project_selectors.response_list(user=w.reviewer, project=w.project)
    assert {r.model_name for r in reviewer_rows} == {*MODELS, ""}


def test_item_detail_and_tag_review_show_no_model_to_a_rater() -> None:
    w = World()
    w.task()
    item = w.items[0]
    detailed = project_selectors.item_get_detailed(user=w.rater, project=w.project, pk=item.pk)
    names = {r.model_name for r in detailed.responses.all()}  # type: ignore[attr-defined]
    assert names == {visibility.HIDDEN_MODEL, ""}
    answer = w.answers[MODELS[1]][0]
    got = response_get(user=w.rater, project=w.project, item_pk=item.pk, pk=answer.pk)
    assert (got.model_name, got.source_file) == (visibility.HIDDEN_MODEL, "")

    rater, reviewer = Client(), Client()
    rater.force_login(w.rater)
    reviewer.force_login(w.reviewer)
    for url in (
        reverse("benchmark:item_detail", args=[w.project.pk, item.pk]),
        reverse("annotation:tag_review", args=[w.project.pk, item.pk, answer.pk]),
        reverse("response-list") + f"?item={item.pk}",
        reverse("response-detail", args=[answer.pk]),
    ):
        body = rater.get(url).content.decode()
        assert "Orchid" not in body and "Basalt" not in body, url
        assert MODELS[1] in reviewer.get(url).content.decode(), url
    api = rater.get(reverse("response-detail", args=[answer.pk])).json()
    assert api["identity_hidden"] is True
    assert (api["model_name"], api["key"], api["source_file"], api["raw"], api["extra"]) == (
        "hidden",
        f"answer-{answer.pk}",
        "",
        None,
        {},
    )


def test_the_rendered_answer_page_stays_with_reviewers() -> None:
    w = World()
    w.task()
    answer = w.answers[MODELS[0]][0]
    client = Client()
    client.force_login(w.rater)
    assert client.get(reverse("review:rendered_answer", args=[answer.pk])).status_code == 403
    # Reviewers see the model (the rule never applies to them).
    shown = response_for_rendering(user=w.reviewer, pk=answer.pk)
    assert shown.model_name == MODELS[0]
