#!/usr/bin/env python3
"""The same images in other units (experiment, not part of the product): image-domain Poisson
noise (bench/poisson_noise_check.py's, whose level follows the values) on digital phantoms and
real slices, given to the filters in HU, as stored (HU + 1024, as pydicom's pixel_array holds
most scans), in attenuation per mm (water 0.0193, as a reconstruction loop holds it) and scaled
to [0, 1] ((HU + 1024) / 4096, as learning pipelines hold CT). The automatic value is in the
image's units: each is divided by the gain and judged in HU against the best of one sweep, as
scripts/phantom_check.py judges (0.5 dB and 0.005 SSIM). NLM search 5 patch 1 (3D: search 3) and
the bilateral filter at sigma_s 1 voxel, on the CPU.

    scripts/setup.sh && python3 bench/units_check.py [--sigma 30 60] [--json FILE]
"""
import argparse, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))

# (name, gain, offset): the image's values are gain * HU + offset.
UNITS = [("HU", 1.0, 0.0), ("stored", 1.0, 1024.0), ("attenuation per mm", 0.0193 / 1000, 0.0193),
         ("[0, 1]", 1 / 4096, 1024 / 4096)]


def main():
    import ctdenoise as ctd
    from check_cases import finish, objects_and_settings, real_image as real
    from phantom_check import abdomen, best_of_sweep, quality, shepp_logan, within_goal
    from poisson_noise_check import poisson_in_image, ring_phantom
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sigma", type=float, nargs="+", default=[30, 60], help="the noise's standard deviation at water (0 HU)")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"), help="../shared/data")
    parser.add_argument("--only", nargs="+", default=[""], help="the objects whose name holds one of these only")
    parser.add_argument("--json", help="write every case here")
    args = parser.parse_args()
    data = pathlib.Path(args.data)
    objects = {"Shepp-Logan 256": lambda: shepp_logan(256), "abdomen 256": lambda: abdomen((256, 256), 5),
               "ring of air 160 x 160 x 24": lambda: ring_phantom((24, 160, 160)),
               "CT1 slice": lambda: real(data / "dicom_wg04_ct1_ge" / "CT1_UNC.dcm"),
               "Siemens slice": lambda: real(data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless")}
    cases = []
    for name, clean, settings in objects_and_settings(objects, args.only):
        for sigma in args.sigma:
            noisy = poisson_in_image(clean, sigma, np.random.default_rng(17 + int(sigma)))
            noisy_q = quality(noisy, clean)
            for setting, kind, kw in settings:
                f = ctd.nlm if kind == "nlm" else ctd.bilateral
                best = None
                for unit, gain, offset in UNITS:
                    out, info = f((gain * noisy.astype(np.float64) + offset).astype(np.float32), device="cpu", return_info=True, **kw)
                    value = info["auto"]["value"] / gain
                    if best is None:  # the sweep in HU: the filters commute with a change of units
                        best = best_of_sweep(lambda v: quality(f(noisy, v, device="cpu", **kw), clean), value)
                    auto_q = quality((out.astype(np.float64) - offset) / gain, clean)
                    within = within_goal(auto_q, best[1:], noisy_q)
                    cases.append(dict(object=name, sigma=sigma, setting=setting, unit=unit, auto_value_hu=value,
                                      auto=list(auto_q), best_value=best[0], best=list(best[1:]), within=within,
                                      noise_over_image=info["auto"]["noise_over_image"]))
                    print(f"{name} | Poisson, sigma {sigma:g} at water | {setting} | {unit}: auto {value:.1f} HU "
                          f"({auto_q[0]:.2f}/{auto_q[1]:.4f}) best {best[0]:.1f} ({best[1]:.2f}/{best[2]:.4f}) "
                          f"x{value / best[0]:.2f} {'ok' if within else 'MISS'} | {info['auto']['noise_over_image']}", flush=True)
    for unit, _, _ in UNITS:
        print(f"{unit}: ", end="")
        finish([c for c in cases if c["unit"] == unit])
    finish(cases, args.json)


if __name__ == "__main__":
    main()
