#!/usr/bin/env python3
"""Turns bench/e2e.sh's output into one JSON record and a markdown table, stage by stage.
    python3 bench/e2e_table.py RUNS.jsonl FLOOR.json --date D --gpu G --host H --commit C --json OUT.json > OUT.md"""
import argparse, json

p = argparse.ArgumentParser()
p.add_argument("runs")
p.add_argument("floor")
p.add_argument("--date", required=True)
p.add_argument("--gpu", required=True)
p.add_argument("--host", required=True)
p.add_argument("--commit", required=True)
p.add_argument("--json", required=True)
a = p.parse_args()
runs = [json.loads(line) for line in open(a.runs) if line.strip()]
floor = json.load(open(a.floor))
json.dump({"date": a.date, "gpu": a.gpu, "host": a.host, "commit": a.commit, "floor": floor, "runs": runs},
          open(a.json, "w"), indent=1)

# Stages grouped into the columns a reader can follow.
def group(stage):
    if stage.startswith("read"): return "read"
    if stage in ("noise model",) or stage.startswith("automatic"): return "auto"
    # Where the filter runs beside the copies (steps), its stages are the upload's and the
    # download's loops ("filter: upload, filtering beside it"): the kernel lies within them.
    if stage.startswith("filter: upload"): return "upload"
    if stage == "filter: kernel": return "kernel"
    if stage.startswith("filter: download"): return "download"
    if stage.startswith("filter"): return "filter host"
    if stage == "write: compress": return "compress"
    if stage.startswith("write"): return "write"
    return stage
columns = ["read", "auto", "upload", "kernel", "download", "filter host", "write", "compress", "report"]
print(f"# End to end, stage by stage ({a.date}, {a.gpu}, {a.host}, commit {a.commit})\n")
print("`ctdenoise nlm IN OUT --search-radius 4 --patch-radius 2 --device cuda --json r.json` (automatic h), page "
      "cache dropped before each run. Seconds; wall is the shell's.\n")
print("| case | dims | wall | " + " | ".join(columns) + " | unaccounted |")
print("|---|---|---|" + "---|" * len(columns) + "---|")
for r in runs:
    if r["exit"] != 0:
        print(f"| {r['case']} | | exit {r['exit']} |" + " |" * (len(columns) + 1))
        continue
    sums = dict.fromkeys(columns, 0.0)
    for s in r["stages_s"]:
        sums[group(s["stage"])] = sums.get(group(s["stage"]), 0.0) + s["seconds"]
    rest = r["wall_s"] - sum(sums.values())
    dims = "×".join(str(d) for d in r["dims"])
    print(f"| {r['case']} | {dims} | **{r['wall_s']:.2f}** | " + " | ".join(f"{sums[c]:.2f}" for c in columns) + f" | {rest:.2f} |")
print()
if any("beside" in s["stage"] for r in runs if r["exit"] == 0 for s in r["stages_s"]):
    print("Where the filter ran beside the copies (an empty kernel column), its kernel time lies within the upload "
          "and download columns.\n")
print("Floor, same run: disk {} MB/s read, {} MB/s write (dd, direct I/O); PCIe {} GB/s up, {} GB/s down (pinned, CuPy)."
      .format(floor.get("disk_read_MBps"), floor.get("disk_write_MBps"), floor.get("pcie_h2d_GBps"), floor.get("pcie_d2h_GBps")))
