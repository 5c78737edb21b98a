"""Selectors: every read is scoped to the user's projects."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import Http404

from benchmark import permissions, selectors
from benchmark.images import selectors as image_selectors
from benchmark.jobs import selectors as job_selectors
from benchmark.models import Project
from benchmark.selectors import ItemFilters
from tests.factories import (
    ImageFactory,
    ItemFactory,
    JobFactory,
    MembershipFactory,
    PlanFactory,
    ResponseFactory,
    TrajectoryFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def test_project_list_has_role_and_counts(
    project: Project, other_project: Project, users: dict[str, Any]
) -> None:
    ItemFactory.create_batch(2, project=project, status="in_review")
    ItemFactory(project=project, status="verified")
    MembershipFactory(project=other_project, user=users["reviewer"], role="annotator")
    rows = {p.name: p for p in selectors.project_list(user=users["reviewer"])}
    assert set(rows) == {project.name, other_project.name}
    mine = rows[project.name]
    assert mine.my_role == "reviewer"
    assert (mine.n_items, mine.n_draft, mine.n_in_review, mine.n_verified) == (3, 0, 2, 1)
    assert rows[other_project.name].my_role == "annotator"
    assert rows[other_project.name].n_items == 0


def test_project_list_counts_are_not_multiplied_by_members(
    project: Project, users: dict[str, Any]
) -> None:
    ItemFactory.create_batch(4, project=project)
    for user in (users["admin"], users["annotator"]):
        assert selectors.project_list(user=user).get().n_items == 4


def test_anonymous_sees_nothing(project: Project) -> None:
    ItemFactory(project=project)
    anon = AnonymousUser()
    assert not selectors.project_list(user=anon).exists()
    assert not selectors.item_list(user=anon).exists()
    assert not image_selectors.image_list(user=anon).exists()
    assert not job_selectors.job_list(user=anon).exists()
    with pytest.raises(Http404):
        selectors.project_get(user=anon, pk=project.pk)


def test_project_get_is_404_for_non_members_and_seeds_the_role(
    project: Project, users: dict[str, Any], django_assert_num_queries: Any
) -> None:
    with pytest.raises(Http404):
        selectors.project_get(user=users["outsider"], pk=project.pk)
    got = selectors.project_get(user=users["admin"], pk=project.pk)
    with django_assert_num_queries(0):
        assert permissions.can(user=users["admin"], project=got, action="import")


def test_item_get_refuses_an_item_of_another_project(
    project: Project, other_project: Project, users: dict[str, Any]
) -> None:
    theirs = ItemFactory(project=other_project)
    with pytest.raises(Http404):
        selectors.item_get(user=users["admin"], project=project, pk=theirs.pk)
    with pytest.raises(Http404):
        selectors.item_get(user=users["admin"], project=other_project, pk=theirs.pk)
    assert selectors.item_get(user=users["outsider"], project=other_project, pk=theirs.pk)


def test_item_filters(project: Project, users: dict[str, Any]) -> None:
    a = ItemFactory(project=project, category="Art", intent="Style", level=1, query="Monet")
    b = ItemFactory(project=project, category="Art", intent="Authenticity", modality="image")
    c = ItemFactory(project=project, category="Recipe", status="verified", external_id="omelette")
    user = users["annotator"]

    def run(**kw: Any) -> list[int]:
        filters = ItemFilters(**kw)
        return list(
            selectors.item_list(user=user, project=project, filters=filters).values_list(
                "id", flat=True
            )
        )

    assert run(category="Art") == [a.pk, b.pk]
    assert run(category="Art", intent="Style") == [a.pk]
    assert run(level=1) == [a.pk]
    assert run(modality="image") == [b.pk]
    assert run(status="verified") == [c.pk]
    assert run(q="monet") == [a.pk]
    assert run(q="OMELET") == [c.pk]
    assert run() == [a.pk, b.pk, c.pk]
    assert not ItemFilters().active and ItemFilters(q="x").active


def test_item_facets_and_status_counts(project: Project, users: dict[str, Any]) -> None:
    ItemFactory(project=project, category="Art", intent="Style")
    ItemFactory(project=project, category="Art", intent="Authenticity", status="in_review")
    ItemFactory(project=project, category="", intent="")
    facets = selectors.item_facets(user=users["annotator"], project=project)
    assert facets.categories == ["Art"]
    assert facets.intents == ["Authenticity", "Style"]
    counts = selectors.item_status_counts(user=users["annotator"], project=project)
    assert counts == {"draft": 2, "in_review": 1, "verified": 0, "discarded": 0, "total": 3}
    assert selectors.item_status_counts(user=users["outsider"], project=project)["total"] == 0


def test_attachments_are_scoped(
    project: Project, other_project: Project, users: dict[str, Any]
) -> None:
    mine = ItemFactory(project=project)
    theirs = ItemFactory(project=other_project)
    for factory in (ResponseFactory, PlanFactory, TrajectoryFactory):
        factory(item=mine)
        factory(item=theirs)
    user = users["annotator"]
    for selector in (selectors.response_list, selectors.plan_list, selectors.trajectory_list):
        rows = list(selector(user=user))
        assert [r.item_id for r in rows] == [mine.pk]
        assert list(selector(user=user, item=theirs)) == []


def test_images_are_visible_through_any_of_their_projects(
    project: Project, other_project: Project, users: dict[str, Any]
) -> None:
    mine = ImageFactory(projects=[project])
    shared = ImageFactory(projects=[project, other_project])
    theirs = ImageFactory(projects=[other_project])
    orphan = ImageFactory()
    user = users["reviewer"]
    assert {i.sha256 for i in image_selectors.image_list(user=user)} == {mine.sha256, shared.sha256}
    assert image_selectors.image_get(user=user, sha256=shared.sha256) == shared
    for hidden in (theirs, orphan):
        with pytest.raises(Http404):
            image_selectors.image_get(user=user, sha256=hidden.sha256)
    found = image_selectors.images_by_sha(user=user, shas=[mine.sha256, theirs.sha256, None, ""])
    assert set(found) == {mine.sha256}


def test_jobs_visible_to_project_members_and_to_their_creator(
    project: Project, other_project: Project, users: dict[str, Any]
) -> None:
    # A model call about no item: every member sees it (other kinds: test_job_visibility.py).
    in_project = JobFactory(
        kind="model_call", project=project, created_by=users["admin"], params={"item_id": None}
    )
    theirs = JobFactory(project=other_project, created_by=users["outsider"])
    own_projectless = JobFactory(project=None, created_by=users["annotator"])
    assert set(job_selectors.job_list(user=users["annotator"])) == {in_project, own_projectless}
    assert set(job_selectors.job_list(user=users["reviewer"])) == {in_project}
    with pytest.raises(Http404):
        job_selectors.job_get(user=users["admin"], pk=theirs.pk)
    with pytest.raises(Http404):
        job_selectors.job_get(user=users["admin"], pk=own_projectless.pk)


def test_a_user_without_projects_sees_nothing(project: Project) -> None:
    ItemFactory(project=project)
    loner = UserFactory()
    assert not selectors.project_list(user=loner).exists()
    assert not selectors.item_list(user=loner).exists()
