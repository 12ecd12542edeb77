#!/usr/bin/env python3
"""Iterative reconstructions (experiment, not part of the product): scikit-image's SART of
scripts/phantom_check.py's phantoms and of real slices, and how near the best of a sweep the
automatic values are.

SART (Andersen & Kak) as scikit-image has it (`iradon_sart`, relaxation 0.15, each iteration
starting from the last), over a parallel-beam scan made as phantom_check.simulate_scan makes it:
the attenuation (water 0.02 / mm) projected over 180 angles in 180 degrees and Poisson counts of
the incident photons per ray. Its noise is not filtered back-projection's: an unfiltered
back-projection, smooth and coarse-grained (white noise blurred by about 0.6 pixels, with a
tail over tens of pixels), and it grows with the iterations as the image sharpens. The
reference is the same number of iterations on the scan without noise (streaks and blur of the
reconstruction included). Every setting of phantom_check's 2D matrix, on the CPU; about
10 minutes per phantom on 2 cores. Real slices of ../shared/data can be the scanned object too
("Catphan slice", "Siemens slice", "CT1 slice": their own noise stays in the reference).

    scripts/setup.sh && python3 bench/iterative_recon_check.py "Shepp-Logan 256" [--iterations 1 2] [--json FILE]
    python3 bench/iterative_recon_check.py "abdomen 384" --sweeps FILE   # judge on FILE's recorded sweeps
"""
import argparse, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))


def sart(clean_hu, pixel_mm, views, iterations, photons, rng):
    """scikit-image's SART of a parallel-beam scan of `clean_hu` (2D, HU) as
    phantom_check.scan_rays measures it (`views` angles over 180 degrees, Poisson counts of
    `photons` per ray; None: no noise), `iterations` passes.
    Returns the reconstruction in HU, the size of `clean_hu`."""
    from skimage.transform import iradon_sart
    from phantom_check import MU_WATER, scan_rays
    theta = np.linspace(0.0, 180.0, views, endpoint=False)
    p = scan_rays(clean_hu, theta, photons, pixel_mm, rng)
    mu = None
    for _ in range(iterations):
        mu = iradon_sart(p / pixel_mm, theta=theta, image=mu)
    # scikit-image reconstructs on the square the sinogram's rows span; the object is its middle
    n, m = clean_hu.shape[-1], mu.shape[0]
    o = (m - n) // 2
    return (mu[o:o + n, o:o + n] / MU_WATER - 1) * 1000


def main():
    import ctdenoise as ctd
    from check_cases import finish, real_scan, recorded_cases
    from phantom_check import SETTINGS_2D, abdomen, judge, quality, shepp_logan
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phantom", choices=["abdomen 384", "abdomen 512", "Shepp-Logan 256", "Catphan slice",
                                            "Siemens slice", "CT1 slice"])
    parser.add_argument("--iterations", type=int, nargs="+", default=[1, 2], metavar="N",
                        help="SART's passes (scikit-image's documentation shows 1 and 2)")
    parser.add_argument("--views", type=int, default=180)
    parser.add_argument("--photons", type=float, nargs="+", default=[1e5, 2.5e4], metavar="I0",
                        help="the incident photons per ray of each dose")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"),
                        help="the data folder of the real slices (../shared/data)")
    parser.add_argument("--json", help="write every case here")
    parser.add_argument("--sweeps", metavar="FILE",
                        help="sweep only the cases missing from this --json file of an earlier run: take their best "
                             "and noisy input from it (the scans are seeded: the same images)")
    args = parser.parse_args()
    key = lambda c: (c["phantom"], c["views"], c["iterations"], c["photons"], c["setting"])  # noqa: E731
    recorded = recorded_cases(args.sweeps, key)
    data = pathlib.Path(args.data)
    objects = {"abdomen 384": lambda: (abdomen((384, 384), 1), 0.9),
               "abdomen 512": lambda: (abdomen((512, 512), 2), 0.7),
               "Shepp-Logan 256": lambda: (shepp_logan(256), 0.9),
               "Catphan slice": lambda: real_scan(data / "dicom_catphan_philips_brilliance64" / "dicom_file01.dcm"),
               "Siemens slice": lambda: real_scan(data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless"),
               "CT1 slice": lambda: real_scan(data / "dicom_wg04_ct1_ge" / "CT1_UNC.dcm")}
    clean, px = objects[args.phantom]()
    cases = []
    for iterations in args.iterations:
        reference = sart(clean, px, args.views, iterations, None, None)
        for photons in args.photons:
            rng = np.random.default_rng(7 + iterations + int(photons))
            noisy = sart(clean, px, args.views, iterations, photons, rng).astype(np.float32)
            noisy_q = quality(noisy, reference)
            model = ctd.estimate_noise(noisy)
            for setting, kind, kw in SETTINGS_2D:
                f = ctd.nlm if kind == "nlm" else ctd.bilateral
                case = dict(phantom=args.phantom, views=args.views, iterations=iterations, photons=photons, setting=setting)
                old = recorded.get(key(case))
                best = (old["best_value"], *old["best"]) if old else None
                auto, auto_q, best, within = judge(f, noisy, reference, kw, "cpu", noisy_q, best)
                case.update(noise_std=float(np.std(noisy - reference)), model_sigma=model.sigma,
                            fell_back_to_white=model.fell_back_to_white, auto_value=auto["value"], auto=list(auto_q),
                            best_value=best[0], best=list(best[1:]), noisy=list(noisy_q), within=within,
                            noise_over_image=auto["noise_over_image"])
                cases.append(case)
                print(f"{args.phantom} | SART {iterations} it, {args.views} views, I0 {photons:.2g} | {setting}: noise "
                      f"{case['noise_std']:.1f}, model {model.sigma:.1f}{' (white)' if model.fell_back_to_white else ''}, "
                      f"auto {auto['value']:.1f} ({auto_q[0]:.2f}/{auto_q[1]:.4f}) best {best[0]:.1f} "
                      f"({best[1]:.2f}/{best[2]:.4f}) x{auto['value'] / best[0]:.2f} {'ok' if within else 'MISS'} | "
                      f"{auto['noise_over_image']}", flush=True)
    finish(cases, args.json)


if __name__ == "__main__":
    main()
