"""The item form: one page for every kind, read from the POST into the field dict of
``benchmark.items.services`` (which validates every field and names it in its messages).

Documents are blocks of the form in page order: ``doc_key`` (a stable key per block),
``doc_text``, ``doc_keep_<key>`` (sha256 of images the document already has, kept) and
``doc_images_<key>`` (new uploads). The JS (static/js/items.js) adds, removes and reorders
blocks in the page; without it the ``op`` buttons do the same through the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict
from django.utils.datastructures import MultiValueDict

from benchmark.items.services import MATCH_TYPES, MAX_CRITERIA
from benchmark.kinds.base import resolve
from benchmark.models import Project

IMAGE_NUM_CHOICES = (
    ("", "Not set (LLMI-Bench rows)"),
    ("-1", "-1: no images"),
    ("0", "0: any number"),
    ("n", "n: exactly n images"),
    ("at_least_one", "At least one image"),
)


#: Every value the form template reads, so none is missing.
DEFAULTS: dict[str, Any] = {
    "external_id": "", "query": "", "modality": "text", "category": "", "intent": "",
    "domain": "", "level": None, "expected_answer": "", "match_type": "", "gt": "",
    "format_instruction": "", "keep_images": [], "keep_query_images": [], "images": [],
    "query_images": [], "rubric": [], "image_num_kind": "", "image_num_n": "", "tools": [],
    "accepted_variants_text": "", "input_files_text": "",
}  # fmt: skip


@dataclass
class DocumentRow:
    key: str
    text: str = ""
    keep: list[str] = field(default_factory=list)
    error: str = ""


@dataclass
class ItemFormState:
    """What the form shows: the values as typed (or as stored) and the errors by field."""

    values: dict[str, Any]
    documents: list[DocumentRow]
    errors: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def criteria(self) -> list[dict[str, str]]:
        rubric = self.values.get("rubric") or []
        texts = [c.get("text", "") if isinstance(c, dict) else str(c) for c in rubric]
        texts += [""] * (MAX_CRITERIA - len(texts))
        return [
            {"key": f"r{i + 1}", "text": t, "error": self.errors.get(f"rubric.r{i + 1}", "")}
            for i, t in enumerate(texts[:MAX_CRITERIA])
        ]

    def set_errors(self, errors: dict[str, str]) -> None:
        """The errors by field; each document's also on its row."""
        self.errors = errors
        for index, doc in enumerate(self.documents):
            prefix = f"documents[{index}]"
            doc.error = "; ".join(m for f, m in errors.items() if f.startswith(prefix))


def state_from_data(data: dict[str, Any]) -> ItemFormState:
    """The form state for a field dict (``item_form_data`` of an item, or empty)."""
    docs = [
        DocumentRow(key=str(i), text=d.get("text", ""), keep=list(d.get("images") or []))
        for i, d in enumerate(data.get("documents") or [])
    ]
    values = {**DEFAULTS, **data}
    num = values.get("image_num")
    values["image_num_kind"], values["image_num_n"] = _image_num_kind(num)
    if isinstance(values.get("accepted_variants"), list):
        values["accepted_variants_text"] = "\n".join(values["accepted_variants"])
    if isinstance(values.get("input_files"), list):
        values["input_files_text"] = "\n".join(values["input_files"])
    if isinstance(values.get("tools"), list):
        values["tools"] = list(values["tools"])
    return ItemFormState(values=values, documents=docs)


def _image_num_kind(value: Any) -> tuple[str, str]:
    if value in (None, ""):
        return "", ""
    text = str(value).strip().lower()
    if text in ("99", "inf", "at_least_one"):
        return "at_least_one", ""
    if text in ("-1", "0"):
        return text, ""
    return "n", text


def data_from_post(
    project: Project, post: QueryDict, files: MultiValueDict[str, Any]
) -> tuple[dict[str, Any], ItemFormState]:
    """The field dict for the service, and the state to show the form again with."""
    data: dict[str, Any] = {"query": post.get("query", "")}
    external_id = str(post.get("external_id") or "").strip()
    if external_id:
        data["external_id"] = external_id
    docs: list[DocumentRow] = []
    resolve(project.benchmark.item_form_fields)(post, files, data, docs)
    values = {
        **DEFAULTS,
        **{k: v for k, v in data.items() if k not in ("documents", "query_images", "images")},
    }
    values["keep_images"] = post.getlist("keep_images")
    values["keep_query_images"] = post.getlist("keep_query_images")
    values["rubric"] = [{"text": t} for t in data.get("rubric", [])]
    values["image_num_kind"] = post.get("image_num_kind", "")
    values["image_num_n"] = post.get("image_num_n", "")
    values["accepted_variants_text"] = post.get("accepted_variants", "")
    values["input_files_text"] = post.get("input_files", "")
    values["tools"] = post.getlist("tools")
    return data, ItemFormState(values=values, documents=docs)


