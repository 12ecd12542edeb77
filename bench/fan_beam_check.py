#!/usr/bin/env python3
"""Fan-beam scans of scripts/phantom_check.py's phantoms (experiment, not part of the product):
does the scan-like probe take them, and how near the best of a sweep is the automatic value?

The simulator is written here with numpy (independent of ctdenoise's parallel-beam projector):
a full turn of 720 views, the source 541 mm from the centre (or 1.6 half-diagonals, if more), a
flat virtual detector through the centre at the pixel's pitch, Poisson counts with an optional
bowtie (incident photons falling as exp(-b (u / u_max)^2)) and optional angular tube current
modulation (--tcm: each view's photons proportional to the square root of its most attenuated
ray's attenuation, exp(max p / 2), at the same mean dose, as dose-saving scanners modulate),
optional electronic noise (--electronic S: Gaussian counts of sigma S added to the Poisson counts,
as low-dose simulations after Yu et al. 2012 add it), optionally another orbit than a full turn
(--orbit offset: a CBCT's offset detector, reaching the centre's other side by 15 % of its
half-width, Wang's weights; --orbit short: half a turn plus the fan, Parker's weights), optionally a
polychromatic beam (--spectrum 120kvp: water and bone, an energy-integrating detector, the water
beam-hardening correction), and Kak & Slaney's fan-beam FBP (the
data weighted by cos(gamma), the ramp or Hann-apodised ramp filter, each view weighted by 1 / U^2).
The reference is the same scan without noise. NLM search 5 patch 1 and the bilateral filter at
sigma_s 1 voxel, on the CPU; about 10 minutes per phantom on 2 cores. Real slices of ../shared/data
can be the scanned object too ("Catphan slice", "Siemens slice", "CT1 slice": their own noise stays in the
reference; the adult abdomen wants --photons 2e6 5e5).

    scripts/setup.sh && python3 bench/fan_beam_check.py "abdomen 384" [--json FILE]
    python3 bench/fan_beam_check.py "Siemens slice" --photons 2e6 5e5
    python3 bench/fan_beam_check.py "abdomen 384" --orbit offset
"""
import argparse, json, pathlib, sys

import numpy as np
from scipy.ndimage import map_coordinates

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "build" / "python"))
sys.path.insert(0, str(root / "scripts"))

MU_WATER = 0.02  # 1 / mm


ORBITS = ["full", "short", "offset"]


def fan_geometry(n, pixel_mm, views=720, source_mm=None, pitch=1.0, orbit="full"):
    """views: over a full turn. orbit "short": a short scan, half a turn plus the fan's angle at
    the same angular step (Parker's weights); "offset": a full turn with the detector shifted to
    one side, overlapping the centre by 15 % of its half-width (a CBCT's half-fan for a wide
    field of view; Wang's weights)."""
    half = 0.5 * n * pixel_mm * np.sqrt(2)  # the image's half diagonal, mm
    D = source_mm or max(541.0, 1.6 * half)  # source to isocentre
    # bins on a virtual detector through the centre at `pitch` pixels, covering the fan's
    # shadow of the circle through the image's corners: R D / sqrt(D^2 - R^2) each side
    du = pitch * pixel_mm
    nb = int(np.ceil(2 * half * D / np.sqrt(D * D - half * half) / du * 1.02)) | 1
    u = (np.arange(nb) - (nb - 1) / 2) * du
    beta = np.linspace(0, 2 * np.pi, views, endpoint=False)
    if orbit == "short":
        fan = np.arctan(np.abs(u).max() / D)
        beta = beta[beta <= np.pi + 2 * fan]
    # an offset detector's bins stay on the virtual detector's other side, unmeasured (weight 0),
    # for the ramp filter's tails
    overlap = 0.15 * np.abs(u).max() if orbit == "offset" else None
    return dict(D=D, u=u, du=du, beta=beta, n=n, pixel=pixel_mm, orbit=orbit, overlap=overlap)


