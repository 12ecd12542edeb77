#!/usr/bin/env bash
# One device-machine session: unpack the carried Debian packages (fmt, GoogleTest), build the
# filter library, CUDA tests and benchmarks (no ITK there), run the cuda-labelled tests, the
# sanitizers on a few small cases, and the benchmarks. Logs go to $OUT.
#   bench/device_run.sh [quick|full|none] [sanitize|nosanitize] [nlm|bilateral|both]
set -uo pipefail
mode=${1:-quick}
sanitize=${2:-sanitize}
which=${3:-both}
out=${OUT:-/tmp/out}
mkdir -p "$out" /tmp/deps
for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
cmake -S . -B build-dev -G Ninja -DCTD_BUILD_IO=OFF -DCTD_WERROR=ON -DCMAKE_PREFIX_PATH=/tmp/deps/usr \
  > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
ninja -C build-dev > "$out/build.log" 2>&1 || { grep -E "error|FAILED" -A5 "$out/build.log" | head -60; exit 1; }
echo "== build ok"
ctest --test-dir build-dev -L cuda --output-on-failure > "$out/ctest_cuda.log" 2>&1
grep -E "tests passed|Failed|Skipped" "$out/ctest_cuda.log" | head -20
if [ "$sanitize" = sanitize ]; then
  # Small cases that reach every kernel (racecheck is slow on the shared-memory loops).
  filter=${CTD_SANITIZE_FILTER:-'*odd_2D_larger*:*odd_non_cubic_3D*:*centre_max_3D*:*2D_split*:*DeviceApi*'}
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 build-dev/tests/cuda_tests --gtest_filter="$filter" \
      > "$out/sanitizer_$tool.log" 2>&1
    echo "== compute-sanitizer $tool exit $?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/sanitizer_$tool.log" | tr '\n' ' ')"
  done
fi
[ "$mode" = none ] && exit 0
flag=--quick
[ "$mode" = full ] && flag=
if [ "$which" != bilateral ]; then
  build-dev/nlm_bench $flag --json "$out/nlm_bench.json" --markdown "$out/nlm_bench.md" > "$out/nlm_bench.log" 2>&1
  grep -E "^(N|T|S)" "$out/nlm_bench.log" | head -80
fi
if [ "$which" != nlm ]; then
  psnr=
  [ "$mode" = full ] && psnr="--psnr $out/compressive_psnr.md"
  build-dev/bilateral_bench $flag --json "$out/bilateral_bench.json" --markdown "$out/bilateral_bench.md" $psnr \
    > "$out/bilateral_bench.log" 2>&1
  grep -vE "^\|" "$out/bilateral_bench.log" | head -60
fi
