# Shared by bin/run, bin/serve and bin/test: make .venv and install the project into it when needed.
#
# What is installed depends on the script: serving (bin/run, bin/serve) needs only the app's own
# dependencies; bin/test sets BENCHWRIGHT_EXTRAS=dev before sourcing this file and so adds the
# development and test tools (pytest, Playwright, ruff, mypy, MkDocs, ...).
#
# BENCHWRIGHT_VENV=/path/to/venv uses that environment as it is instead of .venv (nothing is
# created or installed there): the newcomer-path test runs bin/run in a fresh clone with the
# test run's own environment, so it downloads nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
EXTRAS=${BENCHWRIGHT_EXTRAS:-}
if [ -n "${BENCHWRIGHT_VENV:-}" ]; then
  VENV=$BENCHWRIGHT_VENV
  [ -x "$VENV/bin/python" ] || { echo "BENCHWRIGHT_VENV=$VENV has no bin/python" >&2; exit 2; }
else
  VENV=$ROOT/.venv
  PY=${PYTHON:-python3.11}
  command -v "$PY" >/dev/null 2>&1 || PY=python3
  if [ ! -x .venv/bin/python ]; then
    echo "==> creating virtual environment in .venv"
    "$PY" -m venv .venv
  fi
  hash=$(sha256sum pyproject.toml | cut -c1-16)
  # A dev install also serves: bin/run after bin/test installs nothing more.
  want=.venv/.installed-$hash-${EXTRAS:-app}
  have_dev=.venv/.installed-$hash-dev
  if [ ! -f "$want" ] && [ ! -f "$have_dev" ]; then
    if [ -n "$EXTRAS" ]; then
      echo "==> installing Benchwright with its [$EXTRAS] tools (several minutes the first time)"
      target=".[$EXTRAS]"
    else
      echo "==> installing Benchwright and what serving it needs (a minute or two the first time)"
      target="."
    fi
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e "$target"
    rm -f .venv/.installed-*
    touch "$want"
  fi
fi
export PATH="$VENV/bin:$PATH"
# The project's own bytecode, as an installed package has it: where PYTHONDONTWRITEBYTECODE is set,
# every manage.py process would otherwise compile these modules again (about 0.3 s of each
# command's start). Only changed files are compiled; a stale .pyc is never used by Python.
"$VENV/bin/python" -m compileall -q benchmark annotation review manage.py >/dev/null || true
