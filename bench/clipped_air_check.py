#!/usr/bin/env python3
"""Air clipped at the lowest stored value (experiment, not part of the product): how far do the
automatic values move when a scan stores its air's noise clipped at -1024 HU, as scanners do?

Takes whole-slice cases of `validate_params --whole` (their noise-free reference and noisy image,
written with --dump), clips the noisy image at the floor (voxels under -2000, a field of view's
padding, stay as they are) and compares, for the image as simulated and clipped: the share of
clipped voxels, the automatic h of NLM search 5 patch 1 (CPU), the way the risk saw the noise,
and the PSNR (over 2000 HU, outside the padding) of the automatic h against the best of a sweep
of h x 2^(k/4), k = -4..4, around it. About 4 minutes on 2 cores.

    scripts/setup.sh && python3 bench/clipped_air_check.py [--data ../shared/data] [--floor-outside] [--json FILE]
"""
import argparse, json, pathlib, subprocess, sys, tempfile

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))

CASES = [
    "Catphan, whole slice | FBP ramp 360 views, sigma 30",
    "Catphan, whole slice | FBP ramp 360 views, sigma 60",
    "Catphan, whole slice | FBP Hann 360 views, sigma 45",
    "Siemens abdomen, whole slice | FBP ramp 360 views, sigma 30",
    "Siemens abdomen, whole slice | FBP Hann 360 views, sigma 60",
    "Siemens abdomen, whole slice | white, sigma 30",
    "WG-04 CT1 chest, whole slice | FBP ramp 360 views, sigma 45",
]
PADDING_BELOW = -2000.0


def dump(case, data, folder):
    """The case's reference and noisy image, as validate_params makes them."""
    tool = root / "build" / "validate_params"
    subprocess.run([str(tool), "--data", data, "--device", "cpu", "--whole", "--auto-only", "--dump", folder,
                    "--only", f"{case} | NLM search 5 patch 1"], check=True, capture_output=True)
    stem = "".join(c if c.isalnum() else "_" for c in f"2D {case}")
    ref = np.fromfile(f"{folder}/{stem}_ref.raw", np.float32)
    noisy = np.fromfile(f"{folder}/{stem}_noisy.raw", np.float32)
    n = int(round(np.sqrt(ref.size)))
    return ref.reshape(n, n), noisy.reshape(n, n)


def judge(image, ref, keep):
    import ctdenoise as cd
    _, info = cd.nlm(image, "auto", device="cpu", return_info=True)
    h = info["auto"]["value"]

    def psnr(h_value):
        out = cd.nlm(image, h_value, device="cpu")
        return float(10 * np.log10(2000 ** 2 / np.mean((out[keep] - ref[keep]) ** 2)))

    sweep = [(h * 2 ** (k / 4), psnr(h * 2 ** (k / 4))) for k in range(-4, 5)]
    best_h, best = max(sweep, key=lambda p: p[1])
    return {"h": h, "noise_over_image": info["auto"]["noise_over_image"], "psnr": sweep[4][1],
            "best_h": best_h, "best_psnr": best, "gap": sweep[4][1] - best}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"))
    parser.add_argument("--floor", type=float, default=-1024.0)
    parser.add_argument("--floor-outside", action="store_true",
                        help="also set the corners outside the scanner's circular field of view (and any padding) "
                             "to the floor, as a scanner that stores -1024 there does: the floor is then both "
                             "padding and clipped air")
    parser.add_argument("--json")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for case in CASES:
            ref, noisy = dump(case, args.data, folder)
            keep = ref > PADDING_BELOW
            clipped = np.where(noisy > PADDING_BELOW, np.maximum(noisy, args.floor), noisy).astype(np.float32)
            if args.floor_outside:
                n = ref.shape[0]
                yy, xx = np.mgrid[0:n, 0:n]
                outside = np.hypot(xx - (n - 1) / 2, yy - (n - 1) / 2) > n / 2
                clipped[outside | ~keep] = args.floor
                keep = keep & ~outside
            share = float(np.mean(clipped[keep] <= args.floor))
            row = {"case": case, "clipped_share": share,
                   "as_simulated": judge(noisy, ref, keep), "clipped": judge(clipped, ref, keep)}
            results.append(row)
            for name in ("as_simulated", "clipped"):
                r = row[name]
                print(f"{case:62s} {name:12s} clipped {share:5.3f}  h {r['h']:6.1f} ({r['noise_over_image']})  "
                      f"{r['psnr']:.2f} dB, best {r['best_psnr']:.2f} at h {r['best_h']:.1f}: {r['gap']:+.2f} dB", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
