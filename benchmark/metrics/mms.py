"""m&m's plan metrics, computed the way m&m's own evaluator computes them. No Django here.

Reimplemented from RAIVNLab/mnms, ``mnms/evaluation/evaluator.py`` (``MNMEvaluator.evaluate``,
``get_code_labels``, ``extract_func_info_from_code``, ``extract_func_info_from_single_line``,
``nodes_to_code``, ``find_best_match``) and ``mnms/evaluation/metrics.py`` (``flatten_labels``,
``PRFMetrics``, ``PlanAccMetrics``, ``EditDistMetrics``). How an item is scored:

1. **Code first.** Every JSON plan, gold or predicted, is turned into code lines with m&m's
   conversion (:func:`benchmark.plans.parse.plan_to_code_lines`, which keeps its quirks). A
   code-form prediction is used as it is.
2. **Labels per line.** The code is split on newlines; each stripped line is parsed on its own
   with :mod:`ast`, and a line counts only when its first assignment is ``name = func(...)``
   with a plain function name (so ``def solve():``, ``result = {...}`` and ``return`` lines,
   or a call spread over several lines, give nothing). Keyword values are kept as
   ``ast.unparse`` text. From these calls:

   * tool label: ``func`` (the Python name, e.g. ``image_captioning``);
   * argname label: ``func--a--b`` with the argument names sorted;
   * argvalue label: ``func--a=<value>--b=<value>``, each value's source text lower-cased;
   * edge label: ``func_i--func_i+1`` for consecutive calls in plan order (not data flow).
3. **Set F1 per item, pooled.** For each item the union of gold and predicted labels (a set,
   so repeated labels count once) becomes one sample per label, marked present or absent on
   each side. All items' samples are pooled and scored with scikit-learn's
   ``precision_recall_fscore_support``:

   * tool-F1: each present tool label is its class number (1..N over the toolset's N tools,
     in the toolset's order, spaces written as ``_``), absent or unknown ones are 0, and the
     average is ``macro`` over ``labels=1..N``: every tool of the toolset counts, including
     those that appear in no gold and no predicted plan (their F1 is 0, ``zero_division``);
   * argname-, argvalue- and edge-F1: present = 1, ``average="binary"``.
4. **Plan accuracy** (tool, argname, argvalue): the item's ordered label lists are equal.
5. **Normalized edit distance** over the tool labels as class numbers (unknown tools 0):
   ``1 - mean(ratio)``, where ``ratio`` is ``Levenshtein.ratio``'s normalized InDel
   similarity ``2·LCS / (len(a) + len(b))`` (1 for two empty lists). It is computed here
   rather than taken from the ``Levenshtein`` package, which this project does not ship.

Every figure is on the 0–100 scale, rounded to two decimals as upstream does. A prediction that
cannot be turned into code (a JSON-mode prediction that is not a list, a malformed step) is
"invalid": it contributes no labels, so its gold labels all count as misses.

Where this module differs from upstream, on purpose and only where upstream would crash:

* a gold id without prediction counts as an invalid prediction (upstream: ``KeyError``);
* a pooled set with no sample at all (e.g. no plan has two steps, so no edge labels) scores 0
  (scikit-learn raises on empty input); an empty evaluation set gives ``None`` figures;
* ``**kwargs`` in code is labelled with the name ``**`` (upstream: ``TypeError``);
* with best match, an item without alternatives is scored against its gold plan (upstream
  evaluates ``eval(None)`` and fails).

Best match (optional, upstream ``use_best_match``): for each item the candidates are the gold
plan followed by its alternative plans, in that order. Each candidate's *tool* labels are
compared with the prediction's by the binary set F1 above, for that item alone, rounded to
two decimals; the first candidate with the highest score wins (ties go to the gold plan), and
that candidate alone is used as the gold for every metric of the item.

Beyond upstream, :func:`score_plans` reports ``parse_rate`` (share of predictions that
:func:`benchmark.plans.parse.parse_plan` reads without a ``parse_error``) and
``verify_pass_rate`` (share that :func:`benchmark.plans.verify.verify_plan` passes; needs a
toolset). These are not m&m's execution pass rate.
"""

