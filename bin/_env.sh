# Shared by bin/run and bin/test: make .venv and install the project into it when needed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "==> creating virtual environment in .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "==> installing Benchwright and its dependencies (a minute or two the first time)"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[dev]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
export PATH="$ROOT/.venv/bin:$PATH"
# The project's own bytecode, as an installed package has it: where PYTHONDONTWRITEBYTECODE is set,
# every manage.py process would otherwise compile these modules again (about 0.3 s of each
# command's start). Only changed files are compiled; a stale .pyc is never used by Python.
.venv/bin/python -m compileall -q benchmark annotation review manage.py >/dev/null || true
