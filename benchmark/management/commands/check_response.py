"""python manage.py check_response --syntax {atp,llmi} [--images N] [--image-num K] FILE

Parses and validates the tool tags in one answer and prints the findings as a JSON list of
``{code, message, start, end, tag, severity}`` objects (plus ``score`` on an
``image_count_constraint`` finding). ``start``/``end`` are character offsets into FILE's text.
Uses the built-in ATP-Bench / LLM-I toolsets in ``benchmark.tags``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.tags import SYNTAXES, builtin_toolset, parse, parse_image_num, validate


class Command(BaseCommand):
    help = "Check the tool tags in one answer and print the findings as JSON."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the answer text (UTF-8); '-' reads standard input")
        parser.add_argument("--syntax", required=True, choices=SYNTAXES)
        parser.add_argument(
            "--images",
            type=int,
            default=None,
            help="ATP-Bench: the item's number of document images; LLM-I: input images",
        )
        parser.add_argument(
            "--image-num",
            default=None,
            help="LLM-I image-number constraint: -1 none, 0 any, n exactly n, 99 or inf "
            "at least one",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        syntax = options["syntax"]
        text = self._read(options["file"])
        images = options["images"]
        if images is not None and images < 0:
            raise CommandError("--images must be >= 0")
        image_num = options["image_num"]
        if image_num is not None:
            if syntax != "llmi":
                raise CommandError("--image-num applies to --syntax llmi only")
            try:
                parse_image_num(image_num)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        kwargs: dict[str, Any] = {}
        if syntax == "atp":
            kwargs["image_count"] = images
        else:
            kwargs["input_images"] = images or 0
            kwargs["image_num"] = image_num
        findings = validate(parse(text, syntax), builtin_toolset(syntax), **kwargs)
        self.stdout.write(json.dumps([f.to_dict() for f in findings], ensure_ascii=False, indent=2))

    @staticmethod
    def _read(name: str) -> str:
        if name == "-":
            return sys.stdin.read()
        path = Path(name)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CommandError(f"{name}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{name}: cannot read it as UTF-8 text ({exc})") from None
