"""Items written in the app: created from scratch (a form, the API, a kept model draft) and
edited field by field, each edit a version.

**The field dict** (``data`` of :func:`item_create`, ``changes`` of :func:`item_update`; every
key optional unless the project's format needs it):

* ``external_id``: unique in the project; generated in the format's own id style when absent.
* ``query``: the ATP-Bench query, the LLM-I prompt, the m&m's user request, the Agentic-MME
  question. ``format_instruction`` (Agentic-MME) is joined after the question, as the format's
  ``input.prompt`` holds both.
* ``modality``: "text" or "image" (inferred from the images when absent).
* Images, each named as ``benchmark.images.selectors.project_images_named`` names a
  project's images (its sha256, ``images/<sha256>.<ext>``, or a dataset path the project's
  items already use; a path is kept, an image named by its hash gets
  ``images/<sha256[:16]>.<ext>``), or an uploaded file (a file object or ``(name, bytes)``;
  stored through the image service with its size and pixel limits): ``query_images``
  (ATP-Bench image query), ``images`` (the input images of LLM-I, Agentic-MME and m&m's) and
  the ``images`` list of each document.
  ``image_refs`` ([{"sha256" or "path", "role", "position"}]) is accepted too and sorted into
  those lists by role.
* ``documents``: [{"text", "images"}] (ATP-Bench), stored as the ATP importer stores them:
  the text, and the dataset paths of the document's images.
* ``category``, ``intent``: terms of the project's taxonomy (free text without one).
* ``gt``: the ATP-Bench ground-truth answer, stored as the Response "gt" (its tag findings are
  warnings: a draft may be saved with them).
* ``rubric``: LLM-I criteria r1..r10 ([{"key", "text"}] or a list of strings).
* ``image_num``: LLM-I's image-number constraint (-1 none, 0 any, n exactly n,
  "at_least_one"/99/"Inf"); ``tools``: required tools, names from the project's toolset.
* ``expected_answer``, ``match_type``, ``accepted_variants``, ``level``, ``domain``
  (Agentic-MME).
* ``input_files``: m&m's input files other than images, by name.

**Errors**: :class:`ItemInvalid` (a ``ValidationFailed``, 400) with ``errors``, a dict
``{field: message}`` (fields as above, e.g. ``documents[2].text``, ``rubric.r3``), and a
message joining them as ``"field: message; ..."``. **Warnings** (vague criteria, a rubric of
other than ten criteria, tag findings in the ground truth) do not refuse: the returned item
carries them as ``item.warnings`` (a list of ``"field: message"`` strings).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from benchmark import limits
from benchmark.datasets.services import item_source_file
from benchmark.exceptions import NotFound, ValidationFailed
from benchmark.formats.agentic_mme import FORMAT_LEADS, join_prompt, split_prompt
from benchmark.formats.llmi import image_count
from benchmark.images.selectors import image_name_sha, project_images_named
from benchmark.kinds.base import resolve
from benchmark.models import (
    Image,
    Item,
    ItemStatus,
    ItemVersion,
    Modality,
    Origin,
    Project,
    Response,
    TaxonomyTerm,
    TermKind,
)
from benchmark.permissions import require
from benchmark.typing import User
from benchmark.versions import StaleVersion, version_save

__all__ = [
    "EDITABLE_FIELDS",
    "MATCH_TYPES",
    "ItemInvalid",
    "criterion_warnings",
    "item_create",
    "item_audio_refs_save",
    "item_form_data",
    "item_revert",
    "item_snapshot",
    "item_update",
    "item_warnings",
    "latest_number",
]

#: Item fields a person may set when creating or editing an item.
EDITABLE_FIELDS = (
    "query",
    "modality",
    "documents",
    "image_refs",
    "constraints",
    "expected_answer",
    "accepted_variants",
    "match_type",
    "rubric",
    "category",
    "intent",
    "domain",
    "level",
    "audio_refs",
)

#: Fields versions began to record later: a version saved before holds no value for them,
#: and is compared on them only with a version that does.
RECORDED_LATER = frozenset({"audio_refs"})

#: Agentic-MME's answer checks (``benchmark.metrics.agentic_mme.answer_matches``).
MATCH_TYPES = ("exact", "contains", "numeric")
LEVELS = (1, 2, 3)
MAX_CRITERIA = 10
AT_LEAST_ONE = "at_least_one"
_ID_RE = re.compile(r"^(.*?)(\d+)$")

# --------------------------------------------------------------------------- errors


class ItemInvalid(ValidationFailed):
    """Fields that cannot be saved: ``errors`` maps each field to its message."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{field}: {message}" for field, message in self.errors.items()))


# --------------------------------------------------------------------------- vague criteria

