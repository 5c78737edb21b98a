"""The command lines README.md and the pages of docs/ print, found and expanded into concrete
argument lists, for tests/benchmark/test_readme_commands.py (which gives the placeholders real
values and runs them).

Found: every line of a code block, and every inline code span, that starts with ``python
manage.py`` (also inside a shell capture, ``KEY=$(python manage.py ...)``) (or ``.venv/bin/python manage.py``), ``.venv/bin/python tests/perf/<script>.py``,
``bin/<script>`` (also after environment settings, ``PORT=8123 bin/run``: ``Printed.env``
names them) or ``.venv/bin/celery``; and inline spans that only name a command
(``manage.py judge``). A ``#`` outside quotes starts a comment.

The notation of a printed line, as README and docs/reference/commands.md use it:

- ``[...]`` an optional part (nested parts allowed);
- ``{a,b,c}`` or ``a|b`` alternatives;
- ``X ...`` / ``X...`` / ``[--opt X]...`` the part before may repeat; ``--opt ...`` (the ``...``
  right after an option) is a value left to the reader, a placeholder like ``NAME``;
- placeholders: words in capitals (``NAME``, ``OUT_DIR``, ``EXPORT.json``) and words holding
  ``...`` (``col=field,...``). Everything else is literal.

``variants`` turns a line into the argument lists to run: the line with every optional part and
each repeat taken twice ("full"), and with no optional part ("bare"), each as many times as the
line has alternatives at its widest point, so that every alternative is used at least once.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from markdown_it import MarkdownIt

_PROGRAMS = (
    ("manage", re.compile(r"^(?:\.venv/bin/)?python\s+manage\.py\s+(?P<rest>\S.*)$")),
    ("perf", re.compile(r"^\.venv/bin/python\s+(?P<program>tests/perf/\S+\.py)(?P<rest>.*)$")),
    ("bin", re.compile(r"^(?P<program>bin/[\w.-]+)(?P<rest>(?:\s.*)?)$")),
    ("celery", re.compile(r"^(?P<program>\.venv/bin/celery)(?P<rest>(?:\s.*)?)$")),
)
_NAME_ONLY = re.compile(r"^manage\.py\s+(?P<command>[a-z_][a-z0-9_]*)$")
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(?:\.[a-z]+)?$")
_BRACES = re.compile(r"\{([\w.-]+(?:,[\w.-]+)+)\}")
_BAR = re.compile(r"^[\w.-]+(?:\|[\w.-]+)+$")


@dataclass(frozen=True)
class Printed:
    """One command line as README or a page of docs/ prints it."""

    line: int  # 1-based line of the file where it starts
    text: str  # as printed (an inline span that wraps is joined with spaces)
    kind: str  # "manage", "manage-name", "perf", "bin" or "celery"
    program: str  # the manage.py command's name, or the script's path
    rest: str  # what follows the command or script, comment included
    source: str = "README.md"  # the file, relative to the checkout
    env: tuple[str, ...] = ()  # the environment variables the line sets before a bin/ script

    def __str__(self) -> str:
        return f"{self.source} line {self.line}: {self.text}"


_CAPTURED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\$\((?P<inner>.*)\)$")
#: ``NAME=value`` settings before a bin/ script (``PORT=8123 bin/run``).
_ENV_PREFIX = re.compile(r"^(?P<env>(?:[A-Z_][A-Z0-9_]*=[^\s$()]*\s+)+)(?P<command>bin/.*)$")


def _classify(line: int, text: str, source: str = "README.md") -> Printed | None:
    text = " ".join(text.split())
    captured = _CAPTURED.match(text)  # KEY=$(python manage.py ...): the command inside
    if captured:
        text = captured["inner"].strip()
    env: tuple[str, ...] = ()
    prefixed = _ENV_PREFIX.match(text)
    if prefixed:
        env = tuple(word.partition("=")[0] for word in prefixed["env"].split())
        text = prefixed["command"]
    named = _NAME_ONLY.match(text)
    if named:
        return Printed(line, text, "manage-name", named["command"], "", source)
    for kind, pattern in _PROGRAMS:
        found = pattern.match(text)
        if found is None:
            continue
        if kind == "manage":
            command, _, rest = found["rest"].partition(" ")
            return Printed(line, text, kind, command, rest, source)
        return Printed(line, text, kind, found["program"], found["rest"].strip(), source, env)
    return None


def printed_commands(markdown: str, source: str = "README.md") -> list[Printed]:
    """Every command line the markdown prints, in order (code blocks and inline code);
    ``source`` names the file in what the lines say about themselves."""
    lines = markdown.splitlines()
    out: list[Printed] = []
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type in ("fence", "code_block") and token.map:
            first = token.map[0] + (2 if token.type == "fence" else 1)
            for i, text in enumerate(token.content.splitlines()):
                found = _classify(first + i, text.strip(), source)
                if found is not None:
                    out.append(found)
        elif token.type == "inline" and token.map:
            for child in token.children or []:
                if child.type != "code_inline":
                    continue
                start = child.content.split(" ", 3)[:3]
                line = next(
                    (
                        n + 1
                        for n in range(token.map[0], token.map[1])
                        if " ".join(start) in " ".join(lines[n].split())
                    ),
                    token.map[0] + 1,
                )
                found = _classify(line, child.content, source)
                if found is not None:
                    out.append(found)
    return out


# --------------------------------------------------------------------------- the notation


class NotationError(ValueError):
    """A printed line whose notation cannot be read (unbalanced brackets, quotes)."""


@dataclass
class _Word:
    text: str


@dataclass
class _Optional:
    parts: list[_Node]


@dataclass
class _Repeat:
    part: _Node


_Node = _Word | _Optional | _Repeat


@dataclass(frozen=True)
class Arg:
    """One argument of a concrete command line: literal text, or a placeholder to fill in.
    ``option`` is the option a value belongs to (``--project`` for ``--project NAME``), None
    for a positional argument; ``nth`` counts earlier arguments with the same placeholder in
    the same line (so a repeated ``FILE ...`` can name two different files)."""

    text: str
    placeholder: bool
    option: str | None = None
    nth: int = 0


def strip_comment(rest: str) -> str:
    """``rest`` up to a ``#`` that starts a word outside quotes."""
    quote = ""
    for i, char in enumerate(rest):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or rest[i - 1].isspace()):
            return rest[:i].rstrip()
    return rest.strip()


