"""m&m's planner for a model under test (paper §4, §5): pure code, no Django.

The model under test plans tool calls for a user request; Benchwright parses, verifies and
runs what it writes and sends feedback, up to ``settings.max_rounds`` model turns.

Settings (``EvalSettings``):

``strategy``
    ``multi-step``: the whole plan in one answer; ``step-by-step``: one step (THOUGHT and
    ACTION) per turn, each answered with an observation, until the model answers
    ``TERMINATE``.
``plan_format``
    ``json``: ``{"nodes": [{"id", "name", "args"}]}`` (one node per turn step by step);
    ``code``: a ``def solve():`` program in a fenced Python block (one
    ``outputK = tool(...)`` line per turn step by step), read with :mod:`ast`
    (``benchmark.plans.parse``), never executed as Python.
``feedback``
    any of ``parse`` (the parse error goes back to the model), ``verify`` (the plan
    verifier's findings: unknown tools, argument names, references, tool-graph edges) and
    ``execute`` (the step that failed and its error). Without a kind of feedback, a failure of
    that kind ends planning with what the model wrote.
``extra``
    ``tools``: the toolset as ``{"tools": {name: {"inputs", "outputs", "input_types",
    "output_types", "description"?}}, "edges": [[source, target], ...]}`` (what
    ``benchmark.toolsets.specs.plan_toolset`` gives, descriptions optional); without it the
    built-in m&m's toolset (``benchmark/builtin/data``). ``tool_chat``: a ``Chat`` for the
    model tools and ``rendering``: a ``benchmark.rendering.providers.Providers`` for image
    generation and editing (both optional; the run's ``ToolLayer`` may offer these tools
    itself, e.g. with :class:`~benchmark.evaluation.mms_tools.ChatTools`). ``best_match``:
    score each item against its best-matching gold or alternative plan (m&m's
    ``use_best_match``).

The item's record is the m&m's task row (``user_request``; the model never sees
``plan_str``); its images are its input files by the names the request uses. ``truth`` is the
verified task row (``plan_str``, ``alt_plans_str``). After planning, the final plan is run once
(:mod:`benchmark.evaluation.mms_tools`): ``passed`` or ``failed``, or, when a tool cannot run
here, ``Status.NOT_EXECUTABLE`` — scored on its plan but left out of the pass rate and counted.
The run's steps (outputs, errors) are in ``output["execution"]``, the files they produced in
``Outcome.files`` as ``artifacts/<sha256>.<ext>``, and the conversation in ``Outcome.trace``.

Scores are ``benchmark.metrics.mms.score_plans`` (m&m's own evaluator's figures) on the item
alone, and over all items pooled in :meth:`MmsProtocol.summarize` (the figures of the paper's
tables). An item's own ``tool_f1`` is the set F1 of its tool names (m&m's tool-F1 is a macro
average over the whole toolset, which only means something pooled). ``pass`` per item and
``pass_rate`` overall: the share of executed plans (not-executable ones aside) that ran
without error; an unparseable or empty plan counts as failed. ``write_outputs``
writes m&m's prediction file (``{id, prediction}`` per line), which the plan scoring reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.evaluation.base import (
    Chat,
    Column,
    EvalItem,
    EvalSettings,
    EvaluationError,
    Outcome,
    Provider,
    Status,
    ToolLayer,
    ToolResult,
)
from benchmark.evaluation.mms_tools import (
    DESCRIPTIONS,
    ChatTools,
    Execution,
    Executor,
    RenderingTools,
    StepRun,
)
from benchmark.metrics.mms import (
    code_labels,
    gold_to_code,
    prediction_to_code,
    prf_scores,
    score_plans,
)
from benchmark.plans.codegen import plan_to_code
from benchmark.plans.parse import (
    Finding,
    ParsedPlan,
    PlanFormatError,
    Step,
    decode_plan_text,
    normalize_tool_name,
    parse_code_plan,
    parse_json_plan,
)
from benchmark.plans.verify import Toolset, load_toolset, toolset_from_mapping, verify_parsed

STRATEGIES = ("multi-step", "step-by-step")
PLAN_FORMATS = ("json", "code")
FEEDBACK = ("parse", "verify", "execute")
DONE = "TERMINATE"

_BUILTIN = Path(__file__).resolve().parent.parent / "builtin" / "data"
_ACTION = re.compile(r"ACTION\s*\d*\s*:", re.IGNORECASE)

#: Per-item score keys, from ``score_plans``' names.
SCORE_KEYS = {
    "tool_f1": "tool_macro_f1",
    "argname_f1": "argname_f1",
    "argvalue_f1": "argvalue_f1",
    "edge_f1": "edge_f1",
    "normalized_edit_distance": "tool_normalized_edit_distance",
    "plan_accuracy": "plan_tool_accuracy",
    "plan_argname_accuracy": "plan_argname_accuracy",
    "plan_argvalue_accuracy": "plan_argvalue_accuracy",
}


class SettingsError(EvaluationError, ValueError):
    """Settings the protocol cannot run with (the message names the setting)."""


# --------------------------------------------------------------------------- toolset


def builtin_toolset() -> Toolset:
    """m&m's 33 tools and its tool graph, as shipped in ``benchmark/builtin/data``."""
    return load_toolset(_BUILTIN / "tool_metadata.json", _BUILTIN / "tool_graph.json")


