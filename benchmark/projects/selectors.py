"""What the project page offers the user: its actions grouped by what people do there
(annotate, review, models, data, settings), each shown only when the user's role allows it
(:func:`benchmark.permissions.allowed_actions`) and the project's benchmark kind offers it
(``kind.offers``). Data only: the page's template draws the groups."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.urls import reverse

from benchmark.models import Membership, Project
from benchmark.typing import AnyUser


@dataclass(frozen=True)
class ProjectAction:
    label: str
    url: str
    #: a short help line, shown on hover (the link's title)
    help: str = ""
    #: the link loads into the page with htmx (pages without their own scripts)
    htmx: bool = True
    #: a data attribute marking the link (for tests and keyboard shortcuts), e.g. data-team-link
    marker: str = ""
    primary: bool = False


@dataclass
class ActionGroup:
    name: str
    slug: str
    actions: list[ProjectAction] = field(default_factory=list)


def project_action_groups(
    *, user: AnyUser, project: Project, actions: set[str]
) -> list[ActionGroup]:
    """The groups with at least one action for ``user`` (``actions``: what their role allows
    in ``project``, as the page already read it)."""

    def url(name: str) -> str:
        return reverse(name, args=[project.pk])

    staff = bool(getattr(user, "is_staff", False))
    groups = [
        ActionGroup("Annotate", "annotate", _annotate(project, actions, url)),
        ActionGroup("Review", "review", _review(project, actions, url)),
        ActionGroup("Models", "models", _models(project, actions, url)),
        ActionGroup("Data", "data", _data(actions, url)),
        ActionGroup("Settings", "settings", _settings(actions, url, staff=staff)),
    ]
    return [g for g in groups if g.actions]


Url = Callable[[str], str]


def _annotate(project: Project, actions: set[str], url: Url) -> list[ProjectAction]:
    found = [
        ProjectAction(
            "Judging",
            url("annotation:task_list"),
            "Your judgment tasks: take the next item, see your pace",
            htmx=False,
            marker="data-judging-link",
        )
    ]
    if "edit" in actions:
        found.append(
            ProjectAction(
                "New item",
                url("benchmark:item_new"),
                "Write an item by hand",
                htmx=False,
                marker="data-new-item",
            )
        )
        if project.benchmark.offers.draft_queries:
            found.append(
                ProjectAction(
                    "Draft queries",
                    url("annotation:model_draft_queries"),
                    "Have the project's model draft candidate queries",
                    marker="data-draft-queries-link",
                )
            )
    found.append(
        ProjectAction(
            "Model drafts",
            url("annotation:model_drafts"),
            "What the model drafted, to keep or edit",
        )
    )
    return found


def _review(project: Project, actions: set[str], url: Url) -> list[ProjectAction]:
    found = []
    if "adjudicate" in actions:
        found.append(
            ProjectAction(
                "Discard proposals",
                url("review:discard_proposals"),
                "Items someone proposed to discard",
                htmx=False,
            )
        )
    if "manage_studies" in actions:
        found.append(
            ProjectAction(
                "Team",
                url("review:team"),
                "Who did how much, agreement and pace",
                marker="data-team-link",
            )
        )
    if "release" in actions:
        found.append(
            ProjectAction(
                "Releases",
                url("review:release_list"),
                "Versioned datasets of the verified items",
                marker="data-releases-link",
            )
        )
    if project.benchmark.offers.oracle_testing and "run_judges" in actions:
        found.append(
            ProjectAction(
                "Oracle testing",
                url("review:oracle"),
                "Walk a model through each reference trajectory",
            )
        )
    return found


def _models(project: Project, actions: set[str], url: Url) -> list[ProjectAction]:
    offers = project.benchmark.offers
    score = "score" in actions
    judges = "run_judges" in actions
    # (offered and allowed, the action): in the page's order
    candidates = [
        (
            offers.score_answers and score,
            ProjectAction(
                "Score model answers",
                url("review:score_answers"),
                "Tag metrics of model answers against the ground truth",
                htmx=False,
            ),
        ),
        (
            (offers.judge_answers or offers.judge_plans) and judges,
            ProjectAction(
                "Judge answers" if offers.judge_answers else "Judge plans",
                url("review:judge_runs"),
                "Run a model judge as a background job",
            ),
        ),
        (
            offers.judge_settings and judges,
            ProjectAction(
                "Judge settings", url("review:judge_settings"), "The judges' weights and templates"
            ),
        ),
        (
            bool(project.benchmark.evaluation) and "evaluate" in actions,
            ProjectAction(
                "Evaluate a model", url("review:evaluation"), "Run a model under test on the items"
            ),
        ),
        (
            bool(project.benchmark.evaluation) and "evaluate" in actions,
            ProjectAction(
                "Leaderboard", url("review:leaderboard"), "Evaluated models side by side"
            ),
        ),
        (
            offers.render_answers and score,
            ProjectAction(
                "Render answers", url("review:render_answers"), "Turn tool calls into images"
            ),
        ),
        (
            offers.score_plans and score,
            ProjectAction(
                "Score plan predictions",
                url("review:score_plans"),
                "Tool-F1, argname-F1 and pass rate of predicted plans",
                htmx=False,
            ),
        ),
        (
            offers.score_runs and score,
            ProjectAction("Score agent runs", url("review:runs"), "Acc, S, V and Overthink"),
        ),
    ]
    return [action for shown, action in candidates if shown]


def _data(actions: set[str], url: Url) -> list[ProjectAction]:
    found = []
    if "import" in actions:
        found.append(
            ProjectAction(
                "Import data",
                url("benchmark:project_import"),
                "Items in the benchmark's own format, Label Studio, JSON Lines or CSV",
                marker="data-import-link",
                primary=True,
            )
        )
    found.append(
        ProjectAction("Images", url("benchmark:images"), "The project's images", htmx=False)
    )
    found.append(
        ProjectAction("Toolset", url("benchmark:toolset"), "The tools items may call", htmx=False)
    )
    return found


def _settings(actions: set[str], url: Url, *, staff: bool) -> list[ProjectAction]:
    if "manage" not in actions and not staff:
        return []
    return [
        ProjectAction(
            "Members",
            url("benchmark:members"),
            "Who works in the project, in which role",
            marker="data-members-link",
        ),
        ProjectAction(
            "Guidelines",
            url("benchmark:project_edit"),
            "Description, guidelines and the project's model",
            htmx=False,
            marker="data-guidelines-link",
        ),
    ]


@dataclass(frozen=True)
class FirstRunStep:
    label: str
    done: bool
    #: where to do it, and what that link says
    url: str
    link: str
    marker: str


def project_first_run(
    *, user: AnyUser, project: Project, actions: set[str], n_items: int, has_tasks: bool
) -> list[FirstRunStep] | None:
    """The first-run checklist an admin sees on a new project's page: add people, import or
    create items, start a judgment task, each ticked when done; None when the user does not
    manage the project, when it was dismissed, or when every step is done (one query, for
    the members, only then)."""
    if "manage" not in actions or (project.settings or {}).get("first_run_dismissed"):
        return None
    people = Membership.objects.filter(project=project).count() > 1
    if people and n_items and has_tasks:
        return None
    pk = project.pk
    return [
        FirstRunStep(
            "Add the people who annotate and review",
            people,
            reverse("benchmark:members", args=[pk]),
            "Invite the team",
            "people",
        ),
        FirstRunStep(
            "Import items, or create the first one by hand",
            bool(n_items),
            reverse("benchmark:project_import", args=[pk]),
            "Import items",
            "items",
        ),
        FirstRunStep(
            "Start a judgment task for the team",
            has_tasks,
            reverse("annotation:task_list", args=[pk]),
            "Start a task",
            "task",
        ),
    ]
