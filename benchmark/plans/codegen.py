"""The code form of a plan written from its JSON form, losslessly. No Django here.

m&m's stores every plan twice: ``plan_str`` (the JSON form, a list of
``{"id", "name", "args"}`` steps) and ``code_str``, the same plan as a Python program (paper
§3.1 step ④, "we map the JSON-format plans to Python code")::

    def solve():
        output0 = image_editing(image="17320.jpg", prompt="change the green ball to blue")
        output1 = image_captioning(image=output0['image'])
        result = {0: output0, 1: output1}
        return result

:func:`plan_to_code` writes that program for a plan made in the editor. For the plans m&m's
ships (text arguments, whole and embedded ``<node-K>.key`` references) its text is the
dataset's own, the one :func:`benchmark.plans.parse.plan_to_solve_code` reproduces. Unlike
that conversion (which keeps upstream's quirks: numbers become strings, quotes inside an
f-string or a backslash or a newline in text give code that no longer reads back), every value
is written so that :func:`benchmark.plans.parse.parse_code_plan` reads the same steps back:
text as an escaped string literal, literal ``{``/``}`` doubled inside f-strings, numbers,
booleans, lists and objects as Python literals. ``benchmark.plans.parse.plan_to_code`` is a
different function: the evaluator's bare ``outputK = ...`` lines, quirks included.

What a Python program cannot say raises :class:`~benchmark.plans.parse.PlanFormatError` naming
the step: a step id that is not a whole number ≥ 0, a tool name or argument name that is not
a Python name (after spaces become ``_``).
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchmark.plans.parse import PlanFormatError

#: ``<node-K>.key`` with K written the one way ``int`` gives back (no sign, no leading zero).
REFERENCE = re.compile(r"<node-(0|[1-9][0-9]*)>\.(\w+)")


def _string(text: str) -> str:
    """The body of a double-quoted Python string literal holding ``text``; JSON's escapes are
    Python's, and ordinary text comes out as m&m's writes it (only ``"`` escaped)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _reference(node_id: str, key: str) -> str:
    return f"output{int(node_id)}[{key!r}]"


def _text_value(text: str) -> str:
    whole = REFERENCE.fullmatch(text)
    if whole:
        return _reference(whole.group(1), whole.group(2))
    parts: list[str] = []
    end = 0
    for match in REFERENCE.finditer(text):
        literal = _string(text[end : match.start()]).replace("{", "{{").replace("}", "}}")
        parts.append(literal + "{" + _reference(match.group(1), match.group(2)) + "}")
        end = match.end()
    if not parts:
        return f'"{_string(text)}"'
    tail = _string(text[end:]).replace("{", "{{").replace("}", "}}")
    return 'f"' + "".join(parts) + tail + '"'


def _value(value: Any) -> str:
    if isinstance(value, str):
        return _text_value(value)
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise ValueError(f"{value!r} is not a number JSON can hold")
    # None, booleans, numbers, lists and objects: the Python literal reads back as the value.
    return repr(value)


def _name(text: Any, what: str) -> str:
    if not isinstance(text, str) or not text.isidentifier() or keyword.iskeyword(text):
        raise ValueError(f"{what} {text!r} cannot be written as a Python name")
    return text


def plan_to_code(steps: Sequence[Mapping[str, Any]]) -> str:
    """The ``def solve():`` program of a plan in JSON form (see the module docstring).
    Raises :class:`PlanFormatError` for a plan no program can express."""
    if isinstance(steps, str | bytes) or not isinstance(steps, Sequence):
        raise PlanFormatError(f"a plan is a list of steps, not {type(steps).__name__}")
    lines: list[str] = []
    ids: list[int] = []
    for position, step in enumerate(steps, start=1):
        try:
            if not isinstance(step, Mapping):
                raise ValueError(f"a step is an object, not {type(step).__name__}")
            step_id = step.get("id")
            if isinstance(step_id, bool) or not isinstance(step_id, int) or step_id < 0:
                raise ValueError(f"the id {step_id!r} is not a whole number ≥ 0")
            func = _name(str(step.get("name", "")).replace(" ", "_"), "the tool name")
            args = step.get("args")
            if not isinstance(args, Mapping):
                raise ValueError("'args' is not an object of argument names and values")
            parts = [f"{_name(k, 'the argument name')}={_value(v)}" for k, v in args.items()]
        except ValueError as exc:
            raise PlanFormatError(f"step {position}: {exc}") from None
        if step_id in ids:
            raise PlanFormatError(f"step {position}: the id {step_id} is used twice")
        ids.append(step_id)
        lines.append(f"    output{step_id} = {func}({', '.join(parts)})\n")
    result = ", ".join(f"{i}: output{i}" for i in ids)
    return "def solve():\n" + "".join(lines) + f"    result = {{{result}}}\n    return result\n"
