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
