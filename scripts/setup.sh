#!/usr/bin/env bash
# Installs what ctdenoise needs on Debian 12 (when missing), then configures and builds it in
# build/. Safe to run again: it only installs missing packages and rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config
          libinsighttoolkit5-dev libgdcm-dev zlib1g-dev libtiff-dev libpng-dev libdeflate-dev
          libfmt-dev libcli11-dev nlohmann-json3-dev libgtest-dev)
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

# pydicom (PyPI): the tests read derived DICOM back with a reader independent of GDCM.
if command -v python3 >/dev/null && ! python3 -c "import pydicom" 2>/dev/null; then
  echo "setup: installing pydicom"
  python3 -m pip install --quiet --disable-pip-version-check pydicom || echo "setup: pydicom not installed; its test will skip"
fi

build_type=${CTD_BUILD_TYPE:-Release}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DCTD_WERROR=ON ${CTD_CMAKE_ARGS:-}
cmake --build build --parallel "$(nproc)"
