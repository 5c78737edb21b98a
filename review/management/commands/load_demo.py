"""python manage.py load_demo: the demo users, projects and datasets (idempotent)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from benchmark.exceptions import DomainError
from benchmark.formats import FormatError
from review.demo import DEMO_URL, PASSWORD_ENV, demo_load


class Command(BaseCommand):
    help = (
        "Load the demo: built-in toolsets and taxonomies, users admin, reviewer and "
        "annotator1-3, one project per benchmark and its demo dataset. Re-running adds "
        f"nothing and keeps passwords. Set {PASSWORD_ENV} to give new demo users that password."
    )
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = demo_load(stdout=self.stdout)
        except (FormatError, DomainError) as exc:
            raise CommandError(f"demo not loaded: {exc}") from None
        if result["passwords"]:
            self.stdout.write("Note the passwords above; they are not stored anywhere else.")
        self.stdout.write(
            self.style.SUCCESS(f"Demo ready. Run `python manage.py runserver` and open {DEMO_URL}")
        )
