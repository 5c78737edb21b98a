"""The Django project package. Its Celery app (``benchmark.celery``) is loaded when a job is
enqueued or a worker starts (``celery -A benchmark`` finds ``benchmark.celery.app``), not when
Django starts: importing Celery costs ~0.15 s on every command and server start."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "celery_app":
        from benchmark.celery import app

        return app
    raise AttributeError(f"module 'benchmark' has no attribute {name!r}")
