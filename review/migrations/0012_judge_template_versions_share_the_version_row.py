"""Judge template versions are version rows like every other version (``benchmark.versions``):
``created_by`` is now ``author``.

Old rows: every row keeps its values; the column is renamed, so who saved each version stays.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0011_judge_choices_from_the_registry"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RenameField(
            model_name="judgetemplateversion", old_name="created_by", new_name="author"
        ),
        migrations.AlterField(
            model_name="judgetemplateversion",
            name="author",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="judgetemplateversion",
            name="created_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.AlterField(
            model_name="judgetemplateversion",
            name="base_number",
            field=models.PositiveIntegerField(
                default=0, help_text="The version the editor was opened on (0: the built-in text)."
            ),
        ),
    ]
