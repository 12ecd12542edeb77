#!/usr/bin/env python3
"""The automatic parameters against noise-free references: digital phantoms, whose only noise is
the noise added, so that the best of a sweep is not pulled down by a reference's own noise or
streaks (docs/validation.md, "Noise-free references").

Phantoms, all in HU and made here with fixed seeds: the modified Shepp-Logan head (scikit-image's)
at 256 and 512 pixels, and a synthetic abdomen (a body of soft tissue with a smooth texture of its
own, organs, fat, vessels and bone, blurred by 0.7 pixels as a scanner would) at 384 and 512
pixels, and in 3D (160 x 160 x 48). Stationary noise textures: white, white blurred by 0.7 voxels,
ramp-filtered (the noise power spectrum of filtered back-projection, |f|) and Hann-apodised ramp,
at 30 and 60 HU; in 3D white, blurred by 0.7 voxels in 3D, and white smoothed across slices by
[1 2 1] / 4. Simulated scans of the same phantoms by scikit-image (parallel-beam projection,
Poisson counts, filtered back-projection: simulate_scan), whose noise varies over the image as a
scanner's does; their reference is the same scan without noise. Each default is compared with the
best value of a sweep: PSNR over 2000 HU and SSIM (scikit-image's) against the reference; within
the goal when 0.5 dB and 0.005 SSIM of the best at most, and never below the noisy input.

    scripts/setup.sh && python3 scripts/phantom_check.py [--device auto] [--json FILE] [--no-write]
        [--only NAME]                     # the phantoms whose name holds NAME
    python3 scripts/phantom_check.py --cases FILE...   # the table from earlier --json files
    python3 scripts/phantom_check.py --sweeps FILE     # the automatic values only, judged on the
                                                       # best and noisy input of FILE's cases

Writes its summary and table into docs/validation.md between the phantom-check markers, and prints
them. About 20 minutes on 2 CPU cores, most of it scikit-image's scans of the 512-pixel
phantoms. Needs numpy, scipy and scikit-image (installed with pip when missing)."""
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
        n = np.real(np.fft.ifft2(np.fft.fft2(w, axes=(-2, -1)) * spectrum_gain(kind, shape), axes=(-2, -1)))
    return n * (sigma / n.std())


def spectrum_gain(kind, shape):
    """The in-plane amplitude (square root of the noise power spectrum) on the FFT grid of the
    last two axes of `shape`: the ramp |f| (FBP's), the Hann-apodised ramp, or |f| under a soft
    Gaussian kernel ("soft", exp(-(f / 0.2)^2): its power peaks near 0.14 cycles per pixel)."""
    import numpy as np
    fy = np.fft.fftfreq(shape[-2])[:, None]
    fx = np.fft.fftfreq(shape[-1])[None, :]
    f = np.hypot(fx, fy)
    if kind == "ramp":
        return np.sqrt(f)
    if kind == "Hann-apodised ramp":
        return np.sqrt(f) * np.where(f < 0.5, 0.5 * (1 + np.cos(2 * np.pi * f)), 0)
    if kind == "soft":
        return np.sqrt(f) * np.exp(-0.5 * (f / 0.2) ** 2)
    raise ValueError(f"no noise spectrum {kind!r}")


MU_WATER = 0.02  # attenuation of water, 1 / mm


def line_integrals(slice_hu, theta, pixel_mm):
    """The attenuation of `slice_hu` (HU, 2D) projected over the angles `theta` (degrees),
    parallel beam: scikit-image's radon of water 0.02 / mm."""
    import numpy as np
    from skimage.transform import radon
    return radon(np.clip(MU_WATER * (1 + slice_hu / 1000.0), 0, None), theta=theta, circle=False) * pixel_mm


def scan_rays(slice_hu, theta, photons, pixel_mm, rng):
    """The line integrals of `slice_hu` (HU, 2D) over the angles `theta` (degrees), parallel beam,
    as measured with Poisson counts of `photons` incident per ray (None: exact)."""
    import numpy as np
    p = line_integrals(slice_hu, theta, pixel_mm)
    if photons is not None:
        counts = rng.poisson(photons * np.exp(-p))
        p = -np.log(np.maximum(counts, 1) / photons)
    return p


def simulate_scan(clean, views, window, photons, pixel_mm, rng):
    """A parallel-beam scan of `clean` (HU, a 2D array or a stack of slices) by scikit-image, an
    implementation independent of ctdenoise's own simulator: the attenuation (water 0.02 / mm)
    projected over `views` angles in 180 degrees, Poisson counts of `photons` incident per ray
    (None: no noise), and filtered back-projection with `window` ("ramp", "shepp-logan", "hann").
    Returns the reconstruction in HU."""
    import numpy as np
    from skimage.transform import iradon
    theta = np.linspace(0.0, 180.0, views, endpoint=False)

    def one(slice_hu):
        p = scan_rays(slice_hu, theta, photons, pixel_mm, rng)
        mu = iradon(p / pixel_mm, theta=theta, filter_name=window, circle=False, output_size=slice_hu.shape[-1])
        return (mu / MU_WATER - 1) * 1000

    return np.stack([one(s) for s in clean]) if clean.ndim == 3 else one(clean)