def _toolset(settings: EvalSettings) -> tuple[Toolset, dict[str, str]]:
    spec = settings.extra.get("tools")
    if spec is None:
        return builtin_toolset(), {}
    if isinstance(spec, Toolset):
        return spec, {}
    if not isinstance(spec, Mapping) or not isinstance(spec.get("tools"), Mapping):
        raise SettingsError('extra["tools"] must be {"tools": {name: {...}}, "edges": [...]}')
    described = {str(n): str(t.get("description", "")) for n, t in spec["tools"].items()}
    return toolset_from_mapping(spec), described


def _check(settings: EvalSettings) -> None:
    if settings.strategy not in STRATEGIES:
        raise SettingsError(
            f"strategy must be one of {', '.join(STRATEGIES)}, not {settings.strategy!r}"
        )
    if settings.plan_format not in PLAN_FORMATS:
        raise SettingsError(
            f"plan_format must be one of {', '.join(PLAN_FORMATS)}, not {settings.plan_format!r}"
        )
    unknown = [f for f in settings.feedback if f not in FEEDBACK]
    if unknown:
        raise SettingsError(f"feedback must be among {', '.join(FEEDBACK)}, not {unknown[0]!r}")
    if settings.max_rounds < 1:
        raise SettingsError("max_rounds must be at least 1")


# --------------------------------------------------------------------------- prompts


def _function(name: str) -> str:
    return name.replace(" ", "_")


def tool_list(toolset: Toolset, descriptions: Mapping[str, str], plan_format: str) -> str:
    """The tools as the prompt lists them: name, arguments with their types, outputs."""
    lines = []
    for name in toolset.names:
        spec = toolset.tools[name]
        types = spec.get("input_types", [])
        args = ", ".join(
            f"{a}: {types[i]}" if i < len(types) else a
            for i, a in enumerate(spec.get("inputs", []))
        )
        outs = ", ".join(spec.get("outputs", []))
        shown = _function(name) if plan_format == "code" else name
        line = f"- {shown}({args}) -> {outs}"
        described = descriptions.get(name) or DESCRIPTIONS.get(normalize_tool_name(name))
        if described:
            line += f": {described}"
        lines.append(line)
    return "\n".join(lines)


