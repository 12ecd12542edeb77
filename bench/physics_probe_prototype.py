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
import sys, json, math, numpy as np
root = __import__("pathlib").Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python")); sys.path.insert(0, str(root / "scripts"))
import phantom_check as pc, ctdenoise as ctd
from skimage.transform import radon, iradon
from skimage.metrics import structural_similarity
rec = {(c["phantom"], c["noise"], c["setting"]): c for c in json.load(open(root / "bench" / "results" / "2026-11-27-cpu-phantom-check.json"))}
def physics_probe(img, views, window, seed, pixel_mm):
    mu = np.clip(0.02 * (1 + img / 1000.0), 0, None)
    theta = np.linspace(0, 180, views, endpoint=False)
    p = radon(mu, theta=theta, circle=False) * pixel_mm
    g = np.random.default_rng(seed).normal(size=p.shape) * np.exp(p / 2)
    return iradon(g, theta=theta, filter_name=window, circle=False, output_size=img.shape[-1])
lags = [(1,0),(0,1),(1,1),(1,-1),(2,0),(0,2)]
settings = [s for s in pc.SETTINGS_2D if s[0] in ("NLM search 5 patch 1", "bilateral sigma_s 1 vox")]
phantoms = [("Shepp-Logan 256", pc.shepp_logan(256), 0.9), ("Shepp-Logan 512", pc.shepp_logan(512), 0.45),
            ("abdomen 384", pc.abdomen((384, 384), 1), 0.9), ("abdomen 512", pc.abdomen((512, 512), 2), 0.7)]
tot = {"landed": 0, "physics": 0, "n": 0}
for p, (name, clean, px) in enumerate(phantoms):
    for label, noisy, ref in pc.noisy_versions(p, clean, [], pc.SCANS_2D, px):
        ref = np.asarray(ref, np.float64); y = noisy.astype(np.float64)
        mi = ctd.estimate_noise(noisy); target = np.array([mi.correlation(dx, dy, 0) for dx, dy in lags])
        best_w, best_err = None, 1e9
        for w in ["ramp", "shepp-logan", "cosine", "hamming", "hann"]:
            pr = physics_probe(y, 720, w, 5, px); mp = ctd.estimate_noise(pr.astype(np.float32))
            err = float(((np.array([mp.correlation(dx, dy, 0) for dx, dy in lags]) - target) ** 2).sum())
            if err < best_err: best_w, best_err = w, err
        probes = [physics_probe(y, 720, best_w, 77 + s, px) for s in range(2)]
        probes = [b * (mi.sigma / ctd.estimate_noise(b.astype(np.float32)).sigma) for b in probes]
        tr = np.mean([(b * b).sum() for b in probes])
        for setting, which, kw in settings:
            f = ctd.nlm if which == "nlm" else ctd.bilateral
            r = rec[(name, label, setting)]
            v0 = r["auto_value"]
            hs = v0 * 2 ** (np.arange(-4, 9) / 4)
            risks = []
            for h in hs:
                out = f(noisy, float(h), device="cpu", **kw).astype(np.float64)
                div = np.mean([(b * (f((y + 0.02 * b).astype(np.float32), float(h), device="cpu", **kw) - out)).sum() / 0.02 for b in probes])
                risks.append((((out - y) ** 2).sum() - tr + 2 * div) / y.size)
            k = int(np.argmin(risks))
            if 0 < k < len(hs) - 1:  # parabola in log h
                x = np.log(hs[k-1:k+2]); yy = np.array(risks[k-1:k+2]); a, b, c = np.polyfit(x, yy, 2)
                hc = float(np.exp(-b / (2 * a))) if a > 0 else float(hs[k])
            else:
                hc = float(hs[k])
            out = np.asarray(f(noisy, hc, device="cpu", **kw), np.float64)
            psnr = 10 * math.log10(2000.0 ** 2 / np.mean((out - ref) ** 2)); ssim = structural_similarity(ref, out, data_range=2000.0)
            ok = r["best"][0] - psnr <= 0.5 and r["best"][1] - ssim <= 0.005 and psnr >= r["noisy"][0] and ssim >= r["noisy"][1]
            tot["landed"] += r["within"]; tot["physics"] += ok; tot["n"] += 1
            print(f"{name} | {label} | {setting} | filter {best_w}: landed {v0:.1f} ({r['auto'][0]-r['best'][0]:+.2f}) physics {hc:.1f} ({psnr-r['best'][0]:+.2f} dB, {ssim-r['best'][1]:+.4f}) {'ok' if ok else 'MISS'} best {r['best_value']:.1f} | {tot}", flush=True)
