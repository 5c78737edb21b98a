"""Built-in toolsets and taxonomies: the right tools, edges and terms, and re-runs that neither
duplicate rows nor undo an admin's edits."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from benchmark.builtin import atp_intent_term_name, taxonomies_ensure, toolsets_ensure
from benchmark.builtin.taxonomies import ATP_INTENTS
from benchmark.models import Taxonomy, TaxonomyTerm, Tool, ToolEdge, Toolset

pytestmark = pytest.mark.django_db


def _params(tool: Tool) -> list[tuple[str, str, bool]]:
    return [(p["name"], p["type"], p["required"]) for p in tool.parameters]


def test_atp_toolset_has_the_five_tools_with_their_parameters() -> None:
    atp = toolsets_ensure()["atp"]
    tools = {t.name: t for t in atp.tools.all()}
    assert atp.builtin
    assert list(tools) == ["Reference", "Diffusion", "Search", "Code", "Edit"]
    assert _params(tools["Reference"]) == [("img_index", "int", True)]
    assert _params(tools["Diffusion"]) == [("prompt", "str", True)]
    assert _params(tools["Search"]) == [("query", "str", True)]
    assert _params(tools["Code"]) == [("code", "str", True)]
    assert _params(tools["Edit"]) == [("img_index", "int", True), ("prompt", "str", True)]
    assert "never published" in tools["Code"].description
    assert all(t.description for t in tools.values())


def test_llmi_toolset_has_the_four_lowercase_tools() -> None:
    llmi = toolsets_ensure()["llmi"]
    tools = {t.name: _params(t) for t in llmi.tools.all()}
    assert tools == {
        "search": [("query", "str", True)],
        "diffusion": [("prompt", "str", True)],
        "code": [("code", "str", True)],
        "edit": [("img_index", "int", True), ("prompt", "str", True)],
    }


def test_agentic_mme_toolset_matches_the_operations_used_in_trajectories() -> None:
    mme = toolsets_ensure()["agentic-mme"]
    tools = {t.name: t for t in mme.tools.all()}
    visual = [n for n, t in tools.items() if t.extra.get("axis") == "V"]
    retrieval = [n for n, t in tools.items() if t.extra.get("axis") == "S"]
    # The paper's 13 operations plus the released toolbox's `enhance`.
    assert len(visual) == 14
    assert [n for n in visual if tools[n].extra.get("in_paper") is False] == ["enhance"]
    assert sorted(retrieval) == [
        "download_image",
        "fetch_webpage",
        "google_lens_search",
        "google_search",
    ]
    crop = {p["name"]: p for p in tools["crop"].parameters}
    assert crop["image_index"]["required"] and crop["bbox_2d"]["required"]
    assert crop["bbox_2d"]["type"] == "list[float]"
    assert "0-1000" in crop["bbox_2d"]["description"]
    assert {p["name"] for p in tools["rotate"].parameters} >= {"image_index", "angle"}
    assert tools["flip"].extra["choices"]["direction"] == ["horizontal", "vertical", "both"]
    assert {p["name"] for p in tools["enhance"].parameters} >= {"brightness", "contrast"}


def test_mms_toolset_has_33_tools_and_the_149_graph_edges() -> None:
    mms = toolsets_ensure()["mms"]
    assert mms.tools.count() == 33
    assert ToolEdge.objects.filter(toolset=mms).count() == 149
    edges = set(mms.edges.values_list("source__name", "target__name"))
    assert ("object detection", "count") in edges
    assert ("image editing", "image captioning") in edges
    # Both take an image, but classification outputs text: no edge.
    assert ("image classification", "image captioning") not in edges
    # next_tools names tools that do not exist; the edges come from the graph only.
    assert not Tool.objects.filter(toolset=mms, name="text translation").exists()

    vqa = mms.tools.get(name="visual question answering")
    assert _params(vqa) == [("image", "image", True), ("question", "text", True)]
    assert vqa.input_types == ["image", "text"]
    assert (vqa.output_names, vqa.output_types) == (["text"], ["text"])
    get_location = mms.tools.get(name="get location")
    assert get_location.output_names == ["lon", "lat"]
    assert get_location.category == "public api"
    text_gen = mms.tools.get(name="text generation")
    assert "text translation" in text_gen.extra["next_tools"]


def test_toolsets_ensure_twice_changes_nothing_and_keeps_an_admins_edit() -> None:
    toolsets_ensure()
    counts = (Toolset.objects.count(), Tool.objects.count(), ToolEdge.objects.count())
    edge_counts = {t.name: t.edges.count() for t in Toolset.objects.all()}
    code = Tool.objects.get(toolset__name="atp", name="Code")
    code.parameters = [
        {"name": "diagram_type", "type": "str", "required": True, "description": "bar, line"},
        {"name": "data", "type": "str", "required": True, "description": "the values"},
    ]
    code.description = "Edited by an admin."
    code.save()

    toolsets_ensure()

    assert (Toolset.objects.count(), Tool.objects.count(), ToolEdge.objects.count()) == counts
    assert {t.name: t.edges.count() for t in Toolset.objects.all()} == edge_counts
    code.refresh_from_db()
    assert code.description == "Edited by an admin."
    assert [p["name"] for p in code.parameters] == ["diagram_type", "data"]


def test_toolsets_ensure_recreates_only_what_is_missing() -> None:
    toolsets_ensure()
    Tool.objects.get(toolset__name="atp", name="Search").delete()
    ToolEdge.objects.filter(source__name="object detection", target__name="count").delete()

    toolsets_ensure()

    assert Tool.objects.filter(toolset__name="atp").count() == 5
    assert ToolEdge.objects.filter(toolset__name="mms").count() == 149


def test_atp_taxonomy_has_8_categories_and_25_intents_each_under_a_category() -> None:
    atp = taxonomies_ensure()["atp"]
    categories = atp.terms.filter(kind="category")
    intents = atp.terms.filter(kind="intent").select_related("parent")
    assert atp.builtin
    assert list(categories.values_list("name", flat=True)) == [
        "Academic",
        "Manual",
        "Recipe",
        "Fashion",
        "Renovation",
        "Product",
        "Travel",
        "Encyclopedia",
    ]
    assert intents.count() == 25
    assert all(i.parent is not None and i.parent.kind == "category" for i in intents)
    by_category = {
        c.name: sorted(i.name for i in intents if i.parent_id == c.id) for c in categories
    }
    assert by_category["Travel"] == ["Navigation", "Planning"]
    assert by_category["Encyclopedia"] == ["Animal", "Architecture", "Biography", "Geography"]
    assert "Component" in by_category["Academic"]
    # Table 9 repeats "Component" under Manual. While terms are unique by (taxonomy, kind,
    # name) the repeat gets a qualified name that records the published one.
    manual_name = atp_intent_term_name("Manual", "Component")
    assert manual_name in by_category["Manual"]
    assert by_category["Manual"] == sorted(["OperationGuide", "Function", manual_name])
    manual = intents.get(parent__name="Manual", name=manual_name)
    assert (
        manual_name == "Component" or manual.description == 'Published in Table 9 as "Component".'
    )
    assert sum(len(v) for v in ATP_INTENTS.values()) == 25


def test_agentic_mme_taxonomy_has_six_domains_and_three_levels() -> None:
    mme = taxonomies_ensure()["agentic-mme"]
    domains = set(mme.terms.filter(kind="domain").values_list("name", flat=True))
    assert domains == {"Life", "Finance", "Society", "Diagram", "Culture", "Science"}
    levels = list(mme.terms.filter(kind="level").order_by("position"))
    assert [t.name for t in levels] == ["1", "2", "3"]
    assert all(t.description for t in levels)


def test_free_taxonomies_exist_and_are_empty() -> None:
    taxonomies = taxonomies_ensure()
    for name in ("llmi", "mms"):
        assert taxonomies[name].builtin
        assert not taxonomies[name].terms.exists()


def test_taxonomies_ensure_twice_changes_nothing_and_keeps_an_admins_edit() -> None:
    taxonomies_ensure()
    count = TaxonomyTerm.objects.count()
    term = TaxonomyTerm.objects.get(taxonomy__name="atp", kind="intent", name="Framework")
    term.description = "Architecture figures of a method."
    term.save()

    taxonomies_ensure()

    assert Taxonomy.objects.count() == 4
    assert TaxonomyTerm.objects.count() == count
    term.refresh_from_db()
    assert term.description == "Architecture figures of a method."


def test_seed_builtin_command_reports_what_exists() -> None:
    out = StringIO()
    call_command("seed_builtin", stdout=out)
    call_command("seed_builtin", stdout=out)
    assert Toolset.objects.count() == 4
    assert Tool.objects.filter(toolset__name="mms").count() == 33
    assert "toolset mms: 33 tools, 149 edges" in out.getvalue()


def test_builtin_mms_data_files_are_the_source_facts() -> None:
    from benchmark.builtin import mms_tool_graph, mms_tool_metadata

    graph = mms_tool_graph()
    assert (graph["num_nodes"], graph["num_edges"], len(graph["edges"])) == (33, 149, 149)
    assert {t["name"] for t in mms_tool_metadata()} == set(graph["nodes"])
    assert json.dumps(graph["edges"][0]) == '["text generation", "text summarization"]'


@pytest.mark.django_db
def test_atp_intent_named_twice_sits_under_both_categories() -> None:
    taxonomy = taxonomies_ensure()["atp"]
    pairs = set(
        TaxonomyTerm.objects.filter(taxonomy=taxonomy, kind="intent", name="Component").values_list(
            "parent__name", flat=True
        )
    )
    assert pairs == {"Academic", "Manual"}