def redundancy_weights(g):
    """Each ray's weight (views x bins) so that a line measured twice has weights summing to 1,
    once, 1: Parker's (1982) for a short scan, Wang's (2002) for an offset detector, 1/2 for a
    full turn."""
    u, D, beta = g["u"], g["D"], g["beta"]
    if g.get("orbit", "full") == "full":
        return np.full((len(beta), len(u)), 0.5)
    if g["orbit"] == "offset":
        overlap = g["overlap"]
        w = np.where(u >= overlap, 1.0, np.sin(np.pi / 4 * (1 + np.clip(u / overlap, -1, 1))) ** 2)
        return np.broadcast_to(w[None, :], (len(beta), len(u))).copy()
    # the fan angle, signed as Parker's: this geometry's ray at u is measured again at beta + pi + 2 gamma
    gamma = -np.arctan(u / D)[None, :]
    fan = np.arctan(np.abs(u).max() / D)
    b = beta[:, None]
    w = np.ones((len(beta), len(u)))
    rising = b < 2 * (fan - gamma)
    w = np.where(rising, np.sin(np.pi / 4 * b / np.maximum(fan - gamma, 1e-12)) ** 2, w)
    falling = b > np.pi - 2 * gamma
    w = np.where(falling, np.sin(np.pi / 4 * (np.pi + 2 * fan - b) / np.maximum(fan + gamma, 1e-12)) ** 2, w)
    return np.clip(w, 0, 1)


def project(mu, g, step=1.0, cell=False):
    """Line integrals (mm * 1/mm) of mu (n x n, 1/mm, pixel g['pixel']) along the fan's rays: at
    each bin's centre, or (cell) the mean of four rays spread over its width, as a detector's cell
    integrates (point samples alias a hard-edged phantom where the bins are wider than a pixel)."""
    if cell:
        offsets = (-0.375, -0.125, 0.125, 0.375)
        return np.mean([project(mu, dict(g, u=g["u"] + o * g["du"]), step) for o in offsets], axis=0)
    n, px, D = g["n"], g["pixel"], g["D"]
    c0 = (n - 1) / 2
    out = np.zeros((len(g["beta"]), len(g["u"])))
    for i, b in enumerate(g["beta"]):
        src = np.array([D * np.cos(b), D * np.sin(b)])
        # virtual detector point at isocentre, along the direction perpendicular to the source
        perp = np.array([-np.sin(b), np.cos(b)])
        pts = g["u"][:, None] * perp[None, :]                      # (nb, 2)
        d = pts - src[None, :]
        length = np.linalg.norm(d, axis=1)
        d /= length[:, None]
        # march from distance D - R to D + R from the source
        R = 0.5 * n * px * np.sqrt(2) + px
        t = np.arange(D - R, D + R, step * px)
        xy = src[None, None, :] + t[None, :, None] * d[:, None, :]   # (nb, nt, 2) mm
        col = xy[..., 0] / px + c0
        row = xy[..., 1] / px + c0
        vals = map_coordinates(mu, [row.ravel(), col.ravel()], order=1, mode="constant", cval=0.0)
        out[i] = vals.reshape(col.shape).sum(axis=1) * step * px
    return out


def ramp_kernel(nb, du, window="ramp"):
    k = np.arange(-(nb - 1), nb)
    h = np.zeros(len(k))
    h[k == 0] = 1 / (4 * du * du)
    odd = k % 2 == 1
    h[odd] = -1 / (np.pi * k[odd] * du) ** 2
    if window == "ramp":
        return h
    L = len(h)
    H = np.fft.fft(np.fft.ifftshift(h))
    f = np.abs(np.fft.fftfreq(L)) * 2  # 0..1 of Nyquist
    if window == "hann":
        H = H * 0.5 * (1 + np.cos(np.pi * f))
    elif window == "shepp-logan":
        H = H * np.sinc(f / 2)
    elif window == "soft":
        # a smooth soft-tissue kernel, as scanners' standard abdominal ones: the ramp under a
        # Gaussian falling to a half at half of Nyquist (none of the windows the product models)
        H = H * np.exp(-np.log(2) * (f / 0.5) ** 2)
    elif window == "sharp":
        # an edge-enhancing bone kernel: the ramp raised by up to 1.5 x at half of Nyquist
        H = H * (1 + 0.5 * np.sin(np.pi * f))
    return np.real(np.fft.fftshift(np.fft.ifft(H)))


