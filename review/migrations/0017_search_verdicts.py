"""People's answers to the search checkpoints of agent runs (``SearchVerdict``), beside the S
judge's verdicts: what the S judge's calibration on a run set's page compares.

Old rows: none change. Runs scored before keep their scores; their search checkpoints have no
person's answer until a reviewer gives one on the run's page.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('review', '0016_report_corrections'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='SearchVerdict',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('checkpoint_id', models.CharField(max_length=100)),
                ('passed', models.BooleanField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('reviewer', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, to=settings.AUTH_USER_MODEL)),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='search_verdicts', to='review.agentrun')),
            ],
            options={
                'ordering': ['run', 'checkpoint_id', 'id'],
                'indexes': [models.Index(fields=['run', 'checkpoint_id', '-id'], name='review_sear_run_id_76cbf2_idx')],
            },
        ),
    ]
