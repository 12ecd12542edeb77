#!/usr/bin/env python3
"""The automatic parameters against noise-free references: digital phantoms, whose only noise is
the noise added, so that the best of a sweep is not pulled down by a reference's own noise or
streaks (docs/parameters.md, "Noise-free references").

Phantoms, all in HU and made here with fixed seeds: the modified Shepp-Logan head (scikit-image's)
at 256 and 512 pixels, and a synthetic abdomen (a body of soft tissue with a smooth texture of its
own, organs, fat, vessels and bone, blurred by 0.7 pixels as a scanner would) at 384 and 512
pixels, and in 3D (160 x 160 x 48). Stationary noise textures: white, white blurred by 0.7 voxels,
ramp-filtered (the noise power spectrum of filtered back-projection, |f|) and Hann-apodised ramp,
at 30 and 60 HU; in 3D white, blurred by 0.7 voxels in 3D, and white smoothed across slices by
[1 2 1] / 4. Each default is compared with the best value of a sweep: PSNR over 2000 HU and SSIM
(scikit-image's) against the phantom; within the goal when 0.5 dB and 0.005 SSIM of the best at
most, and never below the noisy input.

    scripts/setup.sh && python3 scripts/phantom_check.py [--device auto] [--json FILE] [--no-write]

Writes its summary and table into docs/parameters.md between the phantom-check markers, and prints
them. About 4 minutes on 2 CPU cores. Needs numpy, scipy and scikit-image (installed with pip when
missing)."""
import argparse, json, math, pathlib, sys, time

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))
from white_noise_check import best_of_sweep, ensure_python_packages, publish  # noqa: E402

BEGIN, END = "<!-- phantom-check:begin -->", "<!-- phantom-check:end -->"
DATA_RANGE = 2000.0


def shepp_logan(n):
    """The modified Shepp-Logan head at n x n, its intensities 0, 0.1 ... 1 mapped piecewise
    linearly to HU: air -1000, brain 40, skull 1000 (its small ellipses -480 to 280)."""
    import numpy as np
    from skimage.data import shepp_logan_phantom
    from skimage.transform import resize
    v = resize(shepp_logan_phantom(), (n, n), order=1, anti_aliasing=True)
    return np.where(v < 0.2, -1000 + v * 5200, 40 + (v - 0.2) * 1200)


def abdomen(shape, seed):
    """A synthetic abdomen (2D (y, x) or 3D (z, y, x)): an elliptic body of soft tissue (40 HU) with
    a smooth texture of its own (sigma 15 HU over about 1/50 of the field), a fat rim (-100), 30
    organs and lesions (-100 to 150 HU), 40 small vessels (200 HU), a spine and ribs (700 HU),
    blurred by 0.7 pixels."""
    import numpy as np
    from scipy.ndimage import gaussian_filter
    rng = np.random.default_rng(seed)
    grid = np.meshgrid(*[np.linspace(-1, 1, s) for s in shape], indexing="ij")
    z = grid[0] if len(shape) == 3 else 0.0
    y, x = grid[-2], grid[-1]
    img = np.full(shape, -1000.0)
    body = (x / 0.85) ** 2 + (y / 0.65) ** 2 < 1
    img[body] = -100.0
    inner = (x / 0.78) ** 2 + (y / 0.58) ** 2 < 1
    texture = gaussian_filter(rng.normal(size=shape), max(shape[-1] / 100, 1.0))
    img[inner] = 40 + (15 * texture / texture.std())[inner]

    def place(count, size, values):
        for _ in range(count):
            cx, cy, cz = rng.uniform(-0.6, 0.6), rng.uniform(-0.4, 0.4), rng.uniform(-0.6, 0.6)
            ax, ay = rng.uniform(*size), rng.uniform(*size)
            across = ((z - cz) / (2 * max(ax, ay))) ** 2 if len(shape) == 3 else 0.0
            m = ((x - cx) / ax) ** 2 + ((y - cy) / ay) ** 2 + across < 1
            img[m & inner] = rng.choice(values)

    place(30, (0.05, 0.25), [-100, -20, 60, 90, 150])
    place(40, (0.008, 0.025), [200])
    spine = (x / 0.12) ** 2 + ((y - 0.42) / 0.1) ** 2 < 1
    img[spine] = 700
    ribs = ((x / 0.8) ** 2 + (y / 0.6) ** 2 > 0.9) & body & (np.abs(np.sin(6 * np.arctan2(y, x))) > 0.9)
    img[ribs] = 700
    return gaussian_filter(img, 0.7)


