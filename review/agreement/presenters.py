"""The judge-as-rater figures as the pages draw them: confusion matrices as tables whose cells
are shaded by count (classes ``heat-0`` .. ``heat-4``, ``agree`` on the diagonal)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEAT_STEPS = 4


def confusion_table(confusion: Mapping[str, Any], names: Mapping[Any, str]) -> dict[str, Any]:
    """Rows (the judge's value) and columns (the person's or the majority's) with each cell's
    count, its shade (0 empty .. 4 the largest count) and whether it is on the diagonal."""
    labels = list(confusion.get("labels") or [])
    matrix = confusion.get("matrix") or []
    top = max((n for row in matrix for n in row), default=0)
    shown = [names.get(label, str(label)) for label in labels]
    rows = []
    for r, row in enumerate(matrix):
        cells = [
            {
                "n": n,
                "heat": 0 if not n or not top else max(1, round(HEAT_STEPS * n / top)),
                "diag": r == c,
            }
            for c, n in enumerate(row)
        ]
        rows.append({"label": shown[r], "cells": cells, "total": sum(row)})
    totals = [sum(row[c] for row in matrix) for c in range(len(labels))]
    return {"columns": shown, "rows": rows, "totals": totals}


def judge_rater_view(report: Mapping[str, Any], names: Mapping[Any, str]) -> dict[str, Any]:
    """The report with a ``table`` (see :func:`confusion_table`) beside each confusion
    matrix, and ``weighted`` when the scale is ordered (weighted kappas are shown)."""
    persons = [
        {**p, "table": confusion_table(p["confusion"], names)} for p in report.get("persons", [])
    ]
    majority = {
        **report["majority"],
        "table": confusion_table(report["majority"]["confusion"], names),
    }
    return {
        **report,
        "persons": persons,
        "majority": majority,
        "weighted": report.get("level") != "nominal",
    }


def estimated_confusion(
    confusion: Mapping[Any, Mapping[Any, float]], labels: list[Any], names: Mapping[Any, str]
) -> dict[str, Any]:
    """An annotator's estimated confusion matrix (Dawid-Skene: ``P(says column | truth row)``)
    as a table of percentages, each cell shaded by its probability."""
    rows = []
    for truth in labels:
        said = confusion.get(truth, {})
        cells = []
        for c, label in enumerate(labels):
            p = float(said.get(label, 0.0))
            cells.append({"p": p, "heat": round(HEAT_STEPS * p), "diag": labels[c] == truth})
        rows.append({"label": names.get(truth, str(truth)), "cells": cells})
    return {"columns": [names.get(label, str(label)) for label in labels], "rows": rows}


def calibration_view(report: Mapping[str, Any], names: Mapping[Any, str]) -> dict[str, Any]:
    """The judge's calibration as the page draws it: one row per group (overall first), and
    for a graded scale each row's reliability diagram as bars (people's mean value for each
    value the judge gave, on the scale's range)."""
    categories = list(report.get("categories") or [])
    numeric = [c for c in categories if isinstance(c, int | float) and not isinstance(c, bool)]
    low, high = (min(numeric), max(numeric)) if numeric else (0, 1)
    span = (high - low) or 1

    def row(name: str, figures: Mapping[str, Any]) -> dict[str, Any]:
        bars = [
            {
                "judge": names.get(b["judge"], str(b["judge"])),
                "n": b["n"],
                "people_mean": b["people_mean"],
                "height": round(100 * (b["people_mean"] - low) / span),
                "ideal": round(100 * (float(b["judge"]) - low) / span),
            }
            for b in figures.get("reliability") or []
        ]
        return {"group": name, **figures, "bars": bars}

    rows = [row("all", report["overall"])]
    rows += [row(g["group"], g) for g in report.get("groups") or []]
    return {
        "threshold": report["threshold"],
        "rows": rows,
        "n_ties": report.get("n_ties", 0),
        "n_examples_left_out": report.get("n_examples_left_out", 0),
        "yes_no": any("true_positive_rate" in r for r in rows),
        "graded": any(r["bars"] for r in rows),
    }
