#!/usr/bin/env python3
"""Derived DICOM carries the filter, variant and parameters in DerivationDescription (0008,2111).

Read back with pydicom, a reader independent of the GDCM that wrote it.
Usage: dicom_provenance.py CTDENOISE WORKDIR   (exit 77, skipped, when pydicom is missing)
"""
import os
import random
import shutil
import struct
import subprocess
import sys

try:
    import pydicom
except ImportError:
    print("pydicom is not installed: skipped")
    sys.exit(77)

ctdenoise, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def run(*args):
    result = subprocess.run([ctdenoise, *args, "-q"], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"ctdenoise {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")


# A noisy 40 x 36 x 3 int16 volume: a disc of 60 HU in -1000 HU air, white noise of sigma 25.
rng = random.Random(7)
nx, ny, nz = 40, 36, 3
values = []
for z in range(nz):
    for y in range(ny):
        for x in range(nx):
            inside = (x - 20) ** 2 + (y - 18) ** 2 < 14 ** 2
            values.append(int(round((60 if inside else -1000) + rng.gauss(0, 25))))
raw = os.path.join(work, "noisy.raw")
with open(raw, "wb") as f:
    f.write(struct.pack(f"<{len(values)}h", *values))
series = os.path.join(work, "noisy_series")
run("convert", raw, series, "--raw-dims", f"{nx},{ny},{nz}", "--raw-type", "int16")

cases = {
    "nlm": (["nlm", "--search-radius", "3", "--patch-radius", "1"], ["nlm", "search_radius=3", "patch_radius=1", "h=", "variant="]),
    "bilateral": (["bilateral", "--sigma-spatial", "1.5"], ["bilateral", "sigma_spatial=1.5", "sigma_range=", "variant="]),
}
failures = []
for name, (args, expected) in cases.items():
    out = os.path.join(work, f"{name}_series")
    run(*args, series, out, "--device", "cpu")
    files = sorted(os.listdir(out))
    if len(files) != nz:
        failures.append(f"{name}: {len(files)} files written, expected {nz}")
        continue
    for file in files:
        ds = pydicom.dcmread(os.path.join(out, file))
        text = str(ds.get("DerivationDescription", ""))
        missing = [e for e in expected if e not in text]
        if missing:
            failures.append(f"{name}/{file}: DerivationDescription {text!r} lacks {missing}")
        if "DERIVED" not in list(ds.ImageType):
            failures.append(f"{name}/{file}: ImageType {list(ds.ImageType)} is not DERIVED")
    print(f"{name}: {text}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("derived DICOM provenance: ok")
