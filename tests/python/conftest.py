import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


def structured(rng, shape, noise=15.0):
    """A piecewise-smooth image (a disc or ball, a ramp) with Gaussian noise: never all zeros."""
    grids = np.meshgrid(*[np.linspace(-1, 1, n) for n in shape], indexing="ij")
    radius = np.sqrt(sum(g**2 for g in grids))
    clean = np.where(radius < 0.6, 120.0, -40.0) + 30.0 * grids[-1]
    return (clean + rng.normal(0, noise, shape)).astype(np.float32)
