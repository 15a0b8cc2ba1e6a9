#!/usr/bin/env python3
"""CPU benchmark: prompt and decode tokens/s of kiln beside ONNX Runtime on the
same ONNX file, in the same run on the same machine.

    .venv/bin/python tools/bench_cpu.py --kiln build/release/tools/kiln/kiln \
        test/fixtures/demo test/fixtures/llama-optimum

Each model folder holds model.onnx (an Optimum export with past key/values).
kiln builds it twice, injected and with --no-inject, and runs each plan with
`kiln run --prompt-ids ... --ignore-eos`;
ONNX Runtime runs the same prefill and greedy decode loop with its own KV
cache. Reports the median of --repeats runs. Needs onnxruntime (PyPI).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

LINE = re.compile(r"prefill: \d+ tokens in [\d.]+ s \(([\d.]+) tok/s\); "
                  r"decode: \d+ tokens in [\d.]+ s \(([\d.]+) tok/s\)")


def kiln_once(kiln, plan, ids, new_tokens, threads):
    cmd = [kiln, "run", str(plan), "--threads", str(threads), "--prompt-ids", ",".join(map(str, ids)),
           "--max-new-tokens", str(new_tokens), "--temperature", "0", "--ignore-eos",
           "--no-stream"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"kiln run failed: {r.stderr}")
    m = LINE.search(r.stderr)
    if not m:
        raise RuntimeError(f"no timing line in kiln output: {r.stderr}")
    return float(m[1]), float(m[2])


def ort_session(onnx_path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])


def ort_once(sess, ids, new_tokens):
    inputs = {i.name: i for i in sess.get_inputs()}
    outputs = [o.name for o in sess.get_outputs()]
    past = {}
    for name, info in inputs.items():
        if name.startswith("past_key_values"):
            shape = [1 if isinstance(d, str) and "batch" in d else
                     0 if isinstance(d, str) else d for d in info.shape]
            past[name] = np.zeros(shape, dtype=np.float32)

    def feed(tokens, past_len):
        f = {"input_ids": np.array([tokens], dtype=np.int64)}
        if "attention_mask" in inputs:
            f["attention_mask"] = np.ones((1, past_len + len(tokens)), dtype=np.int64)
        if "position_ids" in inputs:
            f["position_ids"] = np.arange(past_len, past_len + len(tokens), dtype=np.int64)[None]
        f.update(past)
        return f

    def step(tokens, past_len):
        outs = dict(zip(outputs, sess.run(outputs, feed(tokens, past_len))))
        for name in list(past):
            past[name] = outs[name.replace("past_key_values", "present")]
        return int(np.argmax(outs["logits"][0, -1]))

    t0 = time.perf_counter()
    tok = step(list(ids), 0)
    t1 = time.perf_counter()
    n = len(ids)
    for _ in range(new_tokens - 1):
        tok = step([tok], n)
        n += 1
    t2 = time.perf_counter()
    return len(ids) / (t1 - t0), (new_tokens - 1) / (t2 - t1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", help="model folders holding model.onnx")
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in map(Path, args.models):
            onnx_path = model / "model.onnx"
            vocab = json.loads((model / "config.json").read_text())["vocab_size"]
            ids = rng.integers(3, vocab, size=args.prompt_len).tolist()
            # The same ONNX file, built twice: injected and generic.
            plans = {}
            for variant, flags in (("inj", []), ("gen", ["--no-inject"])):
                plans[variant] = Path(tmp) / f"{model.name}-{variant}.plan"
                subprocess.run([args.kiln, "build", str(onnx_path), "-o", str(plans[variant]),
                                "--quiet", *flags], check=True)
            sess = ort_session(onnx_path, args.threads)
            runs = {"inj": [], "gen": [], "ort": []}
            for _ in range(args.repeats):  # interleave so noise hits all alike
                for variant in ("inj", "gen"):
                    runs[variant].append(kiln_once(args.kiln, plans[variant], ids,
                                                   args.new_tokens, args.threads))
                runs["ort"].append(ort_once(sess, ids, args.new_tokens))
            row = {"model": model.name}
            for variant, rs in runs.items():
                row[f"{variant}_prompt"] = statistics.median(r[0] for r in rs)
                row[f"{variant}_decode"] = statistics.median(r[1] for r in rs)
            rows.append(row)

    print(f"\nprompt {args.prompt_len} tokens, {args.new_tokens} new tokens, batch 1, "
          f"{args.threads} threads, median of {args.repeats}; tok/s, and ratios to ORT")
    print("| model | phase | kiln injected | kiln generic | ORT | injected/ORT | generic/ORT |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        for phase in ("prompt", "decode"):
            inj, gen, ort = (r[f"{v}_{phase}"] for v in ("inj", "gen", "ort"))
            print(f"| {r['model']} | {phase} | {inj:.0f} | {gen:.0f} | {ort:.0f} | "
                  f"{inj / ort:.2f} | {gen / ort:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
