set -u
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nlm=$(grep -o "nlm='[^']*'" bench/device_run.sh | cut -d"'" -f2)
CTD_TEST_VARIANTS=fused compute-sanitizer --tool memcheck --error-exitcode 9 build-dev/tests/cuda_tests --gtest_filter="$nlm" > $OUT/san-memcheck.log 2>&1; echo "memcheck exit $?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $OUT/san-memcheck.log | tr '\n' ' ')"
CTD_TEST_VARIANTS=fused compute-sanitizer --tool racecheck --error-exitcode 9 build-dev/tests/cuda_tests --gtest_filter="$nlm" > $OUT/san-racecheck.log 2>&1; echo "racecheck exit $?: $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' $OUT/san-racecheck.log | tr '\n' ' ')"
