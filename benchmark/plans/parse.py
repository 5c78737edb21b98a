"""Reading m&m's plans, in JSON form and in Python-code form. No Django here.

A plan in JSON form is a list of steps ``{"id": K, "name": tool, "args": {...}}``. An argument
value may name an earlier step's output as ``<node-K>.key``, either as the whole value or
inside text ("a vivid illustration based on <node-1>.text"). The m&m's dataset stores plans
as Python literals (``plan_str``), so single-quoted text is read with ``ast.literal_eval``.

A plan in code form is what m&m's asks code-generating planners for::

    def solve():
        output0 = image_captioning(image="2339720.jpg")
        output1 = image_generation(text=f"a watercolor painting of {output0['text']}")
        result = {0: output0, 1: output1}
        return result

:func:`parse_plan` reads either form (or a Python object) into :class:`Step` records whose
argument values use the JSON notation, so one verifier serves both forms: ``image_generation``
becomes the tool ``image generation`` (underscores and spaces are the same, and with a list of
tool names the toolset's own spelling is used), ``output0['text']`` and ``output0.text`` become
``<node-0>.text``, and an f-string becomes text with the references embedded.

:func:`plan_to_code_lines` is the reverse: m&m's own JSON-to-code conversion (``nodes_to_code``
in ``mnms/evaluation/evaluator.py``), which its evaluator runs on every plan before labelling
it. It is reproduced exactly, quirks included (see its docstring), because the metrics depend
on the very text it produces; notably, upstream drops the ``{}`` around references embedded
in text. :func:`plan_to_solve_code` wraps those lines into the
``def solve()`` program of the dataset's ``code_str`` column.

Nothing here raises on bad input except :func:`plan_to_code_lines` (documented): problems come
back as ``parse_error`` :class:`Finding` records with a 1-based line and column when known.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

PlanFormat = Literal["auto", "json", "code"]
PLAN_FORMATS: tuple[str, ...] = ("auto", "json", "code")

#: A ``<node-K>.key`` reference as m&m's JSON→code conversion recognises it inside text.
MMS_EMBEDDED_REFERENCE = re.compile(r"<node-\d+>\.\w+")

_OUTPUT_VAR = re.compile(r"^output(\d+)$")
_CODE_START = re.compile(
    r"^[ \t]*(?:def[ \t]+[A-Za-z_]\w*[ \t]*\(|[A-Za-z_]\w*[ \t]*=[ \t]*[A-Za-z_][\w.]*[ \t]*\()",
    re.MULTILINE,
)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?")
_FENCE_CLOSE = re.compile(r"^[ \t]*```", re.MULTILINE)


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Finding:
    """One problem with a plan.

    ``code`` is one of ``parse_error``, ``unknown_tool``, ``missing_arg``, ``unknown_arg``,
    ``dangling_reference`` and ``invalid_edge``. ``step`` is the 0-based position of the step in
    the plan (``None`` when the problem concerns the whole text). ``line`` and ``column`` are
    1-based and point into the plan's text when it was given as text; they are ``None`` for
    plans given as Python objects.
    """

    code: str
    step: int | None
    message: str
    line: int | None = None
    column: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Step:
    """One tool call. ``args`` keeps the values as written, with code-form references turned
    into the JSON notation (``<node-K>.key``). ``arg_positions`` gives each argument's 1-based
    (line, column) in code form."""

    index: int
    id: int
    name: str
    args: dict[str, Any]
    line: int | None = None
    column: int | None = None
    arg_positions: dict[str, tuple[int, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "args": dict(self.args)}


@dataclass
class ParsedPlan:
    """The steps that could be read, the form they came in, and ``parse_error`` findings.

    JSON plans keep every well-formed step even when another step is malformed; a code plan
    with a syntax error has no steps."""

    steps: list[Step]
    format: str  # "json" | "code" | "unknown"
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> list[dict[str, Any]]:
        """The plan in JSON form (the steps that could be read)."""
        return [step.to_dict() for step in self.steps]


class PlanFormatError(ValueError):
    """A JSON plan that m&m's JSON→code conversion cannot turn into code."""


# --------------------------------------------------------------------------- names


def normalize_tool_name(name: str) -> str:
    """The key tool names are compared by: case-insensitive, underscores equal to spaces,
    runs of either collapsed (``Image_Captioning`` ~ ``image captioning``)."""
    return re.sub(r"[\s_]+", " ", name.strip().lower())


