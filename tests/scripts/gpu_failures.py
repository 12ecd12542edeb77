#!/usr/bin/env python3
"""The GPU path fails cleanly: no device, out of GPU memory, a device lost mid-run.

Each gives its documented exit code (5 CUDA, 6 out of memory), one line on stderr, and no output.
Out of memory and the lost device are forced through a test-only LD_PRELOAD library
(tests/cuda/fault_injection.cpp); out of memory also for real, by filling the GPU from another
process, when CuPy is there.
Usage: gpu_failures.py CTDENOISE FAULT_LIBRARY WORKDIR   (exit 77, skipped, without a GPU)
"""
import os
import random
import shutil
import struct
import subprocess
import sys
import time

ctdenoise, faults, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
rng = random.Random(5)
nx, ny, nz = 80, 72, 20
raw = os.path.join(work, "in.raw")
with open(raw, "wb") as f:
    f.write(struct.pack(f"<{nx * ny * nz}h", *(int(rng.gauss(40, 30)) for _ in range(nx * ny * nz))))
layout = ["--raw-dims", f"{nx},{ny},{nz}", "--raw-type", "int16"]


def run(command, out, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    args = [ctdenoise, *command, raw, out, *layout, "--device", "cuda", "-q"]
    return subprocess.run(args, capture_output=True, text=True, env=env)


first = run(["nlm", "--search-radius", "2", "--patch-radius", "1"], os.path.join(work, "ok.nii"))
if first.returncode == 5:
    print(f"no usable GPU here ({first.stderr.strip()}): skipped")
    sys.exit(77)
if first.returncode != 0:
    sys.exit(f"the plain CUDA run failed: {first.stderr.strip()}")

cases = [
    ("no device (CUDA_VISIBLE_DEVICES empty)", ["nlm"], {"CUDA_VISIBLE_DEVICES": ""}, 5),
    ("nlm, out of GPU memory (forced)", ["nlm"], {"LD_PRELOAD": faults, "CTD_TEST_CUDA_MALLOC_LIMIT": "65536"}, 6),
    ("bilateral, out of GPU memory (forced)", ["bilateral", "--sigma-spatial", "1.5"],
     {"LD_PRELOAD": faults, "CTD_TEST_CUDA_MALLOC_LIMIT": "65536"}, 6),
    ("nlm, device lost mid-run", ["nlm"], {"LD_PRELOAD": faults, "CTD_TEST_CUDA_LOST_AFTER": "1"}, 5),
    ("bilateral, device lost mid-run", ["bilateral", "--sigma-spatial", "1.5", "--algorithm", "fused"],
     {"LD_PRELOAD": faults, "CTD_TEST_CUDA_LOST_AFTER": "0"}, 5),
]
failures = []


def check(name, result, out, code):
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    state = f"exit {result.returncode}, {len(lines)} stderr line(s), output {'present' if os.path.exists(out) else 'absent'}"
    print(f"{name}: {state}: {lines[-1] if lines else ''}")
    if result.returncode != code:
        failures.append(f"{name}: exit {result.returncode}, expected {code}")
    if len(lines) != 1:
        failures.append(f"{name}: {len(lines)} lines on stderr, expected 1")
    if os.path.exists(out) or [n for n in os.listdir(work) if n.startswith(".ctdenoise-")]:
        failures.append(f"{name}: something was left at the destination")


for i, (name, command, env, code) in enumerate(cases):
    out = os.path.join(work, f"out{i}.nii")
    check(name, run(command, out, env), out, code)

# A real out-of-memory: another process holds all of the GPU's memory but 600 MiB (room for
# ctdenoise's CUDA context, not for its buffers). This process never touches the GPU itself.
if subprocess.run([sys.executable, "-c", "import cupy"], capture_output=True).returncode == 0:
    hog = subprocess.Popen([sys.executable, "-c",
                            "import cupy, time\n"
                            "free, _ = cupy.cuda.runtime.memGetInfo()\n"
                            "x = cupy.empty(free - (600 << 20), dtype=cupy.uint8)\n"
                            "print('held', flush=True)\n"
                            "time.sleep(120)\n"], stdout=subprocess.PIPE, text=True)
    hog.stdout.readline()
    out = os.path.join(work, "out_real_oom.nii")
    side, slices = 512, 256
    raw_big = os.path.join(work, "big.raw")
    with open(raw_big, "wb") as f:
        f.write(bytes(side * side * slices * 2))
    args = [ctdenoise, "nlm", "--search-radius", "2", "--patch-radius", "1", "--h", "10", raw_big, out,
            "--raw-dims", f"{side},{side},{slices}", "--raw-type", "int16", "--device", "cuda", "-q"]
    result = subprocess.run(args, capture_output=True, text=True)
    hog.kill()
    check("nlm, out of GPU memory (another process holds it)", result, out, 6)
else:
    print("CuPy is not installed: the real out-of-memory case is not run")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("GPU failures: ok")