from __future__ import annotations

import ast
import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from benchmark.plans.parse import (
    PlanFormatError,
    decode_plan_text,
    looks_like_code,
    parse_plan,
    plan_to_code,
)
from benchmark.plans.verify import Toolset, toolset_from_mapping, verify_plan

LABEL_SEP = "--"

PRF_METRICS = ("tool_macro", "argname", "argvalue", "edge")
ACCURACY_METRICS = ("plan_tool", "plan_argname", "plan_argvalue")

LabelKind = Literal["tool", "argname", "argvalue", "edge"]


# --------------------------------------------------------------------------- code → labels


@dataclass(frozen=True)
class CodeCall:
    """One labelled line: ``output_var = func_name(name=value_source, ...)``."""

    output_var: str
    func_name: str
    args: dict[str, str]


def _call_of_line(line: str) -> CodeCall | None:
    """The call on one line, read like upstream ``extract_func_info_from_single_line``: the
    first ``ast.Assign`` met in ``ast.walk`` order decides; its first target must be a plain
    name and its value a call of a plain name; keyword values are kept as source text."""
    try:
        tree = ast.parse(line)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign):
                continue
            target = node.targets[0]
            if not isinstance(target, ast.Name):
                return None
            value = node.value
            if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name):
                return None
            args: dict[str, str] = {}
            for keyword in value.keywords:
                args["**" if keyword.arg is None else keyword.arg] = ast.unparse(keyword.value)
            if not target.id or not value.func.id:
                return None
            return CodeCall(target.id, value.func.id, args)
    except Exception:  # upstream swallows every error of a line
        return None
    return None


def code_calls(code: str) -> list[CodeCall]:
    """The labelled calls of a code string, one per line that reads as a call."""
    calls = []
    for line in code.split("\n"):
        call = _call_of_line(line.strip())
        if call is not None:
            calls.append(call)
    return calls


def code_labels(code: str, kind: LabelKind = "tool", *, sep: str = LABEL_SEP) -> list[str]:
    """Upstream ``get_code_labels``: ``tool`` (func), ``argname`` (func--a--b, names sorted),
    ``argvalue`` (func--a=value--b=value, values lower-cased), ``edge`` (func_i--func_i+1)."""
    calls = code_calls(code)
    labels = []
    for i, call in enumerate(calls):
        if kind == "edge":
            if i + 1 >= len(calls):
                continue
            labels.append(sep.join([call.func_name, calls[i + 1].func_name]))
            continue
        parts = [call.func_name]
        if kind in ("argname", "argvalue"):
            for name, value in sorted(call.args.items(), key=lambda item: item[0]):
                parts.append(f"{name}={value.lower()}" if kind == "argvalue" else name)
        labels.append(sep.join(parts))
    return labels


# --------------------------------------------------------------------------- metrics


def _flatten(
    gold: list[str], pred: list[str], categories: Sequence[str] | None
) -> tuple[list[int], list[int]]:
    """Upstream ``flatten_labels``: one sample per distinct label of the item."""
    union = set(gold) | set(pred)
    gold_set, pred_set = set(gold), set(pred)
    if categories:
        # Class number = position + 1; like ``list.index`` upstream, a repeated name keeps
        # its first position.
        index: dict[str, int] = {}
        for i, name in enumerate(categories):
            index.setdefault(name, i + 1)
        g = [index.get(label, 0) if label in gold_set else 0 for label in union]
        p = [index.get(label, 0) if label in pred_set else 0 for label in union]
    else:
        g = [1 if label in gold_set else 0 for label in union]
        p = [1 if label in pred_set else 0 for label in union]
    return g, p


