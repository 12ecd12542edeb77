#!/usr/bin/env python3
"""Scans made as the LoDoPaB-CT benchmark makes them (experiment, not part of the product): a
simulator none of the rules was fitted on, in units none of the other checks use.

After Leuschner et al. (Scientific Data 2021): each real slice resampled to 362 x 362, its
attenuation normalised by 81.35858 per m (water 20 per m: about 0.246, air 0), a parallel beam of
1000 angles over 180 degrees (scikit-image's radon, whose detector spans the image's diagonal),
Poisson counts of I0 photons per bin (the benchmark: 4096), and filtered back-projection by
scikit-image's iradon with one of its five filters (ramp, Shepp-Logan, cosine, Hamming, Hann; the
product models the ramp, Shepp-Logan's and Hann's windows only). The reference is the same
back-projection of the noise-free rays, so the slice's own noise stays in it. The filters see the
normalised image; the automatic value (in those units) is judged in HU against the best of a sweep,
as scripts/phantom_check.py judges (0.5 dB and 0.005 SSIM over 2000 HU, never below the noisy
input). NLM search 5 patch 1 and the bilateral filter at sigma_s 1 voxel, on the CPU; about 10 s
a scan on 2 cores.

    scripts/setup.sh && python3 bench/lodopab_like_check.py [--photons 4096 1024] [--json FILE]
"""
import argparse, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))

MU_MAX = 81.35858  # the benchmark's normalisation, per m
MU_WATER = 20.0    # per m
FILTERS = ["ramp", "shepp-logan", "cosine", "hamming", "hann"]


def to_normalised(hu):
    return np.clip(MU_WATER * (1 + hu / 1000.0), 0, None) / MU_MAX


def to_hu(normalised):
    return (np.asarray(normalised, dtype=np.float64) * MU_MAX / MU_WATER - 1) * 1000


def main():
    import ctdenoise as ctd
    from check_cases import finish, real_scan, record
    from phantom_check import SETTINGS_2D, best_of_sweep, quality, within_goal
    from skimage.transform import iradon, radon, resize
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--photons", type=float, nargs="+", default=[4096, 1024], help="incident photons per detector bin")
    parser.add_argument("--filters", nargs="+", default=FILTERS, choices=FILTERS, help="iradon's filters")
    parser.add_argument("--size", type=int, default=362, help="the slices' side after resampling")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"), help="../shared/data")
    parser.add_argument("--only", nargs="+", default=[""], help="the slices whose name holds one of these only")
    parser.add_argument("--json", help="write every case here")
    args = parser.parse_args()
    data = pathlib.Path(args.data)
    slices = {"CT1 chest": data / "dicom_wg04_ct1_ge" / "CT1_UNC.dcm",
              "Siemens abdomen": data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless",
              "Catphan": data / "dicom_catphan_philips_brilliance64" / "dicom_file01.dcm"}
    settings = [s for s in SETTINGS_2D if s[0] in ("NLM search 5 patch 1", "bilateral sigma_s 1 vox")]
    theta = np.linspace(0.0, 180.0, 1000, endpoint=False)
    cases = []
    for name, path in slices.items():
        if not any(o in name for o in args.only):
            continue
        hu, pixel_mm = real_scan(path)
        pixel_m = pixel_mm * hu.shape[0] / args.size / 1000
        hu = resize(np.clip(hu, -1024, 3071), (args.size, args.size), order=1, anti_aliasing=True)
        rays = radon(to_normalised(hu), theta=theta, circle=False) * MU_MAX * pixel_m  # line integrals

        def reconstruct(p, window):
            return iradon(p / (MU_MAX * pixel_m), theta=theta, filter_name=window, circle=False, output_size=args.size)

        for window in args.filters:
            reference = to_hu(reconstruct(rays, window))
            for photons in args.photons:
                rng = np.random.default_rng(int(photons) + len(window) + len(name))
                counts = rng.poisson(photons * np.exp(-rays))
                noisy = reconstruct(-np.log(np.maximum(counts, 0.1) / photons), window).astype(np.float32)
                noisy_q = quality(to_hu(noisy), reference)
                for setting, kind, kw in settings:
                    f = ctd.nlm if kind == "nlm" else ctd.bilateral
                    out, info = f(noisy, device="cpu", return_info=True, **kw)
                    auto = info["auto"]
                    auto_q = quality(to_hu(out), reference)
                    best = best_of_sweep(lambda v: quality(to_hu(f(noisy, v, device="cpu", **kw)), reference), auto["value"])
                    within = within_goal(auto_q, best[1:], noisy_q)
                    record(cases, f"{name} | {window}, I0 {photons:g} (noisy {noisy_q[0]:.2f} dB) | {setting}", auto, auto_q, best,
                           within, object=name, filter=window, photons=photons, setting=setting, noisy=list(noisy_q))
    finish(cases, args.json)


if __name__ == "__main__":
    main()
