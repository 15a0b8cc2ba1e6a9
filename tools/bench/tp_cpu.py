#!/usr/bin/env python3
"""TP=2 against TP=1 on the CPU: throughput and memory per rank (docs/benchmarks.md).

    tools/bench/tp_cpu.py --kiln KILN TP1.plan TP2.plan [--threads-tp1 2] [--threads-tp2 1]
                          [--num-prompts 32] [--input-len 64] [--output-len 64]
                          [--concurrency 1,16]

Runs `kiln bench offline` on the one-rank plan and, with --tp 2, on the
2-rank plan of the same model (kiln build --tp-size 2), each at the given
concurrency levels, and samples every process's resident memory while it
runs: the peak VmRSS per rank, and the resident pages of the plan file's
mapping (the weights a rank touched). Prints one table.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "test" / "e2e"))
from tp_run import children  # noqa: E402  (the launcher's ranks, by KILN_RANK)


def ranks_of(pid):
    """{rank: pid} of a launcher's children, or {0: pid} for one process."""
    return children(pid) or {0: pid}


def memory(pid):
    """(VmRSS MiB, plan-mapping resident MiB) of one process."""
    rss, plan, cur = 0.0, 0.0, ""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
        for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                parts = line.split()
                cur = parts[-1] if len(parts) >= 6 else ""
            elif line.startswith("Rss:") and cur.endswith(".plan"):
                plan += int(line.split()[1]) / 1024
    except OSError:
        pass
    return rss, plan


def run(kiln, plan, extra, args, tmp, name):
    out = Path(tmp) / f"{name}.json"
    cmd = [kiln, "bench", "offline", plan, "--num-prompts", str(args.num_prompts),
           "--input-len", str(args.input_len), "--output-len", str(args.output_len),
           "--concurrency", args.concurrency, "--json", str(out), *extra]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = {}

    def sample():
        while p.poll() is None:
            for r, pid in ranks_of(p.pid).items():
                rss, plan_mib = memory(pid)
                old = peak.get(r, (0.0, 0.0))
                peak[r] = (max(old[0], rss), max(old[1], plan_mib))
            time.sleep(0.1)

    t = threading.Thread(target=sample)
    t.start()
    err = p.communicate()[1]
    t.join()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {err[-1000:]}")
    return json.loads(out.read_text()), peak, " ".join(cmd)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("tp1")
    ap.add_argument("tp2")
    ap.add_argument("--threads-tp1", default="2")
    ap.add_argument("--threads-tp2", default="1")
    ap.add_argument("--num-prompts", type=int, default=32)
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--concurrency", default="1,16")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one, peak1, cmd1 = run(args.kiln, args.tp1, ["--threads", args.threads_tp1], args, tmp, "tp1")
        two, peak2, cmd2 = run(args.kiln, args.tp2, ["--tp", "2", "--threads", args.threads_tp2],
                               args, tmp, "tp2")
    print(f"tp1: {cmd1}\ntp2: {cmd2}\n")
    print("| concurrency | TP=1 tok/s | TP=2 tok/s | TP=2 / TP=1 |")
    print("| ---: | ---: | ---: | ---: |")
    for a, b in zip(one["results"], two["results"]):
        ta, tb = a["output_tokens_per_s"], b["output_tokens_per_s"]
        print(f"| {a['concurrency']} | {ta:.1f} | {tb:.1f} | {tb / ta:.2f} |")
    print("\n| run | rank | peak RSS MiB | plan pages resident MiB |")
    print("| --- | ---: | ---: | ---: |")
    for name, peak in (("TP=1", peak1), ("TP=2", peak2)):
        for r in sorted(peak):
            print(f"| {name} | {r} | {peak[r][0]:.0f} | {peak[r][1]:.1f} |")
    print(f"\nplan files: TP=1 {Path(args.tp1).stat().st_size / 2**20:.1f} MiB, "
          f"TP=2 {Path(args.tp2).stat().st_size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
