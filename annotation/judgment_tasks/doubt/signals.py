"""Routing by doubt keeps a doubt row for every item (or unit) of a task that serves items by
doubt (``annotation.judgment_tasks.doubt.queue`` walks them): these receivers give the rows to an item, a
listing or a unit as it is created, and to every item of a task as routing is turned on, by
:func:`annotation.judgment_tasks.doubt.services.doubt_rows_fill` (one statement each, nothing when no task of
the project routes by doubt). Bulk writers that send no signal call the service themselves
(the dataset import through ``benchmark.models.signals.items_added``)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_init, post_save
from django.dispatch import receiver

from annotation.judgment_tasks.models import JudgmentTask, TaskItem, TaskUnit
from benchmark.models import Item
from benchmark.models.signals import items_added


@receiver(post_init, sender=JudgmentTask, dispatch_uid="doubt_rows_task_loaded")
def _task_loaded(sender: Any, instance: JudgmentTask, **kwargs: Any) -> None:
    instance._routed_as_loaded = instance.serve_by_doubt if instance.pk else False  # type: ignore[attr-defined]


@receiver(post_save, sender=JudgmentTask, dispatch_uid="doubt_rows_task")
def _task_saved(sender: Any, instance: JudgmentTask, **kwargs: Any) -> None:
    """Routing turned on (or a task created routing): every item's row; turned off: the rows
    that only held the prior (nothing computed) go, the computed ones stay for the page."""
    routed = instance.serve_by_doubt
    if routed == getattr(instance, "_routed_as_loaded", False):
        return
    instance._routed_as_loaded = routed  # type: ignore[attr-defined]
    from annotation.judgment_tasks.doubt.services import doubt_rows_drop_prior, doubt_rows_fill

    if routed:
        doubt_rows_fill(task=instance)
    else:
        doubt_rows_drop_prior(task=instance)


@receiver(post_save, sender=Item, dispatch_uid="doubt_rows_item")
def _item_saved(sender: Any, instance: Item, created: bool, **kwargs: Any) -> None:
    if created:
        from annotation.judgment_tasks.doubt.services import project_doubt_rows_fill

        project_doubt_rows_fill(project_id=instance.project_id, item_ids=[instance.pk])


@receiver(items_added, dispatch_uid="doubt_rows_items")
def _items_added(sender: Any, project_id: int, item_ids: list[int], **kwargs: Any) -> None:
    from annotation.judgment_tasks.doubt.services import project_doubt_rows_fill

    project_doubt_rows_fill(project_id=project_id, item_ids=item_ids)


@receiver(post_save, sender=TaskItem, dispatch_uid="doubt_rows_listed")
@receiver(post_save, sender=TaskUnit, dispatch_uid="doubt_rows_unit")
def _listed(sender: Any, instance: TaskItem | TaskUnit, created: bool, **kwargs: Any) -> None:
    if created and instance.task.serve_by_doubt:
        from annotation.judgment_tasks.doubt.services import doubt_rows_fill

        doubt_rows_fill(task=instance.task, item_ids=[instance.item_id])
