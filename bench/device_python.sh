#!/usr/bin/env bash
# Device machine: builds the library, the CUDA tests and the Python extension (no ITK there: the
# package without file I/O), runs the cuda tests, compute-sanitizer on the device-API tests, the
# Python tests (CPU and GPU paths), the Python-layer benchmark and the reconstruction example.
# Logs go to $OUT.   bench/device_python.sh [tests|bench|all]
set -uo pipefail
what=${1:-all}
out=${OUT:-/tmp/out}
mkdir -p "$out" /tmp/deps
for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$out/gpu.txt"
python3 --version | tee -a "$out/gpu.txt"
cmake -S . -B build-dev -G Ninja -DCTD_BUILD_IO=OFF -DCTD_WERROR=ON -DCMAKE_PREFIX_PATH=/tmp/deps/usr \
  -DCTD_BUILD_PYTHON=ON -DPython_EXECUTABLE="$(command -v python3)" > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
ninja -C build-dev > "$out/build.log" 2>&1 || { grep -E "error|FAILED" -A5 "$out/build.log" | head -60; exit 1; }
echo "== build ok"
export PYTHONPATH=$PWD/build-dev/python PYTHONUNBUFFERED=1
if [ "$what" != bench ]; then
  ctest --test-dir build-dev -L cuda --output-on-failure > "$out/ctest_cuda.log" 2>&1
  grep -E "tests passed|Failed|\*\*\*" "$out/ctest_cuda.log" | head -20
  # memcheck on every call from host or device memory; racecheck on the bilateral device API's
  # cases (small; the large host-API case takes too long under racecheck).
  for run in "memcheck *DeviceApi*:*HostApi*" "racecheck *BilateralCudaDeviceApi*-*TwoStreams*"; do
    set -- $run
    compute-sanitizer --tool $1 --error-exitcode 9 build-dev/tests/cuda_tests \
      --gtest_filter="$2" > "$out/sanitizer_$1.log" 2>&1
    echo "== compute-sanitizer $1 exit $?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/sanitizer_$1.log" | tr '\n' ' ')"
  done
  python3 -m pytest -q -p no:cacheprovider tests/python -rs > "$out/pytest.log" 2>&1
  echo "== pytest exit $?"; tail -15 "$out/pytest.log"
fi
if [ "$what" != tests ]; then
  [ -z "${SKIP_PYBENCH:-}" ] && python3 bench/python_bench.py --json "$out/python_bench.json" --markdown "$out/python_bench.md" 2>&1 | tail -8
  for f in nlm bilateral; do
    python3 examples/recon_loop.py --input .device/siemens.npy --pixel-mm 0.977 --filter $f --iterations 20 --photons ${PHOTONS:-2e5} \
      --json "$out/recon_siemens_$f.json" > "$out/recon_siemens_$f.log" 2>&1
    echo "== recon $f exit $?"; tail -40 "$out/recon_siemens_$f.log" | grep -vE "^\s*$" | head -40
  done
  python3 examples/recon_loop.py --json "$out/recon_shepp_logan_nlm.json" > "$out/recon_shepp_logan_nlm.log" 2>&1
  echo "== recon shepp-logan exit $?"; grep -E "ms_per|filter_ms|share|psnr|ssim" "$out/recon_shepp_logan_nlm.log"
fi
# The device returns a few files only: everything goes back in one archive.
(cd "$out" && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz)
