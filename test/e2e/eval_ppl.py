#!/usr/bin/env python3
"""`kiln eval ppl` on the demo model against a Python reference.

    eval_ppl.py --kiln KILN --builder KILN_WITH_COMPILER --demo test/fixtures/demo PLAN

PLAN is the demo's ragged plan (the pipeline_plans fixture); the script builds
the --no-ragged plan itself. The reference runs the same ONNX file with ONNX
Runtime (tools/requirements-test.txt), or onnx's own reference evaluator
(numpy) where it is missing, on the ids `kiln tokenize` gives, and scores the windows as Hugging
Face's "perplexity of fixed-length models" loop does: labels before the
previous window's end set to -100, logits and labels shifted by one, the
log-softmax in float64, summed over the scored tokens.

Checks, on test/fixtures/demo/SOURCE.md:
  - the ragged and the dense plan agree to 1e-5 relative, and both equal the
    reference to 1e-4 relative, with the same token, window and scored counts;
  - disjoint windows (stride == window), a text shorter than one window (read
    from stdin), --max-tokens, and a window run as several steps
    (--max-batched-tokens) against the same reference;
  - bad input exits 2 naming the problem: a window past the context, a dense
    plan on another device than the cpu.
"""
import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import Checks  # noqa: E402

check = Checks()


def reference_runner(onnx_path):
    """(name, run): run(ids) gives the logits [T, V] of one window from an
    empty past."""
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        types = {"tensor(int64)": np.int64, "tensor(int32)": np.int32,
                 "tensor(float)": np.float32, "tensor(float16)": np.float16}
        inputs = [(i.name, i.shape, types[i.type]) for i in sess.get_inputs()]
        name, run_graph = f"ONNX Runtime {ort.__version__}", lambda f: sess.run(["logits"], f)[0]
    else:  # onnx's own evaluator: numpy, slower to import
        import onnx
        from onnx.reference import ReferenceEvaluator
        model = onnx.load(str(onnx_path))
        inputs = [(i.name, [d.dim_value or d.dim_param for d in i.type.tensor_type.shape.dim],
                   onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type))
                  for i in model.graph.input]
        ev = ReferenceEvaluator(model)
        name, run_graph = f"onnx {onnx.__version__} ReferenceEvaluator", lambda f: ev.run(["logits"], f)[0]

    def run(ids):
        n = len(ids)
        feeds = {}
        for input_name, dims, dtype in inputs:
            if input_name == "input_ids":
                feeds[input_name] = np.array(ids, dtype=dtype)[None]
            elif input_name == "attention_mask":
                feeds[input_name] = np.ones((1, n), dtype=dtype)
            elif input_name == "position_ids":
                feeds[input_name] = np.arange(n, dtype=dtype)[None]
            else:  # past_key_values.*: batch 1, nothing before the window
                shape = [d if isinstance(d, int) and d > 0 else (1 if "batch" in str(d) else 0)
                         for d in dims]
                feeds[input_name] = np.zeros(shape, dtype=dtype)
        return run_graph(feeds)[0]

    return name, run


def hf_perplexity(run, ids, window, stride):
    """Hugging Face's sliding-window loop, token NLLs summed exactly:
    (perplexity, scored tokens, windows)."""
    n = len(ids)
    nll, scored, windows, prev_end = 0.0, 0, 0, 0
    for begin in range(0, n, stride):
        end = min(begin + window, n)
        trg_len = end - prev_end
        inputs = np.array(ids[begin:end], dtype=np.int64)
        labels = inputs.copy()
        labels[:-trg_len] = -100
        logits = run(ids[begin:end]).astype(np.float64)
        shift_logits, shift_labels = logits[:-1], labels[1:]
        keep = shift_labels != -100
        rows, targets = shift_logits[keep], shift_labels[keep]
        top = rows.max(axis=1)
        lse = top + np.log(np.exp(rows - top[:, None]).sum(axis=1))
        nll += float((lse - rows[np.arange(len(rows)), targets]).sum())
        scored += int(keep.sum())
        windows += 1
        prev_end = end
        if end == n:
            break
    return math.exp(nll / scored), scored, windows


