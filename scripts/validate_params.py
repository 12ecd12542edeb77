#!/usr/bin/env python3
"""Regenerates the validation matrix of the automatic parameters in docs/parameters.md: runs
build/validate_params (real CT of ../shared/data, several noise textures and levels, radii, 2D and
3D, NLM and the bilateral filter) and writes the worst cases and the full table between the
markers of docs/parameters.md (the matrix) or docs/validation.md (the other sets).

    scripts/setup.sh && python3 scripts/validate_params.py [--data ../shared/data] [--reduced | --extra]
    python3 scripts/validate_params.py --from build/validation/full.json   # render an earlier run

The full matrix takes about an hour on 2 cores; --reduced (what CI runs) about a minute. --extra
runs the robustness textures outside the matrix (blurred and sharpened white noise, Shepp-Logan
FBP, signal-dependent white noise) into their own table, --whole whole 512 x 512 slices, --volumes
whole 3D volumes (large enough that the automatic choice runs on a sample of blocks), --heldout
scans and textures that no rule was fitted on (VTK's FullHead slice and quarter-resolution head;
band-pass, stretched, thick-slice and 720-view Hann FBP noise). --user-settings runs the settings users
run that the matrix leaves out (the CLI's default NLM in 3D, the bias term from the noise model, the
Gaussian patch kernel, the centre weight "max", wider bilateral windows) on the set given, into the
table of "Settings the matrix leaves out"; --from takes several JSON files (sets run apart)."""
import argparse, json, pathlib, subprocess, sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from white_noise_check import marked_doc  # noqa: E402

root = pathlib.Path(__file__).resolve().parent.parent
MARKERS = {"matrix": ("<!-- validation:begin -->", "<!-- validation:end -->"),
           "extra": ("<!-- validation-extra:begin -->", "<!-- validation-extra:end -->"),
           "whole": ("<!-- validation-whole:begin -->", "<!-- validation-whole:end -->"),
           "volumes": ("<!-- validation-volumes:begin -->", "<!-- validation-volumes:end -->"),
           "heldout": ("<!-- validation-heldout:begin -->", "<!-- validation-heldout:end -->"),
           "user-settings": ("<!-- validation-user-settings:begin -->", "<!-- validation-user-settings:end -->")}


def within_goal(c):
    """Within 0.5 dB and 0.005 SSIM of the best of the sweep (the goal, less "never below the input")."""
    return c["best"]["psnr"] - c["auto"]["psnr"] <= 0.5 and c["best"]["ssim"] - c["auto"]["ssim"] <= 0.005


def by_setting(cases):
    """A line per dimension and setting: cases within the goal, the worst PSNR gap, below the input."""
    lines = ["| dim | setting | within the goal | worst PSNR gap | below the noisy input |", "|---|---|---|---|---|"]
    for dim, setting in sorted({(c["dim"], c["setting"]) for c in cases}):
        rows = [c for c in cases if c["dim"] == dim and c["setting"] == setting]
        worst = max(c["best"]["psnr"] - c["auto"]["psnr"] for c in rows)
        below = sum(1 for c in rows if c["auto"]["psnr"] < c["noisy"]["psnr"] or c["auto"]["ssim"] < c["noisy"]["ssim"])
        lines.append(f"| {dim} | {setting} | {sum(map(within_goal, rows))} of {len(rows)} | {worst:.2f} dB | {below} |")
    return lines + [""]


def added_sigma(case):
    """The noise level a case adds (its texture reads "..., sigma N")."""
    return float(case["texture"].rsplit("sigma", 1)[1])


