"""The per-case line, record and summary shared by the bench checks that judge the automatic
values against a sweep's best (smooth_noise_check.py, strong_noise_check.py,
poisson_noise_check.py, coarse_scan_check.py, units_check.py, thick_slice_check.py, lodopab_like_check.py), the cases of an earlier run, the
real scans they read, and the objects and filter settings they run."""
import json, pathlib


def record(cases, label, auto, auto_q, best, within, **fields):
    """Appends the case (the report's "auto", the output's (PSNR, SSIM), the best as (value, PSNR,
    SSIM), whether within the goal, and `fields`) to `cases` and prints its line."""
    cases.append(dict(**fields, auto_value=auto["value"], auto=list(auto_q), best_value=best[0], best=list(best[1:]),
                      within=within, noise_over_image=auto["noise_over_image"]))
    print(f"{label}: auto {auto['value']:.4g} ({auto_q[0]:.2f}/{auto_q[1]:.4f}) best {best[0]:.4g} "
          f"({best[1]:.2f}/{best[2]:.4f}) x{auto['value'] / best[0]:.2f} {'ok' if within else 'MISS'} | "
          f"{auto['noise_over_image']}", flush=True)


def judge_3d_settings(cases, noisy, reference, scan, recorded=None, **fields):
    """Judges NLM search 3 patch 1 and the bilateral filter at sigma_s 1 voxel (scripts/phantom_check.py's
    SETTINGS_3D) on the CPU, on `noisy` against `reference`, and records each case under `scan`;
    against the best of a recorded sweep where `recorded` ({(scan, setting): case}) holds the case."""
    import ctdenoise as ctd
    from phantom_check import SETTINGS_3D, judge, quality
    noisy_q = quality(noisy, reference)
    for setting, kind, kw in SETTINGS_3D:
        f = ctd.nlm if kind == "nlm" else ctd.bilateral
        old = (recorded or {}).get((scan, setting))
        best = (old["best_value"], *old["best"]) if old else None
        auto, auto_q, best, within = judge(f, noisy, reference, kw, "cpu", noisy_q, best)
        record(cases, f"{scan} | {setting}", auto, auto_q, best, within, scan=scan, setting=setting, noisy=noisy_q,
               **fields)


def recorded_cases(path, key, inside=("cases", "cases_detail")):
    """The cases of an earlier --json run (a list, or an object holding them under the first of
    `inside`'s names it has) by key(case), to judge against their recorded sweeps; {} without a path."""
    if not path:
        return {}
    loaded = json.loads(pathlib.Path(path).read_text())
    if isinstance(loaded, dict):
        loaded = loaded[next((n for n in inside if n in loaded), inside[0])]
    return {key(c): c for c in loaded}


def finish(cases, json_path=None):
    """Prints how many cases are within the goal and the worst PSNR gap; writes them to json_path."""
    print(f"{sum(c['within'] for c in cases)} of {len(cases)} within the goal; worst "
          f"{min(c['auto'][0] - c['best'][0] for c in cases):+.2f} dB")
    if json_path:
        pathlib.Path(json_path).write_text(json.dumps(cases, indent=1))


def real_scan(path, volume=False):
    """A real scan as float64 in HU (its middle slice, or the whole volume) and its pixel size in mm."""
    import numpy as np
    import ctdenoise as ctd
    image, meta = ctd.read(path)
    if image.ndim == 3 and not volume:
        image = image[image.shape[0] // 2]
    return np.asarray(image, dtype=np.float64), float(meta.spacing_xyz[0])


def real_image(path, volume=False):
    """A real scan as float64 in HU: its middle slice, or the whole volume."""
    return real_scan(path, volume)[0]


def cthead_slices(data, first, count):
    """CThead's slices first .. first + count - 1 (numbered from 1) as float64 in HU: big-endian
    12-bit slices of 256 x 256 at 1 mm, stored 1024 above HU (MANIFEST)."""
    import numpy as np
    folder = pathlib.Path(data) / "cthead_stanford"
    slices = [np.fromfile(folder / f"CThead.{i}", dtype=">u2").reshape(256, 256) for i in range(first, first + count)]
    return np.stack(slices).astype(np.float64) - 1024


def objects_and_settings(objects, only):
    """(name, image, settings) of each object of `objects` ({name: function making the image, HU})
    whose name holds one of `only`: NLM search 5 patch 1 (3D: search 3) and the bilateral filter at
    sigma_s 1 voxel, as scripts/phantom_check.py names them."""
    from phantom_check import SETTINGS_2D, SETTINGS_3D
    for name, make in objects.items():
        if not any(o in name for o in only):
            continue
        clean = make()
        yield name, clean, [s for s in (SETTINGS_3D if clean.ndim == 3 else SETTINGS_2D)
                            if s[0] in ("NLM search 5 patch 1", "NLM search 3 patch 1", "bilateral sigma_s 1 vox")]
