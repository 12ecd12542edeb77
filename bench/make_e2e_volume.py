"""The end-to-end benchmarks' volume: a synthetic body (an ellipse of soft tissue with smooth
structure, air around it) with white noise of sigma 25 HU, int16, x fastest.
    python3 bench/make_e2e_volume.py NX NY NZ PATH"""
import sys

import numpy as np

nx, ny, nz, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = np.random.default_rng(1)
y, x = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
body = ((x - nx / 2) ** 2 / (0.39 * nx) ** 2 + (y - ny / 2) ** 2 / (0.29 * ny) ** 2) < 1
plane = np.where(body, 40 + 30 * np.sin(x / 17.0) * np.cos(y / 23.0), -1000).astype(np.float32)
with open(path, "wb") as f:
    for z in range(nz):
        (plane + rng.normal(0, 25, plane.shape).astype(np.float32)).astype(np.int16).tofile(f)
