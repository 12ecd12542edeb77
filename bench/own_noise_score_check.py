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
checks the estimate; `phantom3d`: a 128 x 128 x 20 abdomen with the same in 3D), the error against the truth. Voxels of padding (under -1024 HU) keep no
noise and are not counted. NLM search 5 patch 1 on the CPU; about a minute a case on 2 cores.

    scripts/setup.sh && python3 bench/own_noise_score_check.py [--cases phantom CT1 Siemens Catphan]
        [--sigma 10 30] [--search 5] [--patch 1] [--exact-probes] [--json FILE]
"""
import argparse, json, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))
sys.path.insert(0, str(root / "bench"))

def shaped_noise(model, shape, rng):
    """Gaussian noise of the covariance of `model` (its lags up to radius_xy in-plane, and
    radius_z across slices for a volume), made by shaping white noise with the square root of the
    covariance's power spectrum (circular)."""
    r, rz, w = model.radius_xy, model.radius_z, 2 * model.radius_xy + 1
    c = np.asarray(model.covariance).reshape(-1, w, w)
    kernel = np.zeros(shape)
    for dz in range(-rz, rz + 1) if len(shape) == 3 else [0]:
        for dy in range(-r, r + 1):
            for dx in range(-r, r + 1):
                at = (dy % shape[-2], dx % shape[-1])
                kernel[(dz % shape[0],) + at if len(shape) == 3 else at] = c[dz + rz, dy + r, dx + r]
    power = np.maximum(np.fft.fftn(kernel).real, 0)
    return np.fft.ifftn(np.fft.fftn(rng.standard_normal(shape)) * np.sqrt(power)).real


def ssim_scores(f, reference, truth, counted, responses, probes, data_range=2000.0):
    """Mean SSIM (Gaussian window of 1.5 voxels, radius 5, mirror border, as the product's
    metric) of f against the reference, against the truth estimated from it, and against the
    truth where it is known (else NaN), over the counted voxels. Each window's statistics of
    t = r - e: its variance less e's own (read on the probes, whose covariance is e's), and f's
    covariance with it less E[cov(f, e)], which Stein's lemma gives as the window's mean of
    (J C_e)_ii less its double mean of (J C_e)_ij, read as D b with D the response
    (f(y + eps b) - f(y)) / eps to each probe b. The means' term stays the reference's: less e's
    mean square, a window whose mean is near 0 could get a denominator at or below 0."""
    from scipy.ndimage import gaussian_filter
    g = lambda x: gaussian_filter(x, 1.5, mode="mirror", truncate=5 / 1.5)
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    mf = g(f)
    vf = g(f * f) - mf * mf

    def ssim_map(mt2, mft, vt, cft):
        return ((2 * mft + c1) * (2 * cft + c2)) / ((mf * mf + mt2 + c1) * (vf + vt + c2))

    mr = g(reference)
    vr, cfr = g(reference * reference) - mr * mr, g(f * reference) - mf * mr
    own_var = cross_cov = 0
    for d, b in zip(responses, probes):
        mb, md = g(b), g(d)
        own_var = own_var + (g(b * b) - mb * mb) / len(probes)
        cross_cov = cross_cov + (g(d * b) - md * mb) / len(probes)
    against_reference = ssim_map(mr * mr, mf * mr, vr, cfr)[counted].mean()
    corrected = ssim_map(mr * mr, mf * mr, vr - own_var, cfr - cross_cov)[counted].mean()
    if truth is None:
        return against_reference, corrected, float("nan")
    mt = g(truth)
    return against_reference, corrected, ssim_map(mt * mt, mf * mt, g(truth * truth) - mt * mt, g(f * truth) - mf * mt)[counted].mean()


def sweep(ctd, noisy, reference, truth, bs, trace, counted, values, kw, eps=0.02):
    """For each h: (h, error against the reference, corrected, against the truth or NaN, and the
    same three for SSIM); h 0 is the noisy input itself. bs: the probes, noise of the reference's
    own noise's covariance, whose variance is `trace`."""
    rows = []
    for h in values:  # each a mean over the counted voxels (the probes are 0 elsewhere)
        filt = (lambda x: x.astype(np.float64)) if h == 0 else (lambda x: ctd.nlm(x, h=float(h), **kw).astype(np.float64))
        f = filt(noisy)
        responses = [(filt((noisy + eps * b).astype(np.float32)) - f) / eps for b in bs]
        div = np.mean([np.sum(b * d) for b, d in zip(bs, responses)]) / np.count_nonzero(counted)
        against_reference = np.mean((f - reference)[counted] ** 2)
        against_truth = np.mean((f - truth)[counted] ** 2) if truth is not None else float("nan")
        rows.append([float(h), against_reference, against_reference + 2 * div - trace, against_truth,
                     *ssim_scores(f, reference, truth, counted, responses, bs)])
    return rows


