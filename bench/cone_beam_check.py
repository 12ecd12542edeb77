#!/usr/bin/env python3
"""Cone-beam scans of a volume reconstructed with FDK (experiment, not part of the product): the
texture of a C-arm or a CBCT scanner's flat panel, whose noise is correlated across slices by the
cone's geometry, not by slice-by-slice filtering. Does the automatic choice meet the goal there?

The simulator is written here with numpy (independent of ctdenoise): a circular orbit of 360
views, the source 1000 mm from the centre, a flat virtual detector through the centre at the
voxel's pitch (rows at the slice spacing) covering the volume's magnified shadow, Poisson counts
with the bowtie of bench/fan_beam_check.py, optionally a flat panel's scintillator blur (the counts
blurred by a Gaussian of 0.6 cells across and along the rows, which correlates the noise), and
Feldkamp, Davis & Kress's reconstruction (the data weighted by D / sqrt(D^2 + u^2 + v^2), the ramp
or Hann-apodised ramp filter along the rows, each view back-projected with the weight 1 / U^2).
The body goes on past the reconstructed slices (the end slices repeated as far as the cone
reaches). The reference is the same scan without noise (blurred alike). The scanned volume is the
Siemens series of ../shared/data shrunk 2 x in-plane (20 slices of 256 x 256, 1.95 x 1.95 x 2 mm;
its own noise, about 5 HU there, stays in the reference), at 4 x 10^5 and 10^5 photons per cell,
or the abdomen phantom of scripts/phantom_check.py at 10^5 and 2.5 x 10^4. NLM search 3 patch 1 and the bilateral filter at sigma_s 1 voxel, on
the CPU, each judged against the best of a sweep; about 30 minutes on 2 cores.

    scripts/setup.sh && python3 bench/cone_beam_check.py [--object "abdomen phantom"] [--offset-detector] [--json FILE]

A wider cone and a taller volume (a CBCT's: the abdomen phantom in 48 slices of 160 x 160 at 2.16 mm, the
source 500 mm from the centre, about 5.5 degrees each way), at doses of its own, judged against the sweeps
of an earlier run instead of sweeping again:

    python3 bench/cone_beam_check.py --object "abdomen phantom" --slices 48 --pixels 160 --source-mm 500 \
        --photons 6e3 1.5e3 [--windows ramp] [--no-blur] [--sweeps FILE]
"""
import argparse, pathlib, sys

import numpy as np
from scipy.ndimage import gaussian_filter, map_coordinates

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))
sys.path.insert(0, str(root / "bench"))

MU_WATER = 0.02  # 1 / mm
SOURCE_MM = 1000.0


def cone_geometry(shape, spacing_zyx, views=360, source_mm=SOURCE_MM):
    """The orbit and the virtual detector (bins u across, rows v along z, both in mm at the
    isocentre) that cover the volume's shadow from every view."""
    nz, n, _ = shape
    dz, px = spacing_zyx[0], spacing_zyx[1]
    D = source_mm
    half = 0.5 * n * px * np.sqrt(2)  # the volume's half diagonal in-plane, mm
    nb = int(np.ceil(2 * half * D / np.sqrt(D * D - half * half) / px * 1.02)) | 1
    # the nearest voxels to the source magnify the volume's half height by D / (D - half)
    nv = int(np.ceil(nz * dz * D / (D - half) / dz * 1.02)) | 1
    return dict(D=D, u=(np.arange(nb) - (nb - 1) / 2) * px, v=(np.arange(nv) - (nv - 1) / 2) * dz,
                beta=np.linspace(0, 2 * np.pi, views, endpoint=False), shape=shape, px=px, dz=dz, half=half)


