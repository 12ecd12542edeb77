"""The automatic parameters of a CuPy array (device machine): read where the array is (the noise
model's and the risk sample's reads on the GPU; what ctdenoise.nlm does now) against the same
choice from a host copy (the array downloaded, then the host's reads: what it did before). Both
in one process, alternating; median of --repeats after a warm-up. The values must be equal.

    python bench/python_auto_bench.py --json out.json --markdown out.md
"""

import argparse
import json
import statistics
import time

import cupy as cp
import numpy as np

import ctdenoise
from ctdenoise import _core

SHAPES = [(20, 512, 512), (548, 512, 512)]  # (z, y, x)


def body(shape, seed=1):
    """The end-to-end benchmarks' body (bench/make_e2e_volume.py) as float32, on the GPU."""
    nz, ny, nx = shape
    rng = np.random.default_rng(seed)
    y, x = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    inside = ((x - nx / 2) ** 2 / (0.39 * nx) ** 2 + (y - ny / 2) ** 2 / (0.29 * ny) ** 2) < 1
    plane = np.where(inside, 40 + 30 * np.sin(x / 17.0) * np.cos(y / 23.0), -1000).astype(np.float32)
    host = plane[None] + rng.normal(0, 25, shape).astype(np.float32)
    return cp.asarray(np.round(host))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    a = parser.parse_args()
    params = _core.NlmParams()
    params.search_radius, params.patch_radius, params.h = 4, 2, 1.0
    rows = []
    for shape in SHAPES:
        image = body(shape)
        dims = (shape[2], shape[1], shape[0])
        stream = cp.cuda.get_current_stream().ptr

        def on_gpu():
            model = _core.estimate_noise_model_cuda(image.data.ptr, dims, stream, 0)
            return _core.auto_nlm_h_cuda(image.data.ptr, dims, params, model, 0, 1.0, stream, 0)

        def from_host():
            host = cp.asnumpy(image).reshape(-1)
            model = _core.estimate_noise_model(host, dims)
            return _core.auto_nlm_h(host, dims, params, model, "cuda", 0, 1.0)

        times = {"gpu": [], "host": []}
        values = {}
        for i in range(a.repeats + 1):
            for name, f in (("gpu", on_gpu), ("host", from_host)):
                cp.cuda.runtime.deviceSynchronize()
                start = time.perf_counter()
                values[name] = f()["value"]
                if i > 0:
                    times[name].append(time.perf_counter() - start)
        row = {"shape_zyx": list(shape), "h_gpu_reads": values["gpu"], "h_host_reads": values["host"],
               "same_h": values["gpu"] == values["host"],
               "gpu_reads_s": statistics.median(times["gpu"]), "host_copy_s": statistics.median(times["host"]),
               "gpu_reads_all_s": times["gpu"], "host_copy_all_s": times["host"]}
        rows.append(row)
        print(json.dumps(row))
        del image
        cp.get_default_memory_pool().free_all_blocks()
    record = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "ctdenoise": ctdenoise.__version__,
              "nlm": "search radius 4, patch radius 2", "rows": rows}
    if a.json:
        json.dump(record, open(a.json, "w"), indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(f"Automatic h of a CuPy array on {record['gpu']} (NLM search 4 patch 2; noise model and "
                    "h; median of the runs, seconds)\n\n")
            f.write("| array (z, y, x) | read on the GPU | downloaded, read on the host | same h |\n|---|---|---|---|\n")
            for r in rows:
                f.write(f"| {tuple(r['shape_zyx'])} | {r['gpu_reads_s']:.3f} | {r['host_copy_s']:.3f} | "
                        f"{'yes' if r['same_h'] else 'NO'} ({r['h_gpu_reads']:.4f}) |\n")


if __name__ == "__main__":
    main()
