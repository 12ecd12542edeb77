#!/usr/bin/env python3
"""Fan-beam scans of a volume (experiment, not part of the product): an abdomen phantom of
20 slices of 256 x 256 (scripts/phantom_check.py), each slice scanned with bench/fan_beam_check.py's
simulator (720 views, the bowtie, 2.5 x 10^4 photons, ramp or Hann), alone or with the noise
correlated across slices by [1 2 1] / 4 (its variance kept). With --z-modulation, instead: the
photons change from slice to slice, as a helical scan's tube current follows the body along z
(here 0.5 x to 2 x the dose, geometrically over the 20 slices; each slice alone). The reference is
the same scans without noise. With --spectrum 120kvp, a polychromatic beam (bench/fan_beam_check.py).
NLM search 3 patch 1 and the bilateral filter at sigma_s 1 voxel on
the CPU, each judged against the best of a sweep; about 12 minutes on 2 cores (6 with
--z-modulation).

With --object "Siemens series", the scanned volume is a real one instead: the Siemens series of
../shared/data (20 slices of an upper abdomen), shrunk 2 x in-plane to 256 x 256 at 1.95 mm (its own
noise, about 10 HU, halves and stays in the reference), at 2 x 10^5 and 5 x 10^4 photons (noisy inputs
of about 32 and 27 dB); about 25 minutes on 2 cores. With --shrink 1, at its own 512 x 512 (about an hour).

    scripts/setup.sh && python3 bench/fan_beam_volume_check.py [--z-modulation] [--object "Siemens series" [--shrink 1]] [--json FILE]
"""
import argparse, pathlib, sys

import numpy as np
from scipy.ndimage import convolve1d

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))
sys.path.insert(0, str(root / "bench"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--z-modulation", action="store_true", help="the dose changes from slice to slice (0.5 x to 2 x)")
    parser.add_argument("--object", default="abdomen phantom", choices=["abdomen phantom", "Siemens series"])
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"), help="the real scans (../shared/data)")
    parser.add_argument("--shrink", type=int, default=2, choices=[1, 2],
                        help="the Siemens series shrunk this many times in-plane (1: its 512 x 512 at 0.98 mm, "
                             "at 10^6 and 2.5 x 10^5 photons; about an hour on 2 cores)")
    parser.add_argument("--spectrum", default="mono", choices=["mono", "120kvp"],
                        help="one energy, or bench/fan_beam_check.py's polychromatic beam (water and bone, an "
                             "energy-integrating detector, the water beam-hardening correction)")
    parser.add_argument("--json", help="write every case here")
    parser.add_argument("--sweeps", metavar="FILE",
                        help="judge against the best of the sweeps of an earlier --json run, where it holds the case "
                             "(the scans are seeded: the same images); sweep the others")
    args = parser.parse_args()
    from check_cases import finish, judge_3d_settings, real_scan, recorded_cases
    recorded = recorded_cases(args.sweeps, lambda c: (c["scan"], c["setting"]) if "scan" in c else tuple(c["case"].split(" | ")))
    from fan_beam_check import simulate
    from phantom_check import abdomen
    if args.object == "Siemens series":
        series, px = real_scan(pathlib.Path(args.data) / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless", True)
        nz, ny, nx = series.shape
        k = args.shrink
        clean = series.reshape(nz, ny // k, k, nx // k, k).mean(axis=(2, 4))
        px *= k
        photons = (2e5, 5e4) if k == 2 else (1e6, 2.5e5)  # noisy inputs of 27-42 dB either way
    else:
        clean = abdomen((20, 256, 256), 4)
        px = 0.9 * 384 / 256
        photons = (2.5e4,)
    cases = []
    dose = np.geomspace(0.5, 2.0, len(clean)) if args.z_modulation else np.ones(len(clean))
    label = (" z-modulated 0.5-2x" if args.z_modulation else "") + (f" {args.spectrum}" if args.spectrum != "mono" else "")
    for window in ("ramp", "hann"):
        reference = np.stack([simulate(s, px, 720, window, None, None, spectrum=args.spectrum) for s in clean])
        for i0 in photons:
            # The phantom's seeds as they were when it scanned at one dose.
            rng = np.random.default_rng(21 + len(window) + (0 if i0 == 2.5e4 else int(i0)))
            scanned = np.stack([simulate(s, px, 720, window, i0 * m, rng, 2.0, spectrum=args.spectrum)
                                for s, m in zip(clean, dose)])
            for across in (False,) if args.z_modulation else (False, True):
                noise = scanned - reference
                if across:
                    noise = convolve1d(noise, [0.25, 0.5, 0.25], axis=0, mode="nearest") * np.sqrt(8 / 3)
                noisy = (reference + noise).astype(np.float32)
                scan = f"fan {window} bowtie 2 I0 {i0:.2g}{label}{' z-correlated' if across else ''}"
                judge_3d_settings(cases, noisy, reference, scan, recorded, object=args.object)
    finish(cases, args.json)


if __name__ == "__main__":
    main()
