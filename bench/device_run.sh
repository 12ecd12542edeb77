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
# The device returns a few files only: everything is packed into all.tgz as it is written.
pack() { (cd "$out" && tar czf /tmp/all.tgz --exclude=all.tgz . && mv /tmp/all.tgz all.tgz); }
if [ -z "${SKIP_TESTS:-}" ]; then
  ctest --test-dir build-dev -L cuda --output-on-failure > "$out/ctest_cuda.log" 2>&1
  grep -E "tests passed|Failed|Skipped" "$out/ctest_cuda.log" | head -20
fi
if [ "$sanitize" = sanitize ]; then
  # Small cases that reach every kernel. Racecheck takes minutes per case on NLM tiled/zslide's
  # shared-memory loops, so it runs them on the smallest 3D case only.
  nlm='*NlmCuda.*odd_2D_larger*:*NlmCuda.*odd_non_cubic_3D*:*NlmCuda.*centre_max_3D*:*NlmCuda.*3D_N4_like_radii*:*NlmCuda.*3D_interior_tiles*:*NlmCuda.*gaussian_patch_3D*:*2D_split_search*:*DeviceApi*:*NlmCudaFused2d*:*NlmCudaHostApi*'
  bf='*BilateralCuda.*odd_non_cubic_3D*:*BilateralCuda.*2D_B1_like*:*BilateralCudaProperties.BitIdentical*:*BilateralCudaCompressive.*:*CompressiveWalk*small*'
  run_tool() {  # tool, log, filter, variants
    CTD_TEST_VARIANTS=$4 compute-sanitizer --tool $1 --error-exitcode 9 build-dev/tests/cuda_tests \
      --gtest_filter="$3" > "$out/$2" 2>&1
    echo "== compute-sanitizer $1 ($2) exit $?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/$2" | tr '\n' ' ')"
    pack
  }
  run_tool memcheck sanitizer_memcheck.log "$nlm:$bf" ""
  run_tool racecheck sanitizer_racecheck_nlm.log "$nlm" naive,displacement,rowwise,fused
  run_tool racecheck sanitizer_racecheck_nlm_tiled_zslide.log '*NlmCuda.*2x2x2*:*NlmCuda.*one_voxel_wide_3D*' tiled,zslide
  run_tool racecheck sanitizer_racecheck_bilateral.log "$bf" ""
fi
[ "$mode" = none ] && exit 0
flag=--quick
[ "$mode" = full ] && flag=
if [ "$which" != bilateral ]; then
  build-dev/nlm_bench $flag --json "$out/nlm_bench.json" --markdown "$out/nlm_bench.md" > "$out/nlm_bench.log" 2>&1
  grep -E "^(N|T|S)" "$out/nlm_bench.log" | head -80
  pack
fi
if [ "$which" != nlm ]; then
  psnr=
  [ "$mode" = full ] && psnr="--psnr $out/compressive_psnr.md"
  build-dev/bilateral_bench $flag --json "$out/bilateral_bench.json" --markdown "$out/bilateral_bench.md" $psnr \
    > "$out/bilateral_bench.log" 2>&1
  grep -vE "^\|" "$out/bilateral_bench.log" | head -60
  pack
fi
