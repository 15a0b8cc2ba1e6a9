#!/usr/bin/env python3
"""TP=1 through the NCCL path on a GPU (docs/tp-runtime.md).

    tp_nccl.py --kiln KILN --toy KILN_TP_TOY [--device cuda]

kiln_tp_toy writes a tensor-parallel plan of one rank whose program has
both collectives (all_gather, all_reduce), and the same toy without tensor
parallelism. `kiln run --tp 1 --comm nccl` runs the first with an NCCL
communicator of one rank (its kernels call NCCL on the backend's stream);
its 32 greedy tokens and logits must equal the plain plan's on the same
device and on the cpu. Exit 77 (skip) without a GPU or without NCCL.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--toy", required=True)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        plain, tp1 = str(Path(tmp) / "plain.plan"), str(Path(tmp) / "tp1.plan")
        subprocess.run([args.toy, "1", "1000", plain], check=True)
        subprocess.run([args.toy, "1", "1000", tp1, "--tp-plan"], check=True)

        def tokens(plan, device, extra):
            out = Path(tmp) / "ids.json"
            r = subprocess.run([args.kiln, "run", plan, "--device", device, "--prompt-ids",
                                "5,17,99,3", "--max-new-tokens", "32", "--temperature", "0",
                                "--ignore-eos", "--no-stream", "--kv-cache-mb", "16",
                                "--output-ids", str(out)] + extra, capture_output=True, text=True)
            return (json.loads(out.read_text()) if r.returncode == 0 else None), r

        cpu, r = tokens(plain, "cpu", [])
        if cpu is None:
            print(r.stderr)
            return 1
        dev, r = tokens(plain, args.device, [])
        if dev is None and ("no CUDA device" in r.stderr or "unknown backend" in r.stderr):
            print("skip: " + r.stderr.strip()[-200:])
            return 77
        nccl, r = tokens(tp1, args.device, ["--tp", "1", "--comm", "nccl"])
        if nccl is None and "needs NCCL" in r.stderr:
            print("skip: " + r.stderr.strip()[-200:])
            return 77
        for name, got in (("device", dev), ("--tp 1 --comm nccl", nccl)):
            ok = got == cpu
            print(("ok   " if ok else "FAIL ") + f"{name}: {got}")
            if not ok:
                failures.append(name)
        if nccl is None:
            print(r.stderr[-2000:])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
