#!/usr/bin/env python3
"""Smooth ("blotchy") noise, as iterative reconstruction or resampling leaves it, on phantoms and
real slices (experiment, not part of the product): white noise blurred by a Gaussian of BLUR
voxels and scaled to 30 and 60 HU, wider than any texture of the validation sets (0.7 and 1.2
voxels). The noise lies within the field of view: a scan's padding (CT1's -3024 outside its
circle) stays padding, as a reconstruction leaves it (--noise-everywhere: over the padding too, as
until 2026-11-28). The reference is the clean image (a real slice keeps its own noise there). NLM search 5
patch 1 and the bilateral filter at sigma_s 1 voxel on the CPU, each automatic value judged
against the best of a sweep as scripts/phantom_check.py judges it (0.5 dB and 0.005 SSIM).

    scripts/setup.sh && python3 bench/smooth_noise_check.py --blur 1.6 2.0 [--json FILE]
"""
import argparse, pathlib, sys

import numpy as np
from scipy.ndimage import gaussian_filter

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))


def main():
    import ctdenoise as ctd
    from check_cases import finish, objects_and_settings, real_image as real, record
    from phantom_check import abdomen, judge, quality, shepp_logan
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blur", type=float, nargs="+", default=[1.6, 2.0], help="the Gaussian's sigma in voxels (0: white noise)")
    parser.add_argument("--sigma", type=float, nargs="+", default=[30, 60], help="the noise's standard deviation, HU")
    parser.add_argument("--ramp", action="store_true",
                        help="blur ramp-filtered noise (power spectrum |f|, filtered back-projection's) instead of white "
                             "noise: a band-pass texture, blotchy but without the lowest frequencies, as iterative "
                             "reconstruction leaves FBP-like noise (in-plane)")
    parser.add_argument("--white-share", type=float, default=0.0, metavar="S",
                        help="this share of the noise's variance white, the rest blurred (a smooth kernel's "
                             "noise with white noise added after it)")
    parser.add_argument("--noise-everywhere", action="store_true",
                        help="add the noise over a scan's padding too (outside its field of view), a large flat "
                             "noise-only area that the model reads easily")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"), help="../shared/data")
    parser.add_argument("--only", nargs="+", default=[""], help="the objects whose name holds one of these only")
    parser.add_argument("--json", help="write every case here")
    args = parser.parse_args()
    data = pathlib.Path(args.data)

    objects = {"abdomen 384": lambda: abdomen((384, 384), 1), "Shepp-Logan 256": lambda: shepp_logan(256),
               "Catphan slice": lambda: real(data / "dicom_catphan_philips_brilliance64" / "dicom_file01.dcm"),
               "CT1 slice": lambda: real(data / "dicom_wg04_ct1_ge" / "CT1_UNC.dcm"),
               # 3D: the whole series, the noise blurred in-plane (slices reconstructed one by one)
               "Siemens series": lambda: real(data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless", True)}
    cases = []
    for blur in args.blur:
        for name, clean, settings in objects_and_settings(objects, args.only):
            in_plane = (0,) * (clean.ndim - 2) + (blur, blur)
            padding = ctd.estimate_noise(clean.astype(np.float32)).excluded_value  # NaN where there is none
            for sigma in args.sigma:
                rng = np.random.default_rng(11 + int(sigma))
                white = rng.standard_normal(clean.shape)
                if args.ramp:
                    fy = np.fft.fftfreq(clean.shape[-2])[:, None]
                    fx = np.fft.fftfreq(clean.shape[-1])[None, :]
                    white = np.real(np.fft.ifft2(np.fft.fft2(white, axes=(-2, -1)) * np.sqrt(np.hypot(fx, fy)), axes=(-2, -1)))
                n = gaussian_filter(white, in_plane)
                if args.white_share > 0:
                    n = np.sqrt(1 - args.white_share) * n / n.std() + np.sqrt(args.white_share) * rng.standard_normal(clean.shape)
                inside = np.ones(clean.shape, bool) if args.noise_everywhere else clean != padding
                noisy = np.where(inside, clean + n * (sigma / n[inside].std()), clean).astype(np.float32)
                noisy_q = quality(noisy, clean)
                for setting, kind, kw in settings:
                    f = ctd.nlm if kind == "nlm" else ctd.bilateral
                    auto, auto_q, best, within = judge(f, noisy, clean, kw, "cpu", noisy_q)
                    label = (f"{name} | {'ramp ' if args.ramp else ''}blurred {blur:g} vox"
                             f"{f' + {args.white_share:g} white' if args.white_share else ''}, sigma {sigma:g} | {setting}")
                    record(cases, label, auto, auto_q, best, within, object=name, blur=blur, ramp=args.ramp,
                           noise_everywhere=args.noise_everywhere, white_share=args.white_share, sigma=sigma, setting=setting,
                           noisy=noisy_q)
    finish(cases, args.json)


if __name__ == "__main__":
    main()
