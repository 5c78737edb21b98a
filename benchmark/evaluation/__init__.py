"""Running a model under test on a benchmark (issue 24): pure code, no Django.

``base`` says what every protocol is given and returns; each benchmark kind names its protocol
object (``BenchmarkKind.evaluation``), a module in this package: ``atp``, ``llmi``,
``agentic_mme``, ``mms``. The Django side (jobs, records, leaderboard, ``manage.py evaluate``)
is ``review.evaluation``; it adapts the model client and the tool providers to the protocols
below, so the protocols are tested with plain callables.
"""
