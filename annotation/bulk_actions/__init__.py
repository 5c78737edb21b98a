"""Bulk actions on a project's item list (set status, assign to a task, push to people,
re-queue, discard, export), see :mod:`annotation.bulk_actions.services`."""
