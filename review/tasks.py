"""Celery discovers this app's tasks here."""

from review.agreement import agreement_task
from review.run_tasks import runs_score_task

__all__ = ["agreement_task", "runs_score_task"]