def _pct(value: Any) -> float:
    return float(round(100 * value, 2))


def prf_scores(
    pairs: Iterable[tuple[list[str], list[str]]],
    *,
    categories: Sequence[str] | None = None,
) -> dict[str, float]:
    """Pooled precision, recall and F1 over (gold labels, predicted labels) pairs: macro over
    ``categories`` when given (upstream tool-F1), binary otherwise."""
    gold_flat: list[int] = []
    pred_flat: list[int] = []
    for gold, pred in pairs:
        g, p = _flatten(gold, pred, categories)
        gold_flat.extend(g)
        pred_flat.extend(p)
    if not gold_flat:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    if categories:
        labels: list[int] | None = list(range(1, len(categories) + 1))
        average = "macro"
    else:
        labels, average = None, "binary"
    from sklearn.metrics import precision_recall_fscore_support  # lazy: ~1.5 s to import

    precision, recall, f1, _ = precision_recall_fscore_support(
        gold_flat, pred_flat, labels=labels, average=average, zero_division=0
    )
    return {"precision": _pct(precision), "recall": _pct(recall), "f1": _pct(f1)}


def plan_accuracy(pairs: Iterable[tuple[list[str], list[str]]]) -> float:
    """Upstream ``PlanAccMetrics``: share of items whose ordered label lists are equal."""
    hits = [1.0 if pred == gold else 0.0 for gold, pred in pairs]
    if not hits:
        return 0.0
    from sklearn.metrics import accuracy_score  # lazy: ~1.5 s to import

    return _pct(accuracy_score([1.0] * len(hits), hits))


def indel_ratio(a: Sequence[Any], b: Sequence[Any]) -> float:
    """``Levenshtein.ratio`` on sequences: ``1 - indel_distance / (len(a) + len(b))``, i.e.
    ``2·LCS / (len(a) + len(b))``; 1.0 for two empty sequences."""
    total = len(a) + len(b)
    if total == 0:
        return 1.0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return 2 * previous[-1] / total


def normalized_edit_distance(
    pairs: Iterable[tuple[list[str], list[str]]], categories: Sequence[str]
) -> float:
    """Upstream ``EditDistMetrics``: tool labels as class numbers (0 when unknown), then
    ``1 - mean(ratio(pred, gold))``, on the 0–100 scale."""
    number = {name: i + 1 for i, name in enumerate(categories)}
    ratios = [
        indel_ratio([number.get(x, 0) for x in pred], [number.get(x, 0) for x in gold])
        for gold, pred in pairs
    ]
    if not ratios:
        return 0.0
    return _pct(1 - sum(ratios) / len(ratios))


# --------------------------------------------------------------------------- plans → code


def prediction_to_code(prediction: Any, plan_format: str = "auto") -> str | None:
    """The code m&m's evaluator labels for a prediction, or ``None`` when it is invalid.

    ``json``: the prediction must be a JSON plan (a list), converted by m&m's conversion.
    ``code``: the prediction is used as code as it is (``str()`` of anything else), never
    invalid, as upstream. ``auto`` (per prediction): a list, or ``{"nodes": [...]}``, is a JSON
    plan; text that looks like code is code; other text is decoded as a JSON plan (JSON, a
    Python literal, or ``RESULT #: {...}`` model output); what cannot be decoded is invalid.
    """
    if plan_format == "code":
        return prediction if isinstance(prediction, str) else str(prediction)
    if plan_format == "auto":
        if isinstance(prediction, dict) and isinstance(prediction.get("nodes"), list):
            prediction = prediction["nodes"]
        elif isinstance(prediction, str):
            if looks_like_code(prediction):
                return prediction
            decoded, problem = decode_plan_text(prediction)
            if problem is not None:
                return None
            prediction = decoded
            if isinstance(prediction, dict) and isinstance(prediction.get("nodes"), list):
                prediction = prediction["nodes"]
    elif plan_format != "json":
        raise ValueError(f"plan_format must be auto, json or code, not {plan_format!r}")
    try:
        return plan_to_code(prediction)
    except PlanFormatError:
        return None


