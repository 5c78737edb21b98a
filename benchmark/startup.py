"""What a web process does once when it starts, before its first request (``benchmark.wsgi``,
``benchmark.asgi``): import the URLconf (every feature's views) and build its reverse map.

Django does both lazily, on the first request a process serves, so that request paid for
importing every view module and the libraries they import (DRF, drf-spectacular, ...): seconds
on a busy machine, whatever the page (the comparison run page's first view took 5.6-13 s in
``tests/perf/bench_model_compare.py``, later views a tenth of a second). A gunicorn worker
now pays this when it boots, not a person."""

from __future__ import annotations


def warm_up() -> None:
    """Load the root URLconf and fill its reverse lookup tables (idempotent)."""
    from django.urls import get_resolver

    resolver = get_resolver()
    resolver.url_patterns  # noqa: B018 - imports every included URLconf and its views
    resolver.reverse_dict  # noqa: B018 - builds the reverse map the first {% url %} needs
