#!/usr/bin/env bash
# End-to-end benchmark of the CLI, stage by stage, on the machine it runs on (the device machine:
# the CLI is carried there with its libraries, see bench/pack_cli.sh). Writes $OUT/e2e-runs.jsonl
# (one line per run: the command, the wall time, the report's timings and stages) and
# $OUT/e2e-floor.json (disk read and write speed, and the PCIe bandwidth measured with CuPy).
#   bench/e2e.sh [CLI] [WORKDIR]      then: python3 bench/e2e_table.py $OUT/e2e-*.json* > table.md
# Cases: 512 x 512 x 548 int16 as raw, NRRD and .nii.gz (ours, and one gzip stream), and as a 548-file DICOM series, to NRRD
# (plain and --compress), .mha (--compress) and .nii.gz; 1024^3 int16 NRRD to NRRD; one 512^2 DICOM slice. NLM search radius 4, patch
# radius 2, automatic h, --device cuda. Page cache dropped before each run where root may.
set -uo pipefail
cli=${1:-/tmp/cli/ctdenoise}
work=${2:-/tmp/e2e}
out=${OUT:-/tmp/out}
mkdir -p "$out" "$work"
runs="$out/e2e-runs.jsonl"
: > "$runs"

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }

# The volume: bench/make_e2e_volume.py (a synthetic body with white noise of sigma 25 HU, int16).
make_volume() {  # nx ny nz path
  python3 "$(dirname "$0")/make_e2e_volume.py" "$@"
}

run() {  # name input output [extra args...]
  local name=$1 input=$2 output=$3
  shift 3
  rm -rf "$output" "$work/r.json"
  drop_caches
  local start end rc
  start=$(date +%s.%N)
  "$cli" nlm "$input" "$output" --search-radius 4 --patch-radius 2 --device cuda --json "$work/r.json" -q "$@"
  rc=$?
  end=$(date +%s.%N)
  python3 - "$name" "$input" "$output" "$rc" "$start" "$end" "$work/r.json" >> "$runs" <<'PY'
import json, os, sys
name, source, dest, rc, start, end, report = sys.argv[1:]
size = lambda p: sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(p) for f in fs) if os.path.isdir(p) else os.path.getsize(p)
line = {"case": name, "input": os.path.basename(source), "output": os.path.basename(dest), "exit": int(rc),
        "wall_s": round(float(end) - float(start), 3), "input_bytes": size(source)}
if int(rc) == 0:
    r = json.load(open(report))
    line.update(timings_s=r["timings_s"], stages_s=r["stages_s"], output_bytes=size(dest), dims=r["input"]["dims"],
                h=r["parameters"]["h"])
print(json.dumps(line))
PY
  tail -1 "$runs"
}

C=$cli
vol=$work/vol.raw
make_volume 512 512 548 "$vol"
"$C" convert "$vol" "$work/vol.nrrd" --raw-dims 512,512,548 --raw-type int16 -q --overwrite
"$C" convert "$vol" "$work/vol.nii.gz" --raw-dims 512,512,548 --raw-type int16 -q --overwrite
# The same as one gzip stream, as most tools write .nii.gz (ours is members inflated side by side).
"$C" convert "$vol" "$work/vol1.nii" --raw-dims 512,512,548 --raw-type int16 -q --overwrite
gzip -c -6 "$work/vol1.nii" > "$work/vol1.nii.gz" && rm -f "$work/vol1.nii"
"$C" convert "$vol" "$work/series" --raw-dims 512,512,548 --raw-type int16 -q --overwrite
python3 - "$work" <<'PY'
import sys, shutil, os
work = sys.argv[1]
files = sorted(os.listdir(os.path.join(work, "series")))
shutil.copy(os.path.join(work, "series", files[len(files) // 2]), os.path.join(work, "slice.dcm"))
PY

raw_args=(--raw-dims 512,512,548 --raw-type int16)
run raw-to-nrrd "$vol" "$work/o.nrrd" "${raw_args[@]}"
run nrrd-to-nrrd "$work/vol.nrrd" "$work/o.nrrd"
run nrrd-to-niigz "$work/vol.nrrd" "$work/o.nii.gz"
run nrrd-to-nrrd-compressed "$work/vol.nrrd" "$work/oc.nrrd" --compress
run nrrd-to-mha-compressed "$work/vol.nrrd" "$work/oc.mha" --compress
rm -f "$work/oc.nrrd" "$work/oc.mha"
run niigz-to-niigz "$work/vol.nii.gz" "$work/o.nii.gz"
run niigz-one-stream-to-niigz "$work/vol1.nii.gz" "$work/o.nii.gz"
run dicom-series-to-nrrd "$work/series" "$work/o.nrrd"
run dicom-series-to-dicom-series "$work/series" "$work/oseries"
run dicom-slice-to-dicom "$work/slice.dcm" "$work/o.dcm"
rm -rf "$work/series" "$work/oseries" "$work/vol.nii.gz" "$work/vol1.nii.gz" "$work/o.nii.gz"

make_volume 1024 1024 1024 "$work/big.raw"
"$C" convert "$work/big.raw" "$work/big.nrrd" --raw-dims 1024,1024,1024 --raw-type int16 -q --overwrite
rm -f "$work/big.raw"
run big-nrrd-to-nrrd "$work/big.nrrd" "$work/obig.nrrd"

# The floor: disk speed (direct I/O, 1 GiB) and PCIe bandwidth (pinned, 512 MiB, CuPy).
disk_write=$(dd if=/dev/zero of="$work/dd.bin" bs=16M count=64 oflag=direct 2>&1 | tail -1)
disk_read=$(dd if="$work/dd.bin" of=/dev/null bs=16M iflag=direct 2>&1 | tail -1)
rm -f "$work/dd.bin"
python3 - "$disk_write" "$disk_read" > "$out/e2e-floor.json" <<'PY'
import json, re, sys, time
def rate(line):  # dd's "... copied, 1.2 s, 850 MB/s"
    m = re.search(r"([\d.]+) s, ([\d.]+) ([GM])B/s", line)
    return float(m.group(2)) * (1000 if m.group(3) == "G" else 1) if m else None
floor = {"disk_write_MBps": rate(sys.argv[1]), "disk_read_MBps": rate(sys.argv[2])}
try:
    import cupy as cp
    n = 512 << 20
    host = cp.cuda.alloc_pinned_memory(n)
    dev = cp.cuda.alloc(n)
    for name, copy in (("h2d", lambda: dev.copy_from_host(host.ptr, n)), ("d2h", lambda: dev.copy_to_host(host.ptr, n))):
        copy(); cp.cuda.Device().synchronize()
        times = []
        for _ in range(5):
            t = time.perf_counter(); copy(); cp.cuda.Device().synchronize(); times.append(time.perf_counter() - t)
        floor[f"pcie_{name}_GBps"] = round(n / sorted(times)[2] / 1e9, 2)
except Exception as e:  # no CuPy: no bus figure
    floor["pcie_error"] = str(e)
print(json.dumps(floor))
PY
cat "$out/e2e-floor.json"
