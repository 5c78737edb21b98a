"""Moved to :mod:`benchmark.selectors` (the reads sit below the features that use them).

Kept only so that ``annotation.trajectories.selectors``, which another change rewrites, still
imports; import :mod:`benchmark.selectors` in new code. Delete this module once nothing
imports it (``tests/test_import_cycles.py`` does not need it).
"""

from benchmark.selectors import *  # noqa: F403
