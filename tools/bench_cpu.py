#!/usr/bin/env python3
"""CPU benchmark: prompt and decode tokens/s of kiln beside ONNX Runtime on the
same ONNX file, in the same run on the same machine.

    .venv/bin/python tools/bench_cpu.py --kiln build/release/tools/kiln/kiln \
        test/fixtures/demo test/fixtures/llama-optimum \
        [--real-size /path/to/llama-1.1b]

Each model folder holds model.onnx (an Optimum export with past key/values).
kiln builds it twice, injected and with --no-inject, and runs each plan with
`kiln run --prompt-ids ... --ignore-eos`; --dense adds a third build, injected
with --no-ragged, so the injected model runs once through the batched engine
(ragged interface, paged KV cache) and once through the dense one (the model's
own past/present KV, DecoderSession);
ONNX Runtime runs the same prefill and greedy decode loop with its own KV
cache. Reports the median of --repeats runs. Needs onnxruntime (PyPI).

--real-size DIR adds a model at real size (tools/make_big_llama.py makes a
1.1B Llama): the injected plan only, a 16-token prompt, and the time of the
prefill beside decode tokens/s. There each ONNX Runtime run is a process of
its own, started after kiln's has exited, so the two never hold the weights
at once; kiln and ONNX Runtime alternate, in the order ABBA, and the load
average is printed with the table.
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
PREFILL_SECONDS = re.compile(r"prefill: \d+ tokens in ([\d.]+) s")


def kiln_once(kiln, plan, ids, new_tokens, threads, lock=None):
    """(prompt tok/s, decode tok/s, prefill seconds) of one `kiln run`."""
    cmd = [*locked(lock), kiln, "run", str(plan), "--threads", str(threads), "--prompt-ids", ",".join(map(str, ids)),
           "--max-new-tokens", str(new_tokens), "--temperature", "0", "--ignore-eos",
           "--no-stream"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"kiln run failed: {r.stderr}")
    m = LINE.search(r.stderr)
    if not m:
        raise RuntimeError(f"no timing line in kiln output: {r.stderr}")
    return float(m[1]), float(m[2]), float(PREFILL_SECONDS.search(r.stderr)[1])


def locked(lock):
    """A command prefix that holds `lock` (flock(1)) while the command runs."""
    return ["flock", str(lock)] if lock else []


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
    return len(ids) / (t1 - t0), (new_tokens - 1) / (t2 - t1), t1 - t0


def ort_worker(args):
    """--ort-worker: one ONNX Runtime session, one timed run, JSON on stdout."""
    t0 = time.perf_counter()
    sess = ort_session(args.ort_worker, args.threads)
    load = time.perf_counter() - t0
    ids = [int(t) for t in args.ids.split(",")]
    prompt, decode, prefill = ort_once(sess, ids, args.new_tokens)
    print(json.dumps({"prompt": prompt, "decode": decode, "prefill_s": prefill, "load_s": load}))
    return 0


def ort_process(onnx_path, ids, new_tokens, threads, lock):
    """ort_once in a process of its own, so its weights are gone when it returns."""
    cmd = [*locked(lock), sys.executable, __file__, "--ort-worker", str(onnx_path),
           "--ids", ",".join(map(str, ids)), "--new-tokens", str(new_tokens),
           "--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ONNX Runtime worker failed: {r.stderr}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["prompt"], out["decode"], out["prefill_s"]


def real_size(args, model, tmp):
    """One real-size model: injected plan against ONNX Runtime, ABBA order."""
    onnx_path = model / "model.onnx"
    vocab = json.loads((model / "config.json").read_text())["vocab_size"]
    ids = np.random.default_rng(1).integers(3, vocab, size=args.real_prompt_len).tolist()
    plans = {"kiln": Path(tmp) / f"{model.name}.plan"}
    if args.dense:
        plans["kiln-dense"] = Path(tmp) / f"{model.name}-dense.plan"
    if args.real_plan:
        plans["kiln"] = Path(args.real_plan)
    for engine, plan in plans.items():
        if engine == "kiln" and args.real_plan:
            continue
        flags = ["--no-ragged"] if engine == "kiln-dense" else []
        subprocess.run([*locked(args.mem_lock), args.kiln, "build", str(onnx_path), "-o",
                        str(plan), "--quiet", *flags], check=True)
    engines = [*plans, "ort"]
    runs = {engine: [] for engine in engines}
    loads = [os.getloadavg()[0]]
    for rep in range(args.repeats):
        order = engines if rep % 2 == 0 else engines[::-1]
        for engine in order:
            if engine in plans:
                r = kiln_once(args.kiln, plans[engine], ids, args.real_new_tokens, args.threads,
                              args.mem_lock)
            else:
                r = ort_process(onnx_path, ids, args.real_new_tokens, args.threads,
                                args.mem_lock)
            runs[engine].append(r)
            loads.append(os.getloadavg()[0])
            print(f"  {model.name} {engine}: prefill {r[2]:.3f} s, decode {r[1]:.2f} tok/s",
                  file=sys.stderr, flush=True)
    for engine, plan in plans.items():
        if not (engine == "kiln" and args.real_plan):
            plan.unlink()
    row = {"model": model.name, "runs": runs, "load_min": min(loads), "load_max": max(loads)}
    for engine, rs in runs.items():
        row[f"{engine}_prefill_s"] = statistics.median(r[2] for r in rs)
        row[f"{engine}_decode"] = statistics.median(r[1] for r in rs)
    return row


def print_real_size(args, rows):
    print(f"\nreal size: prompt {args.real_prompt_len} tokens, {args.real_new_tokens} new "
          f"tokens, batch 1, {args.threads} threads, median of {args.repeats} (kiln and ORT "
          f"alternating); prefill ratio = ORT time / kiln time")
    print("| model | kiln prefill s | ORT prefill s | prefill ratio | kiln decode tok/s | "
          "ORT decode tok/s | decode ratio | load avg |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        kp, op, kd, od = (r[k] for k in ("kiln_prefill_s", "ort_prefill_s", "kiln_decode",
                                         "ort_decode"))
        print(f"| {r['model']} | {kp:.3f} | {op:.3f} | {op / kp:.2f} | {kd:.2f} | {od:.2f} | "
              f"{kd / od:.2f} | {r['load_min']:.1f}-{r['load_max']:.1f} |")
    dense = [r for r in rows if "kiln-dense_decode" in r]
    if dense:
        print("\nthe same runs, kiln's ragged plan (batched engine) against its --no-ragged plan "
              "(dense engine)")
        print("| model | ragged prefill s | dense prefill s | ragged decode tok/s | "
              "dense decode tok/s | decode ragged/dense |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for r in dense:
            kp, dp, kd, dd = (r[k] for k in ("kiln_prefill_s", "kiln-dense_prefill_s",
                                             "kiln_decode", "kiln-dense_decode"))
            print(f"| {r['model']} | {kp:.3f} | {dp:.3f} | {kd:.2f} | {dd:.2f} | {kd / dd:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="model folders holding model.onnx")
    ap.add_argument("--kiln")
    ap.add_argument("--real-size", action="append", default=[], metavar="DIR",
                    help="a real-size model folder (tools/make_big_llama.py); repeatable")
    ap.add_argument("--real-prompt-len", type=int, default=16)
    ap.add_argument("--real-new-tokens", type=int, default=32)
    ap.add_argument("--real-plan", metavar="PLAN",
                    help="with one --real-size model: run this injected plan of it (built "
                         "earlier, e.g. by another kiln binary) instead of building one; kept")
    ap.add_argument("--mem-lock", metavar="FILE",
                    help="hold this lock file (flock) around every process that loads a "
                         "real-size model, on a machine whose memory others share")
    ap.add_argument("--ort-worker", metavar="ONNX", help=argparse.SUPPRESS)
    ap.add_argument("--ids", help=argparse.SUPPRESS)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--dense", action="store_true",
                    help="also run the injected model with its dense interface (--no-ragged), "
                         "for the fixtures and --real-size models")
    args = ap.parse_args()
    if args.ort_worker:
        return ort_worker(args)
    if not args.kiln or not (args.models or args.real_size):
        ap.error("--kiln and at least one model folder or --real-size are required")
    if args.real_plan and len(args.real_size) != 1:
        ap.error("--real-plan needs exactly one --real-size model (the plan's source)")

    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in map(Path, args.models):
            onnx_path = model / "model.onnx"
            vocab = json.loads((model / "config.json").read_text())["vocab_size"]
            ids = rng.integers(3, vocab, size=args.prompt_len).tolist()
            # The same ONNX file, built twice: injected and generic.
            plans = {}
            for variant, flags in variants(args):
                plan = Path(tmp) / f"{model.name}-{variant}.plan"
                r = subprocess.run([args.kiln, "build", str(onnx_path), "-o", str(plan),
                                    "--quiet", *flags], capture_output=True, text=True)
                if r.returncode != 0 and variant == "gen":
                    # A model kiln runs only injected (a mixture of experts:
                    # its routing ops have no kernels of their own).
                    print(f"{model.name}: no generic plan: {r.stderr.strip().splitlines()[0]}",
                          file=sys.stderr)
                    continue
                if r.returncode != 0:
                    raise SystemExit(f"kiln build {variant} of {model} failed:\n{r.stderr}")
                plans[variant] = plan
            sess = ort_session(onnx_path, args.threads)
            runs = {**{v: [] for v in plans}, "ort": []}
            for _ in range(args.repeats):  # interleave so noise hits all alike
                for variant in plans:
                    runs[variant].append(kiln_once(args.kiln, plans[variant], ids,
                                                   args.new_tokens, args.threads)[:2])
                runs["ort"].append(ort_once(sess, ids, args.new_tokens)[:2])
            row = {"model": model.name}
            for variant, rs in runs.items():
                row[f"{variant}_prompt"] = statistics.median(r[0] for r in rs)
                row[f"{variant}_decode"] = statistics.median(r[1] for r in rs)
            rows.append(row)
        real_rows = [real_size(args, Path(m), tmp) for m in args.real_size]

    print_header()
    if rows:
        print_fixtures(args, rows)
    if real_rows:
        print_real_size(args, real_rows)
    if args.json:
        Path(args.json).write_text(json.dumps({"fixtures": rows, "real_size": real_rows},
                                              indent=2))
    return 0


def variants(args):
    """(name, kiln build flags) of each plan built from one ONNX file."""
    out = [("inj", []), ("gen", ["--no-inject"])]
    if args.dense:
        out.append(("dense", ["--no-ragged"]))
    return out


# The vector extensions kiln's CPU kernels (and ONNX Runtime's) choose by:
# the same model name may have them or not (a VM's CPU model hides some).
ISA_FLAGS = ("avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8")


def cpu_description():
    """The CPU's model name and which of ISA_FLAGS it has."""
    name, flags = "unknown CPU", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and name == "unknown CPU":
                name = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    have = [f for f in ISA_FLAGS if f in flags]
    return f"{name} ({', '.join(have) if have else 'no AVX2'})"


