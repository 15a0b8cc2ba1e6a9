#!/usr/bin/env python3
"""`kiln bench latency`: batch-1 numbers that add up, JSON, and refusals.

    bench_latency.py --kiln build/tools/kiln/kiln PLAN

Runs 3 timed runs of a 12-token prompt and 6 new tokens on the cpu and checks
the printed lines, the JSON (medians of the runs, the floor against
--peak-gbps), and that bad arguments and a missing plan exit 2 with a message
naming what is wrong.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("plan")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "lat.json"
        cmd = [args.kiln, "bench", "latency", args.plan, "--device", "cpu", "--prompt-len", "12",
               "--decode-tokens", "6", "--repeats", "3", "--peak-gbps", "100", "--json", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        check(r.returncode == 0, f"bench latency exit {r.returncode} {r.stderr[-300:]}")
        check("time to first token:" in r.stdout and "decode:" in r.stdout and
              "bandwidth floor:" in r.stdout, "prints TTFT, decode and the floor")
        doc = json.loads(out.read_text())
        runs = doc["runs"]
        check(len(runs) == 3, f"3 timed runs ({len(runs)})")
        check(doc["prompt_len"] == 12 and doc["decode_tokens"] == 6 and doc["device"] == "cpu",
              "the settings are recorded")
        check(abs(doc["ttft_ms_median"] - statistics.median(x["ttft_ms"] for x in runs)) < 1e-9,
              "TTFT is the median of the runs")
        check(abs(doc["decode_tok_s_median"] -
                  statistics.median(x["decode_tok_s"] for x in runs)) < 1e-9,
              "decode tok/s is the median of the runs")
        check(all(x["ttft_ms"] > 0 and x["decode_tok_s"] > 0 for x in runs), "positive times")
        floor = doc["weight_bytes"] / 100e9 * 1e3
        check(doc["weight_bytes"] > 0 and abs(doc["floor_ms_per_token"] - floor) < 1e-9 * floor + 1e-12,
              "floor = weight bytes / bandwidth")
        check(abs(doc["fraction_of_floor"] - floor / doc["tpot_ms_median"]) < 1e-9,
              "fraction = floor / ms per token")
        for bad, why in [(["--prompt-len", "0"], "--prompt-len"),
                         (["--decode-tokens", "1"], "--decode-tokens"),
                         (["--repeats", "x"], "--repeats"),
                         (["--peak-gbps", "-5"], "--peak-gbps"),
                         (["--no-such-flag"], "--no-such-flag"),
                         (["--device", "nosuch"], "nosuch")]:
            r = subprocess.run([args.kiln, "bench", "latency", args.plan, *bad],
                               capture_output=True, text=True)
            check(r.returncode == 2 and why in r.stderr,
                  f"{' '.join(bad)}: exit {r.returncode}, {r.stderr.strip()[:120]}")
        r = subprocess.run([args.kiln, "bench", "latency", str(Path(tmp) / "none.plan")],
                           capture_output=True, text=True)
        check(r.returncode == 2 and "none.plan" in r.stderr, f"missing plan: exit {r.returncode}")
        r = subprocess.run([args.kiln, "bench", "latency"], capture_output=True, text=True)
        check(r.returncode == 2 and "plan" in r.stderr, f"no plan given: exit {r.returncode}")
        r = subprocess.run([args.kiln, "bench", "latency", "--help"], capture_output=True, text=True)
        check(r.returncode == 0 and "--peak-gbps" in r.stdout, "--help")
    print(f"\nbench_latency: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
