#!/usr/bin/env python3
"""Repeats, with today's defaults, the measurement that showed the automatic parameters
over-smoothing white noise: the Siemens series of ../shared/data, central 256 x 256 crop, all 20
slices, HU clipped to +-1000, white Gaussian noise of sigma 20 and 40 HU added (fixed seeds), PSNR
over 2000 HU and SSIM (scikit-image's, 3D) against the crop. Each filter's default is set beside the
best value of a sweep, and scikit-image's NLM at the best of its own.

    scripts/setup.sh && python3 scripts/white_noise_check.py [--data ../shared/data] [--device auto]

Writes its table into docs/parameters.md between the white-noise-check markers, and prints it.
Needs numpy, scikit-image and PyWavelets (installed with pip when missing). On 2 CPU cores it takes
about 8 minutes, most of it scikit-image's NLM."""
import argparse, math, pathlib, subprocess, sys, time

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
BEGIN, END = "<!-- white-noise-check:begin -->", "<!-- white-noise-check:end -->"
DATA_RANGE = 2000.0


def ensure_python_packages(modules=(("numpy", "numpy"), ("skimage", "scikit-image"), ("pywt", "PyWavelets"))):
    """Installs with pip the (module, PyPI name) pairs whose module does not import."""
    import importlib.util
    missing = [name for module, name in modules if importlib.util.find_spec(module) is None]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], check=True)


def best_of_sweep(run, start, step=2 ** 0.25):
    """The value of highest PSNR: start * step^k for k = -3..3, extended while the best sits at an
    end, then refined by half steps. run(value) -> (psnr, ssim). Returns (value, psnr, ssim)."""
    seen = {}

    def at(k):
        if k not in seen:
            seen[k] = run(start * step ** k)
        return seen[k]

    for k in range(-3, 4):
        at(k)
    for _ in range(10):
        k = max(seen, key=lambda j: seen[j][0])
        if k == min(seen):
            at(k - 1)
        elif k == max(seen):
            at(k + 1)
        else:
            break
    k = max(seen, key=lambda j: seen[j][0])
    at(k - 0.5), at(k + 0.5)
    k = max(seen, key=lambda j: seen[j][0])
    return (start * step ** k, *seen[k])


def marked_doc(begin, end):
    """The page of docs/ that holds the markers `begin` ... `end`: parameters.md or validation.md."""
    for name in ("parameters.md", "validation.md"):
        doc = root / "docs" / name
        text = doc.read_text()
        if begin in text and end in text:
            return doc
    sys.exit(f"neither docs/parameters.md nor docs/validation.md has {begin} ... {end} markers")


