"""The registry of benchmark kinds (benchmark/kinds/): one object per benchmark, each naming
code and templates that exist, and ``project.benchmark`` answering the project's kind."""

from __future__ import annotations

import pytest
from django.template.loader import get_template

from benchmark.formats import get_format
from benchmark.kinds import BUILT_IN, KINDS, kind_choices, kind_named
from benchmark.kinds.base import resolve
from benchmark.models import DataFormat, ProjectKind, TagSyntax
from tests.factories import ProjectFactory


def test_one_kind_per_benchmark_with_the_choices_it_had() -> None:
    assert [k.name for k in BUILT_IN] == ["atp", "llmi", "agentic-mme", "mms"]
    assert set(kind_choices()) == set(DataFormat.choices)
    for kind in BUILT_IN:
        assert kind.project_kind in ProjectKind.values
        assert kind.tag_syntax in TagSyntax.values
        assert bool(kind.tag_syntax) == (kind.project_kind == ProjectKind.INTERLEAVED)


@pytest.mark.parametrize("kind", BUILT_IN, ids=lambda k: k.name)
def test_what_a_kind_names_exists(kind) -> None:  # noqa: ANN001
    assert kind.format_module is get_format(kind.name)
    for path in (kind.item_form_fields, kind.item_checks, kind.stats_tables):
        assert callable(resolve(path)), path
    for name in (kind.item_form_template, *kind.item_templates):
        get_template(name)
    assert kind.stats([]) is not None


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data_format", "kind"),
    [
        ("atp", "interleaved"),
        ("llmi", "interleaved"),
        ("agentic-mme", "trajectory"),
        ("mms", "plan"),
    ],
)
def test_a_project_answers_its_kind(data_format: str, kind: str) -> None:
    project = ProjectFactory(data_format=data_format, kind=kind)
    assert project.benchmark is kind_named(data_format)
    assert project.benchmark in KINDS


def test_an_unknown_kind_is_named() -> None:
    with pytest.raises(LookupError, match="no benchmark kind 'nope'; choose one of atp, llmi"):
        kind_named("nope")
