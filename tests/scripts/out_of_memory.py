#!/usr/bin/env python3
"""Out of host memory is exit code 6 with one line on stderr, wherever the allocation fails.

Runs `ctdenoise info` and `ctdenoise nlm` on a 512 x 512 x 64 int16 volume under address-space
limits from 600 MB down to 60 MB: each run must succeed, or fail with exit 6 (never a crash,
never another code), and at least one must fail.
Usage: out_of_memory.py CTDENOISE WORKDIR
"""
import os
import resource
import shutil
import subprocess
import sys

ctdenoise, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
raw = os.path.join(work, "in.raw")
with open(raw, "wb") as f:
    f.write(os.urandom(512 * 512 * 64 * 2))
nrrd = os.path.join(work, "in.nrrd")
subprocess.run([ctdenoise, "convert", raw, nrrd, "--raw-dims", "512,512,64", "--raw-type", "int16", "-q"], check=True)

failures, codes = [], []
for megabytes in range(600, 50, -30):
    def limit(mb=megabytes):
        resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))
    for command in (["info", nrrd], ["nlm", nrrd, os.path.join(work, f"out{megabytes}.nrrd"), "--h", "50",
                                     "--search-radius", "1", "--device", "cpu", "-q"]):
        result = subprocess.run([ctdenoise, *command], capture_output=True, text=True, preexec_fn=limit)
        lines = [l for l in result.stderr.splitlines() if l.strip()]
        codes.append(result.returncode)
        if result.returncode not in (0, 6) or (result.returncode == 6 and len(lines) != 1):
            failures.append(f"{command[0]} under {megabytes} MB: exit {result.returncode}, stderr {lines}")
        if result.returncode == 6 and command[0] == "nlm" and os.path.exists(command[2]):
            failures.append(f"nlm under {megabytes} MB: an output was left")
if 6 not in codes:
    failures.append("no limit made ctdenoise run out of memory")
print(f"exit codes under decreasing limits: {codes}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("out of memory: ok")
