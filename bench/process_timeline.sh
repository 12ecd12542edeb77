#!/usr/bin/env bash
# Where the wall time of one CLI run goes outside its own stages, on the device machine:
# process start and library loading, the command's work (its report's total), and the exit
# (the CUDA runtime's teardown, freeing the volumes, the GPU driver's files closed). Runs
# 512 x 512 x 548 int16 NRRD -> NRRD (NLM search 4, patch 2, automatic h) RUNS times with the
# whole page cache dropped and RUNS times with only the input's pages dropped (the program and
# its libraries cached, as after any earlier run), then a program that only creates the CUDA
# context. Needs cc and nvcc. Writes $OUT/timeline-runs.jsonl and prints a markdown table.
#   bench/process_timeline.sh [CLI] [WORKDIR] [RUNS]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cli=${1:-/tmp/cli/ctdenoise}
work=${2:-/tmp/timeline}
runs=${3:-3}
out=${OUT:-/tmp/out}
mkdir -p "$out" "$work"
cc -O2 -shared -fPIC "$here/timeline/exit_marks.c" -o "$work/libexit_marks.so" || exit 1
nvcc -O2 "$here/timeline/context_only.cu" -o "$work/context_only" -lcuda || exit 1
[[ -f $work/vol.nrrd ]] || {
  python3 "$here/make_e2e_volume.py" 512 512 548 "$work/vol.raw" &&
    "$cli" convert "$work/vol.raw" "$work/vol.nrrd" --raw-dims 512,512,548 --raw-type int16 -q --overwrite && rm -f "$work/vol.raw"
} || exit 1
drop_all() { sync; echo 3 > /proc/sys/vm/drop_caches; }
drop_input() {
  sync
  python3 -c "import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)" "$work/vol.nrrd"
}
one() {  # label drop-function
  rm -f "$work/o.nrrd" "$work/r.json" "$work/marks"
  $2
  local start end
  start=$(date +%s.%N)
  EXIT_MARKS=$work/marks LD_PRELOAD=$work/libexit_marks.so "$cli" nlm "$work/vol.nrrd" "$work/o.nrrd" --search-radius 4 \
    --patch-radius 2 --device cuda --json "$work/r.json" -q > /dev/null
  end=$(date +%s.%N)
  python3 - "$1" "$start" "$end" "$work" <<'PY'
import json, os, sys
label, start, end, work = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
marks = {}
for line in open(work + "/marks"):
    k, v = line.split()
    marks.setdefault(k, float(v))
r = json.load(open(work + "/r.json"))
total = r["timings_s"]["total"]
report_written = os.stat(work + "/r.json").st_mtime_ns / 1e9  # the command's last act
stages = {s["stage"]: round(s["seconds"], 4) for s in r["stages_s"]}
print(json.dumps({"cache": label, "wall_s": round(end - start, 3), "start_to_load_s": round(marks["load"] - start, 3),
                  "command_s": round(total, 3), "stages_sum_s": round(sum(stages.values()), 3),
                  "report_to_atexit_s": round(marks["atexit"] - report_written, 3),
                  "atexit_to_end_s": round(end - marks["atexit"], 3), "stages_s": stages}))
PY
}
{
  for _ in $(seq "$runs"); do one "all dropped" drop_all; one "input dropped" drop_input; done
  for run in "0 keep" "2400000000 keep" "2400000000 reset" "2400000000 reset-beside-work"; do
    read -r bytes mode <<< "$run"
    drop_all
    start=$(date +%s.%N)
    line=$("$work/context_only" "$bytes" "$mode")
    end=$(date +%s.%N)
    python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(json.dumps({'cache': 'context only, %d bytes, %s' % (int(sys.argv[4]), d['mode']), 'wall_s': round(float(sys.argv[3]) - float(sys.argv[2]), 3), 'driver_s': d['driver_s'], 'context_s': d['context_s'], 'reset_s': d['reset_s'], 'main_end_to_end_s': round(float(sys.argv[3]) - d['main_end'], 3)}))" "$line" "$start" "$end" "$bytes"
  done
} | tee "$out/timeline-runs.jsonl"
python3 - "$out/timeline-runs.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("\n| page cache | wall | start to main | command | of it in stages | after the report | exit (kernel, driver) |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    if "command_s" in r:
        print(f"| {r['cache']} | **{r['wall_s']:.2f}** | {r['start_to_load_s']:.3f} | {r['command_s']:.3f} | {r['stages_sum_s']:.3f} | {r['report_to_atexit_s']:.3f} | {r['atexit_to_end_s']:.3f} |")
    else:
        print(f"| {r['cache']} (driver {r['driver_s']:.2f} s, context {r['context_s']:.2f} s, reset {r['reset_s']:.3f} s) | {r['wall_s']:.2f} | | | | | {r['main_end_to_end_s']:.3f} (main's end to the end) |")
PY