def apply_document_op(state: ItemFormState, op: str) -> bool:
    """The no-JS document buttons: ``add``, ``remove:<key>``, ``up:<key>``, ``down:<key>``.
    True when ``op`` was one of them."""
    docs = state.documents
    if op == "add":
        taken = {d.key for d in docs}
        n = len(docs)
        while str(n) in taken:
            n += 1
        docs.append(DocumentRow(key=str(n)))
        return True
    name, _, key = op.partition(":")
    index = next((i for i, d in enumerate(docs) if d.key == key), None)
    if index is None or name not in ("remove", "up", "down"):
        return False
    if name == "remove":
        docs.pop(index)
    else:
        other = index - 1 if name == "up" else index + 1
        if 0 <= other < len(docs):
            docs[index], docs[other] = docs[other], docs[index]
    return True


def choices(project: Project) -> dict[str, Any]:
    """The options the form offers: taxonomy terms, match types, tools."""
    from benchmark.models import TaxonomyTerm, TermKind

    categories: list[str] = []
    intents: list[tuple[str, str]] = []
    if project.taxonomy_id is not None:
        for kind, name, parent in TaxonomyTerm.objects.filter(
            taxonomy_id=project.taxonomy_id, kind__in=[TermKind.CATEGORY, TermKind.INTENT]
        ).values_list("kind", "name", "parent__name"):
            if kind == TermKind.CATEGORY:
                categories.append(name)
            else:
                intents.append((name, parent or ""))
    return {
        "categories": categories,
        "intents": intents,
        "match_types": MATCH_TYPES,
        "levels": (1, 2, 3),
        "image_num_choices": IMAGE_NUM_CHOICES,
        "tools": list(project.toolset.tools.values_list("name", flat=True)),
    }


def same_value(key: str, posted: Any, current: Any) -> bool:
    """Whether a posted field equals the item's (so an edit leaves it alone): the rubric's
    empty trailing inputs and an equivalent image-number constraint do not count as changes."""
    if key == "rubric":
        texts = [str(t).strip() for t in posted or []]
        while texts and not texts[-1]:
            texts.pop()
        return texts == [str(c.get("text", "")).strip() for c in current or []]
    if key == "image_num":
        return _image_num_kind(posted) == _image_num_kind(current)
    if key in ("accepted_variants", "input_files"):
        return [v.strip() for v in posted or [] if v.strip()] == list(current or [])
    return bool(posted == current)


# The kinds' own item fields (``BenchmarkKind.item_form_fields``): each adds its fields from
# the POST to ``data`` (and the document rows to show again to ``docs``).


def atp_fields(
    post: QueryDict, files: MultiValueDict[str, Any], data: dict[str, Any], docs: list[DocumentRow]
) -> None:
    data["category"] = post.get("category", "")
    data["intent"] = post.get("intent", "")
    data["modality"] = post.get("modality", "")
    data["query_images"] = [*post.getlist("keep_query_images"), *files.getlist("query_images")]
    data["gt"] = post.get("gt", "")
    data["documents"] = []
    for key, text in zip(post.getlist("doc_key"), post.getlist("doc_text"), strict=False):
        keep = post.getlist(f"doc_keep_{key}")
        docs.append(DocumentRow(key=key, text=text, keep=keep))
        data["documents"].append(
            {"text": text, "images": [*keep, *files.getlist(f"doc_images_{key}")]}
        )


def _input_images(post: QueryDict, files: MultiValueDict[str, Any], data: dict[str, Any]) -> None:
    data["images"] = [*post.getlist("keep_images"), *files.getlist("images")]


def llmi_fields(
    post: QueryDict, files: MultiValueDict[str, Any], data: dict[str, Any], docs: list[DocumentRow]
) -> None:
    _input_images(post, files, data)
    data["rubric"] = [post.get(f"r{i + 1}", "") for i in range(MAX_CRITERIA)]
    kind = post.get("image_num_kind", "")
    data["image_num"] = post.get("image_num_n", "").strip() if kind == "n" else kind
    if kind == "n" and not data["image_num"]:
        data["image_num"] = "n"  # the service names the field
    data["tools"] = post.getlist("tools")


def agentic_mme_fields(
    post: QueryDict, files: MultiValueDict[str, Any], data: dict[str, Any], docs: list[DocumentRow]
) -> None:
    _input_images(post, files, data)
    data["format_instruction"] = post.get("format_instruction", "")
    data["expected_answer"] = post.get("expected_answer", "")
    data["match_type"] = post.get("match_type", "")
    data["accepted_variants"] = post.get("accepted_variants", "").splitlines()
    data["level"] = post.get("level", "")
    data["domain"] = post.get("domain", "")


def mms_fields(
    post: QueryDict, files: MultiValueDict[str, Any], data: dict[str, Any], docs: list[DocumentRow]
) -> None:
    _input_images(post, files, data)
    data["input_files"] = post.get("input_files", "").splitlines()