def project(mu, g):
    """Line integrals (1/mm * mm) of mu (z, y, x, centred on the volume g was made for, and taller
    than it where the body goes on past the reconstructed slices) along each view's rays from the
    source to every detector cell: samples a pixel apart, trilinear."""
    nz, n, _ = mu.shape
    px, dz, D = g["px"], g["dz"], g["D"]
    c0, cz = (n - 1) / 2, (nz - 1) / 2
    uu, vv = np.meshgrid(g["u"], g["v"])                              # (nv, nu)
    R = g["half"] + px
    t = np.arange(D - R, D + R, px)
    out = np.zeros((len(g["beta"]), len(g["v"]), len(g["u"])))
    for i, b in enumerate(g["beta"]):
        src = np.array([D * np.cos(b), D * np.sin(b), 0.0])
        cell = np.stack([-np.sin(b) * uu, np.cos(b) * uu, vv], axis=-1)  # detector points, mm
        d = cell - src
        d /= np.linalg.norm(d, axis=-1, keepdims=True)
        xyz = src + t[:, None, None, None] * d[None]                     # (nt, nv, nu, 3)
        coords = [xyz[..., 2].ravel() / dz + cz, xyz[..., 1].ravel() / px + c0, xyz[..., 0].ravel() / px + c0]
        vals = map_coordinates(mu, coords, order=1, mode="constant", cval=0.0)
        out[i] = vals.reshape(xyz.shape[:-1]).sum(axis=0) * px
    return out


def fdk(p, g, window="ramp"):
    """Feldkamp-Davis-Kress reconstruction of a circular scan on the flat virtual detector: a full
    turn, or with g["overlap"] set, an offset detector reaching the centre's other side by that
    much (mm), each ray weighted by Wang's weights (fan_beam_check.redundancy_weights)."""
    from fan_beam_check import ramp_kernel, redundancy_weights
    nz, n, _ = g["shape"]
    px, dz, D, u, v = g["px"], g["dz"], g["D"], g["u"], g["v"]
    nb = len(u)
    orbit = "offset" if g.get("overlap") else "full"
    redundancy = 2 * redundancy_weights(dict(u=u, D=D, beta=g["beta"], orbit=orbit, overlap=g.get("overlap")))
    weighted = p * (D / np.sqrt(D * D + u[None, :] ** 2 + v[:, None] ** 2))[None] * redundancy[:, None, :]
    h = ramp_kernel(nb, px, window)
    q = np.apply_along_axis(lambda row: np.convolve(row, h)[nb - 1:2 * nb - 1], -1, weighted) * px
    c0, cz = (n - 1) / 2, (nz - 1) / 2
    yy, xx = np.mgrid[0:n, 0:n]
    x, y = (xx - c0) * px, (yy - c0) * px
    z = (np.arange(nz) - cz) * dz
    out = np.zeros((nz, n, n))
    for i, b in enumerate(g["beta"]):
        along = D - (x * np.cos(b) + y * np.sin(b))
        across = -x * np.sin(b) + y * np.cos(b)
        U = along / D
        col = np.broadcast_to(across * D / along / px + (nb - 1) / 2, (nz, n, n))
        row = z[:, None, None] * D / along[None] / dz + (len(v) - 1) / 2
        vals = map_coordinates(q[i], [row.ravel(), col.ravel()], order=1, mode="constant", cval=0.0)
        out += vals.reshape(nz, n, n) / (U * U)[None]
    return out * (2 * np.pi / len(g["beta"])) / 2


def scanner(clean_hu, spacing_zyx, source_mm=SOURCE_MM):
    """The geometry and the noise-free line integrals of a cone-beam scan of clean_hu."""
    g = cone_geometry(clean_hu.shape, spacing_zyx, source_mm=source_mm)
    # The body goes on past the first and last slices, as in a real scan: the end slices repeated
    # as far as the cone's outermost rays reach, so that those slices are not the object's edge.
    reach = int(np.ceil(g["v"][-1] * 2 * g["half"] / (g["D"] - g["half"]) / spacing_zyx[0])) + 1
    padded = np.pad(clean_hu, ((reach, reach), (0, 0), (0, 0)), mode="edge")
    return g, project(np.clip(MU_WATER * (1 + padded / 1000.0), 0, None), g)


def measured(g, p, photons, rng, blur=0.0, bowtie=2.0):
    """The line integrals the scanner reads from counts: Poisson counts of `photons` per cell at the
    centre of the bowtie (noise-free when photons is None), blurred by a flat panel's scintillator
    (sigma `blur` cells)."""
    umax = np.abs(g["u"]).max()
    incident = np.exp(-bowtie * (g["u"] / umax) ** 2)[None, None, :] * (1.0 if photons is None else photons)
    expected = incident * np.exp(-p)
    counts = expected if photons is None else rng.poisson(expected).astype(float)
    if blur > 0:
        counts = gaussian_filter(counts, (0, blur, blur), mode="nearest")
    return -np.log(np.maximum(counts, incident * 1e-9 if photons is None else 1) / incident)