def print_header():
    """The command, the date, the machine and the ONNX Runtime version."""
    import onnxruntime
    print(f"\ncommand: {' '.join(sys.argv)}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores, "
          f"{cpu_description()}; onnxruntime {onnxruntime.__version__}")


def print_fixtures(args, rows):
    print(f"\nprompt {args.prompt_len} tokens, {args.new_tokens} new tokens, batch 1, "
          f"{args.threads} threads, median of {args.repeats}; tok/s, and ratios to ORT")
    dense = args.dense
    print("| model | phase | kiln injected | kiln generic | ORT | injected/ORT | generic/ORT |"
          + (" kiln injected dense | ragged/dense |" if dense else ""))
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if dense else ""))
    for r in rows:
        for phase in ("prompt", "decode"):
            inj, gen, ort = (r.get(f"{v}_{phase}") for v in ("inj", "gen", "ort"))
            gen_cells = f"{gen:.0f} | {ort:.0f} | {inj / ort:.2f} | {gen / ort:.2f}" if gen else (
                f"- | {ort:.0f} | {inj / ort:.2f} | -")
            line = f"| {r['model']} | {phase} | {inj:.0f} | {gen_cells} |"
            if dense:
                d = r[f"dense_{phase}"]
                line += f" {d:.0f} | {inj / d:.2f} |"
            print(line)


if __name__ == "__main__":
    sys.exit(main())
