#!/usr/bin/env python3
"""Judges automatic values against a recorded sweep, for trying a change to the automatic
parameters on the CPU in minutes instead of re-running the sweeps:

    build/validate_params --auto-only [--whole ...] [--only TEXT] > new.txt      # the changed build
    python3 bench/auto_against_curves.py bench/results/<...>-curves.json new.txt [old.txt]

With --auto-quality, validate_params also prints each automatic value's own PSNR and SSIM
(QUALITY lines): those cases are judged on them against the recorded best, with no
interpolation, which is how sets swept without --curves (the whole volumes) are judged on SSIM.

The curves file is a `validate_params --curves --json` run of the same set (a run without
--curves holds no SSIM per value swept: then the PSNR alone is judged) (its noisy inputs are
seeded, so they are the same images; bench/results/2026-11-26-h100-validation-{matrix,whole}-curves.json).
Each automatic value's PSNR and SSIM are interpolated on its case's sweep and judged against the
case's best as bench/validation_rules.py judges its rules. With old.txt, only the cases that
changed are listed. Interpolation between swept values (2^(1/4) apart) reads the SSIM a little
low, so compare two runs with each other, not with the tables of docs/parameters.md."""
import json, re, sys

from validation_rules import judge, within_goal


def load_auto(path):
    values = {}
    for line in open(path):
        m = re.match(r"AUTO (.*): ([0-9.eE+-]+)$", line.strip())
        if m:
            values[m.group(1)] = float(m.group(2))
    return values


def load_quality(path):
    """The PSNR and SSIM measured at each automatic value (validate_params --auto-quality)."""
    measured = {}
    for line in open(path):
        m = re.match(r"QUALITY (.*): ([0-9.eE+-]+) ([0-9.eE+-]+)$", line.strip())
        if m:
            measured[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return measured


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    cases = {f"{c['dim']} {c['scan']} | {c['texture']} | {c['setting']}": c for c in json.load(open(sys.argv[1]))}
    new = load_auto(sys.argv[2])
    old = load_auto(sys.argv[3]) if len(sys.argv) == 4 else {}
    measured = {path: load_quality(path) for path in sys.argv[2:]}
    psnr_only = any(p[2] is None for c in cases.values() for p in c["sweep"])
    if psnr_only and not all(measured.values()):
        print(f"{sys.argv[1]} has no SSIM per value swept (recorded without --curves): judged on PSNR alone"
              " where no QUALITY line (--auto-quality) gives the automatic value's own")
    unknown = [n for n in new if n not in cases]
    if unknown:
        sys.exit(f"not in {sys.argv[1]}: {unknown[0]} (and {len(unknown) - 1} more)")

    def text(name, value, path):
        case = cases[name]
        if name in measured[path]:
            psnr, ssim = measured[path][name]
            ok = within_goal(case, psnr, ssim)
        else:
            psnr, ssim, ok = judge(case, value)
        ssim_text = "" if ssim is None else f"{ssim - case['best']['ssim']:+.4f} "
        # The goal's other half: never below the noisy input, on PSNR or on SSIM.
        below = psnr < case["noisy"]["psnr"] or (ssim is not None and ssim < case["noisy"]["ssim"])
        return ok, below, psnr - case["best"]["psnr"], (f"{'ok  ' if ok else 'MISS'} {psnr - case['best']['psnr']:+.2f} dB "
                                                        f"{ssim_text}x{value / case['best_value']:.2f}"
                                                        f"{' BELOW THE NOISY INPUT' if below else ''}")

    within = within_old = below = below_old = 0
    worst = 0.0
    for name, value in new.items():
        ok, is_below, gap, line = text(name, value, sys.argv[2])
        within += ok
        below += is_below
        worst = min(worst, gap)
        if name in old:
            ok_old, was_below, gap_old, line_old = text(name, old[name], sys.argv[3])
            within_old += ok_old
            below_old += was_below
            if ok_old != ok or was_below != is_below or abs(gap - gap_old) >= 0.02:
                print(f"{line_old} -> {line}  {name}")
        elif not ok:
            print(f"{line}  {name}")
    print(f"{within} of {len(new)} within the goal, worst {worst:.2f} dB, {below} below the noisy input"
          + (f" (old: {within_old} of {sum(1 for n in new if n in old)}, {below_old} below)" if old else ""))


if __name__ == "__main__":
    main()