def publish(lines, begin, end, write):
    """Prints the table `lines` (which start with the `begin` marker) closed by the `end` marker and,
    if `write`, puts it in docs/parameters.md or docs/validation.md (whichever holds the markers) in
    place of what lies between them."""
    table = "\n".join(lines + ["", end])
    print(table)
    if not write:
        return
    doc = marked_doc(begin, end)
    text = doc.read_text()
    head, rest = text.split(begin, 1)
    doc.write_text(head + table + rest.split(end, 1)[1])
    print(f"wrote {doc}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"))
    parser.add_argument("--device", default="auto", help="where ctdenoise runs: auto, cpu or cuda")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args()
    ensure_python_packages()
    import numpy as np
    import ctdenoise as ctd
    from skimage.metrics import structural_similarity
    from skimage.restoration import denoise_nl_means, estimate_sigma

    series = pathlib.Path(args.data) / "dicom_series_siemens_biograph_mct_20slices" / "uncompressed_derived"
    volume, meta = ctd.read(str(series))
    spacing = tuple(meta.spacing)  # (z, y, x) in mm
    nz, ny, nx = volume.shape
    clean = np.clip(volume[:, ny // 2 - 128:ny // 2 + 128, nx // 2 - 128:nx // 2 + 128], -1000, 1000).astype(np.float64)

    def quality(image):
        image = np.asarray(image, dtype=np.float64)
        psnr = 10 * math.log10(DATA_RANGE ** 2 / np.mean((image - clean) ** 2))
        return psnr, structural_similarity(clean, image, data_range=DATA_RANGE)

    rows = []
    for sigma, seed in ((20, 20), (40, 40)):
        noisy = (clean + np.random.default_rng(seed).normal(0, sigma, clean.shape)).astype(np.float32)
        row = {"sigma": sigma, "noisy": quality(noisy)}
        print(f"sigma {sigma}: noisy {row['noisy'][0]:.2f} dB", flush=True)

        def ctd_nlm(**kw):
            out, info = ctd.nlm(noisy, device=args.device, return_info=True, **kw)
            return out, info["parameters"]["h"]

        start = time.perf_counter()
        out, h = ctd_nlm()
        row["nlm default"] = (h, *quality(out), time.perf_counter() - start)
        out, h = ctd_nlm(search_radius=4, patch_radius=2)
        row["nlm s4p2 auto"] = (h, *quality(out))
        row["nlm s4p2 best"] = best_of_sweep(lambda v: quality(ctd_nlm(search_radius=4, patch_radius=2, h=v)[0]), h)

        def ctd_bf(**kw):
            out, info = ctd.bilateral(noisy, sigma_spatial=1.0, spacing=spacing, device=args.device, return_info=True, **kw)
            return out, info["parameters"]["sigma_range"]

        out, sr = ctd_bf()
        row["bilateral auto"] = (sr, *quality(out))
        row["bilateral best"] = best_of_sweep(lambda v: quality(ctd_bf(sigma_range=v)[0]), sr)
        print(f"  ctdenoise done ({time.perf_counter() - start:.0f} s)", flush=True)

        # scikit-image's NLM with patch 5, distance 4 and its own noise estimate (fast mode). Its
        # bilateral filter is left out: on HU its output depends on the image's offset (its colour
        # table is built before a negative image is shifted), and in our check its output matched
        # no plain bilateral filter's at any range sigma, so its "best" would not compare filters.
        sk_sigma = float(estimate_sigma(noisy))
        row["skimage nlm best"] = best_of_sweep(
            lambda v: quality(denoise_nl_means(noisy, patch_size=5, patch_distance=4, h=v, sigma=sk_sigma, fast_mode=True)),
            0.8 * sk_sigma)
        print(f"  scikit-image done ({time.perf_counter() - start:.0f} s)", flush=True)
        rows.append(row)

    fmt = lambda q: f"{q[1]:.2f} / {q[2]:.4f}"
    where = ctd.cuda_device_name() if args.device != "cpu" and ctd.cuda_available() else "the CPU"
    lines = [BEGIN, "",
             f"Measured {time.strftime('%Y-%m-%d')} by `scripts/white_noise_check.py`, ctdenoise on {where}. "
             "PSNR over 2000 HU / SSIM against the clipped crop; "
             "\"best\" is the best value of a sweep (steps of 2^(1/8) around the best).", "",
             "| white noise | noisy | `nlm` defaults (search 5, patch 1) | NLM search 4 patch 2, auto h | same, best h | "
             "bilateral σs 1 mm, auto σr | same, best σr | scikit-image NLM, best h |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| σ {r['sigma']} HU | {r['noisy'][0]:.2f} / {r['noisy'][1]:.4f} "
            f"| {fmt(r['nlm default'])} (h {r['nlm default'][0]:.1f}) "
            f"| {fmt(r['nlm s4p2 auto'])} (h {r['nlm s4p2 auto'][0]:.1f}) | {fmt(r['nlm s4p2 best'])} (h {r['nlm s4p2 best'][0]:.1f}) "
            f"| {fmt(r['bilateral auto'])} (σr {r['bilateral auto'][0]:.1f}) | {fmt(r['bilateral best'])} (σr {r['bilateral best'][0]:.1f}) "
            f"| {fmt(r['skimage nlm best'])} (h {r['skimage nlm best'][0]:.1f}) |")
    publish(lines, BEGIN, END, write=not args.no_write)


if __name__ == "__main__":
    main()
