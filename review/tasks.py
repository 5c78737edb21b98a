"""Celery discovers this app's tasks here."""

from review.agreement import agreement_task

__all__ = ["agreement_task"]
