#!/usr/bin/env bash
# Checks the README's `pip install .`: installs the package into a new virtual environment (built
# by scikit-build-core from pyproject.toml, in build-python/) and runs the Python tests against
# the installed copy, from outside the repository.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"${PYTHON:-python3}" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$repo[test]"
cd "$work"
"$work/venv/bin/python" -c "import ctdenoise; print('installed ctdenoise', ctdenoise.__version__, 'at', ctdenoise.__file__)"
CTDENOISE_CLI="$repo/build/ctdenoise" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/tests/python"
