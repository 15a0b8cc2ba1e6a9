#!/usr/bin/env python3
"""Makes a runnable model from a committed weightless graph (docs/gpu.md).

usage: fill_random_weights.py GRAPH_DIR OUT_DIR [--seed N] [--std 0.02]

GRAPH_DIR holds model.onnx.gz, a graph whose weights all point into
external data (model.onnx_data) that does not exist yet, and weights.json,
which lists those weights (name, dtype, shape, offset, length, and "init": "norm"
for norm weights) in file order; tools/gpu/make_8b_graph.py writes both. This
script writes OUT_DIR/model.onnx (the graph, unzipped) and
OUT_DIR/model.onnx_data, every weight random normal with standard deviation
--std (transformers' initializer_range), norm weights 1 plus the same noise
(not exactly 1, as in a trained checkpoint, so that kiln does not fold them
away as it folds transformers' fresh init), and copies the
directory's other files (config.json, tokenizer) beside them.

Speed: the values come from one pool of random numbers, made once and
written out from a different random start for each tensor, so the script
runs at the disk's write speed (16 GB of bf16 for a Llama-3-8B shape) rather
than at numpy's generator speed. Only numpy is needed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

POOL_VALUES = 1 << 22  # 4 Mi values: 8 MiB of bf16, written from a random start each time
CHUNK_VALUES = 1 << 22
DTYPES = {"bf16": np.uint16, "f16": np.float16, "f32": np.float32}


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """f32 -> bf16 bit patterns, round to nearest even (no NaN in the input)."""
    u = x.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def make_pool(dtype: str, mean: float, std: float, rng: np.random.Generator) -> np.ndarray:
    # Twice the pool, so any start in [0, POOL_VALUES) has POOL_VALUES values after it.
    x = rng.standard_normal(POOL_VALUES, dtype=np.float32) * np.float32(std) + np.float32(mean)
    x = np.concatenate([x, x])
    if dtype == "bf16":
        return to_bf16_bits(x)
    return x.astype(DTYPES[dtype])


def write_tensor(f, entry: dict, pools: dict, rng: np.random.Generator) -> None:
    dtype, count = entry["dtype"], int(np.prod(entry["shape"], dtype=np.int64))
    width = np.dtype(DTYPES[dtype]).itemsize
    if count * width != entry["length"]:
        raise SystemExit(f"error: {entry['name']}: {count} x {width} bytes != length "
                         f"{entry['length']}")
    if f.tell() != entry["offset"]:
        f.seek(entry["offset"])  # alignment padding stays a hole (zeros)
    pool = pools[(dtype, entry.get("init") == "norm")]
    left = count
    while left:
        start = int(rng.integers(0, POOL_VALUES))
        n = min(left, POOL_VALUES, CHUNK_VALUES)
        f.write(memoryview(pool[start:start + n]))
        left -= n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph_dir", type=Path)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--std", type=float, default=0.02)
    a = ap.parse_args()

    manifest = json.loads((a.graph_dir / "weights.json").read_text())
    a.out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with gzip.open(a.graph_dir / "model.onnx.gz", "rb") as src, \
            open(a.out_dir / "model.onnx", "wb") as dst:
        shutil.copyfileobj(src, dst)
    for p in sorted(a.graph_dir.iterdir()):
        if p.is_file() and p.name not in ("model.onnx.gz", "weights.json"):
            shutil.copy(p, a.out_dir / p.name)

    rng = np.random.default_rng(a.seed)
    tensors = sorted(manifest["tensors"], key=lambda e: e["offset"])
    pools = {}
    for dtype in sorted({e["dtype"] for e in tensors}):
        pools[(dtype, False)] = make_pool(dtype, 0.0, a.std, rng)
        pools[(dtype, True)] = make_pool(dtype, 1.0, a.std, rng)
    data = a.out_dir / manifest["location"]
    with open(data, "wb", buffering=0) as f:
        for e in tensors:
            write_tensor(f, e, pools, rng)
        f.truncate(manifest["total_bytes"])
    size = data.stat().st_size
    dt = time.time() - t0
    print(f"wrote {a.out_dir}/model.onnx and {manifest['location']}: {len(tensors)} weights, "
          f"{size / 1e9:.2f} GB in {dt:.1f} s ({size / 1e9 / max(dt, 1e-9):.2f} GB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
