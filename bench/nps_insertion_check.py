#!/usr/bin/env python3
"""Image-domain noise insertion (experiment, not part of the product): a simulator unlike the
product's and the other checks' projectors. Noise of a given noise power spectrum is made by
filtering white noise in the Fourier domain, then scaled by a map of its level computed from the
object's own attenuation (the variance of FBP noise at a pixel, to first order, goes as the mean
over the angles of exp(line integral) through it), as noise insertion tools for dose reduction
studies do. It keeps FBP noise's grain and its rise in the body's middle, but not its streaks
along the longest rays. Real slices (their own noise, 5-16 HU, stays in the reference), two
spectra (a ramp filter's |f| with Hann's window, and |f| under a soft Gaussian kernel), 30 and
60 HU mean in the body, in 2D (five slices) and 3D (the Siemens series and 20 slices of CThead,
the ramp's noise correlated across slices by [1 2 1] / 4); NLM (2D: search 5 patch 1 and search 4
patch 2; 3D: search 3 patch 1) and the bilateral filter at sigma_s 1 voxel on the CPU, each judged
against the best of a sweep as scripts/phantom_check.py judges it (0.5 dB and 0.005 SSIM, never
below the noisy input).

    scripts/setup.sh && python3 bench/nps_insertion_check.py --data ../shared/data [--json FILE]
    python3 bench/nps_insertion_check.py --sweeps FILE ...   # the automatic values only, judged on
                                                            # the best and noisy input of FILE's cases
"""

import argparse, pathlib, sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))
sys.path.insert(0, str(root / "bench"))

MU_WATER = 0.0193  # 1/mm, as `ctdenoise simulate`
SPECTRA = {"ramp-hann": "Hann-apodised ramp", "soft": "soft"}  # this check's names: scripts/phantom_check.py's


def level_map(clean_hu, pixel_mm, angles=180):
    """The relative standard deviation of FBP noise at each pixel of a slice: sqrt of the
    back-projection of exp(line integrals), normalised to mean 1 over the body (HU > -500)."""
    import phantom_check
    from skimage.transform import iradon
    theta = np.linspace(0, 180, angles, endpoint=False)
    p = phantom_check.line_integrals(clean_hu, theta, pixel_mm) * (MU_WATER / phantom_check.MU_WATER)
    v = iradon(np.exp(p), theta, filter_name=None, circle=False, output_size=clean_hu.shape[0])
    v = np.maximum(v, v[v > 0].min() if np.any(v > 0) else 1)
    s = np.sqrt(v)
    return s / s[clean_hu > -500].mean()


def insert_noise(clean_hu, pixel_mm, kind, sigma, rng, z_kernel=None):
    """clean_hu: a slice, or slices (z first), each with its own level map; z_kernel: weights that
    correlate the noise across slices (as overlapping slices do), or None."""
    from phantom_check import spectrum_gain
    white = rng.standard_normal(clean_hu.shape)
    if z_kernel is not None:
        from scipy.ndimage import convolve1d
        white = convolve1d(white, np.asarray(z_kernel, dtype=float), axis=0, mode="reflect")
    n = np.real(np.fft.ifft2(np.fft.fft2(white, axes=(-2, -1)) * spectrum_gain(SPECTRA[kind], clean_hu.shape), axes=(-2, -1)))
    n /= n.std()
    levels = np.stack([level_map(c, pixel_mm) for c in clean_hu]) if clean_hu.ndim == 3 else level_map(clean_hu, pixel_mm)
    return clean_hu + sigma * levels * n


