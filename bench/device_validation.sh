#!/usr/bin/env bash
# The full validation matrix of the automatic parameters (docs/parameters.md) on the device's GPU,
# where it takes minutes instead of an hour on 2 cores.
#   here:       bench/pack_cli.sh && bench/device_validation.sh pack
#   device run: carry [".device/cli.tgz", ".device/validation-data.tgz"], command: bash bench/device_validation.sh run
#   here again: python3 scripts/validate_params.py --from <the fetched full.json>
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=${DATA:-$root/../shared/data}
case ${1:-} in
  pack)
    # The scans validate_params reads, in their folders (../shared does not travel).
    tar czf "$root/.device/validation-data.tgz" -C "$data" \
      dicom_series_siemens_biograph_mct_20slices/uncompressed_derived dicom_wg04_ct1_ge/CT1_UNC.dcm \
      dicom_catphan_philips_brilliance64/dicom_file01.dcm cthead_stanford nifti_totalseg_example_ct/example_ct.nii.gz \
      fullhead15_vtk headsq_vtk bonsai_volvis
    ls -la "$root/.device/validation-data.tgz"
    ;;
  run)
    out=${OUT:-$root/build/validation}
    mkdir -p /tmp/validation-data "$out"
    tar xzf "$root/.device/cli.tgz" -C /tmp
    tar xzf "$root/.device/validation-data.tgz" -C /tmp/validation-data
    export LD_LIBRARY_PATH=/tmp/cli/lib
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
    start=$SECONDS
    timeout ${LIMIT:-560} /tmp/cli/validate_params --data /tmp/validation-data --device auto --json "$out/full.json" \
      >"$out/validation.log" 2>"$out/validation.err" || { tail -20 "$out/validation.err"; exit 1; }
    tail -3 "$out/validation.log"
    echo "matrix: $((SECONDS - start)) s" | tee -a "$out/gpu.txt"
    ;;
  *)
    echo "usage: bench/device_validation.sh pack|run" >&2
    exit 2
    ;;
esac
