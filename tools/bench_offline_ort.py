#!/usr/bin/env python3
r"""ONNX Runtime baseline for `kiln bench offline`: the same requests, one at a time.

    .venv/bin/python tools/bench_offline_ort.py --onnx test/fixtures/demo/model.onnx \
        --requests out/requests.jsonl --threads 2 --out out/ort.json

--requests is the JSONL file that `kiln bench offline` writes (its "requests_file"),
one request a line: {"prompt_ids": [1, 2, 3], "max_new_tokens": 64}. Each request
runs alone: a prefill of its prompt, whose logits give the first token, then a
greedy decode loop on the model's own KV cache (Optimum export: past_key_values.*
inputs, present.* outputs) until it has exactly max_new_tokens tokens (EOS is
ignored). Per request: TTFT = first token - request start, TPOT = (request end -
first token) / (tokens - 1). Writes a JSON file with one "results" entry in the
format of `kiln bench offline` ("concurrency": 1) and prints a markdown table.
Needs onnxruntime and numpy (tools/requirements-bench.txt).
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cpu import ort_session  # noqa: E402

ENGINE = "onnxruntime (one at a time)"


def fail(msg):
    print(f"bench_offline_ort: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load_requests(path):
    try:
        text = Path(path).read_text()
    except OSError as e:
        fail(f"cannot read requests file {path}: {e.strerror}")
    reqs = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            fail(f"{path}:{no}: bad JSON: {e.msg} (column {e.colno})")
        ids = r.get("prompt_ids") if isinstance(r, dict) else None
        n = r.get("max_new_tokens") if isinstance(r, dict) else None
        if (not isinstance(ids, list) or not ids
                or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids)):
            fail(f"{path}:{no}: \"prompt_ids\" must be a non-empty list of token ids >= 0")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            fail(f"{path}:{no}: \"max_new_tokens\" must be an integer >= 1")
        reqs.append((no, ids, n))
    if not reqs:
        fail(f"{path}: no requests")
    return reqs


class Generator:
    """Prefill + greedy decode with the model's own KV cache, batch 1."""

    def __init__(self, sess):
        self.sess = sess
        self.inputs = {i.name: i for i in sess.get_inputs()}
        self.outputs = [o.name for o in sess.get_outputs()]
        if "input_ids" not in self.inputs or "logits" not in self.outputs:
            fail("the model needs an input_ids input and a logits output (Optimum export)")
        self.past_names = [n for n in self.inputs if n.startswith("past_key_values")]
        import onnxruntime
        self.run_opts = onnxruntime.RunOptions()
        self.run_opts.log_severity_level = 4  # errors come back as exceptions, with the same text
        vocab = [o.shape for o in sess.get_outputs() if o.name == "logits"][0][-1]
        self.vocab = vocab if isinstance(vocab, int) else None
        if not self.past_names:
            fail("the model has no past_key_values.* inputs (export it with past key/values)")

    def empty_past(self):
        past = {}
        for name in self.past_names:
            shape = [1 if isinstance(d, str) and "batch" in d else
                     0 if isinstance(d, str) else d for d in self.inputs[name].shape]
            past[name] = np.zeros(shape, dtype=np.float32)
        return past

    def step(self, past, tokens, past_len):
        f = {"input_ids": np.array([tokens], dtype=np.int64)}
        if "attention_mask" in self.inputs:
            f["attention_mask"] = np.ones((1, past_len + len(tokens)), dtype=np.int64)
        if "position_ids" in self.inputs:
            f["position_ids"] = np.arange(past_len, past_len + len(tokens), dtype=np.int64)[None]
        f.update(past)
        outs = dict(zip(self.outputs, self.sess.run(self.outputs, f, self.run_opts)))
        for name in self.past_names:
            past[name] = outs[name.replace("past_key_values", "present")]
        return int(np.argmax(outs["logits"][0, -1]))

    def generate(self, ids, new_tokens):
        """Returns (tokens, t_start, t_first, t_end)."""
        t0 = time.perf_counter()
        past = self.empty_past()
        tok = self.step(past, list(ids), 0)
        t1 = time.perf_counter()
        out, n = [tok], len(ids)
        while len(out) < new_tokens:
            tok = self.step(past, [tok], n)
            out.append(tok)
            n += 1
        return out, t0, t1, time.perf_counter()


