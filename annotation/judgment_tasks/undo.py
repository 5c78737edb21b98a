"""When an annotator may still undo and change a judgment of theirs: while its outcome is
pending, and for ``JUDGMENT_UNDO_MINUTES`` after they submitted it. One rule, asked by the
judge page (to offer "Undo") and by the service that records the change."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings


def undo_minutes() -> int:
    return int(getattr(settings, "JUDGMENT_UNDO_MINUTES", 10))


def change_refusal(*, submitted_at: datetime, verdict: str | None, now: datetime) -> str:
    """Why the judgment submitted at ``submitted_at``, whose item (or unit) has the outcome
    ``verdict`` (None: none yet), can no longer be changed; "" when it can."""
    if verdict not in (None, "", "pending"):
        return (
            f"this judgment can no longer be changed: its outcome is settled ({verdict}); "
            "ask a reviewer if it needs another look"
        )
    minutes = undo_minutes()
    if now - submitted_at > timedelta(minutes=minutes):
        return (
            f"this judgment can no longer be changed: judgments can be undone for {minutes} "
            "minutes after submitting"
        )
    return ""


def change_deadline(*, submitted_at: datetime) -> datetime:
    return submitted_at + timedelta(minutes=undo_minutes())
