#!/usr/bin/env bash
# Sets up, builds, and denoises the bundled CT sample (data/example_ct.nii.gz) into build/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/ctdenoise demo --output-dir build/demo --overwrite "$@"