def _format_rules(strategy: str, plan_format: str) -> str:
    refs = (
        "An argument's value is text taken from the request, the name of an input file the "
        "request mentions, or the output of an earlier step"
    )
    if plan_format == "json" and strategy == "multi-step":
        return (
            "Write the whole plan as one JSON object after '# RESULT #:', in this shape:\n"
            '{"nodes": [{"id": 0, "name": "<a tool name from the list>", '
            '"args": {"<argument name>": <value>}}, ...]}\n'
            f"Ids count from 0 in order. {refs}, written <node-K>.key (the output 'key' of "
            "step K), alone or inside text."
        )
    if plan_format == "code" and strategy == "multi-step":
        return (
            "Write the whole plan as a Python function inside ```python ... ```:\n"
            "def solve():\n"
            "    output0 = tool_name(argument=value, ...)\n"
            "    output1 = ...\n"
            "    result = {0: output0, 1: output1}\n"
            "    return result\n"
            "Call each tool by its name above, with keyword arguments only, and keep step K's "
            f"result in outputK. {refs}, written outputK['key'] (or inside an f-string)."
        )
    if plan_format == "json":
        return (
            "Plan one step per turn. Each turn write 'THOUGHT K:' with your reasoning, then "
            "'ACTION K:' followed by one JSON object "
            '{"id": K, "name": "<a tool name from the list>", "args": {...}}. '
            f"Ids count from 0. {refs}, written <node-K>.key. After each action you get an "
            f"OBSERVATION. When the request is fulfilled, answer {DONE} only."
        )
    return (
        "Plan one step per turn. Each turn write 'THOUGHT K:' with your reasoning, then "
        "'ACTION K:' followed by one line of Python inside ```python ... ```: "
        "outputK = tool_name(argument=value, ...), with keyword arguments only. "
        f"{refs}, written outputK['key']. After each action you get an OBSERVATION. When the "
        f"request is fulfilled, answer {DONE} only."
    )


def _example(example: EvalItem, strategy: str, plan_format: str) -> str | None:
    steps = example.record.get("plan_str")
    if isinstance(steps, str):
        decoded, problem = decode_plan_text(steps)
        steps = None if problem else decoded
    if not isinstance(steps, list):
        return None
    request = example.record.get("user_request", "")
    if strategy == "multi-step":
        if plan_format == "json":
            answer = json.dumps({"nodes": steps}, ensure_ascii=False)
        else:
            try:
                answer = "```python\n" + plan_to_code(steps) + "```"
            except PlanFormatError:
                return None
        return f"# EXAMPLE #\n# USER REQUEST #: {request}\n# RESULT #: {answer}"
    turns = []
    for k, step in enumerate(steps):
        if plan_format == "json":
            action = json.dumps(step, ensure_ascii=False)
        else:
            try:
                code = plan_to_code([step]).splitlines()[1].strip()
            except (PlanFormatError, IndexError):
                return None
            action = f"```python\n{code}\n```"
        turns.append(f"THOUGHT {k}: I need {step.get('name')}.\nACTION {k}: {action}")
    return f"# EXAMPLE #\n# USER REQUEST #: {request}\n" + "\n".join(turns) + f"\n{DONE}"


def build_prompt(
    request: str,
    *,
    toolset: Toolset,
    descriptions: Mapping[str, str],
    settings: EvalSettings,
    files: list[str],
) -> str:
    """The first message of the conversation (our words, after m&m's appendix prompts)."""
    parts = [
        "You are a planner. Choose tools from the list below and write a plan that fulfils "
        "the user's request. Use only these tools, with exactly their argument names, and as "
        "few tools as the request needs.",
        "# TOOL LIST #\n" + tool_list(toolset, descriptions, settings.plan_format),
        "# FORMAT #\n" + _format_rules(settings.strategy, settings.plan_format),
    ]
    for example in settings.examples:
        shown = _example(example, settings.strategy, settings.plan_format)
        if shown:
            parts.append(shown)
    if files:
        parts.append("# INPUT FILES #: " + ", ".join(files))
    tail = (
        "# RESULT #:"
        if settings.strategy == "multi-step"
        else "Now write THOUGHT 0 and ACTION 0 only."
    )
    parts.append(f"# USER REQUEST #: {request}\n{tail}")
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- reading replies


def _findings_text(findings: list[Finding]) -> str:
    return "\n".join(
        f"- {f.message}" + (f" (line {f.line}, column {f.column})" if f.line else "")
        for f in findings
    )


def read_plan(text: str, plan_format: str, tool_names: list[str]) -> ParsedPlan:
    """A multi-step answer's plan."""
    if plan_format == "code":
        return parse_code_plan(text, tool_names)
    decoded, problem = decode_plan_text(text)
    if problem is not None:
        return ParsedPlan([], "json", [problem])
    return parse_json_plan(decoded)


