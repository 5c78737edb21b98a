"""Signals of items written in bulk (``bulk_insert`` sends no ``post_save``): apps that keep rows
per item listen (routing by doubt, ``annotation.judgment_tasks.doubt.signals``); benchmark may not import them."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent with ``project_id`` and ``item_ids`` after items were added to a project in bulk.
items_added = Signal()
