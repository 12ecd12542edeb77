#!/usr/bin/env bash
# The full validation matrix of the automatic parameters (docs/parameters.md) on the device's GPU,
# where it takes minutes instead of an hour on 2 cores.
#   here:       bench/pack_cli.sh && (cd .device && gzip -dc cli.tgz | xz -T2 -6 >cli.txz && rm cli.tgz)
#               && bench/device_validation.sh pack
#   device run: carry [".device/cli.txz", ".device/validation-data.txz"], command: bash bench/device_validation.sh run
#   here again: python3 scripts/validate_params.py --from <the fetched full.json>
# Every set at once, with --curves (the SSIM of every value swept, for bench/auto_against_curves.py),
# spread over the machine's GPUs (an nvidia-h200-x4 runs them in under 10 minutes):
#   device run: carry [".device/cli.txz", ".device/validation-data.txz"], command: bash bench/device_validation.sh run-all
#   here again: each set's JSON (OUT/<set>.json; the volumes in three parts) with --from and the set's flag
# The settings users run that the matrix leaves out (--user-settings) are the parts named user-*
# (added after the timing above; on one H200 they take 9 minutes by themselves):
#   ONLY='^user-' ... run-all; here again: scripts/validate_params.py --user-settings --from <their JSONs>
# The whole volumes against the truth (--truth-score), in parts picked by ONLY, PARALLEL at a time:
#   ONLY='truth-Siemens-FBP-Hann' bash bench/device_validation.sh truth-volumes
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=${DATA:-$root/../shared/data}
volumes=("Siemens abdomen, whole volume" "CThead, 40 whole slices" "TotalSegmentator abdomen, whole volume")
out=${OUT:-$root/build/validation}
work=/tmp/validation-runs
json=1
unpack() {  # the CLI and the scans into /tmp; the GPUs counted for part()
  mkdir -p /tmp/validation-data "$out" "$work"
  xz -dc "$root/.device/cli.txz" | tar x -C /tmp
  xz -dc "$root/.device/validation-data.txz" | tar x -C /tmp/validation-data
  export LD_LIBRARY_PATH=/tmp/cli/lib
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
  gpus=$(nvidia-smi -L | wc -l)
  i=0
}
part() {  # part NAME FLAG...: one validate_params run in the background, on the next GPU (--json unless json=0)
  local name=$1
  shift
  [[ $name =~ ${ONLY:-.} ]] || return 0
  while (( $(jobs -rp | wc -l) >= ${PARALLEL:-64} )); do wait -n || true; done
  local flags=("$@")
  (( json )) && flags+=(--json "$work/$name.json")
  (start=$SECONDS status=0  # set -e stops here too: the status is caught, so that a part cut short is reported
   CUDA_VISIBLE_DEVICES=$((i % gpus)) timeout "${LIMIT:-500}" /tmp/cli/validate_params --data /tmp/validation-data \
     --device auto "${flags[@]}" >"$work/$name.log" 2>"$work/$name.err" || status=$?
   echo "$name: exit $status, $((SECONDS - start)) s" | tee -a "$out/gpu.txt") &
  i=$((i + 1))
}
case ${1:-} in
  pack)
    # The scans validate_params reads, in their folders (../shared does not travel).
    tar cf - -C "$data" \
      dicom_series_siemens_biograph_mct_20slices/uncompressed_derived dicom_wg04_ct1_ge/CT1_UNC.dcm \
      dicom_catphan_philips_brilliance64/dicom_file01.dcm cthead_stanford nifti_totalseg_example_ct/example_ct.nii.gz \
      fullhead15_vtk headsq_vtk bonsai_volvis | xz -T2 -6 >"$root/.device/validation-data.txz"
    ls -la "$root/.device/validation-data.txz"
    ;;
  run)
    unpack
    start=$SECONDS
    timeout ${LIMIT:-560} /tmp/cli/validate_params --data /tmp/validation-data --device auto --json "$out/full.json" \
      >"$out/validation.log" 2>"$out/validation.err" || { tail -20 "$out/validation.err"; exit 1; }
    tail -3 "$out/validation.log"
    echo "matrix: $((SECONDS - start)) s" | tee -a "$out/gpu.txt"
    ;;
  run-all)
    # Every set, in parts (the volumes, whose sweeps take longest, in 12 and without --curves); ONLY=regex
    # runs the parts whose name matches it. What comes back is one archive, OUT/validation.txz (the
    # device returns a few files only), and OUT/gpu.txt with each part's time.
    unpack
    part matrix --curves
    part extra --extra --curves
    for scan in Siemens CT1 Catphan CThead; do part "whole-$scan" --whole --curves --only "$scan"; done
    for scan in FullHead headsq Bonsai; do part "heldout-$scan" --heldout --curves --only "$scan"; done
    for scan in "${volumes[@]}"; do
      for texture in "white" "FBP ramp 360 views, sigma" "FBP ramp 360 views, z-correlated" "FBP Hann"; do
        part "volumes-${scan%%[ ,]*}-$(tr -d , <<<"$texture" | tr ' ' -)" --volumes --only "$scan | $texture"
      done
    done
    # The settings users run that the matrix leaves out (--user-settings; docs/validation.md), the
    # whole volumes with the CLI's default NLM only (search 5 patch 1), whose sweeps take longest.
    part user-matrix --user-settings --curves
    for scan in FullHead headsq Bonsai; do part "user-heldout-$scan" --heldout --user-settings --curves --only "$scan"; done
    for scan in "${volumes[@]}"; do
      part "user-volumes-${scan%%[ ,]*}" --volumes --user-settings --only "$scan" --only "search 5"
    done
    wait
    tar cf - -C "$work" . | xz -T0 -6 >"$out/validation.txz"
    ;;
  truth-volumes)
    # The whole volumes scored against the truth (--truth-score: the references' own noise taken off),
    # one part per volume, texture and sigma (36 parts of 5 cases, their TRUTH lines in OUT/validation.txz).
    # They take long: on one H200 (16 cores) five of the Siemens series' parts at a time took 400-500 s
    # (2026-12-04), so pick some with ONLY=regex (e.g. 'Siemens-FBP-Hann') and at most PARALLEL at a time.
    # Here again: python3 bench/truth_score_summary.py "whole volumes=<the .log files, comma-separated>"
    unpack
    json=0
    for scan in "${volumes[@]}"; do
      for texture in "white, sigma" "FBP ramp 360 views, sigma" "FBP ramp 360 views, z-correlated, sigma" "FBP Hann 360 views, sigma"; do
        for sigma in 30 45 60; do
          part "truth-${scan%%[ ,]*}-$(tr -d , <<<"$texture" | tr ' ' -)-$sigma" --volumes --truth-score --only "$scan | $texture $sigma"
        done
      done
    done
    wait
    tar cf - -C "$work" . | xz -T0 -6 >"$out/validation.txz"
    ;;
  *)
    echo "usage: bench/device_validation.sh pack|run|run-all|truth-volumes" >&2
    exit 2
    ;;
esac