#: Common verbs of rubric sentences (base forms; -s, -es, -ed and -ing forms count too) and
#: the auxiliaries. The same list drives the form's live warning (static/js/items.js gets it
#: from the page).
COMMON_VERBS = frozenset(
    [
        "be",
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "does",
        "do",
        "did",
        "can",
        "could",
        "should",
        "must",
        "may",
        "might",
        "will",
        "would",
        "include",
        "contain",
        "show",
        "depict",
        "use",
        "mention",
        "explain",
        "describe",
        "provide",
        "give",
        "state",
        "list",
        "present",
        "match",
        "follow",
        "answer",
        "address",
        "cover",
        "identify",
        "illustrate",
        "compare",
        "discuss",
        "generate",
        "produce",
        "place",
        "insert",
        "appear",
        "display",
        "correspond",
        "reflect",
        "support",
        "avoid",
        "omit",
        "keep",
        "make",
        "remain",
        "stay",
        "relate",
        "refer",
        "label",
        "name",
        "cite",
        "specify",
        "offer",
        "clarify",
        "align",
        "fit",
        "add",
        "return",
        "render",
        "draw",
        "depict",
        "feature",
        "mark",
        "highlight",
        "indicate",
        "ensure",
        "meet",
        "satisfy",
        "respect",
        "contain",
        "consist",
        "reach",
    ]
)
VERB_SUFFIXES = ("ed", "ize", "izes", "ise", "ises", "ify", "ifies", "ates")
MIN_CRITERION_WORDS = 6
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]*")


def _verb_forms(word: str) -> Iterable[str]:
    yield word
    for suffix in ("s", "es", "ed", "d", "ing"):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            yield word[: -len(suffix)]
    if word.endswith("ies"):
        yield word[:-3] + "y"


def criterion_warnings(text: str) -> list[str]:
    """Why a rubric criterion looks vague (not a checkable sentence): fewer than six words, or
    no verb. The verb check is a heuristic: a word that is a common verb or auxiliary
    (:data:`COMMON_VERBS`, in any of its -s/-es/-ed/-ing forms) or ends like a verb
    (:data:`VERB_SUFFIXES`). Empty when it looks fine."""
    words = [w.lower() for w in _WORD_RE.findall(text or "")]
    out = []
    if len(words) < MIN_CRITERION_WORDS:
        out.append(f"vague: fewer than {MIN_CRITERION_WORDS} words; write a checkable sentence")
    has_verb = any(form in COMMON_VERBS for word in words for form in _verb_forms(word)) or any(
        word.endswith(VERB_SUFFIXES) for word in words
    )
    if words and not has_verb:
        out.append("vague: no verb; say what the answer must do or contain")
    return out


# --------------------------------------------------------------------------- cleaning


