#!/usr/bin/env python3
"""Hugging Face transformers baseline for the GPU benchmark (docs/gpu.md).

usage: bench_hf.py CONFIG_DIR [--prompt-len 1024] [--new-tokens 128] [--repeats 3]
                   [--batch-requests N] [--json FILE] [--device cuda]

Builds the model of CONFIG_DIR/config.json (the Llama-3-8B shape of
test/models/llama3-8b-shape) with random weights directly on the device in
bf16 (transformers' own init, initializer_range 0.02; kiln's copy has its own
random values of the same shape and dtype: speed does not depend on them), and
runs it the way transformers' docs make generation fast: a static KV cache
(cache_implementation="static") and the forward compiled with
torch.compile(mode="reduce-overhead", fullgraph=True). Greedy, batch 1, EOS
ignored (min_new_tokens), one random prompt of --prompt-len tokens.

Measured, after two warm-up calls of each shape (compilation happens there):
  prefill_s   the median time of generate(max_new_tokens=1): the prompt's
              forward and one sampled token;
  decode_tok_s  (new_tokens - 1) / (median time of generate(max_new_tokens=N)
              - prefill_s): tokens per second after the first.
With --batch-requests N it measures throughput instead: transformers' own
continuous batching (model.generate_batch, its paged sdpa attention), N random
prompts of --prompt-len tokens, --new-tokens new tokens each, greedy, after a
warm-up batch of min(N, 8) requests:
  total_tok_s   (prompt + generated tokens) / wall time of the batch;
  output_tok_s  generated tokens / wall time (counted from the outputs, since
              random weights may stop a request at EOS early).
Prints one line of JSON and writes it to --json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def timed_generate(model, ids, new_tokens: int, torch) -> float:
    torch.cuda.synchronize() if ids.is_cuda else None
    t0 = time.perf_counter()
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                         min_new_tokens=new_tokens, do_sample=False,
                         cache_implementation="static", pad_token_id=0)
    torch.cuda.synchronize() if ids.is_cuda else None
    dt = time.perf_counter() - t0
    if out.shape[1] != ids.shape[1] + new_tokens:
        raise SystemExit(f"error: generated {out.shape[1] - ids.shape[1]} tokens, "
                         f"asked for {new_tokens}")
    return dt


def run_batch(model, cfg, a, torch) -> dict:
    """transformers' continuous batching over a.batch_requests random prompts."""
    from transformers import GenerationConfig
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(0, cfg.vocab_size, (a.prompt_len,), generator=g).tolist()
               for _ in range(a.batch_requests)]
    gen = GenerationConfig(max_new_tokens=a.new_tokens, do_sample=False,
                           eos_token_id=cfg.eos_token_id, pad_token_id=0)

    def generated(outputs) -> int:
        n = 0
        for out in outputs.values():
            toks = getattr(out, "generated_tokens", None)
            if toks is None:
                raise SystemExit(f"error: generate_batch returned {type(out).__name__} "
                                 "without generated_tokens")
            n += len(toks)
        return n

    # No inference_mode here: generate_batch runs its loop in a thread of its own,
    # which may not update tensors made under this thread's inference mode.
    t0 = time.perf_counter()
    warm = model.generate_batch(inputs=prompts[:min(8, len(prompts))], generation_config=gen,
                                progress_bar=False)
    warm_s = time.perf_counter() - t0
    if len(warm) != min(8, len(prompts)):
        raise SystemExit(f"error: the warm-up batch returned {len(warm)} results")
    torch.cuda.synchronize() if a.device.startswith("cuda") else None
    t0 = time.perf_counter()
    outputs = model.generate_batch(inputs=prompts, generation_config=gen, progress_bar=False)
    torch.cuda.synchronize() if a.device.startswith("cuda") else None
    wall = time.perf_counter() - t0
    if len(outputs) != len(prompts):
        raise SystemExit(f"error: generate_batch returned {len(outputs)} of {len(prompts)} results")
    out_tokens = generated(outputs)
    if generated(warm) == 0 or out_tokens < len(prompts):
        raise SystemExit(f"error: generate_batch produced {out_tokens} tokens for {len(prompts)} "
                         "requests (failed requests; see its log above)")
    return {"requests": len(prompts), "wall_s": round(wall, 2), "output_tokens": out_tokens,
            "total_tok_s": round((len(prompts) * a.prompt_len + out_tokens) / wall, 1),
            "output_tok_s": round(out_tokens / wall, 1), "warmup_s": round(warm_s, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config_dir", type=Path)
    ap.add_argument("--prompt-len", type=int, default=1024)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--no-compile", action="store_true", help="eager (for a quick check)")
    ap.add_argument("--batch-requests", type=int, default=0, metavar="N",
                    help="measure continuous batching (generate_batch) of N requests instead")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()

    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    if a.batch_requests < 0 or a.prompt_len < 1 or a.new_tokens < 1 or a.repeats < 1:
        raise SystemExit("error: --batch-requests must be >= 0, the lengths and --repeats >= 1")
    cfg = AutoConfig.from_pretrained(str(a.config_dir))
    torch.manual_seed(0)
    t0 = time.perf_counter()
    with torch.device(a.device):
        # dtype given: from_config would otherwise take config.json's (the graph's f32).
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16).eval()
    init_s = time.perf_counter() - t0
    params = sum(p.numel() for p in model.parameters())
    dtypes = sorted({str(p.dtype) for p in model.parameters()})
    if dtypes != ["torch.bfloat16"]:
        raise SystemExit(f"error: parameters in {dtypes}, expected bf16 only")
    # With a static cache on CUDA, generate() compiles the decoding step itself
    # (torch.compile, mode "reduce-overhead": CUDA graphs) and marks each step
    # for the graph's buffers. Compiling model.forward by hand instead makes
    # the static cache's in-place update read a CUDA graph output that the
    # next replay overwrote (seen on the H200 with transformers 5.17).
    if a.batch_requests:
        res = {"engine": f"transformers {transformers.__version__} (torch {torch.__version__}), "
                         "generate_batch (continuous batching, sdpa)",
               "device": torch.cuda.get_device_name() if a.device.startswith("cuda") else a.device,
               "params_b": round(params / 1e9, 3), "dtype": "bf16",
               "prompt_len": a.prompt_len, "new_tokens": a.new_tokens,
               "init_s": round(init_s, 1), **run_batch(model, cfg, a, torch)}
        print(json.dumps(res))
        if a.json:
            a.json.write_text(json.dumps(res, indent=1) + "\n")
        return 0
    if a.no_compile:
        model.generation_config.disable_compile = True
    else:
        try:
            from transformers import CompileConfig
        except ImportError:  # older layouts
            from transformers.generation import CompileConfig
        model.generation_config.compile_config = CompileConfig(fullgraph=True,
                                                               mode="reduce-overhead")
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, cfg.vocab_size, (1, a.prompt_len), generator=g).to(a.device)

    t0 = time.perf_counter()
    with torch.inference_mode():
        for _ in range(2):
            timed_generate(model, ids, 1, torch)
            timed_generate(model, ids, a.new_tokens, torch)
        warm_s = time.perf_counter() - t0
        prefill = statistics.median(timed_generate(model, ids, 1, torch)
                                    for _ in range(a.repeats))
        total = statistics.median(timed_generate(model, ids, a.new_tokens, torch)
                                  for _ in range(a.repeats))
    res = {
        "engine": f"transformers {transformers.__version__} (torch {torch.__version__}), "
                  f"static cache{'' if a.no_compile else ' + torch.compile'}",
        "device": torch.cuda.get_device_name() if a.device.startswith("cuda") else a.device,
        "params_b": round(params / 1e9, 3), "dtype": "bf16",
        "prompt_len": a.prompt_len, "new_tokens": a.new_tokens, "repeats": a.repeats,
        "prefill_s": round(prefill, 4),
        "decode_tok_s": round((a.new_tokens - 1) / max(total - prefill, 1e-9), 2),
        "init_s": round(init_s, 1), "warmup_s": round(warm_s, 1),
    }
    print(json.dumps(res))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