def main():
    import ctdenoise as ctd
    from check_cases import cthead_slices, finish, real_scan, record, recorded_cases
    from phantom_check import judge, quality
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"), help="../shared/data")
    parser.add_argument("--sigma", type=float, nargs="+", default=[30, 60], help="the noise's mean in the body, HU")
    parser.add_argument("--spectra", nargs="+", default=["ramp-hann", "soft"], choices=list(SPECTRA))
    parser.add_argument("--only", nargs="+", default=[""], help="the cases whose label holds one of these only")
    parser.add_argument("--json", help="write every case here")
    parser.add_argument("--sweeps", metavar="FILE", help="take each case's best from FILE instead of sweeping")
    args = parser.parse_args()
    recorded = recorded_cases(args.sweeps, lambda c: (c["object"], c["spectrum"], c["sigma"], c["setting"]))
    data = pathlib.Path(args.data)

    def square(image):  # the radon transform wants a square image: pad with air
        ny, nx = image.shape
        n = max(ny, nx)
        out = np.full((n, n), -1000.0)
        out[(n - ny) // 2:(n - ny) // 2 + ny, (n - nx) // 2:(n - nx) // 2 + nx] = image
        return out

    def scan(path, volume=False):
        image, px = real_scan(path, volume)
        image = np.clip(image, -1000, 3071)
        return (np.stack([square(s) for s in image]) if volume else square(image)), px

    def fullhead():  # VTK's head, stored as HU + 1024 at 0.9375 mm
        image, _ = real_scan(data / "fullhead15_vtk" / "fullhead15.png", False)
        return square(np.clip(image - 1024, -1000, 3071)), 0.9375

    objects = {
        "Siemens slice": lambda: scan(data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless"),
        "CT1 slice": lambda: scan(data / "dicom_wg04_ct1_ge" / "CT1_UNC.dcm"),
        "Catphan slice": lambda: scan(data / "dicom_catphan_philips_brilliance64" / "dicom_file01.dcm"),
        "TotalSegmentator slice": lambda: scan(next((data / "nifti_totalseg_example_ct").glob("*.nii.gz"))),
        "FullHead slice": fullhead,
        # 3D: the noise of each slice as above, the ramp's correlated across slices by [1 2 1] / 4
        "Siemens series": lambda: scan(data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless", True),
        "CThead volume": lambda: (cthead_slices(data, 47, 20).clip(-1000, 3071), 1.0),
    }
    settings = {2: [("NLM search 5 patch 1", ctd.nlm, dict(search_radius=5, patch_radius=1)),
                    ("NLM search 4 patch 2", ctd.nlm, dict(search_radius=4, patch_radius=2)),
                    ("bilateral sigma_s 1 vox", ctd.bilateral, dict(sigma_spatial=1.0))],
                3: [("NLM search 3 patch 1", ctd.nlm, dict(search_radius=3, patch_radius=1)),
                    ("bilateral sigma_s 1 vox", ctd.bilateral, dict(sigma_spatial=1.0))]}
    cases = []
    for o, (name, make) in enumerate(objects.items()):
        clean, px = make()
        for s, kind in enumerate(args.spectra):
            for sigma in args.sigma:
                z_kernel = [0.25, 0.5, 0.25] if clean.ndim == 3 and kind == "ramp-hann" else None
                label = (f"{name} ({'x'.join(map(str, clean.shape[::-1]))}, {px:.2f} mm) | {kind}"
                         f"{', z [1 2 1]' if z_kernel else ''} sigma {sigma:g}")
                if not any(x in label for x in args.only):
                    continue
                rng = np.random.default_rng(100 * o + 10 * s + int(sigma))
                noisy = insert_noise(clean, px, kind, sigma, rng, z_kernel).astype(np.float32)
                noisy_q = quality(noisy, clean)
                for setting, f, kw in settings[clean.ndim]:
                    old = recorded.get((name, kind, sigma, setting))
                    best = (old["best_value"], *old["best"]) if old else None
                    auto, auto_q, best, within = judge(f, noisy, clean, kw, "cpu", noisy_q, best)
                    record(cases, f"{label} | {setting}", auto, auto_q, best, within, object=name, spectrum=kind,
                           sigma=sigma, setting=setting, pixel_mm=px, noisy=list(noisy_q))
    finish(cases, args.json)


if __name__ == "__main__":
    main()
