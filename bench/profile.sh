#!/usr/bin/env bash
# Nsight Compute profiles of the fast kernels on the device machine (after bench/device_run.sh has
# built build-dev): one launch each, full metric set, text reports in $OUT/ncu-*.txt.
#   bench/profile.sh [nlm|bilateral|both]
set -uo pipefail
which=${1:-both}
out=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
profile() {  # name, kernel regex, program and arguments
  local name=$1 kernel=$2
  shift 2
  ncu --clock-control none --set full -k "regex:$kernel" -c ${NCU_COUNT:-1} "$@" > "$out/ncu-$name.txt" 2>&1
  echo "== ncu $name exit $?"
}
if [ "$which" != bilateral ]; then
  for s in N1 N2 N4; do profile "nlm-$s" nlm_slide build-dev/nlm_bench --only $s --variants fused; done
fi
if [ "$which" != nlm ]; then
  profile bf-B1 bf_fused build-dev/bilateral_bench --only B1
  profile bf-B3 bf_fused build-dev/bilateral_bench --only B3
  NCU_COUNT=3 profile bf-B4 compressive_pass build-dev/bilateral_bench --only B4
fi
