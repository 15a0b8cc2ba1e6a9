#!/usr/bin/env python3
"""`kiln run --prompts-file`: a JSONL batch streams and batches.

    run_batch.py --kiln build/tools/kiln/kiln PLAN

Checks, on a plan with the ragged interface:
  - streaming output has per-token events before each completion's final
    line, and the events' texts add up to its generated_text;
  - the requests shared steps (fewer steps than tokens generated);
  - every request's greedy tokens equal `kiln run --prompt-ids` alone;
  - --no-stream prints the final lines in input order;
  - a bad line fails the run with exit 2, naming the file and line.
"""
import argparse
import json
import re
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
    kiln, plan = args.kiln, args.plan
    prompts = [[5, 17, 99], [7] * 20, [300, 301, 302, 303, 304, 305, 306], [42], [8, 9, 10, 11]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "requests.jsonl"
        lines = [json.dumps({"prompt_ids": p, "max_new_tokens": 6 + i}) for i, p in enumerate(prompts)]
        lines.insert(2, "")  # blank lines are skipped
        lines.append(json.dumps({"prompt": "Once upon a time", "max_new_tokens": 5}))
        path.write_text("\n".join(lines) + "\n")
        base = [kiln, "run", plan, "--prompts-file", str(path), "--temperature", "0",
                "--ignore-eos"]
        r = subprocess.run(base, capture_output=True, text=True)
        check(r.returncode == 0, f"batch run exit {r.returncode} {r.stderr[-300:]}")
        out = [json.loads(x) for x in r.stdout.splitlines()]
        finals = {o["index"]: o for o in out if "generated_text" in o}
        check(sorted(finals) == list(range(len(prompts) + 1)), f"one final line per request: {sorted(finals)}")
        for i, f in finals.items():
            events = [o["text"] for o in out if "text" in o and o["index"] == i]
            check(out.index(f) > 0 and "".join(events) == f["generated_text"],
                  f"request {i}: {len(events)} streamed pieces add up to its text")
            want = 6 + i if i < len(prompts) else 5
            check(f["generated_length"] == want and f["finish_reason"] == "length",
                  f"request {i}: {f['generated_length']} tokens, finish {f['finish_reason']}")
        m = re.search(r"(\d+) requests, (\d+) steps", r.stderr)
        total = sum(f["generated_length"] for f in finals.values())
        check(m is not None and int(m[2]) < total,
              f"batched: {m[2] if m else '?'} steps for {total} tokens")
        for i, p in enumerate(prompts):
            ids = Path(tmp) / f"alone{i}.json"
            a = subprocess.run([kiln, "run", plan, "--prompt-ids", ",".join(map(str, p)),
                                "--max-new-tokens", str(6 + i), "--temperature", "0",
                                "--ignore-eos", "--no-stream", "--output-ids", str(ids)],
                               capture_output=True, text=True)
            check(a.returncode == 0 and json.loads(ids.read_text()) == finals[i]["tokens"],
                  f"request {i}: batch tokens equal the request alone")
        # An engine config file sets the engine; its concurrency shows in the step count.
        cfg = Path(tmp) / "engine.json"
        cfg.write_text(json.dumps({"max_seqs": 1, "prefix_caching": False, "kv_cache_mb": 4}))
        r1 = subprocess.run(base + ["--engine-config", str(cfg)], capture_output=True, text=True)
        m1 = re.search(r"(\d+) requests, (\d+) steps", r1.stderr)
        check(r1.returncode == 0 and m1 is not None and m is not None and int(m1[2]) > int(m[2]),
              f"--engine-config max_seqs 1: {m1[2] if m1 else '?'} steps, more than batched")
        cfg.write_text(json.dumps({"max_seq": 1}))
        r1 = subprocess.run(base + ["--engine-config", str(cfg)], capture_output=True, text=True)
        check(r1.returncode == 2 and 'unknown key "max_seq"' in r1.stderr,
              f"--engine-config with a bad key: exit {r1.returncode}, {r1.stderr.strip()}")
        r = subprocess.run(base + ["--no-stream"], capture_output=True, text=True)
        order = [json.loads(x)["index"] for x in r.stdout.splitlines()]
        check(r.returncode == 0 and order == list(range(len(prompts) + 1)),
              f"--no-stream: final lines in input order {order}")
        # More requests than the engine tracks: the rest wait and join as others finish.
        r2 = subprocess.run(base + ["--no-stream", "--max-tracked", "2", "--max-seqs", "2"],
                            capture_output=True, text=True)
        second = [json.loads(x) for x in r2.stdout.splitlines()]
        check(r2.returncode == 0 and [o["index"] for o in second] == list(range(len(prompts) + 1))
              and all(o["tokens"] == finals[o["index"]]["tokens"] for o in second),
              f"--max-tracked 2 with {len(prompts) + 1} requests: all finish, same tokens: "
              f"exit {r2.returncode} {r2.stderr.strip()[-300:]}")
        path.write_text(json.dumps({"prompt_ids": [1]}) + "\n" + '{"prompt_ids": [1], "temprature": 1}\n')
        r = subprocess.run(base, capture_output=True, text=True)
        check(r.returncode == 2 and f"{path}:2: unknown key \"temprature\"" in r.stderr
              and r.stdout == "", f"bad line: exit {r.returncode}, {r.stderr.strip()}")
    print(f"\nrun_batch: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
