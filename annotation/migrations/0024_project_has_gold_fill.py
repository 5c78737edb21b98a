"""Set ``Project.has_gold`` for the projects that already have current gold items."""

from django.db import migrations


def fill(apps, schema_editor):
    Project = apps.get_model("benchmark", "Project")
    GoldItem = apps.get_model("annotation", "GoldItem")
    current = GoldItem.objects.filter(removed_at__isnull=True).values("task__project_id")
    Project.objects.filter(pk__in=current).update(has_gold=True)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0023_doubt_queue_position"),
        ("benchmark", "0025_project_has_gold"),
    ]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
