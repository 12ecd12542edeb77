#!/usr/bin/env python3
"""Strong and weak noise on real slices and a phantom (experiment, not part of the product): white
and ramp-filtered noise (power spectrum |f|, filtered back-projection's) of 10, 100 and 150 HU,
outside the 30-60 HU of the validation sets, within the field of view (a scan's padding stays
padding). The reference is the clean image (a real slice keeps its own noise there: CT1's 16 HU
outweighs 10 HU of added noise). NLM search 5 patch 1 and the bilateral filter at 1 voxel on the
CPU, each automatic value judged against the best of a sweep as scripts/phantom_check.py judges
it (0.5 dB and 0.005 SSIM, never below the noisy input).

    scripts/setup.sh && python3 bench/strong_noise_check.py [--sigma 10 100 150] [--json FILE]
    python3 bench/strong_noise_check.py --sweeps FILE   # automatic values only, judged on FILE's sweeps
"""
import argparse, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))


def main():
    import ctdenoise as ctd
    from check_cases import finish, real_image as real, record, recorded_cases
    from phantom_check import abdomen, judge, quality, within_goal
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sigma", type=float, nargs="+", default=[10, 100, 150], help="the noise's standard deviation, HU")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"), help="../shared/data")
    parser.add_argument("--only", nargs="+", default=[""], help="the objects whose name holds one of these only")
    parser.add_argument("--sweeps", metavar="FILE", help="sweep nothing: judge on the best and noisy input of FILE's cases")
    parser.add_argument("--json", help="write every case here")
    args = parser.parse_args()
    data = pathlib.Path(args.data)
    recorded = recorded_cases(args.sweeps, lambda c: (c["object"], c["texture"], c["sigma"], c["setting"]))

    objects = {"abdomen 384": lambda: abdomen((384, 384), 1),
               "Catphan slice": lambda: real(data / "dicom_catphan_philips_brilliance64" / "dicom_file01.dcm"),
               "CT1 slice": lambda: real(data / "dicom_wg04_ct1_ge" / "CT1_UNC.dcm"),
               "Siemens slice": lambda: real(data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless")}
    settings = [("NLM search 5 patch 1", ctd.nlm, dict(search_radius=5, patch_radius=1)),
                ("bilateral sigma_s 1 vox", ctd.bilateral, dict(sigma_spatial=1.0))]
    cases = []
    for name, make in objects.items():
        if not any(o in name for o in args.only):
            continue
        clean = make()
        padding = ctd.estimate_noise(clean.astype(np.float32)).excluded_value  # NaN where there is none
        inside = clean != padding
        for texture in ("white", "ramp"):
            for sigma in args.sigma:
                rng = np.random.default_rng(7 + int(sigma))
                n = rng.standard_normal(clean.shape)
                if texture == "ramp":
                    fy = np.fft.fftfreq(clean.shape[0])[:, None]
                    fx = np.fft.fftfreq(clean.shape[1])[None, :]
                    n = np.real(np.fft.ifft2(np.fft.fft2(n) * np.sqrt(np.hypot(fx, fy))))
                noisy = np.where(inside, clean + n * (sigma / n[inside].std()), clean).astype(np.float32)
                for setting, f, kw in settings:
                    old = recorded.get((name, texture, sigma, setting))
                    if old:
                        out, info = f(noisy, device="cpu", return_info=True, **kw)
                        auto, auto_q, noisy_q = info["auto"], quality(out, clean), old["noisy"]
                        best = (old["best_value"], *old["best"])
                        within = within_goal(auto_q, best[1:], noisy_q)
                    else:
                        noisy_q = quality(noisy, clean)
                        auto, auto_q, best, within = judge(f, noisy, clean, kw, "cpu", noisy_q)
                    record(cases, f"{name} | {texture} {sigma:g} | {setting}", auto, auto_q, best, within, object=name,
                           texture=texture, sigma=sigma, setting=setting, noisy=noisy_q)
    finish(cases, args.json)


if __name__ == "__main__":
    main()
