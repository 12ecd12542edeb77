#!/usr/bin/env python3
"""Fan-beam scans at coarse pixels (experiment, not part of the product): real scans averaged
down in-plane by 2 or 4 (a 512 x 512 slice to 256 or 128, as users shrink volumes to save time),
each slice scanned with bench/fan_beam_check.py's simulator (720 views, the bowtie, ramp or Hann)
at the dose that gives the body's middle slice the wanted noise. The reference is the same scans
without noise. The Siemens series (an adult abdomen with its arms: its lateral rays are the
longest, so its noise is streaked along x) in 2D (the middle slice) and 3D (its 20 slices),
20 slices of CThead (a head: a skull around the brain) in 3D, CT1's and the Catphan's slices in
2D. NLM (search 5 patch 1 in 2D, search 3 patch 1 in 3D) and
the bilateral filter at sigma_s 1 voxel on the CPU, each judged against the best of a sweep as
scripts/phantom_check.py judges it (0.5 dB and 0.005 SSIM, never below the noisy input).

    scripts/setup.sh && python3 bench/coarse_scan_check.py [--factors 2 4] [--sigma 40] [--json FILE]
    python3 bench/coarse_scan_check.py --sweeps FILE ...   # the automatic values only, judged on the
                                                          # best and noisy input of FILE's cases
"""
import argparse, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))
sys.path.insert(0, str(root / "bench"))


def shrink(image, factor):
    """The image averaged over factor x factor in-plane (its edges cut to a multiple)."""
    ny, nx = (n // factor * factor for n in image.shape[-2:])
    image = image[..., :ny, :nx]
    return image.reshape(*image.shape[:-2], ny // factor, factor, nx // factor, factor).mean(axis=(-3, -1))


def main():
    import ctdenoise as ctd
    from check_cases import cthead_slices, finish, real_scan, record, recorded_cases
    from fan_beam_check import simulate
    from phantom_check import judge, quality
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--factors", type=int, nargs="+", default=[2, 4], help="in-plane shrink factors")
    parser.add_argument("--sigma", type=float, nargs="+", default=[40], help="the noise in the body's middle slice, HU")
    parser.add_argument("--windows", nargs="+", default=["ramp", "hann"], choices=["ramp", "hann"])
    parser.add_argument("--only", nargs="+", default=[""], help="the cases whose label holds one of these only")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"), help="../shared/data")
    parser.add_argument("--json", help="write every case here")
    parser.add_argument("--sweeps", metavar="FILE",
                        help="take each case's best from FILE (an earlier --json, or its \"cases\") instead of sweeping "
                             "(the scans are seeded: the same images)")
    args = parser.parse_args()
    recorded = recorded_cases(args.sweeps, lambda c: (c["object"], c["factor"], c["window"], c["sigma"], c["setting"]))
    data = pathlib.Path(args.data)

    def scan(path, volume):
        image, spacing = real_scan(path, volume)
        # CT1 stores -3024 outside its field of view: air to the simulator
        return np.clip(image, -1024, 3071), spacing

    def cthead():  # the 20 slices through the middle of the skull, 1 mm pixels
        return cthead_slices(data, 47, 20), 1.0

    siemens = data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless"
    objects = {"Siemens series": lambda: scan(siemens, True), "Siemens slice": lambda: scan(siemens, False),
               "CThead volume": cthead,
               "CT1 slice": lambda: scan(data / "dicom_wg04_ct1_ge" / "CT1_UNC.dcm", False),
               "Catphan slice": lambda: scan(data / "dicom_catphan_philips_brilliance64" / "dicom_file01.dcm", False)}
    settings = {2: [("NLM search 5 patch 1", "nlm", dict(search_radius=5, patch_radius=1)),
                    ("bilateral sigma_s 1 vox", "bilateral", dict(sigma_spatial=1.0))],
                3: [("NLM search 3 patch 1", "nlm", dict(search_radius=3, patch_radius=1)),
                    ("bilateral sigma_s 1 vox", "bilateral", dict(sigma_spatial=1.0))]}
    cases = []
    for factor in args.factors:
        for name, make in objects.items():
            full, spacing = make()
            clean = shrink(full, factor)
            px = spacing * factor
            slices = clean if clean.ndim == 3 else clean[None]
            middle = slices[len(slices) // 2]
            body = middle > -500
            for window in args.windows:
                label = f"{name} x{factor} ({'x'.join(map(str, clean.shape))}, {px:.2f} mm) | fan {window}"
                if not any(o in label for o in args.only):
                    continue
                reference = np.stack([simulate(s, px, 720, window, None, None) for s in slices])
                # the dose for the wanted noise: its variance goes as 1 / I0
                pilot = simulate(middle, px, 720, window, 1e6, np.random.default_rng(1), 2.0) - reference[len(slices) // 2]
                for sigma in args.sigma:
                    photons = 1e6 * (pilot[body].std() / sigma) ** 2
                    rng = np.random.default_rng(5 + factor + int(sigma) + len(window))
                    noisy = np.stack([simulate(s, px, 720, window, photons, rng, 2.0) for s in slices]).astype(np.float32)
                    ref = reference.astype(np.float32)
                    if clean.ndim == 2:
                        noisy, ref = noisy[0], ref[0]
                    noisy_q = quality(noisy, ref)
                    for setting, kind, kw in settings[clean.ndim]:
                        f = ctd.nlm if kind == "nlm" else ctd.bilateral
                        old = recorded.get((name, factor, window, sigma, setting))
                        best = (old["best_value"], *old["best"]) if old else None
                        auto, auto_q, best, within = judge(f, noisy, ref, kw, "cpu", noisy_q, best)
                        record(cases, f"{label} I0 {photons:.2g} (sigma {sigma:g}) | {setting}", auto, auto_q, best, within,
                               object=name, factor=factor, pixel_mm=px, window=window, sigma=sigma, photons=photons,
                               setting=setting, noisy=list(noisy_q), scan_fit=auto["scan_fit"],
                               scan_texture_distance=auto["scan_texture_distance"])
    finish(cases, args.json)


if __name__ == "__main__":
    main()
