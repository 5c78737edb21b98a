"""python manage.py render_answers --project NAME [--model M]... [--answers FILE]...
[--workers N] OUT_DIR

Renders a project's model answers (every tool call executed, or drawn as a labelled
placeholder or failure card; see docs/reference/rendering.md) as a rendering job, in this
process, then writes one standalone HTML file per answer (images and CSS inlined) into
OUT_DIR, and ``index.json``::

    {"project": ..., "job": id, "providers": {tool: provider},
     "answers": [{"file": "q001__gpt-4o.html", "response_id": ..., "item": ..., "model": ...,
                  "error": "", "calls": [{"index": 0, "tool": "reference",
                  "status": "rendered" | "placeholder" | "failed", "reason": ..., "message": ...,
                  "image": sha256 or null, "provider": ...}, ...]}, ...]}

``--model`` renders only those models' answers (default: every model's); ``--answers`` first
imports answer files (the formats ``score_responses`` reads) as the project's model answers.
Each takes one value and may be repeated (``--answers a.json --answers b.json``), so that
OUT_DIR may come last.
Answers already rendered with the same text, images and providers are not rendered again
(their files are still written), and executed tool calls come from the cache. Bad input exits
non-zero with a message.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.exceptions import DomainError
from benchmark.models import JobStatus, Project, Response
from review.answer_rendering import selectors
from review.answer_rendering import services as rendering_services
from review.management.commands.score_responses import _files

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _safe(text: str, limit: int = 80) -> str:
    return _UNSAFE.sub("-", text).strip("-.")[:limit] or "x"


class Command(BaseCommand):
    help = "Render a project's model answers into standalone HTML files and index.json."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out_dir", type=Path, help="folder for the HTML files and index.json")
        parser.add_argument("--project", required=True, help="the project's name")
        # One value per option, repeated for more: a list option before the positional OUT_DIR
        # would take OUT_DIR for one of its values (`--answers F OUT_DIR`, the order docs/reference/commands.md prints).
        parser.add_argument(
            "--model",
            action="append",
            default=[],
            dest="models",
            metavar="M",
            help="render only this model's answers; repeat for more (default: every model's)",
        )
        parser.add_argument(
            "--answers",
            action="append",
            type=Path,
            default=[],
            metavar="FILE",
            help="an answer file to import first; repeat for more",
        )
        parser.add_argument(
            "--workers", type=int, default=None, help="tool calls at once (default: 2 x CPUs)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            names = ", ".join(Project.objects.order_by("name").values_list("name", flat=True)[:20])
            raise CommandError(
                f"no project named {options['project']!r} (projects: {names or 'none'})"
            )
        out_dir: Path = options["out_dir"]
        if out_dir.exists() and not out_dir.is_dir():
            raise CommandError(f"{out_dir} exists and is not a folder")
        try:
            job = rendering_services.rendering_start(
                project=project,
                user=None,
                models=options["models"],
                files=_files(options["answers"]) if options["answers"] else (),
                workers=options["workers"],
                enqueue=False,
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        job = rendering_services.rendering_execute(job=job)
        if job.status != JobStatus.SUCCEEDED:
            raise CommandError(f"the rendering failed: {job.error}")
        result = job.result or {}
        self.stderr.write(
            f"{result.get('answers', 0)} answers: {result.get('rendered', 0)} rendered anew, "
            f"{result.get('unchanged', 0)} unchanged; calls {json.dumps(result.get('calls', {}))}"
        )
        out_dir.mkdir(parents=True, exist_ok=True)
        ids = rendering_services.rendering_selection_ids(project=project, params=job.params)
        answers = []
        used: set[str] = set()
        for pk in ids:
            response = Response.objects.select_related("item").get(pk=pk)
            rendering = selectors.rendering_newest(response=response)
            model = response.model_name or response.key
            base = f"{_safe(response.item.external_id)}__{_safe(model)}"
            name, n = f"{base}.html", 1
            while name in used:
                n += 1
                name = f"{base}-{n}.html"
            used.add(name)
            entry: dict[str, Any] = {
                "file": name,
                "response_id": response.pk,
                "item": response.item.external_id,
                "model": model,
                "error": "",
                "calls": [],
            }
            if rendering is None:
                entry["error"] = "not rendered"
            else:
                entry["error"] = rendering.error
                entry["calls"] = [
                    {
                        "index": i,
                        "tool": call.get("tool", ""),
                        "status": call.get("status"),
                        "reason": call.get("reason", ""),
                        "message": call.get("message", ""),
                        "image": call.get("image") if call.get("status") == "rendered" else None,
                        "provider": call.get("provider", ""),
                    }
                    for i, call in enumerate(rendering.calls or [])
                ]
                html = selectors.rendering_standalone(rendering=rendering, response=response)
                (out_dir / name).write_text(html, encoding="utf-8")
            answers.append(entry)
        index = {
            "project": project.name,
            "job": job.pk,
            "providers": result.get("providers", {}),
            "answers": answers,
        }
        (out_dir / "index.json").write_text(
            json.dumps(index, ensure_ascii=False, indent=1), encoding="utf-8"
        )
        self.stdout.write(f"wrote {len(answers)} HTML files and index.json to {out_dir}")
