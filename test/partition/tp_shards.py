#!/usr/bin/env python3
"""Builds a fixture at tp_size 1, 2, 3 and 4 and checks the split plans.

For each TP = N plan: kiln_tp_shard_check reassembles every split weight from
the ranks' shards and compares it with the TP = 1 plan's bytes; the build's
--report prints the partition report, every attention and MLP layer must be
split (none kept whole), and `kiln inspect` shows tp_size, the build id and
one section per rank.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "e2e"))
from checks import Checks  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--builder", required=True, help="kiln with the compiler")
    ap.add_argument("--check", required=True, help="kiln_tp_shard_check")
    ap.add_argument("fixture")
    args = ap.parse_args()
    check = Checks()
    model = str(Path(args.fixture) / "model.onnx")
    with tempfile.TemporaryDirectory(prefix="kiln-tp-") as tmp:
        one = str(Path(tmp) / "tp1.plan")
        r = subprocess.run([args.builder, "build", model, "-o", one, "-q"],
                           capture_output=True, text=True)
        if not check(r.returncode == 0, f"tp 1 build ({r.stderr.strip()[-400:]})"):
            return check.exit_code()
        # 3 does not divide 4 heads, FFN 128 or vocab 1024: the uneven split.
        for tp in (2, 3, 4):
            plan = str(Path(tmp) / f"tp{tp}.plan")
            r = subprocess.run([args.builder, "build", model, "-o", plan, "--tp-size", str(tp),
                                "--report", "--require-partition"],
                               capture_output=True, text=True)
            if not check(r.returncode == 0, f"tp {tp} build ({r.stderr.strip()[-600:]})"):
                continue
            check("partition report" in r.stderr, f"tp {tp}: --report prints the partition report")
            s = subprocess.run([args.check, one, plan], capture_output=True, text=True)
            check(s.returncode == 0,
                  f"tp {tp}: shards reassemble to the tp 1 weights ({(s.stdout + s.stderr).strip()[-800:]})")
            i = subprocess.run([args.builder, "inspect", plan, "--json"],
                               capture_output=True, text=True)
            if check(i.returncode == 0, f"tp {tp}: kiln inspect ({i.stderr.strip()[-300:]})"):
                info = json.loads(i.stdout)
                tpi = info.get("tensor_parallel", {})
                check(tpi.get("tp_size") == tp, f"tp {tp}: inspect shows tp_size")
                check(len(tpi.get("build_id", "")) == 16, f"tp {tp}: inspect shows a build id")
                ranks = sorted(s["rank"] for s in info.get("sections", []))
                check(ranks == list(range(-1, tp)), f"tp {tp}: sections shared + one per rank ({ranks})")
                report = json.loads(tpi.get("partition_report", "{}"))
                check(not report.get("replicated"), f"tp {tp}: no layer kept whole")
                kinds = {layer["kind"] for layer in report.get("layers", [])}
                check({"attention", "embedding", "lm_head"} <= kinds,
                      f"tp {tp}: attention, embedding and lm_head split ({sorted(kinds)})")
                check(len(report.get("bytes", {}).get("per_rank", [])) == tp,
                      f"tp {tp}: the report has bytes per rank")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
