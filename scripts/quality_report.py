#!/usr/bin/env python3
"""Regenerates docs/quality.md and its pictures: denoising quality and speed of every filter of
ctdenoise on real CT with simulated low-dose noise, plus scikit-image's NLM as an outside check.
Every number in the report comes from this run (ctdenoise simulate / nlm / bilateral / compare
and their --json reports; scikit-image timed here).

    scripts/setup.sh && python3 scripts/quality_report.py [--data ../shared/data]

Needs numpy and scikit-image (installed with pip when missing)."""
import argparse, json, pathlib, shutil, subprocess, sys, time

root = pathlib.Path(__file__).resolve().parent.parent
cli = root / "build" / "ctdenoise"


def ensure_python_packages():
    try:
        import numpy, skimage  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "numpy", "scikit-image"], check=True)


def ctd(*args):
    result = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"ctdenoise {' '.join(map(str, args))} failed: {result.stderr.strip()}")
    return result.stdout


def load_json(path):
    return json.loads(pathlib.Path(path).read_text())


def prepare_cthead(data, work):
    """CThead: 113 big-endian slices; a 256x256x40 block from the middle, shifted by -1024 to HU."""
    import numpy as np
    slices = [np.fromfile(data / "cthead_stanford" / f"CThead.{i}", dtype=">u2").reshape(256, 256) for i in range(40, 80)]
    volume = (np.stack(slices).astype(np.int32) - 1024).astype("<i2")
    raw = work / "cthead.raw"
    volume.tofile(raw)
    out = work / "cthead.nii.gz"
    ctd("convert", raw, out, "--raw-dims", "256,256,40", "--raw-type", "int16", "--raw-spacing", "1,1,2",
        "--overwrite", "-q")
    return out