def rel(a, b):
    return abs(a - b) / abs(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--builder", required=True, help="a kiln with the compiler (kiln build)")
    ap.add_argument("--demo", required=True, type=Path, help="test/fixtures/demo")
    ap.add_argument("plan", help="the demo's ragged plan")
    args = ap.parse_args()
    kiln, ragged = args.kiln, args.plan
    text_file = args.demo / "SOURCE.md"
    ref_name, run = reference_runner(args.demo / "model.onnx")
    print(f"reference: {ref_name}")

    def ppl(plan, *flags, stdin=None):
        r = subprocess.run([kiln, "eval", "ppl", plan, "--json", "--threads", "2", *flags],
                           capture_output=True, text=True, input=stdin)
        if r.returncode != 0:
            check(False, f"kiln eval ppl {' '.join(flags)}: exit {r.returncode} {r.stderr[-400:]}")
            return None
        return json.loads(r.stdout)

    def against_reference(got, ids, window, stride, what):
        want, scored, windows = hf_perplexity(run, ids, window, stride)
        if got is None:
            return
        check(got["tokens"] == len(ids) and got["scored"] == scored and got["windows"] == windows
              and got["window"] == window and got["stride"] == stride,
              f"{what}: {got['tokens']} tokens, {got['scored']} scored, {got['windows']} windows "
              f"of {got['window']} by {got['stride']} (reference: {len(ids)}, {scored}, {windows})")
        check(rel(got["perplexity"], want) < 1e-4,
              f"{what}: perplexity {got['perplexity']:.6f}, reference {want:.6f} "
              f"(rel {rel(got['perplexity'], want):.1e})")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        dense = str(tmp / "demo-dense.plan")
        b = subprocess.run([args.builder, "build", str(args.demo / "model.onnx"), "-o", dense,
                            "--quiet", "--no-ragged"], capture_output=True, text=True)
        check(b.returncode == 0, f"dense plan built: {b.stderr[-300:]}")
        t = subprocess.run([kiln, "tokenize", ragged, "--text-file", str(text_file)],
                           capture_output=True, text=True)
        check(t.returncode == 0, f"kiln tokenize: {t.stderr[-300:]}")
        ids = json.loads(t.stdout)
        check(ids[0] == 1 and len(ids) > 300, f"SOURCE.md is {len(ids)} tokens, BOS first")

        # Overlapping windows (the default stride, window / 2), both interfaces.
        flags = ["--text", str(text_file), "--window", "64", "--max-tokens", "128"]
        got_ragged = ppl(ragged, *flags)
        got_dense = ppl(dense, *flags)
        if got_ragged and got_dense:
            check(rel(got_ragged["perplexity"], got_dense["perplexity"]) < 1e-5,
                  f"ragged {got_ragged['perplexity']:.7f} == dense {got_dense['perplexity']:.7f} "
                  f"(rel {rel(got_ragged['perplexity'], got_dense['perplexity']):.1e})")
        against_reference(got_ragged, ids[:128], 64, 32, "ragged, window 64")
        against_reference(got_dense, ids[:128], 64, 32, "dense, window 64")

        # Disjoint windows, each window's first token unscored, the last one
        # 2 tokens long; run in steps of 20 tokens over one window's KV blocks.
        disjoint = ppl(ragged, "--text", str(text_file), "--window", "48", "--stride", "48",
                       "--max-tokens", "98", "--max-batched-tokens", "20")
        against_reference(disjoint, ids[:98], 48, 48, "disjoint windows in 20-token steps")

        # Shorter than the default window (the context, 256): one window.
        short_text = text_file.read_text()[:160]
        (tmp / "short.txt").write_text(short_text)
        t = subprocess.run([kiln, "tokenize", ragged, "--text-file", str(tmp / "short.txt")],
                           capture_output=True, text=True)
        short_ids = json.loads(t.stdout)
        short = ppl(ragged, "--text", "-", stdin=short_text)
        against_reference(short, short_ids, 256, 128, f"a {len(short_ids)}-token text from stdin")
        if short:
            check(short["windows"] == 1 and short["scored"] == len(short_ids) - 1,
                  "one window scores every token but the first")

        # Bad input: exit 2 and a message that says what is wrong.
        # (Other bad input is checked in-process: test/unit/runtime/cli_test.cpp.)
        for plan, flags, says in [
            (ragged, ["--text", str(text_file), "--window", "257"],
             "longer than the plan's context length, 256"),
            (dense, ["--text", str(text_file), "--device", "cuda"], "cuda"),
        ]:
            r = subprocess.run([kiln, "eval", "ppl", plan, *flags], capture_output=True, text=True)
            check(r.returncode == 2 and says in r.stderr and r.stdout == "",
                  f"{' '.join(flags)}: exit {r.returncode}, {r.stderr.strip()}")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