def noise(kind, shape, sigma, rng):
    """Stationary noise of standard deviation sigma: white, blurred white, or white filtered in-plane
    by the ramp |f| (FBP's noise power spectrum) or the Hann-apodised ramp; `z-smoothed` is white
    smoothed across slices by [1 2 1] / 4."""
    import numpy as np
    from scipy.ndimage import convolve1d, gaussian_filter
    w = rng.normal(size=shape)
    if kind == "white":
        n = w
    elif kind == "white blurred 0.7 vox":
        n = gaussian_filter(w, 0.7)
    elif kind == "white z-smoothed [1 2 1]":
        n = convolve1d(w, np.array([1.0, 2.0, 1.0]) / 4, axis=0, mode="wrap")
    else:
        fy = np.fft.fftfreq(shape[-2])[:, None]
        fx = np.fft.fftfreq(shape[-1])[None, :]
        f = np.hypot(fx, fy)
        gain = np.sqrt(f) if kind == "ramp" else np.sqrt(f) * np.where(f < 0.5, 0.5 * (1 + np.cos(2 * np.pi * f)), 0)
        n = np.real(np.fft.ifft2(np.fft.fft2(w, axes=(-2, -1)) * gain, axes=(-2, -1)))
    return n * (sigma / n.std())


SETTINGS_2D = [("NLM search 5 patch 1", "nlm", dict(search_radius=5, patch_radius=1)),
               ("NLM search 7 patch 2", "nlm", dict(search_radius=7, patch_radius=2)),
               ("NLM search 5 patch 2 L1", "nlm", dict(search_radius=5, patch_radius=2, distance="l1")),
               ("bilateral sigma_s 1 vox", "bilateral", dict(sigma_spatial=1.0))]
SETTINGS_3D = [("NLM search 3 patch 1", "nlm", dict(search_radius=3, patch_radius=1)),
               ("bilateral sigma_s 1 vox", "bilateral", dict(sigma_spatial=1.0))]