def _split(rest: str) -> list[str]:
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise NotationError(str(exc)) from None
    out: list[str] = []
    for word in words:
        head: list[str] = []
        while word.startswith("[") and word != "[":
            head.append("[")
            word = word[1:]
        tail: list[str] = []
        while True:
            if word.endswith("]...") and word != "]...":
                tail[:0] = ["]", "..."]
                word = word[:-4]
            elif word.endswith("]") and word != "]":
                tail.insert(0, "]")
                word = word[:-1]
            elif word.endswith("...") and not word.startswith("...") and "=" not in word:
                tail.insert(0, "...")
                word = word[:-3]
            else:
                break
        out += [*head, word, *tail]
    return [w for w in out if w]


def _tree(words: list[str]) -> list[_Node]:
    stack: list[list[_Node]] = [[]]
    for word in words:
        here = stack[-1]
        if word == "[":
            stack.append([])
        elif word == "]":
            if len(stack) == 1:
                raise NotationError("a ']' without its '['")
            parts = stack.pop()
            stack[-1].append(_Optional(parts))
        elif word == "..." and here and not _is_option(here[-1]):
            here[-1] = _Repeat(here[-1])
        else:
            here.append(_Word(word))
    if len(stack) != 1:
        raise NotationError("a '[' without its ']'")
    return stack[0]


def _is_option(node: _Node) -> bool:
    return isinstance(node, _Word) and node.text.startswith("-")


def _flatten(nodes: list[_Node], *, full: bool) -> list[str]:
    out: list[str] = []
    for node in nodes:
        if isinstance(node, _Word):
            out.append(node.text)
        elif isinstance(node, _Optional):
            if full:
                out += _flatten(node.parts, full=full)
        else:
            out += _flatten([node.part] * (2 if full else 1), full=full)
    return out


def _alternatives(word: str) -> list[str]:
    found = _BRACES.search(word)
    if found:
        return [
            word[: found.start()] + choice + word[found.end() :] for choice in found[1].split(",")
        ]
    if _BAR.match(word):
        return word.split("|")
    return [word]


def is_placeholder(word: str) -> bool:
    return bool(_PLACEHOLDER.match(word)) or "..." in word


def variants(rest: str, *, phrases: Mapping[str, str] = {}) -> list[list[Arg]]:  # noqa: B006
    """The concrete argument lists a printed line stands for (see the module's docstring).
    ``phrases`` replaces words of prose first (``[create_project's options]``)."""
    text = strip_comment(rest)
    for phrase, replacement in phrases.items():
        text = text.replace(phrase, replacement)
    tree = _tree(_split(text))
    out: list[list[Arg]] = []
    for full in (True, False):
        words = _flatten(tree, full=full)
        choices = [_alternatives(w) for w in words]
        for i in range(max((len(c) for c in choices), default=1)):
            args = _args([c[i % len(c)] for c in choices])
            if args not in out:
                out.append(args)
    return out


def _args(words: list[str]) -> list[Arg]:
    out: list[Arg] = []
    seen: dict[str, int] = {}
    previous = ""
    for word in words:
        if is_placeholder(word):
            option = previous if previous.startswith("-") else None
            if out and out[-1].text == word:  # "--answers FILE FILE": both go with --answers
                option = out[-1].option
            out.append(Arg(word, True, option, seen.get(word, 0)))
            seen[word] = seen.get(word, 0) + 1
        else:
            out.append(Arg(word, False))
        previous = word
    return out


@dataclass
class Context:
    """What a placeholder's value may depend on: the command, the option it is the value of,
    the literal arguments of the same line, and how many times it came before."""

    command: str
    arg: Arg
    args: list[Arg] = field(default_factory=list)

    @property
    def option(self) -> str | None:
        return self.arg.option

    @property
    def nth(self) -> int:
        return self.arg.nth

    def has(self, option: str) -> bool:
        return any(a.text == option for a in self.args)

    def value_of(self, option: str) -> str | None:
        """The literal value given to ``option`` in the same line, if any."""
        for before, after in zip(self.args, self.args[1:], strict=False):
            if before.text == option and not after.placeholder:
                return after.text
        return None


def iter_manage_lines(printed: list[Printed]) -> Iterator[Printed]:
    return (p for p in printed if p.kind == "manage")
