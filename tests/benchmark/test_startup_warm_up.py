"""A web process imports its URLconf and builds the reverse map when it starts
(``benchmark.startup.warm_up``, called by ``benchmark.wsgi`` and ``benchmark.asgi``), so its
first request does not pay for importing every view."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wsgi_module_loads_the_urlconf_before_any_request() -> None:
    # A fresh interpreter: importing benchmark.wsgi (what gunicorn does when a worker boots)
    # leaves the views imported and the reverse map built; no request has been served.
    code = (
        "import sys, benchmark.wsgi\n"
        "from django.urls import get_resolver\n"
        "r = get_resolver()\n"
        "print('review.model_compare.views' in sys.modules, "
        "'url_patterns' in r.__dict__, r._populated)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "True", "True"]


def test_without_the_warm_up_django_leaves_it_to_the_first_request() -> None:
    # What warm_up changes: after django.setup() alone nothing of the URLconf is loaded.
    code = (
        "import os, sys, django\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'benchmark.settings')\n"
        "django.setup()\n"
        "print('review.model_compare.views' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False"]


def test_warm_up_is_idempotent() -> None:
    startup = importlib.import_module("benchmark.startup")
    startup.warm_up()
    startup.warm_up()
