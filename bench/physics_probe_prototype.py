#!/usr/bin/env python3
"""Prototype, not the product: a probe made as a scanner makes noise, in the risk estimate of the
automatic strength, over the digital phantoms' 2D simulated scans (scripts/phantom_check.py),
NLM search 5 patch 1 and the bilateral filter at sigma_s 1 voxel (bench/NOTES.md, 2026-11-27).

The noisy image mapped to attenuation (water 0.02 / mm), re-projected (720 parallel-beam views),
white noise of standard deviation exp(p / 2) on each ray, filtered back-projection with the filter
whose texture (the noise model's correlations at 6 lags) is nearest the image's, scaled so that
the probe's noise model and the image's have the same sigma. The risk (SURE, two probes) on a grid
of 2^(1/4) steps around the landed automatic value, a parabola in log value through the least
three; judged against the best of bench/results/2026-11-27-cpu-phantom-check.json. Uses the
phantom's true pixel size. About 40 minutes on 2 CPU cores.

    python3 bench/physics_probe_prototype.py"""
import json, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))
import ctdenoise as ctd  # noqa: E402
import phantom_check as pc  # noqa: E402

LAGS = [(1, 0), (0, 1), (1, 1), (1, -1), (2, 0), (0, 2)]
WINDOWS = ["ramp", "shepp-logan", "cosine", "hamming", "hann"]
SETTINGS = [s for s in pc.SETTINGS_2D if s[0] in ("NLM search 5 patch 1", "bilateral sigma_s 1 vox")]


def physics_probe(image, window, seed, pixel_mm, views=720):
    """Noise as a scanner makes it for `image`: white noise of standard deviation exp(p / 2) on each
    ray of its projection p (Poisson counts' noise after the log, up to a constant), back-projected."""
    from skimage.transform import iradon
    theta = np.linspace(0, 180, views, endpoint=False)
    p = pc.line_integrals(image, theta, pixel_mm)
    rays = np.random.default_rng(seed).normal(size=p.shape) * np.exp(p / 2)
    return iradon(rays, theta=theta, filter_name=window, circle=False, output_size=image.shape[-1])


def correlations(image):
    model = ctd.estimate_noise(np.asarray(image, np.float32))
    return np.array([model.correlation(dx, dy, 0) for dx, dy in LAGS])


def probes_for(noisy, pixel_mm):
    """Two probes with the filter whose noise texture is nearest the image's, at the model's sigma."""
    y = noisy.astype(np.float64)
    target = correlations(noisy)
    window = min(WINDOWS, key=lambda w: float(((correlations(physics_probe(y, w, 5, pixel_mm)) - target) ** 2).sum()))
    sigma = ctd.estimate_noise(noisy).sigma
    probes = [physics_probe(y, window, 77 + s, pixel_mm) for s in range(2)]
    return window, [b * (sigma / ctd.estimate_noise(b.astype(np.float32)).sigma) for b in probes]


def least_risk(f, noisy, probes, values, kw):
    """SURE over `values`, then a parabola in log value through the least three."""
    y = noisy.astype(np.float64)
    trace = np.mean([(b * b).sum() for b in probes])
    risks = []
    for v in values:
        out = f(noisy, float(v), device="cpu", **kw).astype(np.float64)
        div = np.mean([(b * (f((y + 0.02 * b).astype(np.float32), float(v), device="cpu", **kw) - out)).sum() / 0.02
                       for b in probes])
        risks.append((((out - y) ** 2).sum() - trace + 2 * div) / y.size)
    k = int(np.argmin(risks))
    if not 0 < k < len(values) - 1:
        return float(values[k])
    a, b, _ = np.polyfit(np.log(values[k - 1:k + 2]), np.array(risks[k - 1:k + 2]), 2)
    return float(np.exp(-b / (2 * a))) if a > 0 else float(values[k])


def main():
    recorded = {(c["phantom"], c["noise"], c["setting"]): c
                for c in json.loads((root / "bench" / "results" / "2026-11-27-cpu-phantom-check.json").read_text())}
    total = {"landed": 0, "physics": 0, "n": 0}
    for p, (name, clean, pixel_mm, _, scans, _) in enumerate(pc.phantoms()):
        if clean.ndim != 2:
            continue
        for label, noisy, reference in pc.noisy_versions(p, clean, [], scans, pixel_mm):
            window, probes = probes_for(noisy, pixel_mm)
            for setting, which, kw in SETTINGS:
                f = ctd.nlm if which == "nlm" else ctd.bilateral
                r = recorded[(name, label, setting)]
                value = least_risk(f, noisy, probes, r["auto_value"] * 2 ** (np.arange(-4, 9) / 4), kw)
                q = pc.quality(f(noisy, value, device="cpu", **kw), np.asarray(reference, np.float64))
                ok = pc.within_goal(q, r["best"], r["noisy"])
                total["landed"] += r["within"]
                total["physics"] += ok
                total["n"] += 1
                print(f"{name} | {label} | {setting} | filter {window}: landed {r['auto_value']:.1f} "
                      f"({r['auto'][0] - r['best'][0]:+.2f}) physics {value:.1f} ({q[0] - r['best'][0]:+.2f} dB, "
                      f"{q[1] - r['best'][1]:+.4f}) {'ok' if ok else 'MISS'} best {r['best_value']:.1f} | {total}", flush=True)


if __name__ == "__main__":
    main()
