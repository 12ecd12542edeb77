#!/usr/bin/env python3
"""How far is NLM's automatic h from the best against the truth, where the reference keeps noise
of its own? (experiment, not part of the product; docs/parameters.md, "What is not reached").

The validation sets add noise n to a real scan r = t + e, whose own noise e the reference keeps.
Against r, every value that also removes e reads as over-smoothing. With the filter's output f
of y = r + n and e Gaussian of covariance C_e, Stein's lemma gives E<f, e> = tr(C_e J) (J the
filter's Jacobian), so

    E|f - t|^2 = E|f - r|^2 + 2 tr(C_e J) - tr(C_e),

the error against the truth from the error against the reference. C_e is the product's noise
model of the reference itself; tr(C_e J) is estimated by Monte Carlo, b (f(y + eps b) - f(y)) / eps
with b drawn with C_e's covariance (FFT-shaped), as the product estimates its own risk. For each h
of a sweep (4 to 200 HU, steps of 12 %, whatever the automatic value) the script prints the error against the reference, the corrected error and, on a
phantom whose truth is known (`phantom`: the 384 abdomen with its own smooth noise of 16 HU, which
checks the estimate), the error against the truth. Voxels of padding (under -1024 HU) keep no
noise and are not counted. NLM search 5 patch 1 on the CPU; about a minute a case on 2 cores.

    scripts/setup.sh && python3 bench/own_noise_score_check.py [--cases phantom CT1 Siemens Catphan]
        [--sigma 10 30] [--json FILE]
"""
import argparse, json, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))
sys.path.insert(0, str(root / "bench"))

def shaped_noise(model, shape, rng):
    """Gaussian noise of the in-plane covariance of `model` (its lags up to radius_xy), made by
    shaping white noise with the square root of the covariance's power spectrum (circular)."""
    r, w = model.radius_xy, 2 * model.radius_xy + 1
    c = np.asarray(model.covariance).reshape(-1, w, w)[model.radius_z]
    kernel = np.zeros(shape)
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            kernel[dy % shape[0], dx % shape[1]] = c[dy + r, dx + r]
    power = np.maximum(np.fft.fft2(kernel).real, 0)
    return np.fft.ifft2(np.fft.fft2(rng.standard_normal(shape)) * np.sqrt(power)).real


def sweep(ctd, noisy, reference, truth, own, counted, values, rng, probes=2, eps=0.02):
    """(h, error against the reference, corrected, against the truth or NaN) for each h."""
    kw = dict(search_radius=5, patch_radius=1, device="cpu")
    bs = [np.where(counted, shaped_noise(own, noisy.shape, rng), 0).astype(np.float32) for _ in range(probes)]
    rows = []
    for h in values:  # each a mean over the counted voxels (the probes are 0 elsewhere)
        f = ctd.nlm(noisy, h=float(h), **kw).astype(np.float64)
        div = np.mean([np.sum(b * (ctd.nlm((noisy + eps * b).astype(np.float32), h=float(h), **kw) - f)) / eps
                       for b in bs]) / np.count_nonzero(counted)
        against_reference = np.mean((f - reference)[counted] ** 2)
        against_truth = np.mean((f - truth)[counted] ** 2) if truth is not None else float("nan")
        rows.append([float(h), against_reference, against_reference + 2 * div - own.sigma ** 2, against_truth])
    return rows


def main():
    import ctdenoise as ctd
    from fan_beam_check import scanned_object
    from phantom_check import abdomen
    from scipy.ndimage import gaussian_filter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=["phantom", "CT1", "Siemens", "Catphan"])
    parser.add_argument("--sigma", type=float, nargs="+", default=[10, 30], help="white noise added, HU")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"))
    parser.add_argument("--json", help="write every case here")
    args = parser.parse_args()
    results = []
    for name in args.cases:
        for sigma in args.sigma:
            rng = np.random.default_rng(11 + int(sigma))
            if name == "phantom":
                truth = abdomen((384, 384), 1)
                own_noise = gaussian_filter(rng.standard_normal(truth.shape), 0.8)
                reference = truth + own_noise * 16 / own_noise.std()
            else:
                truth, reference = None, scanned_object(f"{name} slice", pathlib.Path(args.data))[0]
            counted = reference > -1024
            noisy = np.where(counted, reference + sigma * rng.standard_normal(reference.shape), reference).astype(np.float32)
            own = ctd.estimate_noise(reference.astype(np.float32))
            auto = ctd.nlm(noisy, search_radius=5, patch_radius=1, device="cpu", return_info=True)[1]["auto"]["value"]
            rows = sweep(ctd, noisy, reference, truth, own, counted, np.sort(np.append(np.geomspace(4, 200, 36), auto)), rng)
            least = {k: rows[int(np.nanargmin([r[j] for r in rows]))][0] if not np.isnan(rows[0][j]) else None
                     for k, j in (("reference", 1), ("corrected", 2), ("truth", 3))}
            label = f"{name}{' (own smooth noise 16 HU)' if name == 'phantom' else ''} + white {sigma:g} HU"
            print(f"{label}: own noise model {own.sigma:.1f} HU (correlation {own.correlation(1, 0, 0):.2f}), "
                  f"automatic h {auto:.1f}")
            for h, r, c, t in rows:
                print(f"  h {h:7.1f}  against the reference {r:9.2f}  corrected {c:9.2f}  against the truth {t:9.2f}")
            at_auto = next(r for r in rows if r[0] == float(auto))
            # The automatic h's gap to the least, in dB of each error (PSNR's own scale).
            gaps = {k: 10 * np.log10(at_auto[j] / min(r[j] for r in rows)) if not np.isnan(rows[0][j]) else None
                    for k, j in (("reference", 1), ("corrected", 2), ("truth", 3))}
            print(f"  least: against the reference {least['reference']:.1f}, corrected {least['corrected']:.1f}"
                  + (f", against the truth {least['truth']:.1f}" if least["truth"] else "")
                  + f"; the automatic h's gap: {gaps['reference']:.2f} dB against the reference, {gaps['corrected']:.2f} corrected"
                  + (f", {gaps['truth']:.2f} against the truth" if gaps["truth"] is not None else ""))
            results.append(dict(case=label, own_model_sigma=own.sigma, auto=auto, rows=rows, least=least, gaps_db=gaps))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