def render(cases, partial_note, begin, end, per_setting=False):
    lines = [begin, "", partial_note, ""] + (by_setting(cases) if per_setting else [])
    for filt in ("nlm", "bilateral"):
        rows = [c for c in cases if c["filter"] == filt]
        if not rows:
            continue
        gap = lambda c: c["best"]["psnr"] - c["auto"]["psnr"]
        sgap = lambda c: c["best"]["ssim"] - c["auto"]["ssim"]
        worst = max(rows, key=gap)
        worst_s = max(rows, key=sgap)
        within = sum(map(within_goal, rows))
        below = [c for c in rows if c["auto"]["psnr"] < c["noisy"]["psnr"] or c["auto"]["ssim"] < c["noisy"]["ssim"]]
        lines += [f"**{'NLM' if filt == 'nlm' else 'Bilateral filter'}** ({len(rows)} cases): "
                  f"{within} within 0.5 dB and 0.005 SSIM of the best of the sweep; "
                  f"worst PSNR gap {gap(worst):.2f} dB ({worst['dim']} {worst['scan']}, {worst['texture']}, {worst['setting']}); "
                  f"worst SSIM gap {sgap(worst_s):.4f} ({worst_s['dim']} {worst_s['scan']}, {worst_s['texture']}, {worst_s['setting']}); "
                  f"below the noisy input: {len(below)}."]
        # The reference counts the scan's own noise as signal: where it is a third of the added
        # noise or more, the best of the sweep leaves it, and the defaults, which remove all the
        # noise they read, trail it. The cases whose reference is nearly clean, on their own:
        clean = [c for c in rows if c["reference_noise_sigma"] < added_sigma(c) / 3]
        if clean:
            worst_c = max(clean, key=gap)
            within_c = sum(map(within_goal, clean))
            lines += ["", f"Of these, the {len(clean)} whose reference's own sigma is under a third of the noise added: "
                          f"{within_c} within the goal; worst PSNR gap {gap(worst_c):.2f} dB ({worst_c['dim']} {worst_c['scan']}, "
                          f"{worst_c['texture']}, {worst_c['setting']})."]
        lines += [""]
    lines += ["| dim | scan | noise added | setting | model sigma | scan's own sigma | noisy PSNR / SSIM | auto value | auto PSNR / SSIM | best value | best PSNR / SSIM | gap dB / SSIM |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        lines.append(f"| {c['dim']} | {c['scan']} | {c['texture']} | {c['setting']} | {c['noise_sigma']:.1f} | {c['reference_noise_sigma']:.1f} | "
                     f"{c['noisy']['psnr']:.2f} / {c['noisy']['ssim']:.4f} | {c['auto_value']:.1f} | {c['auto']['psnr']:.2f} / {c['auto']['ssim']:.4f} | "
                     f"{c['best_value']:.1f} | {c['best']['psnr']:.2f} / {c['best']['ssim']:.4f} | "
                     f"{c['auto']['psnr'] - c['best']['psnr']:+.2f} / {c['auto']['ssim'] - c['best']['ssim']:+.4f} |")
    lines += ["", end]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"))
    parser.add_argument("--reduced", action="store_true")
    parser.add_argument("--extra", action="store_true", help="the robustness textures, into their own table")
    parser.add_argument("--whole", action="store_true", help="whole 512 x 512 slices, into their own table")
    parser.add_argument("--volumes", action="store_true", help="whole 3D volumes, into their own table")
    parser.add_argument("--heldout", action="store_true", help="scans and textures no rule was fitted on, into their own table")
    parser.add_argument("--user-settings", action="store_true",
                        help="the settings the matrix leaves out, on the set given, into their own table")
    parser.add_argument("--from", dest="source", nargs="+", help="render these JSON files instead of running the matrix")
    parser.add_argument("--expected", type=int, default=0, help="cases of the full matrix (for a partial run's note)")
    args = parser.parse_args()
    # The set asked for (one of these flags), or None: the matrix.
    kind = next((k for k in ("reduced", "extra", "whole", "volumes", "heldout") if getattr(args, k)), None)
    if args.source:
        sources = [pathlib.Path(f) for f in args.source]
    else:
        out = root / "build" / "validation" / f"{kind or 'full'}{'-user-settings' if args.user_settings else ''}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = [str(root / "build" / "validate_params"), "--data", args.data, "--json", str(out)]
        cmd += [f"--{kind}"] if kind else []
        cmd += ["--user-settings"] if args.user_settings else []
        subprocess.run(cmd, check=True)
        sources = [out]
    cases = [c for f in sources for c in json.loads(f.read_text())]
    note = f"{len(cases)} cases" + (f" of the {args.expected} of the full matrix (the run was cut short)" if args.expected and len(cases) < args.expected else "")
    begin, end = MARKERS["user-settings" if args.user_settings else kind if kind in MARKERS else "matrix"]
    doc = marked_doc(begin, end)
    text = doc.read_text()
    a, b = text.index(begin), text.index(end) + len(end)
    doc.write_text(text[:a] + render(cases, note, begin, end, per_setting=args.user_settings) + text[b:])
    print(f"wrote {len(cases)} cases into {doc.relative_to(root)}", file=sys.stderr)


if __name__ == "__main__":
    main()
