"""Where the shared sample data is: ``$BENCHWRIGHT_SHARED_DATA`` when set, else ``shared/data``
beside the checkout (``../shared/data``, where CI has it). m&m's files may also be pointed at on
their own with ``$BENCHWRIGHT_MMS_DATA``.

Tests that read the data skip when it is missing (``needs_data``), so a checkout without it
still runs the rest of the suite. Plain module: no Django, so the format tests that run with
``-p no:django`` can use it too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
"""The checkout."""

SHARED_DATA = Path(os.environ.get("BENCHWRIGHT_SHARED_DATA") or ROOT.parent / "shared" / "data")
MMS_DATA = Path(os.environ.get("BENCHWRIGHT_MMS_DATA") or SHARED_DATA / "mms")


def needs_data(*parts: str) -> pytest.MarkDecorator:
    """Skip unless ``SHARED_DATA/<parts...>`` (a folder or a file) exists."""
    path = SHARED_DATA.joinpath(*parts)
    return pytest.mark.skipif(not path.exists(), reason=f"shared sample data not found at {path}")
