"""Where this machine lacks what a test needs (the code sandbox, a kernel feature): the test is
skipped on a developer's machine, and fails, with the reason, where it is required: CI
(`.ci/run` sets BENCHWRIGHT_REQUIRE_SERVICES=1 and BENCHWRIGHT_REQUIRE_SANDBOX=1), or a
developer who sets BENCHWRIGHT_REQUIRE_SANDBOX=1 to be sure nothing was skipped."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_VARIABLES = ("BENCHWRIGHT_REQUIRE_SANDBOX", "BENCHWRIGHT_REQUIRE_SERVICES", "CI")
OFF = ("", "0", "false", "no", "off")


def required_by() -> str | None:
    """The variable that makes a missing capability a failure here, or None."""
    for name in REQUIRE_VARIABLES:
        if os.environ.get(name, "").strip().lower() not in OFF:
            return name
    return None


def missing(reason: str) -> NoReturn:
    """Skip the test for `reason`, or fail it where that is required."""
    variable = required_by()
    if variable:
        pytest.fail(f"{reason} (required here: {variable} is set, so this fails, not skips)")
    pytest.skip(reason)
