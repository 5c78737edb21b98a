"""Celery application. With no broker configured, tasks run in-process (eager)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmark.settings")

app = Celery("benchmark")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
