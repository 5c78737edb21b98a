"""python manage.py load_demo: the demo users, projects and datasets (idempotent)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.exceptions import DomainError
from benchmark.formats import FormatError
from review.demo import PASSWORD_ENV, demo_load


class Command(BaseCommand):
    help = (
        "Load the demo: built-in toolsets and taxonomies, users admin, reviewer and "
        "annotator1-3, one project per benchmark and its demo dataset. Re-running adds "
        f"nothing and keeps passwords (--reset-passwords gives the demo users new ones). Set "
        f"{PASSWORD_ENV} to give new (or reset) demo users that password."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset-passwords",
            action="store_true",
            help="give every demo user a new password (random, or "
            f"{PASSWORD_ENV} when set) and print them",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = demo_load(stdout=self.stdout, reset_passwords=options["reset_passwords"])
        except (FormatError, DomainError) as exc:
            raise CommandError(f"demo not loaded: {exc}") from None
        if result["passwords"]:
            self.stdout.write("Note the passwords above; they are not stored anywhere else.")
        else:
            self.stdout.write(
                "The demo users keep their passwords. Lost them? `bin/run "
                "--reset-demo-passwords` (or `python manage.py load_demo --reset-passwords`) "
                "gives them new ones."
            )
        self.stdout.write(self.style.SUCCESS("Demo ready."))
