#!/usr/bin/env bash
# Reads DICOM series many times with the parallel slice reader and compares every result with a
# reference read (CLI_REF, e.g. a build that reads one slice after the other): the same bytes
# each time, no crash. Also writes a DICOM series repeatedly (written one slice after the other).
#   bench/dicom_stress.sh CLI CLI_REF J2K_SERIES_DIR [RUNS]      (logs to $OUT/dicom-stress.txt)
set -uo pipefail
cli=$1
ref=$2
j2k=$3
runs=${4:-20}
out=${OUT:-/tmp/out}
work=$(mktemp -d)
mkdir -p "$out"
log="$out/dicom-stress.txt"
: > "$log"
python3 "$(dirname "$0")/make_e2e_volume.py" 512 512 548 "$work/vol.raw"
"$ref" convert "$work/vol.raw" "$work/series" --raw-dims 512,512,548 --raw-type int16 -q
fails=0
for series in "$j2k" "$work/series"; do
  "$ref" convert "$series" "$work/ref.mha" --float -q --overwrite
  want=$(md5sum < "$work/ref.mha")
  for ((i = 0; i < runs; ++i)); do
    "$cli" convert "$series" "$work/got.mha" --float -q --overwrite 2>> "$log"
    rc=$?
    got=$(md5sum < "$work/got.mha")
    [[ $rc == 0 && $got == "$want" ]] || { fails=$((fails + 1)); echo "read $series run $i: exit $rc, differs" >> "$log"; }
  done
done
for ((i = 0; i < 5; ++i)); do
  "$cli" convert "$work/series" "$work/out-series" -q --overwrite 2>> "$log" || { fails=$((fails + 1)); echo "write run $i: exit $?" >> "$log"; }
done
echo "dicom stress: $((2 * runs)) parallel reads against the reference, 5 series writes, $fails failure(s)" | tee -a "$log"
rm -rf "$work"