def read_step(text: str, plan_format: str, tool_names: list[str]) -> ParsedPlan:
    """A step-by-step answer's one step (what follows ``ACTION K:``)."""
    matches = list(_ACTION.finditer(text))
    body = text[matches[-1].end() :] if matches else text
    if plan_format == "code":
        parsed = parse_code_plan(body.strip(), tool_names)
    else:
        decoded, problem = decode_plan_text(body)
        if problem is not None:
            return ParsedPlan([], "json", [problem])
        parsed = parse_json_plan(
            [decoded] if isinstance(decoded, dict) and "nodes" not in decoded else decoded
        )
    if parsed.ok and len(parsed.steps) != 1:
        return ParsedPlan(
            [], parsed.format, [Finding("parse_error", None, "write exactly one ACTION per turn")]
        )
    return parsed


def _said_done(text: str) -> bool:
    return DONE in text.upper()


# --------------------------------------------------------------------------- the conversation


@dataclass
class _Run:
    item: EvalItem
    settings: EvalSettings
    chat: Chat
    toolset: Toolset
    executor: Executor
    outcome: Outcome
    messages: list[dict[str, Any]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    code: str = ""
    feedback_given: list[str] = field(default_factory=list)
    last_execution: Execution | None = None
    #: Step by step with execution feedback: each accepted step as it ran.
    step_runs: list[StepRun] = field(default_factory=list)
    ended: str = ""

    def ask(self) -> str:
        """The model's next answer; markdown-escaped underscores (``image\\_crop``) are read
        as plain ones, as m&m's parser reads them."""
        reply = self.chat(list(self.messages))
        self.outcome.count(reply)
        self.messages.append(reply.assistant_message())
        self.outcome.trace.append({"role": "assistant", "content": reply.text})
        return (reply.text or "").replace("\\_", "_")

    def tell(self, text: str, kind: str) -> None:
        self.messages.append({"role": "user", "content": text})
        self.outcome.trace.append({"role": "user", "content": text, "feedback": kind})
        if kind in FEEDBACK:
            self.feedback_given.append(kind)

    def wants(self, kind: str) -> bool:
        return kind in self.settings.feedback

    def fresh_executor(self) -> Executor:
        """A new executor (a whole plan runs from scratch); the old one's calls are counted."""
        self.outcome.tool_calls += self.executor.tool_calls
        self.executor = Executor(self.item, self.executor.tools, self.toolset)
        return self.executor


def _again(strategy: str, plan_format: str) -> str:
    if strategy == "step-by-step":
        what = "ACTION"
    elif plan_format == "code":
        what = "program in ```python ... ```"
    else:
        what = "# RESULT #"
    return f"Please write the {what} again to fix this, or answer {DONE} if it cannot be fixed."


def _multi_step(run: _Run) -> None:
    settings, names = run.settings, run.toolset.names
    again = _again(settings.strategy, settings.plan_format)
    for _ in range(settings.max_rounds):
        text = run.ask()
        parsed = read_plan(text, settings.plan_format, names)
        if not parsed.ok or not parsed.steps:
            if _said_done(text) or not run.wants("parse"):
                run.ended = "done" if _said_done(text) else "parse"
                return
            run.tell("Parsing failed:\n" + _findings_text(parsed.findings) + "\n" + again, "parse")
            continue
        run.steps = parsed.steps
        run.code = text if settings.plan_format == "code" else ""
        run.last_execution = None
        if run.wants("verify"):
            findings = verify_parsed(parsed, run.toolset)
            if findings:
                run.tell(
                    "Verification failed:\n" + _findings_text(findings) + "\n"
                    "Fix these problems and keep the rest of the plan as it is. " + again,
                    "verify",
                )
                continue
        if run.wants("execute"):
            run.fresh_executor()
            execution = run.executor.run(run.steps)
            run.last_execution = execution
            if execution.status == "failed":
                run.tell(execution.observation() + "\n" + again, "execute")
                continue
        run.ended = "plan"
        return
    run.ended = "max_rounds"


def _step_by_step(run: _Run) -> None:
    settings, names = run.settings, run.toolset.names
    again = _again(settings.strategy, settings.plan_format)
    follow = (
        f"If the request is fulfilled, answer {DONE}; otherwise write the next THOUGHT and ACTION."
    )
    for _ in range(settings.max_rounds):
        text = run.ask()
        parsed = read_step(text, settings.plan_format, names)
        if not parsed.ok:
            if _said_done(text):
                run.ended = "done"
                return
            if not run.wants("parse"):
                run.ended = "parse"
                return
            run.tell(
                "OBSERVATION: Parsing failed:\n" + _findings_text(parsed.findings) + "\n" + again,
                "parse",
            )
            continue
        step = parsed.steps[0]
        if step.id in {s.id for s in run.steps}:
            if not run.wants("parse"):
                run.ended = "parse"
                return
            run.tell(
                f"OBSERVATION: step id {step.id} is already used; number the next step "
                f"{max(s.id for s in run.steps) + 1}. " + again,
                "parse",
            )
            continue
        step.index = len(run.steps)
        if run.wants("verify"):
            findings = [
                f
                for f in verify_parsed(ParsedPlan([*run.steps, step], parsed.format), run.toolset)
                if f.step == step.index
            ]
            if findings:
                run.tell(
                    "OBSERVATION: Verification failed:\n" + _findings_text(findings) + "\n" + again,
                    "verify",
                )
                continue
        observation = "Parsing succeeded." if not run.wants("verify") else "Verification succeeded."
        if run.wants("execute") and not run.executor.unavailable([*run.steps, step]):
            execution = run.executor.run([step])
            if execution.status == "failed":
                run.tell("OBSERVATION: " + execution.observation() + "\n" + again, "execute")
                continue
            if execution.status == "passed":
                observation = execution.observation()
                run.step_runs.extend(execution.steps)
        run.steps.append(step)
        if _said_done(text):
            run.ended = "done"
            return
        run.tell(f"OBSERVATION: {observation}\n{follow}", "observation")
    run.ended = "max_rounds"


def _prediction(run: _Run) -> Any:
    """The plan in m&m's prediction form: a step list (JSON) or the program (code)."""
    steps = [s.to_dict() for s in run.steps]
    if run.settings.plan_format == "json":
        return steps
    if run.settings.strategy == "multi-step" and run.code:
        return run.code
    if not steps:
        return ""
    try:
        return plan_to_code(steps)
    except PlanFormatError:
        body = "".join(f"    output{s['id']} = {s['name'].replace(' ', '_')}(...)\n" for s in steps)
        return "def solve():\n" + body


def _extract_code(text: str) -> str:
    """The program inside the answer's ```python fence (the whole text without one)."""
    match = re.search(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)(?:```|$)", text, re.DOTALL)
    return match.group(1) if match else text


# --------------------------------------------------------------------------- scoring


def _gold(truth: Mapping[str, Any] | None) -> tuple[Any, list[Any] | None]:
    if not truth:
        return None, None
    gold = truth.get("plan_str", truth.get("plan", truth.get("code_str")))
    if isinstance(gold, str):
        decoded, problem = decode_plan_text(gold)
        if problem is None and isinstance(decoded, list):
            gold = decoded
    alternatives = truth.get("alt_plans_str")
    if isinstance(alternatives, str):
        decoded, problem = decode_plan_text(alternatives)
        alternatives = decoded if problem is None and isinstance(decoded, list) else []
    return gold, list(alternatives) if isinstance(alternatives, list) else None


def _scores(result: Mapping[str, Any]) -> dict[str, Any]:
    return {ours: result.get(theirs) for ours, theirs in SCORE_KEYS.items()}


def _artifacts(execution: Execution, executor: Executor) -> dict[str, bytes]:
    """The files the plan's steps produced, as ``artifacts/<sha256>.<ext>`` (a step's output
    names its file ``sha256:<hex>``)."""
    from benchmark.rendering.providers import image_mime

    found: dict[str, bytes] = {}

    def walk(value: Any) -> None:
        if isinstance(value, str) and value.startswith("sha256:"):
            digest = value[len("sha256:") :]
            data = executor.files.get(digest)
            if data is not None:
                ext = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif"}.get(
                    image_mime(data) or "", "bin"
                )
                found[f"artifacts/{digest}.{ext}"] = data
        elif isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for step in execution.steps:
        walk(step.outputs)
    return found


def _item_tool_f1(gold: Any, prediction: Any, plan_format: str) -> float:
    """One item's tool-F1: the set F1 of its tool labels (m&m's macro tool-F1 over the whole
    toolset only means something pooled over items, as :meth:`MmsProtocol.summarize` gives it)."""
    gold_code = gold_to_code(gold) or ""
    pred_code = prediction_to_code(prediction, plan_format) or ""
    pairs = [(code_labels(gold_code, "tool"), code_labels(pred_code, "tool"))]
    return float(prf_scores(pairs)["f1"])


def _safe_name(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("._") or "model"


class MmsProtocol:
    """The m&m's planner (see the module docstring)."""

    settings: tuple[str, ...] = ("strategy", "plan_format", "feedback", "max_rounds")
    #: Solved: plan accuracy 100 % (the predicted tool sequence equals the gold plan's).
    solved: str = "plan_accuracy"
    columns: tuple[Column, ...] = (
        Column("tool_f1", "Tool-F1"),
        Column("argname_f1", "Argname-F1"),
        Column("pass_rate", "Pass rate"),
        Column("argvalue_f1", "Argvalue-F1"),
        Column("edge_f1", "Edge-F1"),
        Column("normalized_edit_distance", "Norm. edit distance ↓"),
        Column("plan_accuracy", "Plan accuracy"),
        Column("n_not_executable", "Not executable here", percent=False),
    )

    def run_item(
        self,
        item: EvalItem,
        *,
        settings: EvalSettings,
        chat: Chat,
        tools: ToolLayer,
        truth: Mapping[str, Any] | None = None,
    ) -> Outcome:
        _check(settings)
        toolset, descriptions = _toolset(settings)
        tools = _with_own_providers(tools, settings)
        request = str(item.record.get("user_request") or item.record.get("query") or "")
        outcome = Outcome(item=item.id, status=Status.OK)
        run = _Run(item, settings, chat, toolset, Executor(item, tools, toolset), outcome)
        prompt = build_prompt(
            request,
            toolset=toolset,
            descriptions=descriptions,
            settings=settings,
            files=sorted(item.images),
        )
        run.messages.append({"role": "user", "content": prompt})
        outcome.trace.append({"role": "user", "content": prompt})
        if settings.strategy == "multi-step":
            _multi_step(run)
            if run.code:
                run.code = _extract_code(run.code)
        else:
            _step_by_step(run)

        # The final plan, run once (reusing the last run when execution feedback made it).
        if run.settings.strategy == "multi-step" and run.last_execution is not None:
            execution = run.last_execution
        elif run.settings.strategy == "step-by-step" and run.wants("execute"):
            if not run.steps:
                execution = Execution("failed", error="the plan has no steps")
            elif run.executor.unavailable(run.steps) or len(run.step_runs) != len(run.steps):
                # Its steps ran turn by turn only where a provider offers them (and a step
                # that could not run here was kept unrun): the whole plan once more,
                # answered from the record where no provider is.
                execution = run.fresh_executor().run(run.steps)
            else:
                execution = Execution("passed", steps=list(run.step_runs))
        elif not run.steps:
            execution = Execution("failed", error="the plan has no steps")
        else:
            execution = run.fresh_executor().run(run.steps)
        outcome.tool_calls += run.executor.tool_calls
        outcome.files = _artifacts(execution, run.executor)
        outcome.status = (
            Status.NOT_EXECUTABLE if execution.status == "not_executable" else Status.OK
        )

        prediction = _prediction(run)
        gold, alternatives = _gold(truth)
        outcome.output = {
            "id": item.id,
            "prediction": prediction,
            "plan_format": settings.plan_format,
            "strategy": settings.strategy,
            "steps": [s.to_dict() for s in run.steps],
            "ended": run.ended,
            "feedback": list(run.feedback_given),
            "execution": execution.to_dict(),
            "gold": gold,
            "alternatives": alternatives if settings.extra.get("best_match") else None,
            "tool_names": toolset.names,
        }
        passed = None if execution.status == "not_executable" else execution.passed
        outcome.scores = {
            "pass": passed,
            # The item's share for a mean over items (None: left out, not executable here).
            "pass_rate": None if passed is None else 100.0 * passed,
            "rounds": outcome.model_calls,
        }
        if gold is not None:
            result = score_plans(
                {item.id: gold},
                {item.id: prediction},
                toolset.names,
                plan_format=settings.plan_format,
                alternatives=(
                    {item.id: alternatives or []} if settings.extra.get("best_match") else None
                ),
            )
            outcome.scores.update(_scores(result))
            outcome.scores["tool_f1"] = _item_tool_f1(gold, prediction, settings.plan_format)
        if execution.status == "not_executable":
            outcome.error = "not executable here: " + ", ".join(execution.unavailable)
        return outcome

    def summarize(self, outcomes: list[Outcome]) -> dict[str, Any]:
        planned = [
            o
            for o in outcomes
            if o.status in (Status.OK, Status.NOT_EXECUTABLE) and isinstance(o.output, Mapping)
        ]
        executed = [o for o in planned if o.status == Status.OK]
        passed = sum(1 for o in executed if o.scores.get("pass"))
        summary: dict[str, Any] = {
            "n_items": len(outcomes),
            "n_planned": len(planned),
            "n_error": sum(1 for o in outcomes if o.status == Status.ERROR),
            "n_not_executable": len(planned) - len(executed),
            "n_executed": len(executed),
            "n_passed": passed,
            "pass_rate": round(100 * passed / len(executed), 2) if executed else None,
            "model_calls": sum(o.model_calls for o in outcomes),
            "tool_calls": sum(o.tool_calls for o in outcomes),
            "feedback": {
                kind: sum(o.output["feedback"].count(kind) for o in planned) for kind in FEEDBACK
            },
        }
        scored = [o for o in planned if o.output.get("gold") is not None]
        for key in SCORE_KEYS:
            summary[key] = None
        summary["n_scored"] = len(scored)
        if scored:
            names = scored[0].output["tool_names"]
            fmt = scored[0].output["plan_format"]
            best = any(o.output.get("alternatives") is not None for o in scored)
            result = score_plans(
                {o.item: o.output["gold"] for o in scored},
                {o.item: o.output["prediction"] for o in scored},
                names,
                plan_format=fmt,
                alternatives=(
                    {o.item: o.output.get("alternatives") or [] for o in scored} if best else None
                ),
            )
            summary.update(_scores(result))
            summary["n_invalid"] = result["n_invalid"]
            summary["parse_rate"] = result["parse_rate"]
        return summary

    def write_outputs(self, outcomes: list[Outcome], out_dir: str, *, model: str) -> list[str]:
        """m&m's prediction file ``<model>.jsonl`` (``{"id", "prediction"}`` per line), for the
        plan scoring and m&m's own evaluator (``--preds-file``)."""
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{_safe_name(model)}.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for outcome in outcomes:
                if not isinstance(outcome.output, Mapping):
                    continue
                row = {"id": _id(outcome.item), "prediction": outcome.output["prediction"]}
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        return [str(path)]


def _id(item: str) -> Any:
    """m&m's ids are numbers; an id written as digits is written as one."""
    return int(item) if item.isascii() and item.isdigit() and str(int(item)) == item else item


def _with_own_providers(tools: ToolLayer, settings: EvalSettings) -> ToolLayer:
    """The run's tool layer, with the model tools and image generation of ``extra`` added
    (recorded in the same store, replayed the same way)."""
    own: list[Provider] = []
    if settings.extra.get("tool_chat") is not None:
        own.append(ChatTools(settings.extra["tool_chat"]))
    if settings.extra.get("rendering") is not None:
        own.append(RenderingTools(settings.extra["rendering"]))
    if not own:
        return tools
    return _Layered(own, tools)


class _Layered(ToolLayer):
    """Own providers first, then the given layer's (sharing its records and replay)."""

    def __init__(self, providers: list[Provider], base: ToolLayer) -> None:
        super().__init__(providers, records=base.records, replay=base.replay)
        self._base = base

    def offers(self, name: str) -> bool:
        return name in self._by_tool or self._base.offers(name)

    def call(
        self,
        item: str,
        name: str,
        arguments: Mapping[str, Any],
        *,
        files: Mapping[str, bytes] | None = None,
    ) -> ToolResult:
        if name in self._by_tool or self.replay:
            return super().call(item, name, arguments, files=files)
        return self._base.call(item, name, arguments, files=files)


PROTOCOL = MmsProtocol()
