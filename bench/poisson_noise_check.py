#!/usr/bin/env python3
"""Image-domain Poisson noise, as simple low-dose simulations make it (experiment, not part of the
product): each voxel's value u (HU) read as counts in proportion to u + 1024, drawn from a Poisson
law and read back, so that the noise's variance grows with the value (water at SIGMA, the air at
-1000 HU a fortieth of water's variance, bone about twice it), over the whole image but what lies
below -1024 HU (a scan's outside of its field of view, CT1's -3024), as validate_params adds noise. On digital
phantoms (noise-free references; one whose air is a thin ring inside the padding) and real slices and
the Siemens series (their own noise kept by the reference), NLM search 5 patch 1 (3D: search 3)
and the bilateral filter at sigma_s 1 voxel on the CPU, each automatic value judged against the
best of a sweep as scripts/phantom_check.py judges it (0.5 dB and 0.005 SSIM).

    scripts/setup.sh && python3 bench/poisson_noise_check.py [--sigma 30 60] [--dose-per-slice [ramp|arch]] [--json FILE]
"""
import argparse, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))


def ring_phantom(shape):
    """The tests' CT-like phantom (tests/common/ct_phantom.hpp), (z, y, x): air, soft tissue with a
    gentle ramp, a bone disc (700 HU), a small disc of 120 HU, padding (-3024) outside a circular field of view
    that leaves the air a ring 12-22 voxels wide at 160 x 160."""
    import numpy as np
    nz, ny, nx = shape
    y, x = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    fx, fy = (x - nx / 2) / (nx / 2), (y - ny / 2) / (ny / 2)
    v = np.where(fx * fx / 0.7 + fy * fy / 0.5 < 1, 40 + 20 * fx, -1000.0)
    v[(fx - 0.25) ** 2 + fy ** 2 < 0.04] = 700
    v[(fx + 0.3) ** 2 + (fy - 0.2) ** 2 < 0.01] = 120
    v[fx * fx + fy * fy > 0.97] = -3024
    return np.repeat(v[None], nz, axis=0)


def poisson_in_image(clean, sigma, rng, dose_per_slice=None):
    """`clean` (HU) with Poisson counts in proportion to u + 1024 read back: variance sigma^2 at
    0 HU; below -1024 HU (padding) kept. dose_per_slice: None, "ramp" or "arch" (main's --help)."""
    import numpy as np
    scale = sigma * sigma / 1024  # HU per count: var = scale (u + 1024), sigma^2 at 0 HU
    if dose_per_slice:  # counts in proportion to each slice's dose
        along = np.linspace(0, 1, clean.shape[0])
        log_dose = np.log(2) * (1 - 2 * along if dose_per_slice == "ramp" else 2 * np.sin(np.pi * along) - 1)
        scale = scale / np.exp(log_dose)[:, None, None]
    counts = np.maximum(clean + 1024, 0) / scale
    noisy = rng.poisson(counts) * scale - 1024
    return np.where(clean >= -1024, noisy, clean).astype(np.float32)


def main():
    import ctdenoise as ctd
    from check_cases import finish, objects_and_settings, real_image as real, record
    from phantom_check import abdomen, judge, quality, shepp_logan
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sigma", type=float, nargs="+", default=[30, 60], help="the noise's standard deviation at water (0 HU)")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"), help="../shared/data")
    parser.add_argument("--only", nargs="+", default=[""], help="the objects whose name holds one of these only")
    parser.add_argument("--dose-per-slice", nargs="?", const="ramp", choices=["ramp", "arch"],
                        help="volumes only: the dose changes from slice to slice, as tube current modulation along z "
                             "makes it: ramp (the default), 2 x to 0.5 x the mean, exponentially over the slices; "
                             "arch, 0.5 x at the end slices to 2 x in the middle (log dose a half sine)")
    parser.add_argument("--json", help="write every case here")
    args = parser.parse_args()
    data = pathlib.Path(args.data)

    objects = {"Shepp-Logan 256": lambda: shepp_logan(256), "Shepp-Logan 512": lambda: shepp_logan(512),
               "abdomen 256": lambda: abdomen((256, 256), 5), "abdomen 512": lambda: abdomen((512, 512), 5),
               "abdomen 160 x 160 x 24": lambda: abdomen((24, 160, 160), 5),
               "ring of air 160 x 160 x 24": lambda: ring_phantom((24, 160, 160)),
               "Catphan slice": lambda: real(data / "dicom_catphan_philips_brilliance64" / "dicom_file01.dcm"),
               "CT1 slice": lambda: real(data / "dicom_wg04_ct1_ge" / "CT1_UNC.dcm"),
               "Siemens series": lambda: real(data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless", True)}
    cases = []
    for name, clean, settings in objects_and_settings(objects, args.only):
        if args.dose_per_slice and clean.ndim != 3:
            continue
        for sigma in args.sigma:
            noisy = poisson_in_image(clean, sigma, np.random.default_rng(17 + int(sigma)), args.dose_per_slice)
            noisy_q = quality(noisy, clean)
            for setting, kind, kw in settings:
                f = ctd.nlm if kind == "nlm" else ctd.bilateral
                auto, auto_q, best, within = judge(f, noisy, clean, kw, "cpu", noisy_q)
                dose = {None: "", "ramp": ", dose per slice 2 x to 0.5 x",
                        "arch": ", dose per slice 0.5 x to 2 x to 0.5 x"}[args.dose_per_slice]
                label = f"{name} | Poisson, sigma {sigma:g} at water{dose} | {setting}"
                record(cases, label, auto, auto_q, best, within, object=name, sigma=sigma, setting=setting, noisy=noisy_q)
    finish(cases, args.json)


if __name__ == "__main__":
    main()
