"""scripts/phantom_check.py's noise and phantoms: the check's cases are what its docs say."""
import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("scipy")
pytest.importorskip("skimage")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import phantom_check  # noqa: E402


def correlation(n, axis):
    a = np.moveaxis(n, axis, 0)
    return float(np.mean(a[1:] * a[:-1]) / np.mean(a * a))


@pytest.mark.parametrize("kind, next_voxel", [("white", 0.0), ("white blurred 0.7 vox", 0.58), ("ramp", -0.18),
                                              ("Hann-apodised ramp", 0.57)])
def test_in_plane_textures_have_their_level_and_correlation(kind, next_voxel):
    n = phantom_check.noise(kind, (257, 301), 45.0, np.random.default_rng(4))
    assert n.std() == pytest.approx(45.0, rel=1e-6)
    assert correlation(n, 1) == pytest.approx(next_voxel, abs=0.03)
    assert correlation(n, 0) == pytest.approx(next_voxel, abs=0.03)


def test_blurred_noise_is_blurred_across_slices_in_3d():
    n = phantom_check.noise("white blurred 0.7 vox", (80, 64, 64), 30.0, np.random.default_rng(6))
    assert correlation(n, 0) == pytest.approx(0.58, abs=0.03)


def test_slice_smoothed_noise_is_correlated_two_thirds_with_the_next_slice():
    n = phantom_check.noise("white z-smoothed [1 2 1]", (40, 96, 96), 30.0, np.random.default_rng(5))
    assert correlation(n, 0) == pytest.approx(2 / 3, abs=0.03)
    assert correlation(n, 2) == pytest.approx(0.0, abs=0.03)


def test_phantoms_are_in_hu_and_repeatable():
    s = phantom_check.shepp_logan(128)
    assert s.min() == pytest.approx(-1000) and s.max() == pytest.approx(1000, abs=1)
    a = phantom_check.abdomen((21, 64, 80), 3)
    assert a.shape == (21, 64, 80) and np.isfinite(a).all()
    assert -1000 <= a.min() < -900 and 500 < a.max() <= 700
    np.testing.assert_array_equal(a, phantom_check.abdomen((21, 64, 80), 3))
    assert not np.array_equal(a, phantom_check.abdomen((21, 64, 80), 4))


def test_simulated_scan_reconstructs_hu_and_its_noise_follows_the_dose():
    n = 96
    y, x = np.mgrid[:n, :n] - (n - 1) / 2
    water = np.where(np.hypot(x, y) < 0.35 * n, 0.0, -1000.0)
    clean_scan = phantom_check.simulate_scan(water, 120, "ramp", None, 1.0, None)
    inside, outside = np.hypot(x, y) < 0.2 * n, np.hypot(x, y) > 0.45 * n
    assert abs(np.median(clean_scan[inside])) < 15
    assert abs(np.median(clean_scan[outside]) + 1000) < 30

    def noise(photons, seed):
        return phantom_check.simulate_scan(water, 120, "ramp", photons, 1.0, np.random.default_rng(seed)) - clean_scan

    high, low = noise(4e5, 1), noise(1e5, 2)
    assert 1.8 < low[inside].std() / high[inside].std() < 2.2  # a quarter of the photons: twice the noise
    assert low[inside].std() > 1.15 * low[outside].std()  # the rays through the water are the noisy ones
    np.testing.assert_array_equal(noise(1e5, 2), low)
