"""python manage.py score_plans --gold GOLD --pred PRED [--plan-format F] [--alternatives]

Prints m&m's plan metrics as a JSON object (see ``benchmark.metrics.mms``). GOLD holds m&m's
rows (``tasks.json``: ``id``, ``plan_str``, ``alt_plans_str``); PRED holds ``{id,
prediction}`` lines. ``--alternatives`` scores each item against the best of its gold and
alternative plans. The toolset (tool-F1 classes, verification) is found as for check_plan.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.management.commands.check_plan import add_toolset_arguments, command_toolset
from benchmark.metrics.mms import read_gold, read_predictions, score_plans


class Command(BaseCommand):
    help = "Score predicted plans against gold plans with m&m's metrics; prints JSON."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--gold", type=Path, required=True, help="m&m's rows (JSON/JSONL)")
        parser.add_argument("--pred", type=Path, required=True, help="{id, prediction} lines")
        parser.add_argument(
            "--alternatives",
            action="store_true",
            help="best match over the gold plan and its alt_plans_str",
        )
        add_toolset_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        toolset = command_toolset(options["toolset"], options["metadata"], options["graph"])
        try:
            gold, alternatives = read_gold(options["gold"])
            predictions = read_predictions(options["pred"])
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        result = score_plans(
            gold,
            predictions,
            toolset,
            plan_format=options["plan_format"],
            alternatives=alternatives if options["alternatives"] else None,
        )
        self.stdout.write(json.dumps(result, indent=2, ensure_ascii=False))