class _Cleaner:
    """Turns a field dict into Item column values, collecting errors and warnings by field."""

    def __init__(self, project: Project, data: Mapping[str, Any], item: Item | None) -> None:
        self.project = project
        self.data = data
        self.item = item
        self.errors: dict[str, str] = {}
        self.warnings: list[str] = []
        self.values: dict[str, Any] = {}
        self.gt: str | None = None
        # Images: (role, key) -> list of sha256, uploads to store, paths the item already has.
        self.wanted: list[tuple[str, int, Any, str]] = []  # (role, document, value, field)
        self.known_paths = {
            r.get("path"): r.get("sha256") for r in (item.image_refs if item else []) or []
        }
        self.paths_by_sha = {
            r.get("sha256"): r.get("path") for r in (item.image_refs if item else []) or []
        }

    def error(self, field: str, message: str) -> None:
        self.errors.setdefault(field, message)

    # ---- simple fields

    def fits(self, key: str, value: str, limit: limits.Limit) -> None:
        """Refuse a value over its limit (``benchmark.limits``) or holding a NUL character."""
        problem = limits.over(limit, value)
        if problem is None and "\x00" in value:
            problem = limits.NUL_MESSAGE
        if problem is not None:
            self.error(key, problem)

    def text(
        self,
        key: str,
        *,
        required: bool = False,
        label: str = "",
        limit: limits.Limit = limits.QUERY,
    ) -> str:
        value = self.data.get(key)
        if value is None:
            value = ""
        if not isinstance(value, str):
            self.error(key, "must be text")
            return ""
        value = value.replace("\r\n", "\n")
        self.fits(key, value, limit)
        if required and not value.strip():
            self.error(key, f"write the {label or key}")
        return value

    def short(self, key: str, limit: limits.Limit = limits.LABEL) -> str:
        return self.text(key, limit=limit).strip()

    def term(self, key: str, kind: str, parent: str = "") -> str:
        value = self.short(key)
        taxonomy = self.project.taxonomy_id
        if not value or taxonomy is None:
            return value
        terms = TaxonomyTerm.objects.filter(taxonomy_id=taxonomy, kind=kind)
        names = list(terms.values_list("name", "parent__name"))
        if not names:
            return value
        allowed = sorted({n for n, _ in names})
        if value not in allowed:
            shown = ", ".join(allowed[:20]) + (" ..." if len(allowed) > 20 else "")
            article = "an" if kind[0] in "aeiou" else "a"
            self.error(
                key, f"{value!r} is not {article} {kind} of the project's taxonomy ({shown})"
            )
        elif parent and all(p for _, p in names):
            under = sorted({n for n, p in names if p == parent})
            if value not in under:
                self.error(
                    key,
                    f"{value!r} is not an {kind} of the category {parent!r} "
                    f"({', '.join(under) or 'none'})",
                )
        return value

    # ---- images

    def image_list(self, key: str, role: str, value: Any, document: int = -1) -> None:
        if value is None or value == "":
            return
        if not isinstance(value, list | tuple):
            value = [value]
        for i, entry in enumerate(value):
            self.wanted.append((role, document, entry, f"{key}[{i}]"))

    def _name_of(self, entry: Any, field: str) -> str | None:
        """The name an entry gives an image (a sha256 or a path, also as {"sha256"} or
        {"path"}), or None for an upload; "" (and an error) when it names nothing."""
        if isinstance(entry, Mapping):
            entry = entry.get("sha256") or entry.get("path")
        if isinstance(entry, tuple) or hasattr(entry, "read"):
            return None
        if not isinstance(entry, str) or not entry.strip():
            self.error(field, "must be an image (a sha256, a path or an uploaded file)")
            return ""
        return entry.strip()

    def _upload(self, user: User, uploads: list[tuple[int, Any]]) -> list[Image]:
        from benchmark.images.services import image_upload

        if not uploads or self.errors:
            return []
        try:
            return image_upload(project=self.project, user=user, files=[f for _, f in uploads])
        except ValidationFailed as exc:
            self.error(self.wanted[uploads[0][0]][3].rsplit("[", 1)[0], exc.message)
            return []

    def _look_up(
        self, names: dict[int, str]
    ) -> tuple[dict[int, tuple[str, str]], dict[str, Image]]:
        """Each named image's sha256 and the path to keep ("": a new one), and the project's
        images found. A name of no image of the item or the project is an error."""
        own = {
            name: str(self.known_paths.get(name) or name.lower())
            for name in names.values()
            if self.known_paths.get(name) or name.lower() in self.paths_by_sha
        }
        found = project_images_named(project=self.project, names=set(names.values()) - set(own))
        out: dict[int, tuple[str, str]] = {}
        for n, name in names.items():
            if name in own:
                out[n] = (own[name], "")
            elif name in found:  # a path the project's items use is kept
                out[n] = (found[name].sha256, "" if image_name_sha(name) else name)
            else:
                shown = f"{name[:12]}..." if image_name_sha(name) == name.lower() else repr(name)
                self.error(self.wanted[n][3], f"no image {shown} in this project")
        return out, {image.sha256: image for image in found.values()}

    def resolve_images(self, user: User) -> dict[tuple[str, int], list[dict[str, str]]]:
        """Store the uploads and look the rest up; ``{(role, document): [{"sha256", "path"}]}``.
        A name is an image the item already has (its sha256 or path), else one of the
        project's by the one rule of ``project_images_named``. A dataset path is kept; an
        image named by its hash or uploaded gets ``images/<sha256[:16]>.<ext>``."""
        names: dict[int, str] = {}
        uploads: list[tuple[int, Any]] = []
        for n, (_, _, entry, field) in enumerate(self.wanted):
            name = self._name_of(entry, field)
            if name is None:
                uploads.append((n, entry))
            elif name:
                names[n] = name
        looked, images = self._look_up(names)
        for (n, _), image in zip(uploads, self._upload(user, uploads), strict=False):
            looked[n] = (image.sha256, "")
            images[image.sha256] = image
        out: dict[tuple[str, int], list[dict[str, str]]] = {}
        for n, (role, document, _, _) in enumerate(self.wanted):
            if n in looked:
                sha, kept = looked[n]
                path = self.paths_by_sha.get(sha) or kept or _new_path(images.get(sha), sha)
                out.setdefault((role, document), []).append({"sha256": sha, "path": str(path)})
        return out


def _new_path(image: Image | None, sha: str) -> str:
    name = image.file.name if image is not None and image.file else ""
    suffix = PurePosixPath(name or "").suffix
    return f"images/{sha[:16]}{suffix or '.png'}"


