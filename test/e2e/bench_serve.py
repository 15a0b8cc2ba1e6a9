#!/usr/bin/env python3
"""`kiln bench serve` against a real `kiln serve` on the demo plan.

    bench_serve.py --kiln KILN PLAN

Checks:
  - --concurrency 4: every request succeeds with the asked prompt and output
    token counts; TTFT < E2E per request; p50 <= p99; goodput <= throughput;
    the JSON and the printed table agree on the counts;
  - --rate 20 (Poisson, seeded): every request succeeds, and the sends are
    spread over the arrival times, not all at once;
  - a wrong key: every request fails as HTTP 401, counted, exit 0;
  - a server that admits one request at a time: the 503s are counted as
    failures and left out of the latencies;
  - no --url, both --rate and --concurrency, and an unreachable server exit 2
    with a message.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from serve import Server, check, failures  # noqa: E402


def bench(kiln, port, tmp, *flags, key_file=None):
    out = Path(tmp) / "bench.json"
    if out.exists():
        out.unlink()
    cmd = [kiln, "bench", "serve", "--url", f"http://127.0.0.1:{port}", "--input-len", "32",
           "--output-len", "16", "--json", str(out), *flags]
    if key_file:
        cmd += ["--api-key-file", str(key_file)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    doc = json.loads(out.read_text()) if out.exists() else None
    return r, doc


def main():
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("plan")
    args = ap.parse_args()
    kiln = args.kiln
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([kiln, "keys", "new", "bench"], capture_output=True, text=True)
        key, line = r.stdout.splitlines()
        keys = Path(tmp) / "keys.jsonl"
        keys.write_text(line + "\n")
        key_file = Path(tmp) / "bench.key"
        key_file.write_text(key + "\n")
        wrong = Path(tmp) / "wrong.key"
        wrong.write_text("kiln-not-a-key\n")
        s = Server(kiln, args.plan, "--api-keys", str(keys), "--access-log", "false")
        try:
            r, doc = bench(kiln, s.port, tmp, "--concurrency", "4", "--num-prompts", "16",
                           key_file=key_file)
            check(r.returncode == 0 and doc is not None, f"--concurrency 4: exit {r.returncode} "
                  f"{r.stderr.strip()[-300:]}")
            if doc:
                reqs = doc["requests"]
                check(doc["succeeded"] == 16 and not doc["failed"],
                      f"16 of 16 succeed: {doc['succeeded']} {doc['failed']}")
                check(all(q["prompt_tokens"] == 32 and q["output_tokens"] == 16 for q in reqs),
                      "each request: 32 prompt tokens, 16 output tokens")
                check(all(0 < q["ttft_s"] < q["e2e_s"] for q in reqs), "TTFT < E2E for each")
                lat = doc["latency"]
                check(all(0 < lat[k]["p50"] <= lat[k]["p99"] for k in lat), f"p50 <= p99: {lat}")
                check(0 <= doc["goodput"] <= doc["request_throughput"] and doc["met_sla"] <= 16,
                      f"goodput {doc['goodput']:.2f} <= throughput {doc['request_throughput']:.2f}")
                check(f"{doc['succeeded']} of 16" in r.stdout, "the table prints the count")
            r, doc = bench(kiln, s.port, tmp, "--rate", "20", "--num-prompts", "20", "--seed", "3",
                           key_file=key_file)
            starts = sorted(q["start_s"] for q in doc["requests"]) if doc else []
            check(r.returncode == 0 and doc and doc["succeeded"] == 20,
                  f"--rate 20: {doc and doc['succeeded']} of 20 {r.stderr.strip()[-300:]}")
            check(len(starts) == 20 and starts[-1] - starts[0] > 0.3,
                  f"Poisson arrivals spread the sends: {starts[:1]} .. {starts[-1:]}")
            r, doc = bench(kiln, s.port, tmp, "--concurrency", "2", "--num-prompts", "4",
                           key_file=wrong)
            check(r.returncode == 0 and doc and doc["succeeded"] == 0
                  and doc["failed"] == {"HTTP 401": 4}, f"a wrong key: {doc and doc['failed']}")
        finally:
            check(s.stop() == 0, "server exits 0")
        one = Server(kiln, args.plan, "--allow-no-auth", "true", "--access-log", "false",
                     "--max-queue", "1")
        try:
            r, doc = bench(kiln, one.port, tmp, "--concurrency", "4", "--num-prompts", "24")
            ok = doc is not None and doc["succeeded"] + sum(doc["failed"].values()) == 24
            check(r.returncode == 0 and ok and doc["failed"].get("HTTP 503", 0) > 0
                  and doc["succeeded"] > 0,
                  f"max-queue 1 at concurrency 4: {doc and doc['succeeded']} ok, "
                  f"{doc and doc['failed']}")
        finally:
            check(one.stop() == 0, "second server exits 0")
        for flags, want in ((["--concurrency", "1"], "--url is required"),
                            (["--url", "http://127.0.0.1:1", "--rate", "1", "--concurrency", "1"],
                             "exactly one of --rate and --concurrency"),
                            (["--url", "http://127.0.0.1:1", "--concurrency", "1"],
                             "cannot reach")):
            r = subprocess.run([kiln, "bench", "serve", *flags], capture_output=True, text=True)
            check(r.returncode == 2 and want in r.stderr, f"{flags}: exit {r.returncode}, "
                  f"{r.stderr.strip()[-200:]}")
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
