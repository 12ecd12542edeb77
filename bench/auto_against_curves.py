#!/usr/bin/env python3
"""Judges automatic values against a recorded sweep, for trying a change to the automatic
parameters on the CPU in minutes instead of re-running the sweeps:

    build/validate_params --auto-only [--whole ...] [--only TEXT] > new.txt      # the changed build
    python3 bench/auto_against_curves.py bench/results/<...>-curves.json new.txt [old.txt]

The curves file is a `validate_params --curves --json` run of the same set (its noisy inputs are
seeded, so they are the same images; bench/results/2026-11-26-h100-validation-{matrix,whole}-curves.json).
Each automatic value's PSNR and SSIM are interpolated on its case's sweep (linear in log value),
and the case counts as within the goal when it is within 0.5 dB and 0.005 SSIM of the sweep's best
point. With old.txt, only the cases that changed are listed. Interpolation between sweep points
(2^(1/4) apart) reads the SSIM a little low, so compare two runs with each other, not with the
tables of docs/parameters.md."""
import json, math, re, sys


def interpolate(sweep, value):
    """PSNR and SSIM at `value` on a sweep of [value, PSNR, SSIM] points, and '<' or '>' when off its ends."""
    points = sorted(sweep)
    x = [math.log(p[0]) for p in points]
    lv = math.log(value)
    if lv <= x[0]:
        return points[0][1], points[0][2], "<"
    if lv >= x[-1]:
        return points[-1][1], points[-1][2], ">"
    for i in range(len(x) - 1):
        if x[i] <= lv <= x[i + 1]:
            t = (lv - x[i]) / (x[i + 1] - x[i])
            return (points[i][1] * (1 - t) + points[i + 1][1] * t, points[i][2] * (1 - t) + points[i + 1][2] * t, "")
    raise AssertionError


def load_auto(path):
    values = {}
    for line in open(path):
        m = re.match(r"AUTO (.*): ([0-9.eE+-]+)$", line.strip())
        if m:
            values[m.group(1)] = float(m.group(2))
    return values


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    cases = {f"{c['dim']} {c['scan']} | {c['texture']} | {c['setting']}": c for c in json.load(open(sys.argv[1]))}
    if any(c["sweep"] and c["sweep"][0][2] is None for c in cases.values()):
        sys.exit(f"{sys.argv[1]} has no SSIM per value swept: record it with validate_params --curves")

    def judge(name, value):
        sweep = cases[name]["sweep"]
        best = max(sweep, key=lambda p: p[1])
        psnr, ssim, off = interpolate(sweep, value)
        gap, ssim_gap = psnr - best[1], ssim - best[2]
        return gap, ssim_gap, gap >= -0.5 and ssim_gap >= -0.005, value / best[0], off

    def text(j):
        return f"{'ok  ' if j[2] else 'MISS'} {j[0]:+.2f} dB {j[1]:+.4f} x{j[3]:.2f}{j[4]}"

    new = load_auto(sys.argv[2])
    old = load_auto(sys.argv[3]) if len(sys.argv) == 4 else {}
    unknown = [n for n in new if n not in cases]
    if unknown:
        sys.exit(f"not in {sys.argv[1]}: {unknown[0]} (and {len(unknown) - 1} more)")
    within = within_old = 0
    worst = 0.0
    for name, value in new.items():
        j = judge(name, value)
        within += j[2]
        worst = min(worst, j[0])
        if name in old:
            o = judge(name, old[name])
            within_old += o[2]
            if o[2] == j[2] and abs(o[0] - j[0]) < 0.02:
                continue
            print(f"{text(o)} -> {text(j)}  {name}")
        elif not j[2]:
            print(f"{text(j)}  {name}")
    print(f"{within} of {len(new)} within the goal, worst {worst:.2f} dB"
          + (f" (old: {within_old} of {sum(1 for n in new if n in old)})" if old else ""))


if __name__ == "__main__":
    main()
