#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite: CTest (labels cpu, io, cli; cuda tests skip
# without a GPU), then the Python package's tests (pytest, against the build tree's package).
# Real-CT tests read ../shared/data when it is there (CTD_TEST_DATA_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)" "$@"
PYTHONPATH="$PWD/build/python" CTDENOISE_CLI="$PWD/build/ctdenoise" "${PYTHON:-python3}" -m pytest -q -p no:cacheprovider tests/python
