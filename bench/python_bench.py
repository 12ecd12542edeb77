"""What the Python layer adds to a filter call (device machine): ctdenoise.nlm and .bilateral on
CuPy and torch CUDA arrays (the device API, zero-copy) and on numpy (the host API), against the
kernel time the C++ library reports, for an iterative loop's sizes. Median of --repeats calls
after a warm-up, each synchronised.

    python bench/python_bench.py --json out.json --markdown out.md
"""

import argparse
import json
import statistics
import time

import numpy as np

import ctdenoise

CASES = [  # name, shape (z, y, x), filter, parameters
    ("nlm 512^2 s4 p2", (512, 512), "nlm", dict(h=20.0, search_radius=4, patch_radius=2)),
    ("nlm 20x512x512 s3 p1", (20, 512, 512), "nlm", dict(h=20.0, search_radius=3, patch_radius=1)),
    ("bilateral 20x512x512 fused", (20, 512, 512), "bilateral", dict(sigma_range=40.0, sigma_spatial=1.0)),
    ("bilateral 20x512x512 compressive", (20, 512, 512), "bilateral",
     dict(sigma_range=40.0, sigma_spatial=1.0, algorithm="compressive")),
]


def timed(f, sync, repeats):
    f()
    sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        sync()
        samples.append(1e3 * (time.perf_counter() - start))
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    import cupy
    import torch

    rng = np.random.default_rng(1)
    rows = []
    for name, shape, which, params in CASES:
        image = (rng.normal(0, 30, shape) + 40).astype(np.float32)
        filt = getattr(ctdenoise, which)
        gpu = cupy.asarray(image)
        tensor = torch.from_numpy(image).cuda()
        out_cupy = cupy.empty_like(gpu)
        row = {"case": name}
        # The kernel alone, as the C++ host call measures it with CUDA events (after a warm-up).
        kernel = [filt(image, device="cuda", return_info=True, **params)[1]["details"]["kernel_ms"]
                  for _ in range(1 + args.repeats // 4)]
        row["kernel_ms"] = statistics.median(kernel[1:])
        row["cupy_ms"] = timed(lambda: filt(gpu, **params), cupy.cuda.get_current_stream().synchronize, args.repeats)
        row["cupy_out_ms"] = timed(lambda: filt(gpu, out=out_cupy, **params),
                                   cupy.cuda.get_current_stream().synchronize, args.repeats)
        row["torch_ms"] = timed(lambda: filt(tensor, **params), torch.cuda.synchronize, args.repeats)
        row["numpy_host_api_ms"] = timed(lambda: filt(image, device="cuda", **params), lambda: None, args.repeats)
        # What queueing costs the host: the call without waiting for the GPU.
        start = time.perf_counter()
        for _ in range(args.repeats):
            filt(gpu, out=out_cupy, **params)
        row["cupy_queue_ms"] = 1e3 * (time.perf_counter() - start) / args.repeats
        cupy.cuda.get_current_stream().synchronize()
        rows.append(row)
        print(json.dumps(row), flush=True)
    result = {"date": time.strftime("%Y-%m-%d"), "gpu": ctdenoise.cuda_device_name(), "repeats": args.repeats,
              "cases": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    if args.markdown:
        keys = ["kernel_ms", "cupy_ms", "cupy_out_ms", "torch_ms", "numpy_host_api_ms", "cupy_queue_ms"]
        lines = [f"Python layer on {result['gpu']}, {result['date']} (ms, median of {args.repeats}, synchronised)", "",
                 "| case | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
        lines += ["| " + r["case"] + " | " + " | ".join(f"{r[k]:.2f}" for k in keys) + " |" for r in rows]
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
