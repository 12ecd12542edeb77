#!/usr/bin/env python3
"""Whose miss is it: the noise model's or the risk's? (experiment, not part of the product)

For one fan-beam scan of bench/fan_beam_check.py, the true mean squared error against the
noise-free reference and Monte Carlo SURE with the simulator's own noise as the probe (K more
realisations, each less the reference) over a range of strengths, beside the automatic value and
the automatic value with the added noise's own model (`noise_model=`). Where SURE's least lies at
the true least and the automatic value does not, the model (its level or texture) is what misses;
where SURE's least lies away from the true least, the noise is not the Gaussian noise of one
covariance that SURE assumes, or the reference keeps part of the image's noise.

SURE(h) = |f(y) - y|^2 / N - mean(n^2) + 2 mean_k[b_k . (f(y + eps b_k) - f(y))] / (eps N), with
b_k the probes and eps a small step (the divergence of the filter along the noise).

    scripts/setup.sh && python3 bench/oracle_risk_check.py "Shepp-Logan 256" --window ramp --photons 1e5 --detector-pitch 2
"""
import argparse, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))


def main():
    import ctdenoise as ctd
    from fan_beam_check import OBJECTS, noise_seed, scanned_object, simulate
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phantom", choices=OBJECTS)
    parser.add_argument("--window", default="ramp", choices=["ramp", "hann", "shepp-logan", "soft", "sharp"])
    parser.add_argument("--photons", type=float, default=1e5)
    parser.add_argument("--bowtie", type=float, default=0.0)
    parser.add_argument("--detector-pitch", type=float, default=1.0)
    parser.add_argument("--cell-aperture", action="store_true")
    parser.add_argument("--filter", default="nlm", choices=["nlm", "bilateral"],
                        help="NLM search 5 patch 1, or the bilateral filter at sigma_s 1 voxel")
    parser.add_argument("--probes", type=int, default=4, help="noise realisations for the divergence")
    parser.add_argument("--eps", type=float, default=0.05, help="the step along each probe")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"))
    args = parser.parse_args()

    clean, px = scanned_object(args.phantom, pathlib.Path(args.data))
    scan = dict(bowtie=args.bowtie, pitch=args.detector_pitch, cell=args.cell_aperture)
    reference = simulate(clean, px, 720, args.window, None, None, **scan)
    # The image fan_beam_check judges (the same seed), and independent realisations as probes.
    noisy = simulate(clean, px, 720, args.window, args.photons, np.random.default_rng(noise_seed(args.photons, args.bowtie)),
                     **scan).astype(np.float32)
    probes = [(simulate(clean, px, 720, args.window, args.photons, np.random.default_rng(1000 + k), **scan) - reference)
              for k in range(args.probes)]
    variance = np.mean([np.mean(b * b) for b in probes])
    noise = (noisy - reference).astype(np.float32)
    if args.filter == "nlm":
        def run(y, value=None, **kw):
            return ctd.nlm(y, h="auto" if value is None else value, device="cpu", **kw)
    else:
        def run(y, value=None, **kw):
            return ctd.bilateral(y, sigma_range="auto" if value is None else value, device="cpu", **kw)
    _, info = run(noisy, return_info=True)
    _, oracle = run(noisy, return_info=True, noise_model=ctd.estimate_noise(noise))
    auto = info["auto"]["value"]
    print(f"{args.phantom} | fan {args.window} bowtie {args.bowtie:g} pitch {args.detector_pitch:g}"
          f"{' cell' if args.cell_aperture else ''} I0 {args.photons:.2g} | {args.filter}")
    print(f"noise: rms {np.sqrt(variance):.2f}; the image's model {info['auto']['noise'].sigma:.2f}, the added noise's own "
          f"{oracle['auto']['noise'].sigma:.2f}; the noise-free reference's {ctd.estimate_noise(reference.astype(np.float32)).sigma:.2f}")
    print(f"automatic {auto:.2f} ({info['auto']['noise_over_image']}); with the added noise's own model "
          f"{oracle['auto']['value']:.2f} ({oracle['auto']['noise_over_image']})")
    rows = []
    for value in auto * np.geomspace(0.25, 4, 17):
        out = run(noisy, value).astype(np.float64)
        mse = np.mean((out - reference) ** 2)
        divergence = np.mean([np.mean(b * (run((noisy + args.eps * b).astype(np.float32), value) - out)) / args.eps for b in probes])
        rows.append((value, mse, np.mean((out - noisy) ** 2) - variance + 2 * divergence))
        print(f"  {value:9.2f}  mse {mse:10.3f}  sure {rows[-1][2]:10.3f}", flush=True)
    best, least = min(rows, key=lambda r: r[1]), min(rows, key=lambda r: r[2])
    print(f"least true error at {best[0]:.2f}, least SURE at {least[0]:.2f} (its true error {least[1] / best[1]:.3f} x the least)")


if __name__ == "__main__":
    main()
