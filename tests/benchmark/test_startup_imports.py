"""Start-up stays light: loading the site (settings, apps, the root URLconf with every view,
the template tag libraries) or a data command does not import the heavy libraries, which the
functions that use them import when they run; and the data commands skip the system checks,
which would load the whole URLconf on every call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import load_command_class

ROOT = Path(__file__).resolve().parents[2]
HEAVY = [
    *("sklearn", "scipy", "statsmodels", "matplotlib", "openai", "pandas", "krippendorff"),
    "celery",  # loaded when a job is enqueued or a worker starts
]

DATA_COMMANDS = [
    ("benchmark", "import_dataset"),
    ("benchmark", "export_dataset"),
    ("benchmark", "create_project"),
    ("benchmark", "score_plans"),
    ("benchmark", "check_plan"),
    ("benchmark", "check_response"),
    ("benchmark", "jobs_sweep"),
    ("benchmark", "seed_builtin"),
    ("benchmark", "backup"),
    ("benchmark", "restore"),
    ("review", "score_responses"),
    ("review", "score_runs"),
    ("review", "judge"),
    ("review", "render_answers"),
    ("review", "release"),
    ("review", "release_verify"),
    ("review", "oracle_test"),
    ("review", "load_demo"),
]

SITE = """
import django
django.setup()
from django.conf import settings
from django.template import engines
from django.urls import get_resolver
from django.utils.module_loading import import_string

get_resolver().url_patterns  # the root URLconf and every view module it includes
import_string(settings.WSGI_APPLICATION)
for engine in engines.all():  # every template tag library
    getattr(engine, "engine", engine).template_libraries
"""

COMMANDS = """
import django
django.setup()
from django.core.management import load_command_class
for app, name in {commands!r}:
    load_command_class(app, name)
"""

REPORT = """
import json, sys
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r}))))
"""


def heavy_modules_after(code: str) -> list[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "benchmark.settings"}
    result = subprocess.run(
        [sys.executable, "-c", code + REPORT.format(heavy=HEAVY)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_loading_the_site_imports_no_heavy_library() -> None:
    assert heavy_modules_after(SITE) == []


def test_loading_the_data_commands_imports_no_heavy_library() -> None:
    assert heavy_modules_after(COMMANDS.format(commands=DATA_COMMANDS)) == []


def test_the_report_sees_a_heavy_library_when_one_is_imported() -> None:
    """The two checks above can fail: the same probe names what an import brought in."""
    code = "from benchmark.metrics import mms\nmms.plan_accuracy([(['a'], ['a'])])\n"
    assert "sklearn" in heavy_modules_after(code)


@pytest.mark.parametrize(("app", "name"), DATA_COMMANDS)
def test_data_commands_skip_the_system_checks(app: str, name: str) -> None:
    assert load_command_class(app, name).requires_system_checks == []


#: What the apps' ``ready()`` hooks register by name (job kinds, project page hooks, judging
#: screens, history sources, blind verification's rules, the editors' draft checks), not by
#: importing it: views and the services and selectors behind them; and what a module they
#: import uses in one function only (answer matching's Agentic-MME metric, and its imaging).
NOT_AT_SETUP = [
    "benchmark.projects.views",
    "benchmark.datasets.services",
    "benchmark.items.history",
    "annotation.judgment_tasks.views",
    "annotation.model_drafts.services",
    "annotation.verification.selectors",
    "annotation.verification.services",
    "annotation.trajectories.selectors",
    "annotation.plan_editor.selectors",
    "benchmark.metrics.agentic_mme",
    "PIL.Image",
]

SETUP = """
import django
django.setup()
import json, sys
print(json.dumps(sorted(set({names!r}) & set(sys.modules))))
"""


def modules_after_setup(names: list[str]) -> list[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "benchmark.settings"}
    result = subprocess.run(
        [sys.executable, "-c", SETUP.format(names=names)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_setting_django_up_imports_no_view_nor_the_services_of_the_registered_kinds() -> None:
    assert modules_after_setup(NOT_AT_SETUP) == []


def test_the_setup_probe_sees_a_module_the_apps_import() -> None:
    """The check above can fail: the same probe names a module that setting up imports."""
    assert modules_after_setup(["benchmark.models", "benchmark.jobs.kinds"]) == [
        "benchmark.jobs.kinds",
        "benchmark.models",
    ]
