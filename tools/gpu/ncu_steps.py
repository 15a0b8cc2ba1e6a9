#!/usr/bin/env python3
"""Per-kernel device times of one engine step, from Nsight Compute (docs/gpu.md).

usage: ncu_steps.py NCU_CSV [--step -1] [--step-ms MS] [--peak-gbps G]

NCU_CSV is what
  ncu --csv --print-units base --clock-control none --cache-control none \\
      --metrics gpu__time_duration.sum,dram__bytes.sum kiln run PLAN ...
prints: one row a kernel launch (graph kernel nodes included: ncu profiles a
replayed CUDA graph's kernels one by one). The launches are cut into engine
steps after each SampleKernel (the on-device sampler ends every step), and
the table shows step --step (default -1, the last complete one, a replayed
decode step when the run generated a few tokens): kernels grouped by name
(template arguments dropped) and grid (which tells the products apart), launches, microseconds, share, and the DRAM
bytes over the time against --peak-gbps.

The sum is the device's busy time for the step, each kernel alone on the GPU
(ncu serializes them). --step-ms, the step's measured time (1000 / decode
tok/s of kiln bench latency), gives the rest: launch gaps and host time.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import OrderedDict


def base_name(name: str) -> str:
    """'void kiln::kernels::cuda::(anon)::RmsRowsVec<bf16, 1, 2>(NormArgs)' -> 'RmsRowsVec'."""
    name = name.strip()
    if name.endswith(")"):                     # the parameter list
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    name = name.replace("(anonymous namespace)", "")
    depth, out = 0, []
    for ch in name:                            # template arguments, nested
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip()
    name = name.split()[-1] if name.split() else name
    return name.split("::")[-1] or name


def read_launches(path: str) -> list[dict]:
    """One dict a launch: name, us, bytes (None where not measured)."""
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own log lines are not CSV
    rows = csv.DictReader(lines)
    launches: "OrderedDict[str, dict]" = OrderedDict()
    for row in rows:
        key = row.get("ID")
        name = row.get("Kernel Name")
        metric = row.get("Metric Name")
        value = row.get("Metric Value", "").replace(",", "")
        if key is None or name is None or metric is None:
            raise SystemExit(f"ncu_steps.py: {path} is not ncu --csv output (no ID, "
                             "Kernel Name or Metric Name column)")
        entry = launches.setdefault(key, {"name": name, "grid": row.get("Grid Size", ""),
                                          "us": None, "bytes": None})
        try:
            v = float(value)
        except ValueError:
            continue
        if metric == "gpu__time_duration.sum":
            entry["us"] = v / 1e3  # base units: nanoseconds
        elif metric == "dram__bytes.sum":
            entry["bytes"] = v
    return [e for e in launches.values() if e["us"] is not None]


def split_steps(launches: list[dict]) -> list[list[dict]]:
    steps, cur = [], []
    for e in launches:
        cur.append(e)
        if base_name(e["name"]) == "SampleKernel":
            steps.append(cur)
            cur = []
    return steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--step", type=int, default=-1)
    ap.add_argument("--step-ms", type=float)
    ap.add_argument("--peak-gbps", type=float)
    a = ap.parse_args()
    launches = read_launches(a.csv)
    steps = split_steps(launches)
    if not steps:
        print(f"ncu_steps.py: no SampleKernel in {a.csv}: no complete step "
              f"({len(launches)} launches)", file=sys.stderr)
        return 1
    if not -len(steps) <= a.step < len(steps):
        print(f"ncu_steps.py: --step {a.step}, but there are {len(steps)} steps", file=sys.stderr)
        return 2
    step = steps[a.step]
    groups: "OrderedDict[str, dict]" = OrderedDict()
    for e in step:
        key = f"{base_name(e['name'])} {e['grid']}".strip()
        g = groups.setdefault(key, {"n": 0, "us": 0.0, "bytes": 0.0, "has_bytes": True})
        g["n"] += 1
        g["us"] += e["us"]
        if e["bytes"] is None:
            g["has_bytes"] = False
        else:
            g["bytes"] += e["bytes"]
    total = sum(g["us"] for g in groups.values())
    print(f"step {a.step % len(steps)} of {len(steps)}: {len(step)} kernels, "
          f"{total / 1e3:.3f} ms of device time")
    print("| kernel | launches | us | share | GB/s | of peak |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, g in sorted(groups.items(), key=lambda kv: -kv[1]["us"]):
        gbps = g["bytes"] / (g["us"] * 1e3) if g["has_bytes"] and g["us"] > 0 else None
        frac = f"{gbps / a.peak_gbps * 100:.0f}%" if gbps is not None and a.peak_gbps else ""
        print(f"| {name} | {g['n']} | {g['us']:.1f} | {g['us'] / total * 100:.1f}% | "
              f"{'' if gbps is None else f'{gbps:.0f}'} | {frac} |")
    if a.step_ms:
        gap = a.step_ms - total / 1e3
        print(f"measured step {a.step_ms:.3f} ms: kernels {total / 1e3:.3f} ms "
              f"({total / 1e3 / a.step_ms * 100:.1f}%), the rest {gap:.3f} ms "
              f"({gap / a.step_ms * 100:.1f}%: launch gaps between kernels and host time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