def hu(mu):
    return (mu / MU_WATER - 1) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--object", default="Siemens series", choices=["Siemens series", "abdomen phantom", "CThead"])
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"), help="the real scans (../shared/data)")
    parser.add_argument("--json", help="write every case here")
    parser.add_argument("--offset-detector", action="store_true",
                        help="a CBCT's offset detector (a half-fan): it reaches the centre's other side by 15 %% of its "
                             "half-width, the rays weighted by Wang's weights")
    parser.add_argument("--slices", type=int, default=20,
                        help="the abdomen phantom's slices (2 mm apart; its in-plane pixels follow --pixels)")
    parser.add_argument("--pixels", type=int, default=256, help="the abdomen phantom's side in pixels (the body's size stays)")
    parser.add_argument("--source-mm", type=float,
                        help="the source's distance from the centre (1000 mm; 600 for CThead): a wider cone when nearer")
    parser.add_argument("--photons", type=float, nargs=2, help="the two doses, photons per cell (the object's own otherwise)")
    parser.add_argument("--windows", nargs="+", default=["ramp", "hann"], choices=["ramp", "hann"], help="the FBP windows")
    parser.add_argument("--sweeps", metavar="FILE",
                        help="judge against the best of the sweeps recorded in FILE (a --json run, or an object of them by "
                             "object) instead of sweeping again, where it holds the case")
    parser.add_argument("--no-blur", action="store_true", help="leave out the scans with a flat panel's blur")
    args = parser.parse_args()
    from check_cases import cthead_slices, finish, judge_3d_settings, real_scan, recorded_cases
    from phantom_check import abdomen
    source = SOURCE_MM
    if args.object == "Siemens series":
        series, px = real_scan(pathlib.Path(args.data) / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless", True)
        nz, ny, nx = series.shape
        clean = series.reshape(nz, ny // 2, 2, nx // 2, 2).mean(axis=(2, 4))
        spacing = (2.0, 2 * px, 2 * px)
        photons = (4e5, 1e5)
    elif args.object == "CThead":
        clean = cthead_slices(args.data, 41, 40)
        spacing = (2.0, 1.0, 1.0)
        photons = (2e5, 5e4)
        source = 600.0  # a head scanner's C-arm or CBCT: a wider cone (3.8 degrees each way)
    else:
        clean = abdomen((args.slices, args.pixels, args.pixels), 4)
        spacing = (2.0, 0.9 * 384 / args.pixels, 0.9 * 384 / args.pixels)
        photons = (1e5, 2.5e4)
    recorded = recorded_cases(args.sweeps, lambda c: (c["scan"], c["setting"]), (args.object.lower().replace(" ", "_"),))
    if args.source_mm:
        source = args.source_mm
    if args.photons:
        photons = tuple(args.photons)
    cases = []
    g, p = scanner(clean, spacing, source)
    if args.offset_detector:  # the detector's bins on the other side stay, unmeasured (weight 0), for the filter's tails
        g["overlap"] = 0.15 * np.abs(g["u"]).max()
    for blur in (0.0,) if args.no_blur else (0.0, 0.6):
        sinograms = {i0: measured(g, p, i0, np.random.default_rng(31 + int(i0 or 0) + int(10 * blur)), blur)
                     for i0 in (None,) + photons}
        for window in args.windows:
            reference = hu(fdk(sinograms[None], g, window))
            for i0 in photons:
                noisy = hu(fdk(sinograms[i0], g, window)).astype(np.float32)
                label = f"cone {window}{' offset detector' if args.offset_detector else ''}{' panel blur 0.6' if blur else ''} bowtie 2 I0 {i0:.2g}"
                judge_3d_settings(cases, noisy, reference, label, recorded, object=args.object,
                                  noise_sd=float(np.std(noisy - reference)))
    finish(cases, args.json)


if __name__ == "__main__":
    main()
