#!/usr/bin/env python3
"""Resident plan pages per rank of `kiln run --tp N` (docs/tp-runtime.md).

    tools/tp_rss.py KILN KILN_TP_TOY VOCAB

Writes the toy decoder (test/support/tp_toy.cpp) for 1, 2 and 4 ranks,
starts a long greedy run of each, and reads every rank's resident pages of
the plan file's mapping from /proc/PID/smaps a few seconds in.
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


def main():
    kiln, toy, vocab = sys.argv[1], sys.argv[2], sys.argv[3]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 2, 4):
            plan = str(Path(tmp) / f"toy{n}.plan")
            subprocess.run([toy, str(n), vocab, plan], check=True)
            cmd = [kiln, "run", plan, "--prompt-ids", "5,17", "--max-new-tokens", "100000",
                   "--temperature", "0", "--ignore-eos", "--kv-cache-mb", "16"]
            p = subprocess.Popen(cmd + (["--tp", str(n)] if n > 1 else []),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0 if n == 1 else 4.0)
            pids = [p.pid] if n == 1 else [
                int(k) for k in Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()]
            out[n] = {"plan_mib": Path(plan).stat().st_size >> 20,
                      "rank_plan_rss_mib": [plan_rss_kib(pid) >> 10 for pid in pids]}
            p.kill()
            p.wait()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