def pct(xs, q):
    return float(np.percentile(xs, q)) if xs else None


def fmt(x, spec=".1f"):
    return "—" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnx", required=True, help="model.onnx (Optimum export with past key/values)")
    ap.add_argument("--requests", required=True, help="requests JSONL from `kiln bench offline`")
    ap.add_argument("--threads", type=int, default=2, help="ORT intra-op threads (default 2)")
    ap.add_argument("--out", help="write the results JSON here")
    ap.add_argument("--warmup", type=int, default=1,
                    help="untimed runs of the first request before timing (default 1)")
    args = ap.parse_args()

    if not Path(args.onnx).is_file():
        fail(f"no such ONNX file: {args.onnx}")
    if args.threads < 1:
        fail("--threads must be >= 1")
    reqs = load_requests(args.requests)
    try:
        import onnxruntime
        sess = ort_session(args.onnx, args.threads)
    except ImportError:
        fail("onnxruntime is not installed (pip install -r tools/requirements-bench.txt)")
    except Exception as e:  # noqa: BLE001 - ORT raises its own exception types
        fail(f"onnxruntime cannot load {args.onnx}: {e}")
    gen = Generator(sess)
    for no, ids, _ in reqs:
        if gen.vocab and max(ids) >= gen.vocab:
            fail(f"{args.requests}:{no}: token id {max(ids)} is not below the vocabulary size {gen.vocab}")
    cfg = Path(args.onnx).with_name("config.json")
    max_pos = json.loads(cfg.read_text()).get("max_position_embeddings") if cfg.is_file() else None
    longest = max(len(ids) + n for _, ids, n in reqs)
    if isinstance(max_pos, int) and longest > max_pos:
        print(f"bench_offline_ort: warning: a request needs {longest} positions, more than "
              f"max_position_embeddings {max_pos} in {cfg}", file=sys.stderr)

    ttft, tpot, total, cur = [], [], 0, reqs[0][0]
    try:
        for _ in range(args.warmup):
            gen.generate(reqs[0][1], min(reqs[0][2], 4))
        wall0 = time.perf_counter()
        for no, ids, n in reqs:
            cur = no
            toks, t0, t1, t2 = gen.generate(ids, n)
            ttft.append((t1 - t0) * 1e3)
            if len(toks) > 1:
                tpot.append((t2 - t1) * 1e3 / (len(toks) - 1))
            total += len(toks)
        wall = time.perf_counter() - wall0
    except Exception as e:  # noqa: BLE001
        fail(f"{args.requests}:{cur}: onnxruntime failed: {e}")

    result = {"concurrency": 1, "engine": ENGINE, "requests": len(reqs), "wall_s": wall,
              "requests_per_s": len(reqs) / wall, "output_tokens_per_s": total / wall,
              "ttft_ms_p50": pct(ttft, 50), "ttft_ms_p99": pct(ttft, 99),
              "tpot_ms_p50": pct(tpot, 50), "tpot_ms_p99": pct(tpot, 99),
              "output_tokens": total}
    in_lens = {len(ids) for _, ids, _ in reqs}
    out_lens = {n for _, _, n in reqs}
    doc = {"command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "engine": ENGINE,
           "onnx": args.onnx, "onnxruntime_version": onnxruntime.__version__,
           "num_prompts": len(reqs),
           "input_len": in_lens.pop() if len(in_lens) == 1 else None,
           "output_len": out_lens.pop() if len(out_lens) == 1 else None,
           "threads": args.threads, "requests_file": args.requests, "results": [result]}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")

    r = result
    print(f"{len(reqs)} requests, {total} output tokens, {args.threads} threads, "
          f"onnxruntime {onnxruntime.__version__}")
    print("| engine | concurrency | req/s | out tok/s | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | TPOT p99 ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(f"| {ENGINE} | 1 | {r['requests_per_s']:.2f} | {r['output_tokens_per_s']:.1f} | "
          f"{fmt(r['ttft_ms_p50'])} | {fmt(r['ttft_ms_p99'])} | "
          f"{fmt(r['tpot_ms_p50'], '.2f')} | {fmt(r['tpot_ms_p99'], '.2f')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
