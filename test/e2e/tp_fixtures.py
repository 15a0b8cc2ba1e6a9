#!/usr/bin/env python3
"""Real fixtures split by kiln-partition equal one rank (docs/tensor-parallel.md).

    tp_fixtures.py --kiln KILN --builder KILN_WITH_COMPILER FIXTURE_DIR [FIXTURE_DIR ...]

Each fixture's ONNX is built at tp_size 1, 2, 3 and 4 (--tp-size; above 1
with --require-partition, so every layer is split and none kept whole); each
plan runs `kiln run --tp N` (one process per rank, gloo) on the same prompt.
Checks, per fixture and rank count:
  - the 32 greedy tokens equal one rank's;
  - every step's logits are within 1e-4 of one rank's, relative to the
    largest logit magnitude;
  - kiln inspect reports the plan's tp_size.
With --batch-checks, also a batch of 8 requests through the engine at 2 and 3
ranks (--batch-counts): greedy with a 1 MiB KV cache, which preempts at one
rank and at 2 ranks (each rank holds half the KV heads, so twice the blocks),
and seeded sampling (temperature, top-p, top-k); each gives one rank's tokens.
4 ranks are left out of the batches by default: there the cache no longer
preempts, so they check nothing 2 and 3 ranks do not, and on a 2-core machine
they took a third of this test's time (docs/testing.md).
The attention shapes covered: q, k, v as one linear and a split (llama, qwen2,
mistral, demo; gpt2's parts are also read for their leading dims) or as three
slices of one linear (phi3). At 3 ranks every fixture's heads split unevenly
(demo's 8 query / 4 KV heads by whole KV groups: 4, 2, 2); llama-optimum has 2
KV heads, so at 4 ranks each KV head is replicated on two ranks. Zero-head
ranks are covered by test/lit/partition.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def generate(kiln, plan, n, tmp, name):
    ids, logits = Path(tmp) / f"{name}.json", Path(tmp) / f"{name}.npy"
    tp = ["--tp", str(n)] if n > 1 else []
    r = run([kiln, "run", str(plan), "--prompt-ids", "5,17,99,3,42,7", "--max-new-tokens", "32",
             "--temperature", "0", "--ignore-eos", "--no-stream", "--kv-cache-mb", "16",
             "--threads", "1", "--output-ids", str(ids), "--dump-logits", str(logits), *tp])
    if r.returncode != 0:
        print(r.stderr[-1500:])
        return None, None
    return json.loads(ids.read_text()), np.load(logits)


BATCH = "".join(json.dumps({"prompt_ids": [5, 17, i + 1] * 4, "max_new_tokens": 100}) + "\n"
                for i in range(8))
BATCH_CASES = {"preemption": ["--temperature", "0", "--kv-cache-mb", "1"],
               "seeded sampling": ["--temperature", "0.9", "--top-p", "0.95", "--top-k", "50",
                                   "--seed", "7", "--kv-cache-mb", "16"]}


def batch(kiln, plan, n, tmp, case):
    """The batch's tokens per request and the preemption count, or None."""
    reqs = Path(tmp) / "batch.jsonl"
    reqs.write_text(BATCH)
    tp = ["--tp", str(n)] if n > 1 else []
    r = run([kiln, "run", str(plan), "--prompts-file", str(reqs), "--ignore-eos", "--no-stream",
             "--threads", "1", *BATCH_CASES[case], *tp])
    m = re.search(r"(\d+) preemptions", r.stderr)
    if r.returncode != 0 or m is None:
        print(r.stderr[-1500:])
        return None, None
    return [json.loads(x)["tokens"] for x in r.stdout.splitlines() if x.strip()], int(m[1])


def sections(kiln, plan):
    r = run([kiln, "inspect", str(plan), "--json"])
    if r.returncode != 0:
        print(r.stderr[-500:])
        return None
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--builder", required=True)
    ap.add_argument("--counts", default="2,3,4")
    ap.add_argument("--batch-checks", action="store_true",
                    help="also batches with preemption and with seeded sampling")
    ap.add_argument("--batch-counts", default="2,3",
                    help="the rank counts the batch checks run at (default 2,3)")
    ap.add_argument("fixtures", nargs="+")
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    batch_counts = [int(c) for c in args.batch_counts.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        for fixture in map(Path, args.fixtures):
            name = fixture.name
            plans = {}
            for n in [1, *counts]:
                plan = Path(tmp) / f"{name}-tp{n}.plan"
                require = ["--require-partition"] if n > 1 else []
                r = run([args.builder, "build", str(fixture / "model.onnx"), "-o", str(plan),
                         "--quiet", "--tp-size", str(n), *require])
                check(r.returncode == 0, f"{name}: build at tp_size {n} {r.stderr[-400:]}")
                if r.returncode == 0:
                    plans[n] = plan
            if 1 not in plans:
                continue
            base, base_logits = generate(args.kiln, plans[1], 1, tmp, f"{name}-tp1")
            check(base is not None and len(base) == 32, f"{name}: one rank generates 32 tokens")
            if base is None:
                continue
            for n in counts:
                if n not in plans:
                    continue
                got, logits = generate(args.kiln, plans[n], n, tmp, f"{name}-tp{n}")
                check(got == base, f"{name}: --tp {n} gives one rank's 32 tokens")
                if logits is None:
                    continue
                same_shape = logits.shape == base_logits.shape
                rel = (float(np.max(np.abs(logits - base_logits)) / np.max(np.abs(base_logits)))
                       if same_shape else float("inf"))
                check(rel <= 1e-4, f"{name}: --tp {n} logits {logits.shape} within 1e-4 "
                      f"relative: {rel:.2e}")
                info = sections(args.kiln, plans[n])
                text = json.dumps(info) if info else ""
                check(info is not None and f'"tp_size": {n}' in text,
                      f"{name}: kiln inspect shows tp_size {n}")
            if not args.batch_checks:
                continue
            for case in BATCH_CASES:
                one, pre1 = batch(args.kiln, plans[1], 1, tmp, case)
                check(one is not None and len(one) == 8, f"{name}: {case}: one rank, 8 requests")
                if case == "preemption":
                    check(pre1 is not None and pre1 > 0, f"{name}: {case}: one rank preempts {pre1}")
                for n in batch_counts:
                    if n not in plans:
                        continue
                    got, pre = batch(args.kiln, plans[n], n, tmp, case)
                    check(one is not None and got == one,
                          f"{name}: {case}: --tp {n} gives one rank's tokens ({pre} preemptions)")
                    if case == "preemption" and n == 2:
                        check(pre is not None and pre > 0, f"{name}: {case}: --tp 2 preempts {pre}")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