def resolve_tool_name(name: str, tool_names: Iterable[str]) -> str | None:
    """The toolset's spelling of ``name``, or ``None`` when no tool matches."""
    key = normalize_tool_name(name)
    for candidate in tool_names:
        if normalize_tool_name(candidate) == key:
            return candidate
    return None


# --------------------------------------------------------------------------- text helpers


def _line_col(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of a 0-based character index."""
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    start = text.rfind("\n", 0, index) + 1
    return line, index - start + 1


def _index_of(text: str, line: int, column: int) -> int:
    """0-based character index of a 1-based line and column (clamped to the text)."""
    pos = 0
    for _ in range(max(line, 1) - 1):
        nxt = text.find("\n", pos)
        if nxt == -1:
            return len(text)
        pos = nxt + 1
    return min(pos + max(column, 1) - 1, len(text))


def looks_like_code(text: str) -> bool:
    """Whether text reads as a code-form plan rather than JSON: a ``def``, an
    ``x = f(...)`` line, or a fenced Python block."""
    if "```python" in text or "```py\n" in text:
        return True
    return bool(_CODE_START.search(text))


# --------------------------------------------------------------------------- JSON form


def _as_step_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdecimal():
        return int(value.strip())
    return None


def parse_json_plan(obj: Any) -> ParsedPlan:
    """Read a plan given as Python objects: a list of steps, or ``{"nodes": [...]}`` as m&m's
    multi-step agent answers. Malformed steps yield ``parse_error`` findings."""
    if isinstance(obj, dict) and "nodes" in obj:
        obj = obj["nodes"]
    if not isinstance(obj, list):
        return ParsedPlan(
            [],
            "json",
            [Finding("parse_error", None, f"a plan is a list of steps, not {type(obj).__name__}")],
        )
    if not obj:
        return ParsedPlan([], "json", [Finding("parse_error", None, "the plan has no steps")])
    steps: list[Step] = []
    findings: list[Finding] = []
    seen: dict[int, int] = {}
    for index, raw in enumerate(obj):
        problem = None
        if not isinstance(raw, dict):
            problem = f"a step is an object with id, name and args, not {type(raw).__name__}"
        elif "name" not in raw or not isinstance(raw["name"], str):
            problem = "the step has no tool name (a string under 'name')"
        elif not isinstance(raw.get("args", {}), dict):
            problem = "the step's 'args' is not an object of argument names and values"
        elif "args" not in raw:
            problem = "the step has no 'args'"
        elif _as_step_id(raw.get("id")) is None:
            problem = "the step has no integer 'id'"
        if problem is not None:
            findings.append(Finding("parse_error", index, problem))
            continue
        step_id = _as_step_id(raw["id"])
        assert step_id is not None
        if step_id in seen:
            findings.append(
                Finding(
                    "parse_error",
                    index,
                    f"step id {step_id} is used twice (steps {seen[step_id]} and {index})",
                )
            )
            continue
        seen[step_id] = index
        args = {str(k): v for k, v in raw["args"].items()}
        steps.append(Step(index=index, id=step_id, name=raw["name"], args=args))
    return ParsedPlan(steps, "json", findings)


def decode_plan_text(text: str) -> tuple[Any, Finding | None]:
    """Decode JSON or a Python literal (m&m's ``plan_str``). A model answer such as
    ``# RESULT #: {"nodes": [...]}`` is also accepted, the way m&m's agent parser reads it:
    what follows ``RESULT #:``, from the first bracket to the last closing one."""
    errors: list[tuple[int, str]] = []  # (absolute index, message)

    def attempt(start: int, end: int) -> tuple[bool, Any]:
        chunk = text[start:end]
        try:
            return True, json.loads(chunk)
        except json.JSONDecodeError as exc:
            errors.append((start + exc.pos, f"invalid JSON: {exc.msg}"))
        except (ValueError, RecursionError) as exc:
            errors.append((start, f"invalid JSON: {exc}"))
        try:
            return True, ast.literal_eval(chunk)
        except SyntaxError as exc:
            at = _index_of(chunk, exc.lineno or 1, exc.offset or 1)
            errors.append((start + at, f"invalid Python literal: {exc.msg}"))
        except (ValueError, TypeError, MemoryError, RecursionError) as exc:
            errors.append((start, f"not a plain literal: {exc}"))
        return False, None

    stripped_start = len(text) - len(text.lstrip())
    ok, value = attempt(stripped_start, len(text.rstrip()) or len(text))
    if ok:
        return value, None
    start = 0
    marker = text.find("RESULT #:")
    if marker != -1:
        start = marker + len("RESULT #:")
    opens = [i for i in (text.find("[", start), text.find("{", start)) if i != -1]
    if opens:
        first = min(opens)
        last = max(text.rfind("]"), text.rfind("}"))
        if last > first and (first, last + 1) != (stripped_start, len(text.rstrip())):
            ok, value = attempt(first, last + 1)
            if ok:
                return value, None
        elif last <= first:
            errors.append((len(text), "the plan text ends before its brackets are closed"))
    at, message = max(errors, key=lambda e: e[0]) if errors else (0, "no plan found")
    line, column = _line_col(text, at)
    return None, Finding("parse_error", None, message, line, column)


# --------------------------------------------------------------------------- code form


class _CodeReader:
    """Turns the statements of a code-form plan into steps."""

    def __init__(self, tool_names: Sequence[str] | None, line_offset: int) -> None:
        self.tool_names = list(tool_names) if tool_names else None
        self.line_offset = line_offset
        self.steps: list[Step] = []
        self.findings: list[Finding] = []
        # variable -> ("step", step id) or ("value", literal)
        self.vars: dict[str, tuple[str, Any]] = {}
        self.ids: set[int] = set()

    def pos(self, node: ast.AST) -> tuple[int, int]:
        line = getattr(node, "lineno", 1) + self.line_offset
        return line, getattr(node, "col_offset", 0) + 1

    # ---- statements

    def statements(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                self.statements(stmt.body)
            elif isinstance(stmt, ast.Assign):
                self.assign(stmt)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                self.assign(ast.Assign(targets=[stmt.target], value=stmt.value, lineno=0))
            elif isinstance(stmt, ast.Expr | ast.Return) and isinstance(stmt.value, ast.Call):
                self.call(stmt.value, None)
            elif isinstance(stmt, ast.If | ast.For | ast.While | ast.With | ast.Try):
                for part in ("body", "orelse", "finalbody"):
                    self.statements(getattr(stmt, part, []) or [])
                for handler in getattr(stmt, "handlers", []) or []:
                    self.statements(handler.body)

    def assign(self, stmt: ast.Assign) -> None:
        names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        if isinstance(stmt.value, ast.Call):
            step_id = self.call(stmt.value, names[0] if names else None)
            for name in names:
                if step_id is not None:
                    self.vars[name] = ("step", step_id)
            return
        try:
            value = ast.literal_eval(stmt.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            value = None
        for name in names:
            if value is not None:
                self.vars[name] = ("value", value)
            else:
                self.vars.pop(name, None)

    def call(self, node: ast.Call, var: str | None) -> int | None:
        func = node.func
        if isinstance(func, ast.Name):
            func_name = func.id
        elif isinstance(func, ast.Attribute):
            func_name = func.attr
        else:
            line, col = self.pos(node)
            self.findings.append(
                Finding(
                    "parse_error",
                    len(self.steps),
                    "a step must call a tool by name",
                    line,
                    col,
                )
            )
            return None
        name = func_name.replace("_", " ")
        if self.tool_names is not None:
            name = resolve_tool_name(func_name, self.tool_names) or name
        match = _OUTPUT_VAR.match(var or "")
        step_id = int(match.group(1)) if match else len(self.steps)
        while step_id in self.ids:  # keep ids unique even if a variable is reused
            step_id = max(self.ids) + 1
        args: dict[str, Any] = {}
        positions: dict[str, tuple[int, int]] = {}
        for position, arg in enumerate(node.args):
            key = f"<positional {position + 1}>"
            args[key] = self.value(arg)
            positions[key] = self.pos(arg)
        for keyword in node.keywords:
            key = keyword.arg if keyword.arg is not None else "**"
            args[key] = self.value(keyword.value)
            positions[key] = self.pos(keyword)
        line, col = self.pos(node)
        self.steps.append(
            Step(
                index=len(self.steps),
                id=step_id,
                name=name,
                args=args,
                line=line,
                column=col,
                arg_positions=positions,
            )
        )
        self.ids.add(step_id)
        return step_id

    # ---- values

    def reference(self, var: str, key: str | None) -> str:
        bound = self.vars.get(var)
        if bound is not None and bound[0] == "step":
            target: Any = bound[1]
        elif match := _OUTPUT_VAR.match(var):
            target = int(match.group(1))
        else:
            target = var
        return f"<node-{target}>" + (f".{key}" if key is not None else "")

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            key = node.slice
            if isinstance(key, ast.Constant):
                return self.reference(node.value.id, str(key.value))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return self.reference(node.value.id, node.attr)
        if isinstance(node, ast.Name):
            bound = self.vars.get(node.id)
            if bound is not None and bound[0] == "value":
                return bound[1]
            if bound is not None or _OUTPUT_VAR.match(node.id):
                return self.reference(node.id, None)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for piece in node.values:
                if isinstance(piece, ast.Constant):
                    parts.append(str(piece.value))
                elif isinstance(piece, ast.FormattedValue):
                    parts.append(str(self.value(piece.value)))
            return "".join(parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(left, str) and isinstance(right, str):
                return left + right
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        try:
            return ast.unparse(node)
        except Exception:  # pragma: no cover - unparse of a parsed tree
            return "<expression>"


def _strip_fence(text: str) -> tuple[str, int]:
    """The content of the first fenced block (```python ... ```), and how many lines precede
    it; the text itself when there is no fence. The block ends at the first fence that
    starts a line after it (a string in the code may hold three backticks), else at the last
    three backticks (a fence closed at the end of the last code line)."""
    match = _FENCE.search(text)
    if not match:
        return text, 0
    start = match.end()
    closing = _FENCE_CLOSE.search(text, start)
    end = closing.start() if closing else text.rfind("```", start)
    body = text[start:] if end == -1 else text[start:end]
    return body, text.count("\n", 0, start)


def parse_code_plan(code: str, tool_names: Sequence[str] | None = None) -> ParsedPlan:
    """Read a code-form plan (a ``def solve():`` program, or bare ``outputK = tool(...)``
    lines), as it is or, where that is not Python, inside a markdown fence (a model's
    answer). With ``tool_names``, function names are mapped to the toolset's spelling."""
    body, offset = code, 0
    try:
        try:
            tree = ast.parse(body)
        except (SyntaxError, ValueError):
            # Not Python as it stands: a program inside a fence. (Code that is Python is
            # never read for fences: three backticks in one of its strings are text.)
            body, offset = _strip_fence(code)
            tree = ast.parse(body)
    except SyntaxError as exc:
        line = (exc.lineno or 1) + offset
        return ParsedPlan(
            [],
            "code",
            [Finding("parse_error", None, f"invalid Python: {exc.msg}", line, exc.offset or 1)],
        )
    except (ValueError, MemoryError, RecursionError) as exc:
        return ParsedPlan([], "code", [Finding("parse_error", None, f"invalid Python: {exc}")])
    reader = _CodeReader(tool_names, offset)
    try:
        reader.statements(tree.body)
    except RecursionError:
        return ParsedPlan([], "code", [Finding("parse_error", None, "the code nests too deeply")])
    if not reader.steps and not reader.findings:
        reader.findings.append(Finding("parse_error", None, "no tool call found in the code", 1, 1))
    return ParsedPlan(reader.steps, "code", reader.findings)


# --------------------------------------------------------------------------- entry point


def parse_plan(
    source: Any,
    *,
    plan_format: str = "auto",
    tool_names: Sequence[str] | None = None,
) -> ParsedPlan:
    """Read a plan from a Python object (list of steps, ``{"nodes": ...}``) or from text.

    ``plan_format``: ``"json"`` reads text as JSON or a Python literal; ``"code"`` reads it as
    Python code; ``"auto"`` picks code when the text looks like code (:func:`looks_like_code`),
    JSON otherwise. Objects are read as JSON plans, except in ``"code"`` form, which wants text.
    Never raises.
    """
    if isinstance(source, ParsedPlan):
        return source
    try:
        if isinstance(source, bytes):
            source = source.decode("utf-8", errors="replace")
        if not isinstance(source, str):
            if plan_format == "code":
                return ParsedPlan(
                    [],
                    "code",
                    [Finding("parse_error", None, "a code-form plan is text, not a JSON plan")],
                )
            return parse_json_plan(source)
        if not source.strip():
            return ParsedPlan([], "unknown", [Finding("parse_error", None, "the plan is empty")])
        if plan_format == "code" or (plan_format == "auto" and looks_like_code(source)):
            return parse_code_plan(source, tool_names)
        value, problem = decode_plan_text(source)
        if problem is not None:
            return ParsedPlan([], "json", [problem])
        return parse_json_plan(value)
    except Exception as exc:  # a last resort: parsing must never raise
        return ParsedPlan(
            [], "unknown", [Finding("parse_error", None, f"unreadable plan ({exc!r})")]
        )


# --------------------------------------------------------------------------- JSON → code


def _code_value(value: Any, braces: bool) -> str:
    """One argument value as m&m's ``nodes_to_code`` writes it (see
    :func:`plan_to_code_lines`)."""
    if not isinstance(value, str):
        # Numbers, years and the like become strings, without any escaping.
        return f'"{value}"'
    if value.startswith("<node-") and " " not in value:
        # The whole value is a reference: the id runs to the first '>', the key is everything
        # after the first '.'.
        node_id = int(value[6 : value.index(">")])
        key = value[value.index(".") + 1 :]
        return f"output{node_id}['{key}']"
    if "<node-" in value:
        # References inside text: an f-string. Literal braces in the text are not escaped, so
        # str.format may fail on them (upstream too).
        found = MMS_EMBEDDED_REFERENCE.findall(value)
        refs = []
        for ref in found:
            node_id = int(ref[6 : ref.index(">")])
            key = ref.split(".")[-1]
            ref_code = f"output{node_id}['{key}']"
            refs.append("{" + ref_code + "}" if braces else ref_code)
        text = MMS_EMBEDDED_REFERENCE.sub("{}", value).format(*refs)
        return 'f"{}"'.format(text.replace('"', '\\"'))
    # Only double quotes are escaped; backslashes and newlines are written as they are.
    return '"{}"'.format(value.replace('"', '\\"'))


def plan_to_code_lines(plan: Any, *, braces: bool = False) -> list[str]:
    """m&m's JSON→code conversion: one ``outputK = tool_name(arg=value, ...)`` line per step,
    in plan order, arguments in the order given.

    Reproduced from ``nodes_to_code`` (with ``replace_node_with_placeholder``) in RAIVNLab/mnms
    ``mnms/evaluation/evaluator.py``, which m&m's evaluator runs on every JSON plan, gold or
    predicted, before labelling it:

    * the variable is ``output`` + the step's ``id``; the function is the tool name with each
      space replaced by ``_`` (case kept);
    * a value that starts with ``<node-`` and has no space is a whole reference:
      ``<node-K>.key`` → ``outputK['key']``;
    * other text holding ``<node-`` becomes an f-string in which each ``<node-\\d+>.\\w+`` match
      is replaced by ``outputK['key']``, then double quotes are escaped. Upstream leaves the
      f-string without replacement fields (``f"a painting of output0['text']"``), so the
      reference stays plain text; ``braces=True`` writes ``{outputK['key']}`` instead, which is
      the dataset's ``code_str`` (see :func:`plan_to_solve_code`);
    * plain text is double-quoted with only ``"`` escaped (a newline or a trailing backslash
      therefore yields a line the labeller later cannot parse, as upstream);
    * anything else (numbers, lists) is written as ``"{value}"`` without escaping.

    Raises :class:`PlanFormatError` where upstream raises (not a list, a step without
    ``id``/``name``/``args``, a malformed whole-value reference, braces that ``str.format``
    rejects); m&m's evaluator counts such a prediction as invalid.
    """
    if not isinstance(plan, list):
        raise PlanFormatError(f"a plan is a list of steps, not {type(plan).__name__}")
    lines = []
    for position, node in enumerate(plan):
        try:
            var = "output{}".format(node["id"])
            func = node["name"].replace(" ", "_")
            parts = [f"{name}={_code_value(value, braces)}" for name, value in node["args"].items()]
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            raise PlanFormatError(f"step {position}: {type(exc).__name__}: {exc}") from exc
        lines.append(f"{var} = {func}({', '.join(parts)})")
    return lines


def plan_to_code(plan: Any) -> str:
    """The lines of :func:`plan_to_code_lines` joined by newlines (what m&m's evaluator
    labels)."""
    return "\n".join(plan_to_code_lines(plan))


def plan_to_solve_code(plan: Any) -> str:
    """The plan as the dataset's ``code_str``: the converted lines (with ``{...}`` replacement
    fields for embedded references) inside ``def solve():``, then
    ``result = {K: outputK, ...}`` and ``return result``. Raises :class:`PlanFormatError`."""
    lines = plan_to_code_lines(plan, braces=True)
    result = ", ".join(f"{node['id']}: output{node['id']}" for node in plan)
    body = "".join(f"    {line}\n" for line in lines)
    return f"def solve():\n{body}    result = {{{result}}}\n    return result\n"
