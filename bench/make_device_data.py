#!/usr/bin/env python3
"""Writes .devdata/ for the device machine (which does not get ../shared), standard library only:
- siemens_crop_96x80x12_f32.raw: a real CT crop (HU, float32, x fastest) from the uncompressed
  Siemens series (Explicit VR Little Endian, 512 x 512 uint16 pixel data last, intercept -1024),
  for the CUDA tests;
- cthead_256x256x113_u16le.raw (CThead, byte-swapped to little endian) and
  bonsai_256x256x256_u8.raw (gunzipped), the real volumes of the bilateral benchmark."""
import gzip, pathlib, struct, sys

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

data = root.parent / "shared/data"
cthead = bytearray()
for i in range(1, 114):
    raw = (data / "cthead_stanford" / f"CThead.{i}").read_bytes()
    swapped = bytearray(len(raw))
    swapped[0::2], swapped[1::2] = raw[1::2], raw[0::2]
    cthead += swapped
(root / ".devdata/cthead_256x256x113_u16le.raw").write_bytes(bytes(cthead))
bonsai = gzip.decompress((data / "bonsai_volvis" / "bonsai_256x256x256_uint8.raw.gz").read_bytes())
(root / ".devdata/bonsai_256x256x256_u8.raw").write_bytes(bonsai)
print("cthead", len(cthead), "bonsai", len(bonsai), "bytes", file=sys.stderr)