def _refs_by_role(data: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``image_refs`` of the field dict sorted into lists by role, in position order."""
    refs = data.get("image_refs")
    out: dict[str, list[Any]] = {}
    if not isinstance(refs, list):
        return out
    for ref in sorted(
        (r for r in refs if isinstance(r, Mapping)), key=lambda r: r.get("position") or 0
    ):
        out.setdefault(str(ref.get("role") or "input"), []).append(
            ref.get("sha256") or ref.get("path")
        )
    return out


def _clean(
    *,
    project: Project,
    user: User,
    data: Mapping[str, Any],
    item: Item | None,
    touched: set[str] | None = None,
) -> tuple[dict[str, Any], _Cleaner]:
    """Column values for ``data`` (see the module docstring), or ``ItemInvalid``. With
    ``touched`` (an edit), only errors of those fields refuse."""
    c = _Cleaner(project, data, item)
    by_role = _refs_by_role(data)
    resolve(project.benchmark.item_checks)(c, by_role)
    _refuse(c, touched)
    resolved = c.resolve_images(user)
    _refuse(c, touched)
    _place_images(c, resolved)
    _refuse(c, touched)
    return c.values, c


def _refuse(c: _Cleaner, touched: set[str] | None) -> None:
    errors = c.errors
    if touched is not None:
        errors = {f: m for f, m in errors.items() if re.split(r"[\[.]", f)[0] in touched}
    if errors:
        raise ItemInvalid(errors)
    c.errors = {}


def _place_images(c: _Cleaner, resolved: dict[tuple[str, int], list[dict[str, str]]]) -> None:
    refs: list[dict[str, Any]] = []
    flat = 0
    for i, doc in enumerate(c.values.get("documents", [])):
        paths = []
        for entry in resolved.get(("document", i), []):
            refs.append({**entry, "role": "document", "position": flat})
            paths.append(entry["path"])
            flat += 1
        doc["images"] = paths
    for role in ("query", "input"):
        for position, entry in enumerate(resolved.get((role, -1), [])):
            refs.append({**entry, "role": role, "position": position})
    c.values["image_refs"] = refs
    query_images = [r for r in refs if r["role"] == "query"]
    input_images = [r for r in refs if r["role"] == "input"]
    has_images = bool(query_images or input_images)
    modality = c.data.get("modality") or ""
    matches = c.project.benchmark.query_image_matches_modality
    if modality not in ("", *Modality.values):
        c.error("modality", "choose text or image")
    elif matches and modality == Modality.IMAGE and not has_images:
        c.error("query_images", "an image query needs an uploaded query image")
    elif matches and modality == Modality.TEXT and has_images:
        c.error("modality", "a text query has no query image: choose image, or remove the image")
    c.values["modality"] = Modality.IMAGE if has_images else Modality.TEXT


def clean_atp(c: _Cleaner, by_role: dict[str, list[Any]]) -> None:
    c.values["query"] = c.text("query", required=True)
    category = c.term("category", TermKind.CATEGORY)
    c.values["category"] = category
    c.values["intent"] = c.term("intent", TermKind.INTENT, parent=category)
    c.image_list("query_images", "query", c.data.get("query_images", by_role.get("query")))
    documents = c.data.get("documents")
    if documents is None:
        documents = []
    if not isinstance(documents, list):
        c.error("documents", "must be a list of {text, images} documents")
        documents = []
    cleaned = []
    for i, doc in enumerate(documents):
        field = f"documents[{i}]"
        if isinstance(doc, str):
            doc = {"text": doc, "images": []}
        if not isinstance(doc, Mapping):
            c.error(field, "must be an object with text and images")
            continue
        text = doc.get("text") or ""
        if not isinstance(text, str):
            c.error(f"{field}.text", "must be text")
            text = ""
        c.fits(f"{field}.text", text, limits.DOCUMENT)
        images = doc.get("images") or []
        if not text.strip() and not images:
            c.error(
                f"{field}.text", f"document {i + 1} is empty: write its text or attach an image"
            )
        c.image_list(f"{field}.images", "document", images, i)
        cleaned.append({"text": text.replace("\r\n", "\n"), "images": []})
    if not documents and "document" in by_role:
        cleaned.append({"text": "", "images": []})
        c.image_list("documents[0].images", "document", by_role["document"], 0)
    c.values["documents"] = cleaned
    if "gt" in c.data:
        c.gt = c.text("gt", limit=limits.ANSWER)


def clean_llmi(c: _Cleaner, by_role: dict[str, list[Any]]) -> None:
    """A LLMI-Bench row (prompt, criteria r1..r10, images) or, with an image-number
    constraint or tools, a training row (whose format has no criteria: optional there)."""
    c.values["query"] = c.text("query", required=True, label="prompt")
    c.image_list("images", "input", c.data.get("images", by_role.get("input")))
    constraints = {**_image_num(c), **_tools(c)}
    c.values["constraints"] = constraints
    c.values["rubric"] = _rubric(c, required=not constraints)
    if constraints and c.values["rubric"]:
        c.warnings.append(
            "image_num: LLM-I keeps the image-number constraint and the tools in its training "
            "rows (train_sample.json), which have no criteria r1..r10: the export writes this "
            "item as a training row"
        )


def _image_num(c: _Cleaner) -> dict[str, Any]:
    raw = c.data.get("image_num", (c.data.get("constraints") or {}).get("image_num"))
    if raw in (None, ""):
        return {}
    value: Any = raw
    if isinstance(raw, str) and raw.strip().lower().replace(" ", "_") == AT_LEAST_ONE:
        value = 99
    elif isinstance(raw, str) and raw.strip().lstrip("-").isdigit():
        value = int(raw.strip())
    try:
        return {"image_num": value, "image_count": image_count(value)}
    except ValueError:
        c.error(
            "image_num", "must be -1 (no images), 0 (any number), n (exactly n) or at least one"
        )
        return {}


def _tools(c: _Cleaner) -> dict[str, Any]:
    tools = c.data.get("tools", (c.data.get("constraints") or {}).get("tools"))
    if tools in (None, "", []):
        return {}
    names = [t.strip() for t in tools.split(",")] if isinstance(tools, str) else tools
    if not isinstance(names, list) or not all(isinstance(t, str) for t in names):
        c.error("tools", "must be a list of tool names")
        return {}
    known = {n.lower(): n for n in c.project.toolset.tools.values_list("name", flat=True)}
    unknown = [t for t in names if t and t.lower() not in known]
    if unknown:
        c.error(
            "tools",
            f"not in the project's toolset: {', '.join(unknown)} "
            f"(tools: {', '.join(sorted(known.values())) or 'none'})",
        )
    return {"tools": [known.get(t.lower(), t) for t in names if t]}


def _rubric_texts(c: _Cleaner) -> list[str]:
    value = c.data.get("rubric")
    if value is None:
        value = []
    if not isinstance(value, list):
        c.error("rubric", "must be a list of criteria r1..r10")
        return []
    texts: list[str] = []
    for i, entry in enumerate(value):
        text = entry.get("text") if isinstance(entry, Mapping) else entry
        if not isinstance(text, str):
            c.error(f"rubric.r{i + 1}", "must be text")
            text = ""
        c.fits(f"rubric.r{i + 1}", text, limits.CRITERION)
        texts.append(text.strip())
    while texts and not texts[-1]:
        texts.pop()
    return texts


def _rubric(c: _Cleaner, *, required: bool) -> list[dict[str, str]]:
    texts = _rubric_texts(c)
    if not texts:
        if required:
            c.error("rubric", "write the criteria r1..r10 (LLMI-Bench has ten per prompt)")
        return []
    if len(texts) > MAX_CRITERIA:
        c.error("rubric", f"at most {MAX_CRITERIA} criteria (r1..r{MAX_CRITERIA})")
    for i, text in enumerate(texts):
        key = f"rubric.r{i + 1}"
        if not text:
            c.error(key, f"criterion r{i + 1} is empty (the criteria are numbered without gaps)")
            continue
        for warning in criterion_warnings(text):
            c.warnings.append(f"{key}: {warning}")
    if len(texts) != MAX_CRITERIA:
        c.warnings.append(f"rubric: {len(texts)} criteria; LLMI-Bench has ten per prompt (r1..r10)")
    return [{"key": f"r{i + 1}", "text": t} for i, t in enumerate(texts)]


def clean_agentic_mme(c: _Cleaner, by_role: dict[str, list[Any]]) -> None:
    question = c.text("query", required=True, label="question").strip()
    instruction = c.text("format_instruction").strip()
    if instruction and not instruction.startswith(FORMAT_LEADS):
        c.error(
            "format_instruction",
            "start it the way Agentic-MME prompts do, e.g. 'Answer with ...' or 'Respond ...'",
        )
    if instruction and question and question[-1] not in ".?!:)\"'":
        question += "."
    c.values["query"] = join_prompt(question, instruction)
    images = c.data.get("images", by_role.get("input"))
    if not images:
        c.error("images", "upload the task's image")
    c.image_list("images", "input", images)
    c.values["expected_answer"] = c.text(
        "expected_answer", required=True, label="answer", limit=limits.EXPECTED_ANSWER
    ).strip()
    match_type = c.short("match_type")
    if match_type not in MATCH_TYPES:
        c.error("match_type", f"choose one of {', '.join(MATCH_TYPES)}")
    c.values["match_type"] = match_type
    variants = c.data.get("accepted_variants") or []
    if isinstance(variants, str):
        variants = [v.strip() for v in variants.splitlines()]
    if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
        c.error("accepted_variants", "must be a list of answers")
        variants = []
    for i, variant in enumerate(variants):
        c.fits(f"accepted_variants[{i}]", variant, limits.ACCEPTED_VARIANT)
    c.values["accepted_variants"] = [v.strip() for v in variants if v.strip()]
    level = c.data.get("level")
    if isinstance(level, str) and level.strip().isdigit():
        level = int(level)
    if isinstance(level, bool) or level not in LEVELS:
        c.error("level", "choose level 1, 2 or 3")
        level = None
    c.values["level"] = level
    c.values["domain"] = c.short("domain")


def clean_mms(c: _Cleaner, by_role: dict[str, list[Any]]) -> None:
    c.values["query"] = c.text("query", required=True, label="user request")
    c.image_list("images", "input", c.data.get("images", by_role.get("input")))
    files = c.data.get("input_files", (c.data.get("constraints") or {}).get("input_files"))
    if isinstance(files, str):
        files = [f.strip() for f in files.replace(",", "\n").splitlines()]
    files = files or []
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        c.error("input_files", "must be a list of file names")
        files = []
    bad = [f for f in files if "/" in f.strip("/") and ".." in f or len(f) > 255]
    if bad:
        c.error("input_files", f"not a file name: {bad[0]!r}")
    names = [f.strip() for f in files if f.strip()]
    c.values["constraints"] = {"input_files": names} if names else {}


def _gt_findings(project: Project, item: Item, text: str) -> list[str]:
    """The ground truth's tag findings, as warnings (``gt: ...``)."""
    if not text.strip() or not project.benchmark.offers.tag_answers:
        return []
    from benchmark.tags import parse, validate
    from benchmark.toolsets.specs import tag_toolset

    parsed = parse(text, project.tag_syntax)  # type: ignore[arg-type]
    toolset = tag_toolset(project.toolset) or None
    documents = sum(1 for r in item.image_refs if r.get("role") == "document")
    try:
        findings = validate(parsed, toolset, image_count=documents)
    except ValueError:
        return []
    return [f"gt: {f.message}" for f in findings]


# --------------------------------------------------------------------------- ids


def _next_external_id(project: Project, source_file: str) -> str:
    """An id in the style of the format's own: LLM-I rows ``<file stem>#<row>``; otherwise the
    newest id's prefix and zero padding with the next free number (ATP-Bench ``atp_0031``,
    Agentic-MME ``0031``, m&m's ``9003``)."""
    items = Item.objects.filter(project=project)
    kind = project.benchmark
    if kind.ids_by_row:
        stem = PurePosixPath(source_file).stem
        n = items.filter(source_file=source_file).count() + 1
        while items.filter(external_id=f"{stem}#{n}").exists():
            n += 1
        return f"{stem}#{n}"
    prefix, width = kind.id_prefix, kind.id_width
    newest = items.order_by("-position", "-id").values_list("external_id", flat=True)[:50]
    for external_id in newest:
        match = _ID_RE.match(external_id)
        if match:
            prefix, width = match.group(1), len(match.group(2))
            break
    numbers = [
        int(m.group(2))
        for e in items.filter(external_id__startswith=prefix).values_list("external_id", flat=True)
        if (m := _ID_RE.match(e)) and m.group(1) == prefix
    ]
    return f"{prefix}{max(numbers, default=0) + 1:0{width}d}"


# --------------------------------------------------------------------------- create


def item_create(
    *,
    project: Project,
    user: User,
    data: dict[str, Any],
    provenance: str = "",
) -> Item:
    """Create a draft item from the field dict ``data`` (see the module docstring).
    ``provenance`` defaults to "written by <username>"; a kept model draft passes
    "drafted by <model>". Raises ``Forbidden`` without the "edit" action and
    :class:`ItemInvalid` (a ``ValidationFailed``: ``errors`` ``{field: message}``, message
    ``"field: message; ..."``) for bad fields. The item's ``warnings`` list the warnings."""
    require(user=user, project=project, action="edit")
    values, cleaner = _clean(project=project, user=user, data=data, item=None)
    external_id = data.get("external_id")
    if external_id not in (None, ""):
        external_id = str(external_id).strip()
        if not external_id or len(external_id) > limits.EXTERNAL_ID.limit:
            raise ItemInvalid(
                {"external_id": f"must be 1 to {limits.EXTERNAL_ID.limit} characters"}
            )
    with transaction.atomic():
        if external_id and Item.objects.filter(project=project, external_id=external_id).exists():
            raise ItemInvalid(
                {"external_id": f"{external_id!r} is already an item of this project"}
            )
        source_file = item_source_file(project, values, str(external_id or ""))
        if not external_id:
            external_id = _next_external_id(project, source_file)
            if project.benchmark.one_file_per_item:  # its file is named by its id
                source_file = item_source_file(project, values, external_id)
        position = (
            Item.objects.filter(project=project).aggregate(top=Max("position"))["top"] or 0
        ) + 1
        item = Item(
            project=project,
            external_id=external_id,
            position=position,
            source_file=source_file,
            status=ItemStatus.DRAFT,
            provenance=(provenance or f"written by {user.get_username()}")[:200],
            **values,
        )
        item.full_clean(exclude=["project"])
        try:
            with transaction.atomic():
                item.save()
        except IntegrityError:
            raise ItemInvalid(
                {"external_id": f"{external_id!r} is already an item of this project"}
            ) from None
        if project.benchmark.answer_in_item:
            Response.objects.create(
                item=item,
                key="gt",
                origin=Origin.GROUND_TRUTH,
                source_file=source_file,
                text=cleaner.gt or "",
            )
    item.warnings = [*cleaner.warnings, *_gt_findings(project, item, cleaner.gt or "")]  # type: ignore[attr-defined]
    return item


# --------------------------------------------------------------------------- versions


def item_snapshot(item: Item) -> dict[str, Any]:
    """The item's editable fields, as a version stores them."""
    return {name: getattr(item, name) for name in EDITABLE_FIELDS}


def item_form_data(item: Item) -> dict[str, Any]:
    """The field dict (module docstring) that gives the item as it is: an editor's start."""
    refs = sorted(item.image_refs or [], key=lambda r: r.get("position") or 0)
    path_sha = {r.get("path"): r.get("sha256") for r in refs}
    constraints = item.constraints or {}
    data: dict[str, Any] = {
        "external_id": item.external_id,
        "query": item.query,
        "modality": item.modality,
        "category": item.category,
        "intent": item.intent,
        "domain": item.domain,
        "level": item.level,
        "expected_answer": item.expected_answer,
        "match_type": item.match_type,
        "accepted_variants": list(item.accepted_variants or []),
        "rubric": [dict(c) for c in item.rubric or [] if isinstance(c, Mapping)],
        "documents": [
            {
                "text": d.get("text", "") if isinstance(d, Mapping) else str(d),
                "images": [
                    path_sha.get(p) or p
                    for p in (d.get("images", []) if isinstance(d, Mapping) else [])
                ],
            }
            for d in item.documents or []
        ],
        "query_images": [r["sha256"] for r in refs if r.get("role") == "query"],
        "images": [r["sha256"] for r in refs if r.get("role") == "input"],
        "image_num": constraints.get("image_num"),
        "tools": list(constraints.get("tools") or []),
        "input_files": list(constraints.get("input_files") or []),
        "format_instruction": "",
    }
    if item.project.benchmark.query_has_format_instruction:
        data["query"], data["format_instruction"] = split_prompt(item.query)
    return data


def _latest(item: Item) -> ItemVersion:
    """The newest version, writing version 1 (the state before the first save, no author)
    when there is none. Call inside a transaction holding the item's row lock."""
    latest = item.versions.order_by("-number").first()  # type: ignore[attr-defined]
    if latest is None:
        latest = ItemVersion.objects.create(
            item=item, number=1, fields=item_snapshot(item), note=item.provenance or "before edits"
        )
    return latest


def latest_number(item: Item) -> int:
    """The number of the item's newest version (1 when none is written yet)."""
    top = item.versions.aggregate(top=Max("number"))["top"]  # type: ignore[attr-defined]
    return int(top or 1)


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    return [
        name
        for name in EDITABLE_FIELDS
        if before.get(name) != after.get(name)
        and (name not in RECORDED_LATER or (name in before and name in after))
    ]


def _conflict(current: ItemVersion, base_version: int) -> StaleVersion:
    who = current.author.get_username() if current.author else "someone"
    previous = current.item.versions.filter(number=current.number - 1).first()  # type: ignore[attr-defined]
    changed = changed_fields(previous.snapshot, current.snapshot) if previous else []
    what = f" (changed {', '.join(changed)})" if changed else ""
    return StaleVersion(
        f"version {current.number} was saved by {who}{what} after you opened version "
        f"{base_version}; nothing of yours was saved. Look at their change, then save again.",
        current=current,
        base_number=base_version,
    )


def _lock(item: Item) -> Item:
    return Item.objects.select_for_update().select_related("project").get(pk=item.pk)


def _save_version(
    locked: Item, user: User, note: str, base_version: int | None, write: Callable[[], None]
) -> ItemVersion:
    """The item's next version (version 1, the state before, first when none is written),
    through the one versioned save; ``write`` changes the locked item first."""

    def create(number: int, base: int | None, _written: Any) -> ItemVersion:
        version = ItemVersion(
            item=locked,
            number=number,
            fields=item_snapshot(locked),
            author=user,
            note=note.strip(),
            base_number=base,
        )
        version.full_clean(exclude=["item"])
        version.save()
        return version

    return version_save(
        latest=_latest(locked),
        versions=locked.versions.select_related("author", "item"),  # type: ignore[attr-defined]
        base_number=base_version,
        stale=lambda current: _conflict(current, base_version or 0),
        before=write,
        create=create,
    )


_FORM_KEYS_OF = {
    "constraints": ("image_num", "tools", "input_files"),
    "image_refs": ("images", "query_images"),
}


def _merged(item: Item, changes: Mapping[str, Any]) -> dict[str, Any]:
    """The item's field dict with ``changes`` on top. A column given as such (the API's and
    the drafting's way) wins over the form keys derived from it."""
    merged = {**item_form_data(item), **changes}
    for column, keys in _FORM_KEYS_OF.items():
        if column in changes:
            for key in keys:
                if key not in changes:
                    merged.pop(key, None)
    return merged


def item_update(
    *,
    item: Item,
    user: User,
    changes: dict[str, Any],
    base_version: int | None,
    note: str = "",
) -> Item:
    """Change some fields (the field dict of the module docstring), made on version
    ``base_version`` (None: the caller does not know; no staleness check). Each save writes
    a new :class:`ItemVersion` (version 1, the state before, on the first save); provenance
    stays. Raises :class:`~benchmark.versions.StaleVersion` (409) when someone saved after
    ``base_version``, :class:`ItemInvalid` for bad fields (only the fields changed are
    checked, so an imported item's other odd fields do not block an edit) and
    ``ValidationFailed`` when nothing changed. Returns the updated item with ``warnings``
    and ``version`` set."""
    require(user=user, project=item.project, action="edit", item=item)
    if "external_id" in changes and changes["external_id"] != item.external_id:
        raise ItemInvalid({"external_id": "an item's id cannot change (exports refer to it)"})
    merged = _merged(item, changes)
    touched = set(changes)
    if touched & {"images", "query_images", "image_refs", "modality"}:
        touched |= {"images", "query_images", "modality"}
    values, cleaner = _clean(
        project=item.project, user=user, data=merged, item=item, touched=touched
    )
    with transaction.atomic():
        locked = _lock(item)

        def write() -> None:
            before = item_snapshot(locked)
            for key, value in values.items():
                if key in EDITABLE_FIELDS and (key in changes or _derived(key, changes)):
                    setattr(locked, key, value)
            if not changed_fields(before, item_snapshot(locked)):
                raise ValidationFailed("nothing to save: no field changed")
            locked.full_clean(exclude=["project"])
            locked.save()

        version = _save_version(locked, user, note, base_version, write)
    locked.warnings = cleaner.warnings  # type: ignore[attr-defined]
    locked.version = version  # type: ignore[attr-defined]
    return locked


def item_audio_refs_save(
    *,
    item: Item,
    user: User,
    refs: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    note: str,
) -> Item:
    """Change the item's audio files (``refs`` gives the new list from the current one, read
    under the item's row lock) as a new version like any other edit (version 1, the state
    before, on the first save); the caller checked the user may edit the item. Returns the
    item with ``version`` set (None when the list did not change: no version is written)."""
    with transaction.atomic():
        locked = _lock(item)
        after = refs([dict(r) for r in locked.audio_refs or []])
        version = None
        if after != list(locked.audio_refs or []):

            def write() -> None:
                locked.audio_refs = after
                locked.save(update_fields=["audio_refs", "updated_at"])

            version = _save_version(locked, user, note, None, write)
    locked.version = version  # type: ignore[attr-defined]
    return locked


_DERIVED = {
    "image_refs": {"images", "query_images", "documents", "image_refs"},
    "modality": {"images", "query_images", "image_refs"},
    "documents": {"documents", "image_refs"},
    "query": {"query", "format_instruction"},
    "constraints": {"constraints", "image_num", "tools", "input_files"},
}


def _derived(column: str, changes: Mapping[str, Any]) -> bool:
    return bool(_DERIVED.get(column, set()) & set(changes))


def item_revert(*, item: Item, user: User, number: int, base_version: int | None) -> Item:
    """Write a new version equal to version ``number``'s snapshot (earlier versions stay).
    Everyone who may edit the item may revert: it loses nothing. ``NotFound`` for a missing
    version, ``ValidationFailed`` when the item already is that version."""
    require(user=user, project=item.project, action="edit", item=item)
    with transaction.atomic():
        locked = _lock(item)

        def write() -> None:
            # looked up after the save read (and, before any edit, recorded) version 1
            target = locked.versions.filter(number=number).first()  # type: ignore[attr-defined]
            if target is None:
                raise NotFound(f"this item has no version {number}")
            if not changed_fields(item_snapshot(locked), target.snapshot):
                current = latest_number(locked)
                raise ValidationFailed(f"version {current} already is version {number}")
            for key in EDITABLE_FIELDS:
                if key in target.snapshot:
                    setattr(locked, key, target.snapshot[key])
            locked.full_clean(exclude=["project"])
            locked.save()

        version = _save_version(locked, user, f"Reverted to version {number}", base_version, write)
    locked.version = version  # type: ignore[attr-defined]
    return locked


def item_warnings(*, item: Item) -> list[str]:
    """The warnings the item's fields give as they are (see ``item.warnings`` of a save): its
    vague criteria, a rubric of other than ten criteria, the ground truth's tag findings."""
    out: list[str] = []
    rubric = [c for c in item.rubric or [] if isinstance(c, Mapping)]
    for i, criterion in enumerate(rubric):
        for warning in criterion_warnings(str(criterion.get("text", ""))):
            out.append(f"rubric.{criterion.get('key') or f'r{i + 1}'}: {warning}")
    if rubric and len(rubric) != MAX_CRITERIA:
        out.append(f"rubric: {len(rubric)} criteria; LLMI-Bench has ten per prompt (r1..r10)")
    gt = next((r for r in item.responses.all() if r.key == "gt"), None)  # type: ignore[attr-defined]
    if gt is not None:
        out += _gt_findings(item.project, item, gt.text)
    return out
