#!/usr/bin/env python3
"""Resident memory per rank of `kiln run --tp N` (docs/tp-runtime.md).

    tools/tp_rss.py KILN toy KILN_TP_TOY VOCAB
    tools/tp_rss.py KILN plans PLAN_TP1 PLAN_TPN [PLAN_TPM ...] [--wait S]

`toy` writes the toy decoder (test/support/tp_toy.cpp) for 1, 2 and 4 ranks;
`plans` takes plans of a real model at several rank counts (e.g. from kiln
reshard). Each runs a long greedy generation, and a few seconds in (after
the load and the first steps) every rank's resident pages of the plan file's
mapping and its whole RSS are read from /proc/PID/smaps and status. Prints
JSON: per rank count, the plan's weight bytes and each rank's resident MiB.
"""
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def plan_rss_kib(pid):
    cur, total = "", 0
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split()
            cur = parts[-1] if len(parts) >= 6 else ""
        elif line.startswith("Rss:") and cur.endswith(".plan"):
            total += int(line.split()[1])
    return total


def vm_rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def tp_size(kiln, plan):
    r = subprocess.run([kiln, "inspect", plan, "--json"], capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout).get("tensor_parallel", {}).get("tp_size", 1)


def measure(kiln, plan, n, wait, kv_mb=16):
    cmd = [kiln, "run", plan, "--prompt-ids", "5,17", "--max-new-tokens", "100000",
           "--temperature", "0", "--ignore-eos", "--kv-cache-mb", str(kv_mb)]
    p = subprocess.Popen(cmd + (["--tp", str(n)] if n > 1 else []),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(wait)
    pids = [p.pid] if n == 1 else [
        int(k) for k in Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()]
    row = {"plan_mib": Path(plan).stat().st_size >> 20,
           "rank_plan_rss_mib": [plan_rss_kib(pid) >> 10 for pid in pids],
           "rank_rss_mib": [vm_rss_kib(pid) >> 10 for pid in pids]}
    p.kill()
    p.wait()
    return row


def main():
    kiln, mode = sys.argv[1], sys.argv[2]
    out = {}
    if mode == "toy":
        toy, vocab = sys.argv[3], sys.argv[4]
        with tempfile.TemporaryDirectory() as tmp:
            for n in (1, 2, 4):
                plan = str(Path(tmp) / f"toy{n}.plan")
                subprocess.run([toy, str(n), vocab, plan], check=True)
                out[n] = measure(kiln, plan, n, 1.0 if n == 1 else 4.0)
    elif mode == "plans":
        args, wait = sys.argv[3:], 20.0
        if "--wait" in args:
            i = args.index("--wait")
            wait = float(args[i + 1])
            del args[i:i + 2]
        for plan in args:
            n = tp_size(kiln, plan)
            # A real model's whole context must fit its KV cache.
            out[n] = measure(kiln, plan, n, wait, kv_mb=1024)
    else:
        sys.exit("usage: tp_rss.py KILN toy KILN_TP_TOY VOCAB | KILN plans PLAN... [--wait S]")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