def gold_to_code(gold: Any) -> str | None:
    """Gold as code: a JSON plan (list, or its Python-literal text as in ``plan_str``) is
    converted; other text is taken as code. ``None`` when a JSON plan cannot be converted."""
    if isinstance(gold, str):
        try:
            literal = ast.literal_eval(gold.strip())
        except Exception:
            return gold
        if not isinstance(literal, list):
            return gold
        gold = literal
    if isinstance(gold, dict) and isinstance(gold.get("nodes"), list):
        gold = gold["nodes"]
    try:
        return plan_to_code(gold)
    except PlanFormatError:
        return None


def _as_plan_list(value: Any) -> list[Any]:
    """Alternative plans: a list of plans, or its Python-literal text (``alt_plans_str``)."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except Exception:
            return []
    return list(value) if isinstance(value, list | tuple) else []


def best_match(gold_codes: Sequence[str], pred_code: str) -> int:
    """Upstream ``find_best_match``: index of the first candidate whose tool labels give the
    highest rounded binary set F1 against the prediction's."""
    pred_labels = code_labels(pred_code, "tool")
    scores = [prf_scores([(code_labels(code, "tool"), pred_labels)])["f1"] for code in gold_codes]
    return scores.index(max(scores))


# --------------------------------------------------------------------------- scoring


def _key(item_id: Any) -> str:
    return str(item_id)


