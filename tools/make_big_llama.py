#!/usr/bin/env python3
"""Generates a Llama with random weights at a real size, for CPU benchmarks.

Usage (developer tooling; needs torch, transformers and optimum[onnx], see
tools/requirements-dev.txt):

    /path/to/venv/bin/python tools/make_big_llama.py [--out DIR] [--size 1.1b|tiny]

`make bench` runs it (into build/big/llama-1.1b) when the model is missing.

The default shape is TinyLlama's (1.1B parameters: hidden 2048, 22 layers, 32 query
heads over 4 KV heads, MLP 5632, vocab 32000, untied LM head), 4.4 GB of fp32
weights. The model is initialised by transformers with random weights, saved as a
Hugging Face checkpoint, then exported by Optimum (task text-generation-with-past,
no post-processing, so one decoder graph without control flow) with its weights in
external data, which is how real checkpoints of this size arrive. The output
directory gets model.onnx, model.onnx_data, config.json, generation_config.json
and the demo model's tokenizer (2048 ids, all below the model's vocabulary), so
`kiln build DIR/model.onnx` accepts it as is. Nothing here is committed.

Memory: the two stages run in separate processes, so the peak is the larger of
"model + checkpoint writer" and "Optimum export", not their sum. `--size tiny`
makes a model of the same shape ratios (hidden 256, 4 layers) for quick checks.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "test" / "fixtures" / "demo"

# TinyLlama-1.1B's shape; "tiny" keeps its ratios (8 query heads per KV head,
# intermediate = 2.75 x hidden) at 1/8 of the width.
SIZES = {
    "1.1b": dict(hidden_size=2048, num_hidden_layers=22, num_attention_heads=32,
                 num_key_value_heads=4, intermediate_size=5632, vocab_size=32000),
    "tiny": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=8,
                 num_key_value_heads=1, intermediate_size=704, vocab_size=4000),
}


def llama_config(size: str):
    from transformers import LlamaConfig
    return LlamaConfig(**SIZES[size], max_position_embeddings=2048, rms_norm_eps=1e-5,
                       rope_theta=10000.0, tie_word_embeddings=False, bos_token_id=1,
                       eos_token_id=2, initializer_range=0.02, dtype="float32")


def stage_checkpoint(size: str, hf_dir: Path, seed: int) -> None:
    """Random-initialises the model in fp32 on the CPU and saves it as safetensors."""
    import torch
    from transformers import LlamaForCausalLM
    torch.manual_seed(seed)
    with torch.no_grad():
        model = LlamaForCausalLM(llama_config(size)).eval()
        n = sum(p.numel() for p in model.parameters())
        print(f"  {n / 1e9:.3f} B parameters", flush=True)
        model.save_pretrained(str(hf_dir), safe_serialization=True)


def stage_export(hf_dir: Path, onnx_dir: Path) -> None:
    """Optimum export of the one with-past decoder graph, weights as external data."""
    from optimum.exporters.onnx import main_export
    main_export(model_name_or_path=str(hf_dir), output=str(onnx_dir),
                task="text-generation-with-past", opset=18, device="cpu",
                no_post_process=True, do_validation=False, framework="pt")


def run_stage(args: list[str]) -> None:
    # A fresh interpreter per stage returns the first stage's memory to the
    # system before the second starts.
    t0 = time.time()
    subprocess.run([sys.executable, __file__, *args], check=True)
    print(f"  {args[0]}: {time.time() - t0:.0f} s", flush=True)


def pick_decoder(onnx_dir: Path) -> Path:
    """The exported graph that takes past_key_values.* (Optimum names vary by version)."""
    import onnx
    for cand in sorted(onnx_dir.glob("*.onnx")):
        m = onnx.load(str(cand), load_external_data=False)
        if any(i.name.startswith("past_key_values.") for i in m.graph.input):
            return cand
    raise SystemExit(f"error: no with-past decoder among {sorted(onnx_dir.glob('*.onnx'))}")


def finish(out: Path, onnx_dir: Path, hf_dir: Path, size: str) -> None:
    """Moves the decoder and its external data into `out` with the files kiln build reads."""
    import onnx
    dec = pick_decoder(onnx_dir)
    m = onnx.load(str(dec), load_external_data=False)
    locations = {e.value for t in m.graph.initializer for e in t.external_data
                 if e.key == "location"}
    # Over 2 GB the exporter writes one external data file; a small model is inline.
    if len(locations) > 1:
        raise SystemExit(f"error: expected one external data file, found {sorted(locations)}")
    data_name = locations.pop() if locations else None
    if data_name:
        shutil.move(str(onnx_dir / data_name), str(out / data_name))
    shutil.move(str(dec), str(out / "model.onnx"))
    shutil.copy(hf_dir / "config.json", out / "config.json")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(DEMO / name, out / name)
    gen = {"bos_token_id": 1, "eos_token_id": 2, "max_length": 2048, "do_sample": False}
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    (out / "MANIFEST.json").write_text(json.dumps(
        {"generator": "tools/make_big_llama.py", "size": size, **SIZES[size],
         "weights": "random (transformers init, fp32)", "external_data": data_name},
        indent=2) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "build" / "big" / "llama-1.1b",
                    help="output directory (default build/big/llama-1.1b in the repository)")
    ap.add_argument("--size", choices=sorted(SIZES), default="1.1b")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="regenerate even if present")
    ap.add_argument("--stage", choices=["checkpoint", "export"], help=argparse.SUPPRESS)
    ap.add_argument("--src", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()

    if a.stage == "checkpoint":
        stage_checkpoint(a.size, a.out, a.seed)
        return 0
    if a.stage == "export":
        stage_export(a.src, a.out)
        return 0

    out = a.out.resolve()
    if (out / "model.onnx").exists() and not a.force:
        print(f"{out}/model.onnx exists (--force to regenerate)")
        return 0
    if out.is_relative_to(REPO) and subprocess.run(
            ["git", "-C", str(REPO), "check-ignore", "-q", str(out)]).returncode != 0:
        print(f"error: --out {out} is inside the repository and not ignored by git; generated "
              f"models are never committed (use a folder under build/)", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    hf_dir, onnx_dir = work / "hf", work / "onnx"
    print(f"generating a random {a.size} Llama into {out}", flush=True)
    run_stage(["--stage", "checkpoint", "--size", a.size, "--seed", str(a.seed),
               "--out", str(hf_dir)])
    run_stage(["--stage", "export", "--src", str(hf_dir), "--out", str(onnx_dir)])
    finish(out, onnx_dir, hf_dir, a.size)
    shutil.rmtree(work)
    print(f"wrote {out}/model.onnx")
    return 0


if __name__ == "__main__":
    sys.exit(main())