SETTINGS_2D = [("NLM search 5 patch 1", "nlm", dict(search_radius=5, patch_radius=1)),
               ("NLM search 7 patch 2", "nlm", dict(search_radius=7, patch_radius=2)),
               ("NLM search 5 patch 2 L1", "nlm", dict(search_radius=5, patch_radius=2, distance="l1")),
               ("bilateral sigma_s 1 vox", "bilateral", dict(sigma_spatial=1.0))]
SETTINGS_3D = [("NLM search 3 patch 1", "nlm", dict(search_radius=3, patch_radius=1)),
               ("bilateral sigma_s 1 vox", "bilateral", dict(sigma_spatial=1.0))]
TEXTURES_2D = ["white", "white blurred 0.7 vox", "ramp", "Hann-apodised ramp"]
TEXTURES_3D = ["white", "white blurred 0.7 vox", "white z-smoothed [1 2 1]"]
# Simulated scans: (views, window) and the photons per ray of the two doses.
SCANS_2D = [(180, "ramp"), (360, "shepp-logan"), (360, "hann"), (1000, "ramp")]
SCANS_3D = [(360, "ramp")]
PHOTONS = (1e5, 2.5e4)


def phantoms():
    """(name, phantom, pixel size in mm, textures, scans, settings) of every phantom."""
    return [("Shepp-Logan 256", shepp_logan(256), 0.9, TEXTURES_2D, SCANS_2D, SETTINGS_2D),
            ("Shepp-Logan 512", shepp_logan(512), 0.45, TEXTURES_2D, SCANS_2D, SETTINGS_2D),
            ("abdomen 384", abdomen((384, 384), 1), 0.9, TEXTURES_2D, SCANS_2D, SETTINGS_2D),
            ("abdomen 512", abdomen((512, 512), 2), 0.7, TEXTURES_2D, SCANS_2D, SETTINGS_2D),
            ("abdomen 160 x 160 x 48", abdomen((48, 160, 160), 3), 2.0, TEXTURES_3D, SCANS_3D, SETTINGS_3D)]


def quality(image, reference):
    """(PSNR over 2000 HU, scikit-image's SSIM) of `image` against `reference`."""
    import numpy as np
    from skimage.metrics import structural_similarity
    image = np.asarray(image, dtype=np.float64)
    psnr = 10 * math.log10(DATA_RANGE ** 2 / np.mean((image - reference) ** 2))
    return psnr, structural_similarity(reference, image, data_range=DATA_RANGE)


def within_goal(value_q, best_q, noisy_q):
    """The goal: within 0.5 dB and 0.005 SSIM of the best, and not below the noisy input."""
    return bool(best_q[0] - value_q[0] <= 0.5 and best_q[1] - value_q[1] <= 0.005
                and value_q[0] >= noisy_q[0] and value_q[1] >= noisy_q[1])


def judge(f, noisy, reference, kw, device, noisy_q, best=None):
    """Filter f's automatic value on `noisy` against `reference`: (the report's "auto", the
    output's quality, the best of a sweep as (value, PSNR, SSIM) unless `best` is given, whether
    within the goal)."""
    out, info = f(noisy, device=device, return_info=True, **kw)
    auto_q = quality(out, reference)
    if best is None:
        best = best_of_sweep(lambda v: quality(f(noisy, v, device=device, **kw), reference), info["auto"]["value"])
    return info["auto"], auto_q, best, within_goal(auto_q, best[1:], noisy_q)


