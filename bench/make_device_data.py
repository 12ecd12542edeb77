#!/usr/bin/env python3
"""Writes .devdata/siemens_crop_96x80x12_f32.raw: a real CT crop (HU, float32, x fastest) from the
uncompressed Siemens series of ../shared/data, for the CUDA tests on the device machine (which
does not get ../shared). Uses only the standard library: the files are Explicit VR Little Endian
with the 512 x 512 uint16 pixel data last, rescale intercept -1024."""
import pathlib, struct, sys

root = pathlib.Path(__file__).resolve().parent.parent
series = root.parent / "shared/data/dicom_series_siemens_biograph_mct_20slices/uncompressed_derived"
files = sorted(series.iterdir())[4:16]
x0, y0, nx, ny = 200, 260, 96, 80
out = bytearray()
for f in files:
    data = f.read_bytes()[-512 * 512 * 2:]
    pixels = struct.unpack("<%dH" % (512 * 512), data)
    for y in range(y0, y0 + ny):
        row = pixels[y * 512 + x0: y * 512 + x0 + nx]
        out += struct.pack("<%df" % nx, *[v - 1024.0 for v in row])
target = root / ".devdata/siemens_crop_96x80x12_f32.raw"
target.parent.mkdir(exist_ok=True)
target.write_bytes(out)
print(target, len(out), "bytes", file=sys.stderr)
