"""python manage.py seed_builtin: create the built-in toolsets and taxonomies (idempotent)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from benchmark.builtin import taxonomies_ensure, toolsets_ensure


class Command(BaseCommand):
    help = (
        "Create the built-in toolsets (atp, llmi, agentic-mme, mms) and taxonomies. Only "
        "missing rows are created; edits made since are kept."
    )
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        for name, toolset in toolsets_ensure().items():
            self.stdout.write(
                f"toolset {name}: {toolset.tools.count()} tools, {toolset.edges.count()} edges"
            )
        for name, taxonomy in taxonomies_ensure().items():
            kinds = taxonomy.terms.values_list("kind", flat=True)
            summary = ", ".join(f"{kinds.filter(kind=k).count()} {k}" for k in sorted(set(kinds)))
            self.stdout.write(f"taxonomy {name}: {summary or 'free (no terms)'}")
