#!/usr/bin/env python3
"""CPU timings of two ctdenoise builds side by side: each case run with the two binaries in turn,
`--runs` times, on the CPU. Records the filter stage and the automatic value's time (from the JSON
report), the whole command (by the clock here), the value chosen and whether the outputs are
identical; writes JSON lines and a markdown table of medians.

    python3 bench/cpu_ab.py --before OLD/ctdenoise --after build/ctdenoise --data ../shared/data \
        --runs 3 --out bench/results/DATE-cpu-nlm-boxes
    python3 bench/cpu_ab.py --render bench/results/DATE-cpu-nlm-boxes.jsonl --out bench/results/DATE-cpu-nlm-boxes
"""

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def synthetic_n1(folder: Path) -> Path:
    """BENCH N1's input: 720 x 480, an ellipse of tissue (40 HU) in air, white noise of 25 HU."""
    rng = np.random.default_rng(1)
    y, x = np.mgrid[0:480, 0:720]
    image = np.where(((x - 360) / 300) ** 2 + ((y - 240) / 200) ** 2 < 1, 40.0, -1000.0)
    path = folder / "n1.raw"
    (image + rng.normal(0, 25, image.shape)).astype(np.float32).tofile(path)
    return path


def cases(data: Path, folder: Path):
    demo = Path(__file__).resolve().parent.parent / "data" / "example_ct.nii.gz"
    siemens = data / "dicom_series_siemens_biograph_mct_20slices" / "original_jpeg2000_lossless"
    catphan = data / "dicom_catphan_philips_brilliance64" / "dicom_file01.dcm"
    ct1 = data / "dicom_wg04_ct1_ge" / "CT1_RLE.dcm"
    n1 = synthetic_n1(folder)
    raw = ["--raw-dims", "720,480,1", "--raw-type", "float32"]
    return [
        ("NLM 2D 720 x 480 (N1), search 21^2, patch 9^2, h 30", [str(n1), *raw, "--search-radius", "10", "--patch-radius", "4", "--h", "30"]),
        ("NLM 3D demo volume, search 7^3, patch 3^3, h 22.5", [str(demo), "--search-radius", "3", "--h", "22.5"]),
        ("NLM 3D demo volume, search 11^3, patch 3^3, h 22.5", [str(demo), "--h", "22.5"]),
        ("NLM 3D demo volume, search 7^3, automatic h", [str(demo), "--search-radius", "3"]),
        ("NLM 3D Siemens series 512 x 512 x 20, the CLI's defaults (search 11^3, automatic h)", [str(siemens)]),
        ("NLM 3D Siemens series, search 7^3, automatic h", [str(siemens), "--search-radius", "3"]),
        ("NLM 2D Catphan slice 512^2, automatic h (scan-like noise)", [str(catphan)]),
        ("NLM 2D CT1 slice 512^2, automatic h", [str(ct1)]),
    ]


def run(binary: str, args, folder: Path, threads: int):
    out, report = folder / "out.nrrd", folder / "report.json"
    command = [binary, "nlm", *args[:1], str(out), *args[1:], "--device", "cpu", "--threads", str(threads),
               "--overwrite", "--float", "-q", "--json", str(report)]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    whole = time.perf_counter() - start
    r = json.loads(report.read_text())
    auto = r["parameters"].get("h_auto") or {}
    return {"whole_s": whole, "filter_s": r["timings_s"]["filter"], "auto_s": auto.get("seconds"),
            "h": r["parameters"].get("h"), "output_sha256": hashlib.sha256(out.read_bytes()).hexdigest()}


def render(lines) -> str:
    """The markdown table of medians, a row per case, from the JSON lines."""
    names = list(dict.fromkeys(l["case"] for l in lines))
    pair = lambda before, after: "" if before is None else f"{before:.2f} s → **{after:.2f} s**"
    table = ["| case | runs | filter before → after | automatic h before → after | whole command before → after | h | outputs |",
             "|---|---|---|---|---|---|---|"]
    for name in names:
        seen = {w: [l for l in lines if l["case"] == name and l["build"] == w] for w in ("before", "after")}
        med = {w: {k: None if seen[w][0][k] is None else statistics.median(r[k] for r in seen[w])
                   for k in ("whole_s", "filter_s", "auto_s")} for w in seen}
        h0, h1 = seen["before"][0]["h"], seen["after"][0]["h"]
        same = len({r["output_sha256"] for r in seen["before"] + seen["after"]}) == 1
        table.append(f"| {name} | {len(seen['before'])} + {len(seen['after'])} | "
                     f"{pair(med['before']['filter_s'], med['after']['filter_s'])} | "
                     f"{pair(med['before']['auto_s'], med['after']['auto_s'])} | "
                     f"{pair(med['before']['whole_s'], med['after']['whole_s'])} | "
                     f"{h0:.6g}{'' if h0 == h1 else f' → {h1:.6g}'} | {'identical' if same else 'differ'} |")
    return "\n".join(table) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before")
    parser.add_argument("--after")
    parser.add_argument("--data", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", help="run the cases whose name holds this text")
    parser.add_argument("--render", type=Path, help="only write the table of these JSON lines (at --out)")
    parser.add_argument("--out", required=True, type=Path, help="path stem for .jsonl and .md")
    parser.add_argument("--title", default="", help="text above the table: the date, the machine, the builds")
    a = parser.parse_args()
    if a.render:
        lines = [json.loads(l) for l in a.render.read_text().splitlines() if l.strip()]
    else:
        if not (a.before and a.after and a.data):
            parser.error("--before, --after and --data are needed unless --render")
        lines = []
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            for name, args in cases(a.data, folder):
                if a.only and a.only not in name:
                    continue
                for _ in range(a.runs):
                    for which in ("before", "after"):
                        result = run(getattr(a, which), args, folder, a.threads)
                        lines.append({"case": name, "build": which, **result})
                        print(name, which, {k: v for k, v in result.items() if k != "output_sha256"}, flush=True)
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.with_suffix(".jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
    table = render(lines)
    a.out.with_suffix(".md").write_text((a.title.strip() + "\n\n" if a.title else "") + table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
