"""Set ``Project.has_gold`` for the projects that already have current gold items.

Old rows: projects keep every value; ``has_gold`` (added false by benchmark 0025) becomes true
for a project with a current gold item, so annotators stop seeing item status there. Migrating
back changes nothing."""

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