def main():
    import ctdenoise as ctd
    from fan_beam_check import scanned_object
    from phantom_check import abdomen
    from scipy.ndimage import gaussian_filter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=["phantom", "CT1", "Siemens", "Catphan"])
    parser.add_argument("--sigma", type=float, nargs="+", default=[10, 30], help="white noise added, HU")
    parser.add_argument("--search", type=int, default=5, help="NLM search radius")
    parser.add_argument("--patch", type=int, default=1, help="NLM patch radius")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"))
    parser.add_argument("--json", help="write every case here")
    parser.add_argument("--exact-probes", action="store_true",
                        help="on the phantom, probes of its own noise's true covariance instead of the model's "
                             "(checks the estimate apart from the model)")
    args = parser.parse_args()
    results = []
    for name in args.cases:
        for sigma in args.sigma:
            rng = np.random.default_rng(11 + int(sigma))
            if name in ("phantom", "phantom3d"):
                truth = abdomen((384, 384), 1) if name == "phantom" else abdomen((20, 128, 128), 4)
                own_noise_filter = lambda white: gaussian_filter(white, 0.8)
                own_noise = own_noise_filter(rng.standard_normal(truth.shape))
                own_scale = 16 / own_noise.std()
                reference = truth + own_noise * own_scale
            else:
                truth, reference = None, scanned_object(f"{name} slice", pathlib.Path(args.data))[0]
            # A scan's padding (under -1024 HU) keeps no noise; the phantom has none (its own
            # noise takes air below -1024).
            counted = reference > -1024 if truth is None else np.ones(reference.shape, bool)
            noisy = np.where(counted, reference + sigma * rng.standard_normal(reference.shape), reference).astype(np.float32)
            own = ctd.estimate_noise(reference.astype(np.float32))
            kw = dict(search_radius=args.search, patch_radius=args.patch, device="cpu")
            auto = ctd.nlm(noisy, return_info=True, **kw)[1]["auto"]["value"]
            # Two probes of the reference's noise model, or (--exact-probes) of the phantom's own noise itself.
            if truth is not None and args.exact_probes:
                draw, trace = (lambda: own_noise_filter(rng.standard_normal(truth.shape)) * own_scale), 16.0 ** 2
            else:
                draw, trace = (lambda: shaped_noise(own, noisy.shape, rng)), own.sigma ** 2
            probes = [np.where(counted, draw(), 0).astype(np.float32) for _ in range(2)]
            values = np.sort(np.append(np.geomspace(4, 200, 36), [0, auto]))
            rows = sweep(ctd, noisy, reference, truth, probes, trace, counted, values, kw)
            label = (f"{name}{' (own smooth noise 16 HU)' if truth is not None else ''} + white {sigma:g} HU, "
                     f"NLM search {args.search} patch {args.patch}")
            print(f"{label}: own noise model {own.sigma:.1f} HU (correlation {own.correlation(1, 0, 0):.2f}), "
                  f"automatic h {auto:.1f}")
            for h, r, c, t, sr, sc, st in rows:
                print(f"  h {h:7.1f}  against the reference {r:9.2f}  corrected {c:9.2f}  against the truth {t:9.2f}"
                      f"  SSIM {sr:.4f}  corrected {sc:.4f}  against the truth {st:.4f}")
            # The automatic h against each of the three: its gap to the least error in dB (PSNR's
            # own scale), its SSIM under the SSIM there, its margins over the noisy input (row h 0).
            at_auto, at_noisy = next(r for r in rows if r[0] == float(auto)), rows[0]
            judged = {}
            for k, j in (("reference", 1), ("corrected", 2), ("truth", 3)):
                if np.isnan(at_noisy[j]):
                    continue
                best = min(rows[1:], key=lambda r: r[j])
                judged[k] = dict(least=best[0], gap_db=10 * np.log10(at_auto[j] / best[j]),
                                 ssim_under=best[j + 3] - at_auto[j + 3],
                                 over_noisy_db=10 * np.log10(at_noisy[j] / at_auto[j]),
                                 over_noisy_ssim=at_auto[j + 3] - at_noisy[j + 3])
                v = judged[k]
                print(f"  {k:9}: least at h {v['least']:.1f}; the automatic h {v['gap_db']:.2f} dB from it, "
                      f"SSIM {v['ssim_under']:+.4f} under it; over the noisy input {v['over_noisy_db']:.2f} dB, "
                      f"SSIM {v['over_noisy_ssim']:+.4f}")
            results.append(dict(case=label, own_model_sigma=own.sigma, auto=auto, rows=rows, judged=judged))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