TEXTURES_2D = ["white", "white blurred 0.7 vox", "ramp", "Hann-apodised ramp"]
TEXTURES_3D = ["white", "white blurred 0.7 vox", "white z-smoothed [1 2 1]"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="where ctdenoise runs: auto, cpu or cuda")
    parser.add_argument("--json", help="write every case here")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args()
    ensure_python_packages((("numpy", "numpy"), ("scipy", "scipy"), ("skimage", "scikit-image")))
    import numpy as np
    import ctdenoise as ctd
    from skimage.metrics import structural_similarity

    phantoms = [("Shepp-Logan 256", shepp_logan(256), TEXTURES_2D, SETTINGS_2D),
                ("Shepp-Logan 512", shepp_logan(512), TEXTURES_2D, SETTINGS_2D),
                ("abdomen 384", abdomen((384, 384), 1), TEXTURES_2D, SETTINGS_2D),
                ("abdomen 512", abdomen((512, 512), 2), TEXTURES_2D, SETTINGS_2D),
                ("abdomen 160 x 160 x 48", abdomen((48, 160, 160), 3), TEXTURES_3D, SETTINGS_3D)]
    cases, start = [], time.perf_counter()
    for p, (name, clean, textures, settings) in enumerate(phantoms):
        def quality(image):
            image = np.asarray(image, dtype=np.float64)
            psnr = 10 * math.log10(DATA_RANGE ** 2 / np.mean((image - clean) ** 2))
            return psnr, structural_similarity(clean, image, data_range=DATA_RANGE)

        for t, texture in enumerate(textures):
            for sigma in (30, 60):
                rng = np.random.default_rng(1000 * p + 10 * t + sigma)
                noisy = (clean + noise(texture, clean.shape, sigma, rng)).astype(np.float32)
                model = ctd.estimate_noise(noisy)
                noisy_q = quality(noisy)
                for setting, which, kw in settings:
                    f = ctd.nlm if which == "nlm" else ctd.bilateral
                    out, info = f(noisy, device=args.device, return_info=True, **kw)
                    auto = info["auto"]["value"]
                    auto_q = quality(out)
                    best = best_of_sweep(lambda v: quality(f(noisy, v, device=args.device, **kw)), auto)
                    case = {"phantom": name, "texture": texture, "sigma": sigma, "setting": setting,
                            "model_sigma": model.sigma, "noisy": noisy_q, "auto_value": auto, "auto": auto_q,
                            "best_value": best[0], "best": best[1:]}
                    case["within"] = bool(best[1] - auto_q[0] <= 0.5 and best[2] - auto_q[1] <= 0.005
                                      and auto_q[0] >= noisy_q[0] and auto_q[1] >= noisy_q[1])
                    cases.append(case)
                    print(f"{name} | {texture}, sigma {sigma} | {setting}: model {model.sigma:.1f}, auto {auto:.1f} "
                          f"{auto_q[0]:.2f}/{auto_q[1]:.4f}, best {best[0]:.1f} {best[1]:.2f}/{best[2]:.4f} "
                          f"({time.perf_counter() - start:.0f} s)", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(cases, indent=1))

    where = ctd.cuda_device_name() if args.device != "cpu" and ctd.cuda_available() else "the CPU"
    lines = [BEGIN, "", f"Measured {time.strftime('%Y-%m-%d')} by `scripts/phantom_check.py`, ctdenoise on {where}.", ""]
    for label, which in (("NLM", "NLM"), ("Bilateral filter", "bilateral")):
        mine = [c for c in cases if c["setting"].startswith(which)]
        worst = min(mine, key=lambda c: c["auto"][0] - c["best"][0])
        worst_ssim = min(mine, key=lambda c: c["auto"][1] - c["best"][1])
        below = sum(c["auto"][0] < c["noisy"][0] or c["auto"][1] < c["noisy"][1] for c in mine)
        lines.append(f"**{label}** ({len(mine)} cases): {sum(c['within'] for c in mine)} within 0.5 dB and 0.005 SSIM "
                     f"of the best of the sweep; worst PSNR gap {worst['best'][0] - worst['auto'][0]:.2f} dB "
                     f"({worst['phantom']}, {worst['texture']}, sigma {worst['sigma']}, {worst['setting']}); "
                     f"worst SSIM gap {worst_ssim['best'][1] - worst_ssim['auto'][1]:.4f}; below the noisy input: {below}.")
        lines.append("")
    lines += ["| phantom | noise added | setting | model sigma | noisy PSNR / SSIM | auto value | auto PSNR / SSIM "
              "| best value | best PSNR / SSIM | gap dB / SSIM |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        lines.append(f"| {c['phantom']} | {c['texture']}, sigma {c['sigma']} | {c['setting']} | {c['model_sigma']:.1f} "
                     f"| {c['noisy'][0]:.2f} / {c['noisy'][1]:.4f} | {c['auto_value']:.1f} "
                     f"| {c['auto'][0]:.2f} / {c['auto'][1]:.4f} | {c['best_value']:.1f} "
                     f"| {c['best'][0]:.2f} / {c['best'][1]:.4f} "
                     f"| {c['auto'][0] - c['best'][0]:+.2f} / {c['auto'][1] - c['best'][1]:+.4f} |")
    publish(lines, BEGIN, END, write=not args.no_write)


if __name__ == "__main__":
    main()