def score_plans(  # noqa: PLR0915
    gold: Mapping[Any, Any],
    predictions: Mapping[Any, Any],
    tool_names: Sequence[str] | Toolset,
    plan_format: str = "auto",
    alternatives: Mapping[Any, Any] | None = None,
    *,
    toolset: Toolset | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Score predictions against gold plans with m&m's metrics (see the module docstring).

    ``gold``: id → JSON plan (list or ``plan_str`` text) or code. ``predictions``: id →
    prediction (JSON plan or code text). Items are the gold ids (upstream ``eval_set="gt"``);
    ids match as strings. ``tool_names``: the toolset's tool names in order (its classes for
    tool-F1), or a :class:`~benchmark.plans.verify.Toolset`. ``alternatives``: id → list of
    alternative plans (or ``alt_plans_str`` text); when given (even empty), best match is used.
    ``toolset`` (or a Toolset passed as ``tool_names``) also yields ``verify_pass_rate``.
    """
    if plan_format not in ("auto", "json", "code"):
        raise ValueError(f"plan_format must be auto, json or code, not {plan_format!r}")
    if isinstance(tool_names, Toolset):
        toolset = toolset if toolset is not None else tool_names
        names = tool_names.names
    else:
        names = list(tool_names)
    checker = toolset_from_mapping(toolset) if toolset is not None else None
    categories = [name.replace(" ", "_") for name in names]
    preds = {_key(k): v for k, v in predictions.items()}
    alts = {_key(k): v for k, v in alternatives.items()} if alternatives is not None else None

    kinds: dict[str, LabelKind] = {
        "tool_macro": "tool",
        "argname": "argname",
        "argvalue": "argvalue",
        "edge": "edge",
        "plan_tool": "tool",
        "plan_argname": "argname",
        "plan_argvalue": "argvalue",
        "tool": "tool",
    }
    pairs: dict[str, list[tuple[list[str], list[str]]]] = {name: [] for name in kinds}
    invalid_ids: list[Any] = []
    missing_ids: list[Any] = []
    invalid_gold_ids: list[Any] = []
    chosen: dict[str, int] = {}
    parsed_ok = 0
    verified_ok = 0

    for item_id, gold_plan in gold.items():
        key = _key(item_id)
        if key not in preds:
            missing_ids.append(item_id)
            pred_code = None
        else:
            pred_code = prediction_to_code(preds[key], plan_format)
            parsed = parse_plan(preds[key], plan_format=plan_format, tool_names=names)
            parsed_ok += parsed.ok
            if checker is not None:
                verified_ok += not verify_plan(parsed, checker)
        if pred_code is None:
            invalid_ids.append(item_id)
            pred_code = ""

        gold_code = gold_to_code(gold_plan)
        if alts is not None:
            candidates = [gold_code] + [gold_to_code(p) for p in _as_plan_list(alts.get(key))]
            usable = [code if code is not None else "" for code in candidates]
            index = best_match(usable, pred_code)
            chosen[key] = index
            gold_code = candidates[index]
        if gold_code is None:
            invalid_gold_ids.append(item_id)
            gold_code = ""

        for name, kind in kinds.items():
            pairs[name].append((code_labels(gold_code, kind), code_labels(pred_code, kind)))

    n = len(gold)
    result: dict[str, Any] = {"n_items": n}
    if n == 0:
        for name in PRF_METRICS:
            for part in ("precision", "recall", "f1"):
                result[f"{name}_{part}"] = None
        for name in ACCURACY_METRICS:
            result[f"{name}_accuracy"] = None
        result["tool_normalized_edit_distance"] = None
    else:
        for name in PRF_METRICS:
            scores = prf_scores(
                pairs[name], categories=categories if name == "tool_macro" else None
            )
            for part, value in scores.items():
                result[f"{name}_{part}"] = value
        for name in ACCURACY_METRICS:
            result[f"{name}_accuracy"] = plan_accuracy(pairs[name])
        result["tool_normalized_edit_distance"] = normalized_edit_distance(
            pairs["tool"], categories
        )
    result["n_invalid"] = len(invalid_ids)
    result["invalid_ids"] = invalid_ids
    result["missing_ids"] = missing_ids
    if invalid_gold_ids:
        result["invalid_gold_ids"] = invalid_gold_ids
    result["parse_rate"] = _pct(parsed_ok / n) if n else None
    result["verify_pass_rate"] = _pct(verified_ok / n) if n and checker is not None else None
    if alts is not None:
        result["best_match"] = chosen
    return result


# --------------------------------------------------------------------------- file readers


def _rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSON array file or a JSONL file."""
    text = Path(path).read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        data = json.loads(text)
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON array of rows")
        return [row for row in data if isinstance(row, dict)]
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}, line {number}: not JSON ({exc.msg})") from None
        if isinstance(row, dict):
            rows.append(row)
    return rows


def read_gold(path: str | Path) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """Gold plans and alternative plans from m&m's rows ``{id, plan_str, alt_plans_str, ...}``
    (``tasks.json``, a JSON array, or JSONL). Plans are read with ``ast.literal_eval``; a row
    with only ``code_str`` gives its code. Rows whose ``alt_plans_str`` is null have no
    alternatives."""
    gold: dict[Any, Any] = {}
    alternatives: dict[Any, Any] = {}
    for row in _rows(path):
        if "id" not in row:
            continue
        item_id = row["id"]
        if row.get("plan_str") is not None:
            plan = row["plan_str"]
            # Text that is no literal is kept; scoring then reads it as code (no labels).
            with contextlib.suppress(Exception):
                plan = ast.literal_eval(plan) if isinstance(plan, str) else plan
            gold[item_id] = plan
        elif row.get("plan") is not None:
            gold[item_id] = row["plan"]
        elif row.get("code_str") is not None:
            gold[item_id] = row["code_str"]
        else:
            continue
        alts = _as_plan_list(row.get("alt_plans_str"))
        if alts:
            alternatives[item_id] = alts
    return gold, alternatives


def read_predictions(path: str | Path) -> dict[Any, Any]:
    """Predictions from ``{id, prediction}`` lines (upstream's ``--preds-file`` format) or a
    JSON array of such objects."""
    return {row["id"]: row.get("prediction") for row in _rows(path) if "id" in row}
