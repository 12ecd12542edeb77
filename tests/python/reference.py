"""Naive double-precision references of the filters, written from docs/filters.md alone (no code
shared with the library): every voxel, every window offset, the mirror border by its formula."""

import itertools

import numpy as np


def mirror(i, n):
    """... c b | a b c d | c b ...: reflection without repeating the edge; size 1 maps to 0."""
    i = np.asarray(i)
    if n == 1:
        return np.zeros_like(i)
    period = 2 * (n - 1)
    m = np.mod(i, period)
    return np.where(m < n, m, period - m)


def _padded(u, pad):
    index = [mirror(np.arange(-pad, n + pad), n) for n in u.shape]
    return u[np.ix_(*index)]


def nlm(image, h, search_radius, patch_radius, noise_sigma=0.0):
    """Uniform patch kernel, L2 distance, centre weight 1; axes in the array's order."""
    u = np.asarray(image, dtype=np.float64)
    shape, ndim, r = u.shape, u.ndim, patch_radius
    up = _padded(u, r)
    numerator = np.zeros(shape)
    denominator = np.zeros(shape)
    patch = list(itertools.product(range(-r, r + 1), repeat=ndim))
    for d in itertools.product(range(-search_radius, search_radius + 1), repeat=ndim):
        # p with p + d inside the image
        lo = [max(0, -d[a]) for a in range(ndim)]
        hi = [min(shape[a], shape[a] - d[a]) for a in range(ndim)]
        if any(l >= h_ for l, h_ in zip(lo, hi)):
            continue
        d2 = 0.0
        for k in patch:
            at_p = tuple(slice(lo[a] + k[a] + r, hi[a] + k[a] + r) for a in range(ndim))
            at_q = tuple(slice(lo[a] + d[a] + k[a] + r, hi[a] + d[a] + k[a] + r) for a in range(ndim))
            d2 = d2 + (up[at_p] - up[at_q]) ** 2
        d2 = d2 / len(patch)
        w = np.exp(-np.maximum(d2 - 2 * noise_sigma**2, 0) / h**2)
        region = tuple(slice(lo[a], hi[a]) for a in range(ndim))
        shifted = tuple(slice(lo[a] + d[a], hi[a] + d[a]) for a in range(ndim))
        numerator[region] += w * u[shifted]
        denominator[region] += w
    return numerator / denominator


def bilateral(image, sigma_spatial, sigma_range, radius, spacing=None):
    """radius and spacing per array axis; sigma_spatial in the units of spacing (voxels without)."""
    u = np.asarray(image, dtype=np.float64)
    ndim = u.ndim
    spacing = (1.0,) * ndim if spacing is None else spacing
    pad = max(radius)
    up = _padded(u, pad)
    numerator = np.zeros(u.shape)
    denominator = np.zeros(u.shape)
    for o in itertools.product(*[range(-r, r + 1) for r in radius]):
        gs = np.exp(-sum((o[a] * spacing[a]) ** 2 for a in range(ndim)) / (2 * sigma_spatial**2))
        q = up[tuple(slice(pad + o[a], pad + o[a] + u.shape[a]) for a in range(ndim))]
        w = gs * np.exp(-((u - q) ** 2) / (2 * sigma_range**2))
        numerator += w * q
        denominator += w
    return numerator / denominator