def skimage_nlm(noisy, dims, h, search, patch, work):
    """scikit-image's denoise_nl_means at the same h, search and patch radius (fast mode)."""
    import numpy as np
    from skimage.restoration import denoise_nl_means
    raw = work / "sk_in.raw"
    ctd("convert", noisy, raw, "--float", "--overwrite", "-q")
    image = np.fromfile(raw, dtype="<f4").reshape(dims[2], dims[1], dims[0]).squeeze()
    start = time.perf_counter()
    out = denoise_nl_means(image, patch_size=2 * patch + 1, patch_distance=search, h=h, fast_mode=True)
    seconds = time.perf_counter() - start
    out_raw = work / "sk_out.raw"
    out.astype("<f4").tofile(out_raw)
    result = work / "sk_out.nii.gz"
    ctd("convert", out_raw, result, "--raw-dims", f"{dims[0]},{dims[1]},{dims[2]}", "--raw-type", "float32",
        "--overwrite", "-q")
    return result, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"))
    args = parser.parse_args()
    data = pathlib.Path(args.data)
    ensure_python_packages()
    work = root / "build" / "quality"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    pictures = root / "docs" / "quality"
    pictures.mkdir(parents=True, exist_ok=True)

    datasets = [
        ("Siemens series", "siemens", data / "dicom_series_siemens_biograph_mct_20slices" / "uncompressed_derived", 3),
        ("Catphan slice", "catphan", data / "dicom_catphan_philips_brilliance64" / "dicom_file01.dcm", 5),
        ("CThead (slices 40-79, -1024)", "cthead", None, 3),
    ]
    doses = [("I0 = 1e6", "1e6"), ("I0 = 2e5", "2e5")]
    rows = []
    for title, key, path, search in datasets:
        clean = path if path else prepare_cthead(data, work)
        info = json.loads(ctd("info", clean, "--json", work / f"{key}_info.json", "--overwrite") and
                          pathlib.Path(work / f"{key}_info.json").read_text())
        dims = info["dims"]
        for dose_title, photons in doses:
            noisy = work / f"{key}_{photons}_noisy.nii.gz"
            ctd("simulate", clean, noisy, "--photons", photons, "--float", "--overwrite", "-q",
                "--json", work / f"{key}_{photons}_sim.json")
            runs = [("noisy input", noisy, None)]
            methods = [
                ("bilateral, exact (sigma_s 1, sigma_r auto)", ["bilateral", "--sigma-spatial", "1"]),
                ("bilateral, compressive (50 dB)", ["bilateral", "--sigma-spatial", "1", "--algorithm", "compressive"]),
                (f"NLM, exact (search {search}, patch 1, h auto)", ["nlm", "--search-radius", search, "--patch-radius", "1"]),
                (f"NLM, blockwise (approximate, same)", ["nlm", "--search-radius", search, "--patch-radius", "1",
                                                          "--algorithm", "blockwise"]),
            ]
            h_used = None
            for name, command in methods:
                out = work / f"{key}_{photons}_{len(runs)}.nii.gz"
                report = work / f"{key}_{photons}_{len(runs)}.json"
                extra = []
                if command[0] == "nlm" and "blockwise" not in command:
                    extra = ["--preview", pictures / f"{key}-{photons}-nlm.png", "--window", "40,400"]
                ctd(command[0], noisy, out, *command[1:], "--float", "--overwrite", "-q", "--json", report, *extra)
                r = load_json(report)
                if command[0] == "nlm" and h_used is None:
                    h_used = r["parameters"]["h"]
                runs.append((name, out, r["timings_s"]["filter"]))
            sk_out, sk_seconds = skimage_nlm(noisy, dims, h_used, search, 1, work)
            runs.append((f"scikit-image denoise_nl_means (fast mode, same h, search, patch)", sk_out, sk_seconds))
            for name, out, seconds in runs:
                figures = work / "compare.json"
                ctd("compare", clean, out, "--json", figures, "--overwrite")
                c = load_json(figures)
                rows.append((title, dose_title, dims, name, c["psnr_db"], c["ssim"], seconds, c["data_range"]))
            print(f"{title}, {dose_title}: done", file=sys.stderr)

    # Method noise: the defaults on the real scans themselves (no noise added). The difference
    # panel must show noise, not anatomy.
    method_rows = []
    scans = [
        ("demo volume (TotalSegmentator, 3 mm)", "demo", root / "data" / "example_ct.nii.gz", 3),
        ("Siemens series", "siemens-own", data / "dicom_series_siemens_biograph_mct_20slices" / "uncompressed_derived", 3),
        ("WG-04 CT1", "ct1-own", data / "dicom_wg04_ct1_ge" / "CT1_UNC.dcm", 5),
        ("Catphan slice", "catphan-own", data / "dicom_catphan_philips_brilliance64" / "dicom_file01.dcm", 5),
    ]
    for title, key, path, search in scans:
        out = work / f"{key}_defaults.nii.gz"
        report = work / f"{key}_defaults.json"
        ctd("nlm", path, out, "--search-radius", search, "--float", "--overwrite", "-q", "--json", report,
            "--preview", pictures / f"{key}-defaults.png", "--window", "40,400")
        r = load_json(report)["parameters"]
        model = r["noise_model"]
        method_rows.append((title, key, search, r["h"], model["sigma"], model["pseudo_residual_sigma"],
                            model["correlation_lag1"][0], r["h_auto"]["noise_share"]))
        print(f"{title}: defaults done", file=sys.stderr)

    import platform, os
    lines = [
        "# Denoising quality on real CT",
        "",
        "Generated by `python3 scripts/quality_report.py` (do not edit by hand). Reference: the original",
        "scan (which carries its own noise); test: the filters applied to a low-dose version made by",
        "`ctdenoise simulate` (90 parallel-beam views, Poisson noise for I0 photons per detector bin, FBP",
        "ramp). Filter strengths are the automatic ones (docs/parameters.md). PSNR over the reference's value range; SSIM with a Gaussian window (sigma 1.5), 2D or 3D;",
        f"filter times on this machine ({os.cpu_count()} CPU threads, {platform.processor() or platform.machine()}).",
        "",
        "| data | dose | method | PSNR (dB) | SSIM | filter time (s) |",
        "|---|---|---|---|---|---|",
    ]
    for title, dose, dims, name, psnr, ssim, seconds, data_range in rows:
        time_text = "" if seconds is None else f"{seconds:.2f}"
        lines.append(f"| {title} {dims[0]}x{dims[1]}x{dims[2]} | {dose} | {name} | {psnr:.2f} | {ssim:.4f} | {time_text} |")
    lines += ["", "## The defaults on the scans themselves (method noise)", "",
              "`ctdenoise nlm SCAN OUT --search-radius R` with everything else automatic, on the original",
              "scans (no noise added). Each picture is input | output | difference (CT window 40/400, the",
              "difference at the same contrast). The difference should show noise, not organ outlines;",
              "`tests/io/real_data_test.cpp` (MethodNoiseOfTheDefaultsLooksLikeNoise) measures it as the",
              "correlation of the difference's local amplitude with the output's edges.", "",
              "| scan | search radius | h chosen | model sigma | pseudo-residual sigma | lag-1 correlation |",
              "|---|---|---|---|---|---|"]
    for title, key, search, h, sigma, pr, rho, share in method_rows:
        lines.append(f"| {title} | {search} | {h:.1f} | {sigma:.1f} | {pr:.1f} | {rho:.2f} |")
    lines.append("")
    for title, key, *_ in method_rows:
        lines.append(f"![{title}](quality/{key}-defaults.png)")
    lines += ["", "Pictures (noisy | exact NLM | difference, CT window 40/400):", ""]
    for _, key, _, _ in datasets:
        for _, photons in doses:
            lines.append(f"![{key} {photons}](quality/{key}-{photons}-nlm.png)")
    (root / "docs" / "quality.md").write_text("\n".join(lines) + "\n")
    print("wrote docs/quality.md and docs/quality/*.png", file=sys.stderr)


if __name__ == "__main__":
    main()
