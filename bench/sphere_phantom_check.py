#!/usr/bin/env python3
"""A volume of few flat values (experiment, not part of the product): spheres of 300, -100 and
1000 HU in a cylinder of 40 HU in air, 48 x 128 x 128, with white noise of 20 and 50 HU. A
mid-sized volume whose edges are sparse: the automatic choice runs on a sample of blocks, which
must hold enough of them. NLM at the library's defaults (search radius 5, patch radius 1) and at
search radius 3, and the bilateral filter at sigma_s 1 voxel, on the CPU, each automatic value
judged against the best of a sweep as scripts/phantom_check.py judges it (0.5 dB and 0.005 SSIM).

    scripts/setup.sh && python3 bench/sphere_phantom_check.py [--sigma 20 50] [--json FILE]
"""
import argparse, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))


def spheres(shape=(48, 128, 128)):
    """(z, y, x) HU: a cylinder of 40 HU (radius 0.44 of the width) in air, three spheres in it."""
    nz, ny, nx = shape
    z, y, x = np.mgrid[:nz, :ny, :nx].astype(np.float64)
    s = nx / 128
    clean = np.full(shape, -1000, np.float32)
    clean[((x - 64 * s) / (56 * s)) ** 2 + ((y - 64 * s) / (56 * s)) ** 2 < 1] = 40
    for cx, cy, cz, r, v in [(44, 60, 24, 12, 300), (84, 70, 20, 9, -100), (64, 90, 30, 7, 1000)]:
        clean[(x - cx * s) ** 2 + (y - cy * s) ** 2 + (z - cz * nz / 48) ** 2 < (r * s) ** 2] = v
    return clean


def main():
    import ctdenoise as ctd
    from check_cases import finish, record
    from phantom_check import judge, quality
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sigma", type=float, nargs="+", default=[20, 50], help="the noise's standard deviation, HU")
    parser.add_argument("--json", help="write every case here")
    args = parser.parse_args()
    clean = spheres()
    settings = [("NLM search 5 patch 1 (defaults)", ctd.nlm, dict(search_radius=5, patch_radius=1)),
                ("NLM search 3 patch 1", ctd.nlm, dict(search_radius=3, patch_radius=1)),
                ("bilateral sigma_s 1 vox", ctd.bilateral, dict(sigma_spatial=1.0))]
    cases = []
    for sigma in args.sigma:
        noisy = (clean + np.random.default_rng(int(sigma)).normal(size=clean.shape) * sigma).astype(np.float32)
        noisy_q = quality(noisy, clean)
        for setting, f, kw in settings:
            auto, auto_q, best, within = judge(f, noisy, clean, kw, "cpu", noisy_q)
            record(cases, f"spheres 48 x 128 x 128 | white, sigma {sigma:g} | {setting}", auto, auto_q, best, within,
                   sigma=sigma, setting=setting, noisy=noisy_q)
    finish(cases, args.json)


if __name__ == "__main__":
    main()
