"""Worked examples of the Agentic-MME S and V judges (issue 26): an example set may come from
an upload of runs (``run_set``) instead of a people's task and a judge run (both now nullable),
and keeps the job that re-asked the judge on the held-back checks and the values it compared.

Old rows: unchanged. Every existing example set keeps its task and source run; its run set,
held-back job and values stay empty (its held-back comparison is a judge run, as before).
"""

import benchmark.fields
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0024_project_has_gold_fill'),
        ('benchmark', '0025_project_has_gold'),
        ('review', '0019_judge_calls_kept_as_text'),
    ]

    operations = [
        migrations.AddField(
            model_name='exampleset',
            name='held_back_job',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='benchmark.job'),
        ),
        migrations.AddField(
            model_name='exampleset',
            name='held_back_values',
            field=benchmark.fields.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='exampleset',
            name='run_set',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='example_sets', to='review.runset'),
        ),
        migrations.AlterField(
            model_name='exampleset',
            name='source_run',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='review.judgerun'),
        ),
        migrations.AlterField(
            model_name='exampleset',
            name='task',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='example_sets', to='annotation.judgmenttask'),
        ),
    ]
