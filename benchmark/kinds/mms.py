"""m&m's: requests with gold tool plans (and alternatives), verified by plan validity and
scored against model predictions."""

from __future__ import annotations

from benchmark.kinds.base import BenchmarkKind, DefaultTask, Demo, Offers

KIND = BenchmarkKind(
    name="mms",
    label="m&m's",
    choice_label="m&m's (tool plans)",
    project_kind="plan",
    tag_syntax="",
    toolset="mms",
    taxonomy="mms",
    format="benchmark.formats.mms",
    item_form_fields="benchmark.items.forms.mms_fields",
    item_checks="benchmark.items.services.clean_mms",
    stats_tables="benchmark.datastats.mms.mms_tables",
    query_label="User request",
    item_form_template="benchmark/items/form/mms.html",
    after_create="annotation:plan_edit",
    item_columns=("modality",),
    offers=Offers(
        draft_plan=True,
        edit_plan=True,
        audio_inputs=True,
        judge_plans=True,
        score_plans=True,
        balanced_subset=True,
    ),
    default_task=DefaultTask(
        name="Plan validity",
        button="m&m's plan-validity task (binary, 3 annotators, all rate 1)",
        settings={
            "question": "Does this plan solve the query?",
            "scheme": "binary",
            "overlap": 3,
            "consensus": "all_required",
            "required_value": 1,
        },
    ),
    demo=Demo(
        name="m&m's demo",
        folder="mms",
        description=(
            "Eight authored requests with gold tool plans (one with an alternative plan; "
            "7007 and 7008 are invalid on purpose) and one prediction per request."
        ),
    ),
    plans=True,
    evaluation="benchmark.evaluation.mms.PROTOCOL",
)
