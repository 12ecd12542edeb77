#!/usr/bin/env python3
"""A kill at any moment leaves the old destination or the complete new one, never a mix.

Replaces an existing output (a .nii.gz file, a DICOM series folder, a .mhd + .raw pair) with
--overwrite, and
kills ctdenoise with SIGKILL at random moments of the run (reading, filtering, writing, the final
rename), many times. After each kill the destination must be byte for byte the old output or the
new one (made once, uninterrupted, beforehand).
Usage: kill_during_write.py CTDENOISE WORKDIR [ROUNDS]
"""
import hashlib
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time

ctdenoise, work = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 40
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def digest(path):
    """A file's bytes as a hash; for a DICOM series folder (new UIDs every run) and a MetaImage
    header with its data file (whose name alternates), the voxels as ctdenoise reads them."""
    h = hashlib.sha256()
    if os.path.isdir(path) or (path.endswith(".mhd") and os.path.exists(path)):
        if os.path.isdir(path):
            h.update(str(len(os.listdir(path))).encode())
        voxels = os.path.join(work, "digest.raw")
        result = subprocess.run([ctdenoise, "convert", path, voxels, "--overwrite", "-q"], capture_output=True)
        if result.returncode != 0:
            return "unreadable"
        with open(voxels, "rb") as f:
            h.update(f.read())
    elif os.path.exists(path):
        with open(path, "rb") as f:
            h.update(f.read())
    else:
        return "missing"
    return h.hexdigest()


def run(*args, check=True):
    result = subprocess.run([ctdenoise, *args, "-q"], capture_output=True, text=True)
    if check and result.returncode != 0:
        sys.exit(f"ctdenoise {' '.join(args)} failed: {result.stderr.strip()}")


# Input: 96 x 96 x 24 int16 with white noise (big enough that a run takes a moment).
rng = random.Random(11)
nx, ny, nz = 96, 96, 24
raw = os.path.join(work, "in.raw")
with open(raw, "wb") as f:
    f.write(struct.pack(f"<{nx * ny * nz}h", *(int(rng.gauss(40, 30)) for _ in range(nx * ny * nz))))
layout = ["--raw-dims", f"{nx},{ny},{nz}", "--raw-type", "int16"]
filter_args = ["nlm", "--search-radius", "2", "--patch-radius", "1", "--h", "40", "--device", "cpu"]

failures = []
for suffix in ["out.nii.gz", "series", "out.mhd"]:
    dest = os.path.join(work, suffix)
    new = os.path.join(work, "new_" + suffix)
    run(*filter_args, raw, new, *layout)  # the complete new output
    # The old output: something else under the same name.
    run("convert", raw, dest, *layout)
    old_digest, new_digest = digest(dest), digest(new)
    assert old_digest != new_digest
    start = time.monotonic()
    run(*filter_args, raw, os.path.join(work, "timing_" + suffix), *layout)
    duration = time.monotonic() - start
    outcomes = {"old": 0, "new": 0}
    for r in range(rounds):
        # Restore the old output when the previous round replaced it.
        if digest(dest) != old_digest:
            run("convert", raw, dest, *layout, "--overwrite")
        proc = subprocess.Popen([ctdenoise, *filter_args, raw, dest, *layout, "--overwrite", "-q"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, duration * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        now = digest(dest)
        if now == old_digest:
            outcomes["old"] += 1
        elif now == new_digest:
            outcomes["new"] += 1
        else:
            failures.append(f"{suffix}: round {r}: the destination is neither the old nor the new output")
    print(f"{suffix}: {rounds} kills over {duration:.2f} s runs: old kept {outcomes['old']}, new complete {outcomes['new']}")
    leftovers = [n for n in os.listdir(work) if n.startswith(".ctdenoise-")]
    run("convert", raw, os.path.join(work, "cleanup.nii"), *layout)  # a new run removes abandoned staging
    if [n for n in os.listdir(work) if n.startswith(".ctdenoise-")]:
        failures.append(f"{suffix}: abandoned staging folders were not removed by the next run")
    print(f"  {len(leftovers)} abandoned staging folders before the next run, 0 after")
    os.remove(os.path.join(work, "cleanup.nii"))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("kill at random moments: ok")
