#!/usr/bin/env bash
# Installs what ctdenoise needs on Debian 12 (when missing), then configures and builds it in
# build/. Safe to run again: it only installs missing packages and rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config python3-dev
          libinsighttoolkit5-dev libgdcm-dev zlib1g-dev libtiff-dev libpng-dev libdeflate-dev
          libfmt-dev libcli11-dev nlohmann-json3-dev libgtest-dev libhwy-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# From PyPI: nanobind (the Python extension), numpy and pytest (the Python package's tests), and
# pydicom (the tests read derived DICOM back with a reader independent of GDCM).
python=${PYTHON:-python3}
python_modules=(nanobind numpy pytest pydicom)
missing_modules=()
for m in "${python_modules[@]}"; do
  "$python" -c "import $m" 2>/dev/null || missing_modules+=("$m")
done
if ((${#missing_modules[@]})); then
  echo "setup: installing ${missing_modules[*]} (pip)"
  "$python" -m pip install --quiet --disable-pip-version-check "${missing_modules[@]}"
fi

build_type=${CTD_BUILD_TYPE:-Release}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DCTD_WERROR=ON \
  -DCTD_BUILD_PYTHON=ON -DPython_EXECUTABLE="$(command -v "$python")" ${CTD_CMAKE_ARGS:-}
cmake --build build --parallel "$(nproc)"
