#!/usr/bin/env python3
"""Thick slices reconstructed at overlapping increments (experiment, not part of the product):
noise white or ramp-filtered in-plane (FBP's texture), averaged over WIDTH slices (a box, as a
slice of WIDTH increments' thickness averages them; wrapped at the ends) and scaled to SIGMA, so
that it is correlated with the next WIDTH - 1 slices, beyond the model's two. On the Siemens
series' central 256 x 256 x 20 and CThead's 40 slices through the skull (central 192 x 192), NLM
search 3 patch 1 and the bilateral filter at sigma_s 1 voxel on the CPU, each automatic value
judged against the best of a sweep as scripts/phantom_check.py judges it (0.5 dB and 0.005
SSIM). The references are the scans, whose own noise they keep.

    scripts/setup.sh && python3 bench/thick_slice_check.py [--width 3 5] [--sigma 30 60] [--json FILE]
"""
import argparse, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))


def main():
    from scipy.ndimage import convolve1d
    import ctdenoise as ctd
    from check_cases import cthead_slices, finish, objects_and_settings, real_image, record
    from phantom_check import judge, noise, quality
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, nargs="+", default=[3, 5], help="slices averaged")
    parser.add_argument("--sigma", type=float, nargs="+", default=[30, 60], help="the noise's standard deviation, HU")
    parser.add_argument("--textures", nargs="+", default=["white", "ramp"], choices=["white", "ramp"])
    parser.add_argument("--only", nargs="+", default=[""], help="the objects whose name holds one of these only")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"), help="../shared/data")
    parser.add_argument("--json", help="write every case here")
    args = parser.parse_args()
    data = pathlib.Path(args.data)

    def cthead():
        return cthead_slices(data, 41, 40)[:, 32:224, 32:224]

    siemens = data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless"
    objects = {"Siemens 256x256x20": lambda: real_image(siemens, True)[:, 128:384, 128:384], "CThead 192x192x40": cthead}
    cases = []
    for name, clean, settings in objects_and_settings(objects, args.only):
        for texture in args.textures:
            for width in args.width:
                for sigma in args.sigma:
                    rng = np.random.default_rng(int(7 + sigma + 10 * width))
                    n = convolve1d(noise(texture, clean.shape, 1.0, rng), np.ones(width) / width, axis=0, mode="wrap")
                    noisy = (clean + n * (sigma / n.std())).astype(np.float32)
                    noisy_q = quality(noisy, clean)
                    for setting, kind, kw in settings:
                        f = ctd.nlm if kind == "nlm" else ctd.bilateral
                        auto, auto_q, best, within = judge(f, noisy, clean, dict(kw), "cpu", noisy_q)
                        record(cases, f"{name} | {texture} over {width} slices, sigma {sigma:g} | {setting}", auto, auto_q,
                               best, within, object=name, texture=texture, width=width, sigma=sigma, setting=setting,
                               noisy=noisy_q)
    finish(cases, args.json)


if __name__ == "__main__":
    main()