def noisy_versions(index, clean, textures, scans, pixel_mm):
    """(label, noisy image, reference) for each texture at 30 and 60 HU (the reference: the
    phantom), then for each simulated scan at each dose (the reference: the same scan without
    noise, streaks and blur of the reconstruction included)."""
    import numpy as np
    for t, texture in enumerate(textures):
        for sigma in (30, 60):
            rng = np.random.default_rng(1000 * index + 10 * t + sigma)
            yield f"{texture}, sigma {sigma}", (clean + noise(texture, clean.shape, sigma, rng)).astype(np.float32), clean
    for s, (views, window) in enumerate(scans):
        reference = simulate_scan(clean, views, window, None, pixel_mm, None)
        for photons in PHOTONS:
            rng = np.random.default_rng(1000 * index + 100 + 10 * s + int(photons == PHOTONS[1]))
            noisy = simulate_scan(clean, views, window, photons, pixel_mm, rng).astype(np.float32)
            yield f"scan: {views} views, {window} FBP, I0 {photons:.2g}", noisy, reference


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="where ctdenoise runs: auto, cpu or cuda")
    parser.add_argument("--json", help="write every case here")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--only", default="", help="run the phantoms whose name holds this only")
    parser.add_argument("--sweeps", metavar="FILE",
                        help="sweep nothing: take each case's best and noisy input from this --json file of an "
                             "earlier run (the phantoms and their noise are seeded: the same images)")
    parser.add_argument("--cases", nargs="+", metavar="FILE",
                        help="run nothing: write the table from these --json files of earlier runs")
    args = parser.parse_args()
    if args.cases:
        cases = [c for f in args.cases for c in json.loads(pathlib.Path(f).read_text())]
        publish(table(cases), BEGIN, END, write=not args.no_write)
        return
    ensure_python_packages((("numpy", "numpy"), ("scipy", "scipy"), ("skimage", "scikit-image")))
    import numpy as np
    import ctdenoise as ctd

    where = ctd.cuda_device_name() if args.device != "cpu" and ctd.cuda_available() else "the CPU"
    swept = {(c["phantom"], c["noise"], c["setting"]): c for c in json.loads(pathlib.Path(args.sweeps).read_text())} \
        if args.sweeps else {}
    cases, start = [], time.perf_counter()
    for p, (name, clean, pixel_mm, textures, scans, settings) in enumerate(phantoms()):
        if args.only not in name:
            continue
        for label, noisy, reference in noisy_versions(p, clean, textures, scans, pixel_mm):
            model = ctd.estimate_noise(noisy)
            noisy_q = quality(noisy, reference)
            for setting, which, kw in settings:
                f = ctd.nlm if which == "nlm" else ctd.bilateral
                earlier = swept.get((name, label, setting))
                report, auto_q, best, within = judge(f, noisy, reference, kw, args.device, noisy_q,
                                                     [earlier["best_value"], *earlier["best"]] if earlier else None)
                auto = report["value"]
                case = {"device": where, "date": time.strftime("%Y-%m-%d"), "phantom": name, "noise": label, "setting": setting, "model_sigma": model.sigma,
                        "noise_std": float(np.std(noisy - reference)), "noisy": noisy_q, "auto_value": auto,
                        "auto": auto_q, "best_value": best[0], "best": best[1:],
                        "noise_over_image": report["noise_over_image"], "within": within}
                cases.append(case)
                print(f"{name} | {label} | {setting}: noise {case['noise_std']:.1f}, model {model.sigma:.1f}, "
                      f"auto {auto:.1f} {auto_q[0]:.2f}/{auto_q[1]:.4f}, best {best[0]:.1f} {best[1]:.2f}/{best[2]:.4f} "
                      f"{'ok' if case['within'] else 'MISS'} ({time.perf_counter() - start:.0f} s)", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(cases, indent=1))

    publish(table(cases), BEGIN, END, write=not args.no_write)


def table(cases):
    """The summary, per kind of noise and filter, and the table of every case, between the markers."""
    dates, devices = sorted({c["date"] for c in cases}), sorted({c["device"] for c in cases})
    lines = [BEGIN, "", f"Measured {', '.join(dates)} by `scripts/phantom_check.py`, ctdenoise on {', '.join(devices)}.", ""]
    for kind, simulated in (("Stationary noise added to the phantom", False), ("Simulated scans", True)):
        for label, which in (("NLM", "NLM"), ("bilateral filter", "bilateral")):
            mine = [c for c in cases if c["setting"].startswith(which) and c["noise"].startswith("scan") == simulated]
            if not mine:
                continue
            worst = min(mine, key=lambda c: c["auto"][0] - c["best"][0])
            worst_ssim = min(mine, key=lambda c: c["auto"][1] - c["best"][1])
            below = sum(c["auto"][0] < c["noisy"][0] or c["auto"][1] < c["noisy"][1] for c in mine)
            lines.append(f"**{kind}, {label}** ({len(mine)} cases): {sum(c['within'] for c in mine)} within 0.5 dB and "
                         f"0.005 SSIM of the best of the sweep; worst PSNR gap {worst['best'][0] - worst['auto'][0]:.2f} dB "
                         f"({worst['phantom']}, {worst['noise']}, {worst['setting']}); "
                         f"worst SSIM gap {worst_ssim['best'][1] - worst_ssim['auto'][1]:.4f}; below the noisy input: {below}.")
            lines.append("")
    lines += ["| phantom | noise | setting | noise std / model sigma | noisy PSNR / SSIM | auto value | auto PSNR / SSIM "
              "| best value | best PSNR / SSIM | gap dB / SSIM |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        lines.append(f"| {c['phantom']} | {c['noise']} | {c['setting']} | {c['noise_std']:.1f} / {c['model_sigma']:.1f} "
                     f"| {c['noisy'][0]:.2f} / {c['noisy'][1]:.4f} | {c['auto_value']:.1f} "
                     f"| {c['auto'][0]:.2f} / {c['auto'][1]:.4f} | {c['best_value']:.1f} "
                     f"| {c['best'][0]:.2f} / {c['best'][1]:.4f} "
                     f"| {c['auto'][0] - c['best'][0]:+.2f} / {c['auto'][1] - c['best'][1]:+.4f} |")
    return lines



if __name__ == "__main__":
    main()
