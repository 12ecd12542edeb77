#!/usr/bin/env bash
# Fuzzes every reader under AddressSanitizer and UndefinedBehaviorSanitizer (docs/fuzzing.md):
# builds build-fuzz/ with the sanitizers, replays the regression corpus, then runs seeded
# mutants, one runner per core.
#   scripts/fuzz.sh [MUTANTS_PER_RUNNER] [FIRST_SEED]
# A finding stops its runner; its input is saved in build-fuzz/findings/. Add it to
# tests/fuzz/corpus/ (the regression corpus CI replays) once fixed.
set -uo pipefail
cd "$(dirname "$0")/.."
mutants=${1:-20000}
first_seed=${2:-100}
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCTD_WITH_CUDA=OFF \
  -DCMAKE_C_FLAGS="$sanitize" -DCMAKE_CXX_FLAGS="$sanitize" > /dev/null || exit 1
cmake --build build-fuzz --target fuzz_replay || exit 1
mkdir -p build-fuzz/findings
# Sanitizer reports go to files: while a library reads, stderr is held back (LibraryOutputCapture).
export ASAN_OPTIONS=detect_leaks=0:log_path=$PWD/build-fuzz/findings/sanitizer
export UBSAN_OPTIONS=print_stacktrace=1:log_path=$PWD/build-fuzz/findings/sanitizer
build-fuzz/tests/fuzz_replay tests/fuzz/corpus || exit 1
status=0
for ((i = 0; i < $(nproc); i++)); do
  seed=$((first_seed + i))
  (
    export TMPDIR=$(mktemp -d)
    if ! build-fuzz/tests/fuzz_replay --mutants "$mutants" --seed "$seed" > "build-fuzz/fuzz-$seed.log" 2>&1; then
      cp "$TMPDIR/ctdenoise-fuzz-last" "build-fuzz/findings/seed-$seed"
      echo "seed $seed: finding, saved in build-fuzz/findings/seed-$seed (log build-fuzz/fuzz-$seed.log)"
      exit 1
    fi
    echo "seed $seed: $(tail -1 "build-fuzz/fuzz-$seed.log")"
  ) &
done
for job in $(jobs -p); do wait "$job" || status=1; done
exit $status
