#!/usr/bin/env python3
"""Tallies `validate_params --truth-score` output (its TRUTH lines): per set, how many cases meet
the goal against the reference and against the truth (the reference's own noise taken off by
Stein's lemma): within 0.5 dB of the least error of the grid, SSIM within 0.005 of the SSIM
there, and (corrected) never below the noisy input. Lists the cases that miss against the truth.

    python3 bench/truth_score_summary.py SET=FILE [SET=FILE ...] [--json OUT]
(a set may be given several files: SET=FILE1,FILE2)
"""
import argparse, json, re

LINE = re.compile(
    r"TRUTH (?P<case>.*): auto (?P<auto>\S+) own noise (?P<own>\S+) \| least against the reference (?P<ref_least>\S+) "
    r"gap (?P<ref_gap>\S+) dB SSIM under (?P<ref_ssim>\S+) \| least corrected (?P<cor_least>\S+) gap (?P<cor_gap>\S+) dB "
    r"SSIM under (?P<cor_ssim>\S+) \| over the noisy input corrected (?P<noisy_db>\S+) dB SSIM (?P<noisy_ssim>\S+)")


def parse(path):
    cases = []
    for line in open(path):
        m = LINE.match(line.strip())
        if m:
            c = {k: (v if k == "case" else float(v)) for k, v in m.groupdict().items()}
            c["meets_against_reference"] = c["ref_gap"] <= 0.5 and c["ref_ssim"] <= 0.005
            c["meets_against_truth"] = (c["cor_gap"] <= 0.5 and c["cor_ssim"] <= 0.005 and c["noisy_db"] >= 0
                                        and c["noisy_ssim"] >= 0)
            cases.append(c)
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", help="SET=FILE[,FILE...]")
    parser.add_argument("--json")
    args = parser.parse_args()
    out = {}
    print("| set | cases | goal met against the reference | against the truth | worst gap against the truth (dB) | "
          "worst SSIM under | below the noisy input (truth) |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.sets:
        name, files = spec.split("=", 1)
        cases = [c for f in files.split(",") for c in parse(f)]
        out[name] = cases
        below = sum(c["noisy_db"] < 0 or c["noisy_ssim"] < 0 for c in cases)
        print(f"| {name} | {len(cases)} | {sum(c['meets_against_reference'] for c in cases)} | "
              f"{sum(c['meets_against_truth'] for c in cases)} | {max(c['cor_gap'] for c in cases):.2f} | "
              f"{max(c['cor_ssim'] for c in cases):.4f} | {below} |")
    for name, cases in out.items():
        for c in cases:
            if not c["meets_against_truth"]:
                print(f"miss {name}: {c['case']}: auto {c['auto']:.1f}, least corrected {c['cor_least']:.1f}, "
                      f"gap {c['cor_gap']:.2f} dB, SSIM under {c['cor_ssim']:.4f}, over noisy {c['noisy_db']:.2f} dB "
                      f"{c['noisy_ssim']:+.4f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
