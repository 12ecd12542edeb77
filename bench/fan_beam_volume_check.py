#!/usr/bin/env python3
"""Fan-beam scans of a volume (experiment, not part of the product): an abdomen phantom of
20 slices of 256 x 256 (scripts/phantom_check.py), each slice scanned with bench/fan_beam_check.py's
simulator (720 views, the bowtie, 2.5 x 10^4 photons, ramp or Hann), alone or with the noise
correlated across slices by [1 2 1] / 4 (its variance kept). With --z-modulation, instead: the
photons change from slice to slice, as a helical scan's tube current follows the body along z
(here 0.5 x to 2 x the dose, geometrically over the 20 slices; each slice alone). The reference is
the same scans without noise. NLM search 3 patch 1 and the bilateral filter at sigma_s 1 voxel on
the CPU, each judged against the best of a sweep; about 12 minutes on 2 cores (6 with
--z-modulation).

    scripts/setup.sh && python3 bench/fan_beam_volume_check.py [--z-modulation]
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
    args = parser.parse_args()
    import ctdenoise as ctd
    from fan_beam_check import simulate
    from phantom_check import SETTINGS_3D, abdomen, judge, quality
    clean = abdomen((20, 256, 256), 4)
    px = 0.9 * 384 / 256
    dose = np.geomspace(0.5, 2.0, len(clean)) if args.z_modulation else np.ones(len(clean))
    label = " z-modulated 0.5-2x" if args.z_modulation else ""
    for window in ("ramp", "hann"):
        reference = np.stack([simulate(s, px, 720, window, None, None) for s in clean])
        rng = np.random.default_rng(21 + len(window))
        scanned = np.stack([simulate(s, px, 720, window, 2.5e4 * m, rng, 2.0) for s, m in zip(clean, dose)])
        for across in (False,) if args.z_modulation else (False, True):
            noise = scanned - reference
            if across:
                noise = convolve1d(noise, [0.25, 0.5, 0.25], axis=0, mode="nearest") * np.sqrt(8 / 3)
            noisy = (reference + noise).astype(np.float32)
            noisy_q = quality(noisy, reference)
            for setting, kind, kw in SETTINGS_3D:
                f = ctd.nlm if kind == "nlm" else ctd.bilateral
                auto, auto_q, best, within = judge(f, noisy, reference, kw, "cpu", noisy_q)
                print(f"fan {window} bowtie 2 I0 2.5e4{label}{' z-correlated' if across else ''} | {setting}: auto {auto['value']:.1f} "
                      f"({auto_q[0]:.2f}/{auto_q[1]:.4f}) best {best[0]:.1f} ({best[1]:.2f}/{best[2]:.4f}) "
                      f"{'ok' if within else 'MISS'} | {auto['noise_over_image']}", flush=True)


if __name__ == "__main__":
    main()
