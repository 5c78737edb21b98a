"""The built-in taxonomies: ATP-Bench's categories and intents, Agentic-MME's domains and
levels, and empty (free) taxonomies for LLM-I and m&m's projects.

``taxonomies_ensure()`` creates whatever is missing and changes nothing that exists, so
admins' edits to terms survive a re-run.
"""

from __future__ import annotations

from django.db import transaction

from benchmark.models import Taxonomy, TaxonomyTerm, TermKind

# ATP-Bench, Table 9 (Appendix A): eight categories and their 25 intents, names as published.
ATP_INTENTS: dict[str, list[str]] = {
    "Academic": ["ComparativeAnalysis", "Component", "DatasetDistribution", "Framework", "Results"],
    "Manual": ["OperationGuide", "Function", "Component"],
    "Recipe": ["Guideline", "Ingredient"],
    "Fashion": ["Hairstyle", "Makeup", "Outfit", "Photography"],
    "Renovation": ["Element", "Style"],
    "Product": ["ProductIntro", "Comparison", "Authenticity"],
    "Travel": ["Planning", "Navigation"],
    "Encyclopedia": ["Animal", "Architecture", "Biography", "Geography"],
}

# Agentic-MME's six major domains (the released dataset card), largest share first.
AGENTIC_MME_DOMAINS = ["Diagram", "Finance", "Society", "Life", "Culture", "Science"]

# Agentic-MME §2.2, in our words. Term names are the level numbers, matching Item.level.
AGENTIC_MME_LEVELS: dict[str, str] = {
    "1": (
        "Level 1: one decisive visual operation (a single crop, rotation or the like) "
        "brings out the evidence; no web search is needed."
    ),
    "2": (
        "Level 2: a short, mostly linear workflow. The agent manipulates the image in a few "
        "steps to get a cue and may search the web once for a fact the image does not hold "
        "(e.g. crop, rotate, then search)."
    ),
    "3": (
        "Level 3: visual work and web search interleave over several rounds and simple "
        "chaining is not enough: clues spread across regions or images, advanced image "
        "analysis, or a hypothesis-and-verification loop under visual ambiguity."
    ),
}

DESCRIPTIONS = {
    "atp": "ATP-Bench's 8 categories and 25 visual-critical intents (Table 9).",
    "agentic-mme": "Agentic-MME's 6 major domains and 3 difficulty levels (§2.2).",
    "llmi": "Free taxonomy for LLM-I projects: add categories as the project needs them.",
    "mms": "Free taxonomy for m&m's projects: add categories as the project needs them.",
}


def _unique_per_parent() -> bool:
    """True when the database lets two intents share a name under different categories."""
    return any(
        "parent" in getattr(constraint, "fields", ())
        for constraint in TaxonomyTerm._meta.constraints
    )


def _term(
    taxonomy: Taxonomy,
    *,
    kind: str,
    name: str,
    position: int,
    parent: TaxonomyTerm | None = None,
    description: str = "",
) -> TaxonomyTerm:
    # Look a term up the way the database keeps it unique, so a term an admin has moved to
    # another parent is found rather than duplicated.
    lookup = TaxonomyTerm.objects.filter(taxonomy=taxonomy, kind=kind, name=name)
    if _unique_per_parent():
        lookup = lookup.filter(parent=parent)
    term = lookup.first()
    if term is None:
        term = TaxonomyTerm(
            taxonomy=taxonomy,
            kind=kind,
            name=name,
            parent=parent,
            position=position,
            description=description,
        )
        term.full_clean()
        term.save()
    return term


def atp_intent_term_name(category: str, intent: str) -> str:
    """The term name under which an ATP intent is stored.

    Table 9 uses the intent name "Component" under both Academic and Manual. While terms are
    unique by (taxonomy, kind, name), the repeat is stored as "Component (Manual)"; once the
    constraint includes the parent, every intent is stored under its published name."""
    if _unique_per_parent():
        return intent
    first_category = next(c for c, intents in ATP_INTENTS.items() if intent in intents)
    return intent if category == first_category else f"{intent} ({category})"


def _ensure_atp(taxonomy: Taxonomy) -> None:
    position = 0
    for cat_position, (category, intents) in enumerate(ATP_INTENTS.items()):
        parent = _term(taxonomy, kind=TermKind.CATEGORY, name=category, position=cat_position)
        for intent in intents:
            position += 1
            name = atp_intent_term_name(category, intent)
            description = "" if name == intent else f'Published in Table 9 as "{intent}".'
            if name == intent:
                # Stored under a qualified name before the constraint allowed the repeat.
                TaxonomyTerm.objects.filter(
                    taxonomy=taxonomy,
                    kind=TermKind.INTENT,
                    parent=parent,
                    name=f"{intent} ({category})",
                    description=f'Published in Table 9 as "{intent}".',
                ).update(name=intent, description="")
            _term(
                taxonomy,
                kind=TermKind.INTENT,
                name=name,
                parent=parent,
                position=position,
                description=description,
            )


def _ensure_agentic_mme(taxonomy: Taxonomy) -> None:
    for position, domain in enumerate(AGENTIC_MME_DOMAINS):
        _term(taxonomy, kind=TermKind.DOMAIN, name=domain, position=position)
    for name, description in AGENTIC_MME_LEVELS.items():
        _term(taxonomy, kind=TermKind.LEVEL, name=name, position=int(name), description=description)


@transaction.atomic
def taxonomies_ensure() -> dict[str, Taxonomy]:
    """Create the built-in taxonomies and any of their terms that are missing."""
    result: dict[str, Taxonomy] = {}
    for name, description in DESCRIPTIONS.items():
        taxonomy, _ = Taxonomy.objects.get_or_create(
            name=name, defaults={"description": description, "builtin": True}
        )
        if name == "atp":
            _ensure_atp(taxonomy)
        elif name == "agentic-mme":
            _ensure_agentic_mme(taxonomy)
        result[name] = taxonomy
    return result
