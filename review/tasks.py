"""Celery discovers this app's tasks here."""

from review.agreement import agreement_task
from review.answer_tasks import answers_score_task
from review.run_tasks import run_set_rescore_task, runs_score_task

__all__ = ["agreement_task", "answers_score_task", "run_set_rescore_task", "runs_score_task"]
