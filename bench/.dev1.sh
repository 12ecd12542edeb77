set -u
SKIP_TESTS=1 bash bench/device_run.sh none nosanitize nlm > $OUT/dev.log 2>&1 || { cat $OUT/dev.log; exit 1; }
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
timeout 120 build-dev/nlm_bench --only N4 --variants fused-symmetric,fused-one-sided,fused --json $OUT/n4.json --markdown $OUT/n4.md > $OUT/n4.log 2>&1; grep N4 $OUT/n4.log | grep -v "^|"
timeout 200 build-dev/tests/cuda_tests --gtest_filter='*NlmCudaFused3d*:*NlmCuda.*3D*:*NlmCudaDeviceApi*:*NlmCudaProperties*' > $OUT/tests.log 2>&1; echo "tests exit $?"; grep -E "FAILED|PASSED" $OUT/tests.log | head
f='*NlmCuda.*odd_non_cubic_3D*:*NlmCuda.*3D_N4_like_radii*:*NlmCuda.*3D_interior_tiles*:*NlmCuda.*gaussian_patch_3D*'
for t in memcheck racecheck; do CTD_TEST_VARIANTS=fused timeout 120 compute-sanitizer --tool $t --error-exitcode 9 build-dev/tests/cuda_tests --gtest_filter="$f" > $OUT/san-$t.log 2>&1; echo "$t exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/san-$t.log | tr '\n' ' ')"; done
rm -f $OUT/build.log $OUT/cmake.log
