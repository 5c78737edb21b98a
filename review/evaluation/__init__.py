"""Evaluating a model under test inside Benchwright: runs, their jobs, a result per item,
every model call and tool call recorded (so a run replays with no model server and no
network), the command ``manage.py evaluate`` and the project's leaderboard.

What differs per benchmark is the kind's protocol object (``BenchmarkKind.evaluation``, see
``benchmark.evaluation.base``); this package runs any of them."""
