from annotation.judgment_tasks.plan_graph import layout


def test_references_become_edges_in_plan_order() -> None:
    steps = [
        {"id": 0, "name": "image editing", "args": {"image": "a.jpg", "prompt": "x"}},
        {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.image"}},
        {"id": 2, "name": "text summarization", "args": {"text": "about <node-1>.text"}},
    ]
    graph = layout(steps)
    assert [n.name for n in graph["nodes"]] == [
        "image editing",
        "image captioning",
        "text summarization",
    ]
    assert [(e.source, e.target, e.key) for e in graph["edges"]] == [
        (0, 1, "image"),
        (1, 2, "text"),
    ]
    assert all(e.path.startswith("M") and not e.dangling for e in graph["edges"])
    assert graph["nodes"][0].x < graph["nodes"][1].x < graph["nodes"][2].x


def test_reference_to_a_later_or_missing_node_is_dangling() -> None:
    steps = [
        {"id": 0, "name": "a", "args": {"x": "<node-1>.text"}},
        {"id": 1, "name": "b", "args": {"x": "<node-7>.text"}},
    ]
    graph = layout(steps)
    assert [e.dangling for e in graph["edges"]] == [True, True]


def test_garbage_steps_do_not_crash() -> None:
    graph = layout(["not a step", {"args": None}])
    assert len(graph["nodes"]) == 2
    assert graph["edges"] == []