def fbp(p, g, window="ramp"):
    """Fan-beam FBP for a flat (virtual, at the isocentre) detector (Kak & Slaney 3.4.2), each ray
    weighted for the orbit's redundancy (redundancy_weights)."""
    n, px, D, u, du = g["n"], g["pixel"], g["D"], g["u"], g["du"]
    nb = len(u)
    weighted = p * (D / np.sqrt(D * D + u * u))[None, :] * redundancy_weights(g)
    h = ramp_kernel(nb, du, window)
    q = np.array([np.convolve(row, h)[nb - 1:2 * nb - 1] for row in weighted]) * du
    c0 = (n - 1) / 2
    yy, xx = np.mgrid[0:n, 0:n]
    x = (xx - c0) * px
    y = (yy - c0) * px
    img = np.zeros((n, n))
    for i, b in enumerate(g["beta"]):
        # distance of the point from the source along the central ray, and its detector coordinate
        along = D - (x * np.cos(b) + y * np.sin(b))
        across = -x * np.sin(b) + y * np.cos(b)
        U = along / D
        s = across * D / along
        img += np.interp(s.ravel(), u, q[i], left=0, right=0).reshape(n, n) / (U * U)
    return img * (g["beta"][1] - g["beta"][0])


# A polychromatic beam (--spectrum 120kvp): a filtered 120 kVp tungsten spectrum in five bins
# (photon shares; mean 68 keV) and the mass attenuation of water and cortical bone at those
# energies (NIST XCOM, cm^2/g). The energy-integrating detector weighs each photon by its energy.
SPECTRUM_KEV = np.array([40.0, 50.0, 60.0, 80.0, 100.0])
SPECTRUM_SHARE = np.array([0.10, 0.20, 0.25, 0.28, 0.17])
MASS_ATTENUATION = {"water": np.array([0.2683, 0.2269, 0.2059, 0.1837, 0.1707]),
                    "bone": np.array([0.6655, 0.4242, 0.3148, 0.2229, 0.1855])}
BONE_HU, BONE_DENSITY = 1900.0, 1.92  # cortical bone as the monochromatic image reads it, g/cm^3


def polychromatic_scan(clean_hu, g, incident, rng, electronic, cell):
    """The line integrals a scanner reconstructs from a polychromatic beam: each pixel split into
    water (densities 0-1 below 0 HU) and cortical bone mixed with water (above), each energy's
    photons counted (Poisson, or their mean where rng is None) and weighed by energy, and the log
    corrected for water's beam hardening (each value mapped to the water path that gives it, times
    MU_WATER), as a scanner's calibration does; bone's hardening stays, in the reference too."""
    bone = np.clip(clean_hu / BONE_HU, 0, 1)
    water = np.where(clean_hu > 0, 1 - bone, np.clip(1 + clean_hu / 1000.0, 0, None))
    path = {"water": project(water, g, cell=cell) / 10, "bone": project(bone * BONE_DENSITY, g, cell=cell) / 10}  # g/cm^2
    weight = SPECTRUM_SHARE * SPECTRUM_KEV / np.sum(SPECTRUM_SHARE * SPECTRUM_KEV)  # each energy's share of the signal
    signal = np.zeros_like(path["water"])
    for k in range(len(SPECTRUM_KEV)):
        mean = incident * SPECTRUM_SHARE[k] * np.exp(-MASS_ATTENUATION["water"][k] * path["water"]
                                                     - MASS_ATTENUATION["bone"][k] * path["bone"])
        counts = rng.poisson(mean).astype(float) if rng is not None else mean
        signal += counts * SPECTRUM_KEV[k]
    scale = incident * np.sum(SPECTRUM_SHARE * SPECTRUM_KEV)  # the signal without the object
    if rng is not None and electronic > 0:
        signal += rng.normal(0.0, electronic * np.sum(SPECTRUM_SHARE * SPECTRUM_KEV), signal.shape)  # in mean photons
    floor = SPECTRUM_KEV[0] if rng is not None else 1e-300  # a ray that counts nothing reads one photon
    measured = -np.log(np.maximum(signal, floor) / scale)
    cm = np.linspace(0, 100, 2001)  # water paths, and the log each gives
    water_log = -np.log(np.exp(-np.outer(cm, MASS_ATTENUATION["water"])) @ weight)
    return np.interp(measured, water_log, cm * 10 * MU_WATER)


