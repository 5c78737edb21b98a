"""Where the sandbox cannot start, its tests skip on a developer's machine and fail in CI
(tests/required.py): a machine without namespaces must not pass CI by testing none of it."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.required import REQUIRE_VARIABLES, missing

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
ONE_TEST = "test_only_a_down_loopback_interface_exists"
UNAVAILABLE = (
    "the sandbox is unavailable here: sandbox could not be set up: unshare (user, mount, "
    "network, pid namespaces): Operation not permitted"
)


def run_sandbox_tests_without_namespaces(**environment: str) -> subprocess.CompletedProcess:
    """One sandbox test (in both modes) in a user namespace without mappings, where the jail
    may not make namespaces: as on a kernel or container that forbids them."""
    unshare = shutil.which("unshare")
    if not unshare or subprocess.run([unshare, "-U", "true"], check=False).returncode != 0:
        missing("unshare -U is not possible here")
    env = {k: v for k, v in os.environ.items() if k not in REQUIRE_VARIABLES}
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **environment)  # no Django: a pure package
    command = [
        *(unshare, "-U", sys.executable, "-m", "pytest", "-q", "-rsfE"),
        *("--confcutdir", "tests/benchmark/sandbox", "-W", "ignore::pytest.PytestConfigWarning"),
        *("tests/benchmark/sandbox/test_sandbox.py", "-k", ONE_TEST),
    ]
    return subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=300
    )


def test_where_the_sandbox_cannot_start_its_tests_skip_unless_it_is_required():
    relaxed = run_sandbox_tests_without_namespaces(BENCHWRIGHT_REQUIRE_SANDBOX="0")
    assert relaxed.returncode == 0, relaxed.stdout + relaxed.stderr
    assert "2 skipped" in relaxed.stdout and UNAVAILABLE in relaxed.stdout


@pytest.mark.parametrize(
    "variable", ["BENCHWRIGHT_REQUIRE_SANDBOX", "BENCHWRIGHT_REQUIRE_SERVICES"]
)
def test_where_the_sandbox_is_required_its_tests_fail_with_the_reason(variable):
    strict = run_sandbox_tests_without_namespaces(**{variable: "1"})
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "skipped" not in strict.stdout and "2 errors" in strict.stdout, strict.stdout
    assert UNAVAILABLE in strict.stdout
    assert f"required here: {variable} is set, so this fails, not skips" in strict.stdout
