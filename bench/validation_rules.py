#!/usr/bin/env python3
"""How other ways of reading the risk curve would have scored on the validation matrix.

Reads `validate_params --curves --json` results (each case's risk curve and its sweep with PSNR
and SSIM at every value) and scores, per set, a rule that picks the value from what the automatic
choice saw: a constant factor on the automatic value, or the least value whose risk (a parabola
in log value through the least point and its two neighbours, as the choice fits it) is within a
fraction of the least. PSNR and SSIM at the picked value are interpolated in log value between the
swept values. The goal is docs/parameters.md's: within 0.5 dB of the best PSNR, within 0.005 of
the SSIM at it, never below the noisy input.

    bench/validation_rules.py bench/results/2026-11-26-h100-validation-*-curves.json
"""
import json
import math
import sys


def interpolate(sweep, value):
    """PSNR and SSIM at `value`, linear in log value between the swept values (clamped); the SSIM
    is None where the sweep holds none (runs recorded without --curves)."""
    with_ssim = [(v, p, s) for v, p, s in sweep if s is not None]
    points = sorted((math.log(v), p, s) for v, p, s in (with_ssim or sweep))
    t = math.log(value)
    if t <= points[0][0]:
        return points[0][1], points[0][2]
    if t >= points[-1][0]:
        return points[-1][1], points[-1][2]
    for (t0, p0, s0), (t1, p1, s1) in zip(points, points[1:]):
        if t0 <= t <= t1:
            w = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
            return p0 + w * (p1 - p0), (s0 + w * (s1 - s0) if with_ssim else None)


def risk_parabola(curve):
    """(log value, risk, curvature) of the parabola through the least point and its neighbours."""
    points = sorted((math.log(v), r) for v, r in curve)
    i = min(range(len(points)), key=lambda k: points[k][1])
    if i == 0 or i == len(points) - 1:
        return None
    (x0, y0), (x1, y1), (x2, y2) = points[i - 1 : i + 2]
    d = (x0 - x1) * (x0 - x2) * (x1 - x2)
    a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / d
    b = (x2 * x2 * (y0 - y1) + x1 * x1 * (y2 - y0) + x0 * x0 * (y1 - y2)) / d
    if a <= 0:
        return None
    t = -b / (2 * a)
    c = y1 - a * x1 * x1 - b * x1
    return t, a * t * t + b * t + c, a


def picked(case, rule, parameter):
    value = case["auto_value"]
    if rule == "factor":
        return value * parameter
    fit = risk_parabola(case["risk_curve"])
    if fit is None:
        return value
    _, least, curvature = fit
    return value * math.exp(-math.sqrt(parameter * least / curvature))


def within_goal(case, psnr, ssim):
    """The goal: 0.5 dB of the case's best PSNR and 0.005 of the SSIM there (where SSIM is known)."""
    return case["best"]["psnr"] - psnr <= 0.5 and (ssim is None or case["best"]["ssim"] - ssim <= 0.005)


def judge(case, value):
    """PSNR and SSIM at `value` on the case's sweep, and whether they are within the goal."""
    psnr, ssim = interpolate(case["sweep"], value)
    return psnr, ssim, within_goal(case, psnr, ssim)


def score(cases, rule, parameter):
    within, worst, over, under, below = 0, 0.0, 0, 0, 0
    for case in cases:
        value = picked(case, rule, parameter)
        psnr, ssim, ok = judge(case, value)
        gap = case["best"]["psnr"] - psnr
        if psnr < case["noisy"]["psnr"] or ssim < case["noisy"]["ssim"]:
            below += 1
        if ok:
            within += 1
        elif value > case["best_value"]:
            over += 1
        else:
            under += 1
        worst = max(worst, gap)
    return within, worst, over, under, below


def main(paths):
    sets = {path.split("/")[-1]: json.load(open(path)) for path in paths}
    print("| rule | " + " | ".join(sets) + " |")
    print("|---|" + "---|" * len(sets))
    rules = [("factor", f) for f in (1.0, 0.95, 0.9, 0.85, 0.8)] + [("flat", e) for e in (0.002, 0.005, 0.01, 0.02)]
    for rule, parameter in rules:
        name = f"auto x {parameter}" if rule == "factor" else f"least value within {parameter:.1%} of the least risk"
        cells = []
        for cases in sets.values():
            within, worst, over, under, below = score(cases, rule, parameter)
            cells.append(f"{within}/{len(cases)} (over {over}, under {under}; worst {worst:.2f} dB; below noisy {below})")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