def simulate(clean_hu, pixel_mm, views, window, photons, rng, bowtie=0.0, tcm=False, electronic=0.0, pitch=1.0,
             cell=False, orbit="full", spectrum="mono"):
    """A fan-beam scan of clean_hu; bowtie: the extra attenuation (line integral) at the fan's edge,
    growing as (u / u_max)^2 (0: none); tcm: the views' photons modulated as exp(max p / 2), mean
    `photons`; electronic: the sigma of Gaussian counts added to the Poisson counts; pitch: the
    detector's bins, in pixels at the isocentre (2: a zoomed reconstruction); cell: each bin
    integrates over its width (project); orbit: one of ORBITS (fan_geometry); spectrum "120kvp":
    a polychromatic beam and an energy-integrating detector (polychromatic_scan), else one energy."""
    g = fan_geometry(clean_hu.shape[-1], pixel_mm, views, pitch=pitch, orbit=orbit)
    # one energy's line integrals: the scan itself, or (tcm) what modulates a polychromatic beam's photons
    p = project(np.clip(MU_WATER * (1 + clean_hu / 1000.0), 0, None), g, cell=cell) if spectrum == "mono" or tcm else None
    incident = 1.0  # photons per ray, without the object
    if photons is not None:
        umax = np.abs(g["u"]).max()
        incident = photons * np.exp(-bowtie * (g["u"] / umax) ** 2)[None, :]
        if tcm:
            per_view = np.exp(0.5 * p.max(axis=1))
            incident = incident * (per_view / per_view.mean())[:, None]
    if spectrum != "mono":
        p = polychromatic_scan(clean_hu, g, incident, rng if photons is not None else None, electronic, cell)
    elif photons is not None:
        counts = rng.poisson(incident * np.exp(-p)).astype(float)
        if electronic > 0:
            counts += rng.normal(0.0, electronic, counts.shape)
        p = -np.log(np.maximum(counts, 1) / incident)
    mu_rec = fbp(p, g, window)
    return (mu_rec / MU_WATER - 1) * 1000


def noise_seed(photons, bowtie, tcm=False, electronic=0.0):
    """The seed of a scan's noise: the same image for the same case, in every script."""
    return 7 + int(photons) + int(bowtie * 10) + 3 * tcm + int(electronic)


OBJECTS = ["abdomen 384", "abdomen 512", "Shepp-Logan 256", "Catphan slice", "Siemens slice", "CT1 slice"]


def scanned_object(name, data):
    """One of OBJECTS in HU and its pixel in mm: a phantom, or a real slice of `data`
    (../shared/data; its own noise, 5-11 HU, stays in the reference)."""
    from check_cases import real_scan
    from phantom_check import abdomen, shepp_logan
    phantoms = {"abdomen 384": (lambda: abdomen((384, 384), 1), 0.9), "abdomen 512": (lambda: abdomen((512, 512), 2), 0.7),
                "Shepp-Logan 256": (lambda: shepp_logan(256), 0.9)}
    if name in phantoms:
        make, px = phantoms[name]
        return make(), px
    real = {"Catphan slice": data / "dicom_catphan_philips_brilliance64" / "dicom_file01.dcm",
            "Siemens slice": data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless",
            "CT1 slice": data / "dicom_wg04_ct1_ge" / "CT1_UNC.dcm"}
    return real_scan(real[name])


