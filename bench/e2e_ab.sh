#!/usr/bin/env bash
# A/B of two CLI builds on one end-to-end case, side by side in one run on the device machine:
# 512 x 512 x 548 int16 NRRD (or a 548-file DICOM series) to NRRD, NLM search radius 4, patch
# radius 2, automatic h,
# --device cuda, page cache dropped before each run, the two builds alternating, each with and
# without the JSON report. Writes $OUT/e2e-ab-KIND.jsonl (one line per run: build, report or not,
# wall time, and the report's timings and stages when there is one).
#   bench/e2e_ab.sh CLI_A CLI_B [RUNS] [WORKDIR] [nrrd|dicom]
# Each CLI is a ctdenoise binary whose libraries LD_LIBRARY_PATH finds (bench/pack_cli.sh).
set -uo pipefail
a=$1
b=$2
runs=${3:-5}
work=${4:-/tmp/e2e-ab}
kind=${5:-nrrd}
out=${OUT:-/tmp/out}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" "$work"
log="$out/e2e-ab-${5:-nrrd}.jsonl"
: > "$log"

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }

# The same volume as bench/e2e.sh.
python3 "$here/make_e2e_volume.py" 512 512 548 "$work/vol.raw"
input=$work/vol.nrrd
[[ $kind == dicom ]] && input=$work/series
"$a" convert "$work/vol.raw" "$input" --raw-dims 512,512,548 --raw-type int16 -q --overwrite

one() {  # label cli json(yes|no)
  local label=$1 cli=$2 report=$3 extra=()
  rm -f "$work/o.nrrd" "$work/r.json"
  [[ $report == yes ]] && extra=(--json "$work/r.json")
  drop_caches
  local start end rc
  start=$(date +%s.%N)
  "$cli" nlm "$input" "$work/o.nrrd" --search-radius 4 --patch-radius 2 --device cuda -q "${extra[@]}"
  rc=$?
  end=$(date +%s.%N)
  AB_INPUT=$kind python3 - "$label" "$report" "$rc" "$start" "$end" "$work/r.json" >> "$log" <<'PY'
import json, os, sys
label, report, rc, start, end, path = sys.argv[1:]
line = {"build": label, "input": os.environ.get("AB_INPUT", ""), "report": report == "yes", "exit": int(rc), "wall_s": round(float(end) - float(start), 3)}
if report == "yes" and int(rc) == 0 and os.path.exists(path):
    r = json.load(open(path))
    line.update(timings_s=r["timings_s"], stages_s=r["stages_s"], h=r["parameters"]["h"],
                h_auto={k: v for k, v in r["parameters"]["h_auto"].items() if k != "risk_curve"})
print(json.dumps(line))
PY
  tail -1 "$log" | cut -c1-160
}

for ((i = 0; i < runs; ++i)); do
  one A "$a" yes
  one B "$b" yes
  one A "$a" no
  one B "$b" no
done
# Start-up with cold and warm caches: the process and its libraries, no image.
for cli in "$a" "$b"; do
  drop_caches
  /usr/bin/time -f "$cli --version cold: %e s" "$cli" --version > /dev/null
  /usr/bin/time -f "$cli --version warm: %e s" "$cli" --version > /dev/null
done 2>&1 | tee "$out/e2e-ab-startup.txt"