def main():
    import ctdenoise as ctd
    from check_cases import recorded_cases
    from phantom_check import SETTINGS_2D, judge, quality
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phantom", choices=OBJECTS)
    parser.add_argument("--photons", type=float, nargs=2, default=(1e5, 2.5e4), metavar=("HIGH", "LOW"),
                        help="the incident photons per ray of the two doses (a whole adult body at 1 mm needs more "
                             "than the phantoms: at 1e5 its longest rays keep a few tens of photons and the image is streaks)")
    parser.add_argument("--data", default=str(root.parent / "shared" / "data"),
                        help="the data folder of the real slices (../shared/data)")
    parser.add_argument("--json", help="write every case here")
    parser.add_argument("--tcm", action="store_true",
                        help="tube current modulation (the scans with the bowtie only)")
    parser.add_argument("--electronic", type=float, default=0.0, metavar="S",
                        help="add Gaussian electronic noise of sigma S counts (the scans with the bowtie only)")
    parser.add_argument("--windows", nargs="+", default=["ramp", "hann"], choices=["ramp", "hann", "shepp-logan", "soft", "sharp"],
                        help="the reconstruction kernels: the ramp (Ram-Lak), Hann's or Shepp & Logan's window, or two the "
                             "product does not model: 'soft' (a Gaussian window, a half at half of Nyquist) and 'sharp' "
                             "(the ramp raised by up to 1.5 x at half of Nyquist)")
    parser.add_argument("--detector-pitch", type=float, default=1.0, metavar="P",
                        help="the detector's bins, in pixels at the isocentre: above 1, a zoomed (or finer-matrix) "
                             "reconstruction whose noise is smoother than a pixel (2: the pixel half the bins' pitch)")
    parser.add_argument("--cell-aperture", action="store_true",
                        help="each detector bin integrates over its width (four rays) instead of one ray at its "
                             "centre: with bins wider than a pixel, point samples alias a hard-edged phantom into "
                             "ringing that the noise-free reference keeps")
    parser.add_argument("--orbit", default="full", choices=ORBITS,
                        help="a full turn; a short scan (half a turn plus the fan, Parker's weights); or a full turn "
                             "with an offset detector (a half-fan overlapping the centre by 15 %%, Wang's weights)")
    parser.add_argument("--spectrum", default="mono", choices=["mono", "120kvp"],
                        help="one energy, or a polychromatic beam (a 120 kVp spectrum in five bins, water and cortical "
                             "bone) counted by an energy-integrating detector, its log corrected for water's beam "
                             "hardening, as XCIST- or CatSim-like simulators and scanners do")
    parser.add_argument("--sweeps", metavar="FILE",
                        help="sweep only the cases missing from this --json file of an earlier run (a list of cases, "
                             "or an object with them in 'cases' or 'cases_detail'): take their best and noisy input from it "
                             "(the scans are seeded: the same images)")
    args = parser.parse_args()
    recorded = recorded_cases(args.sweeps, lambda c: (c["phantom"], c["window"], c["bowtie"], c.get("tcm", False),
                                                      c.get("electronic", 0.0), c.get("detector_pitch", 1.0), c.get("cell_aperture", False),
                                                      c.get("orbit", "full"), c.get("spectrum", "mono"), c["photons"], c["setting"]))
    clean, px = scanned_object(args.phantom, pathlib.Path(args.data))
    settings = [s for s in SETTINGS_2D if s[0] in ("NLM search 5 patch 1", "bilateral sigma_s 1 vox")]
    cases = []
    bowties = [2.0] if args.tcm or args.electronic else [0.0, 2.0]
    scans = [(window, bowtie) for bowtie in bowties for window in args.windows]
    for window, bowtie in scans:
        reference = simulate(clean, px, 720, window, None, None, pitch=args.detector_pitch, cell=args.cell_aperture,
                             orbit=args.orbit, spectrum=args.spectrum)
        for photons in args.photons:
            rng = np.random.default_rng(noise_seed(photons, bowtie, args.tcm, args.electronic))
            noisy = simulate(clean, px, 720, window, photons, rng, bowtie, args.tcm, args.electronic,
                             args.detector_pitch, args.cell_aperture, args.orbit, args.spectrum).astype(np.float32)
            noisy_q = quality(noisy, reference)
            for setting, kind, kw in settings:
                f = ctd.nlm if kind == "nlm" else ctd.bilateral
                old = recorded.get((args.phantom, window, bowtie, args.tcm, args.electronic, args.detector_pitch, args.cell_aperture,
                                     args.orbit, args.spectrum, photons, setting))
                best = (old["best_value"], *old["best"]) if old else None
                auto, auto_q, best, within = judge(f, noisy, reference, kw, "cpu", noisy_q, best)
                case = dict(phantom=args.phantom, window=window, bowtie=bowtie, tcm=args.tcm, electronic=args.electronic,
                            detector_pitch=args.detector_pitch, cell_aperture=args.cell_aperture, orbit=args.orbit, spectrum=args.spectrum, photons=photons, setting=setting,
                            auto_value=auto["value"], auto=auto_q, best_value=best[0], best=best[1:], noisy=noisy_q,
                            within=within, noise_over_image=auto["noise_over_image"], scan_fit=auto["scan_fit"],
                            scan_source=auto["scan_source"])
                cases.append(case)
                print(f"{args.phantom} | fan {window} bowtie {bowtie}{f' pitch {args.detector_pitch:g}' if args.detector_pitch != 1 else ''}{' cell' if args.cell_aperture else ''}{f' {args.orbit} orbit' if args.orbit != 'full' else ''}{f' {args.spectrum}' if args.spectrum != 'mono' else ''}{' tcm' if args.tcm else ''}{f' electronic {args.electronic:g}' if args.electronic else ''} I0 {photons:.2g} | {setting}: auto {auto['value']:.1f} "
                      f"({auto_q[0]:.2f}/{auto_q[1]:.4f}) best {best[0]:.1f} ({best[1]:.2f}/{best[2]:.4f}) "
                      f"{'ok' if case['within'] else 'MISS'} | {auto['noise_over_image']}", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
