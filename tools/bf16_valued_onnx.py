#!/usr/bin/env python3
"""Copies an fp32 ONNX model, rounding its weights to bf16 values kept in fp32.

Usage (developer tooling; needs numpy and onnx, see tools/requirements-dev.txt):

    /path/to/venv/bin/python tools/bf16_valued_onnx.py SRC_DIR DST_DIR

Most checkpoints today are trained and saved in bf16; exported to ONNX in fp32
(Optimum's default), every weight holds a bf16 value widened to fp32. This makes
such a model from one with arbitrary fp32 weights (for example
tools/make_big_llama.py's random ones), for benchmarks: every float initializer
of at least 1024 elements (the parameters: projections, embeddings, norms) is
rounded to the nearest bf16 value (ties to even), in place of a copy of the
external data; small constants (rotary frequencies, scalars) stay as they are.
SRC_DIR holds model.onnx (weights inline or in external data); DST_DIR gets
model.onnx, its external data under the same names, and SRC_DIR's other files
(config, tokenizer), so `kiln build DST_DIR/model.onnx` accepts it. Nothing
here is committed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

MIN_ELEMENTS = 1024


def round_to_bf16(a):
    """fp32 array -> the nearest bf16 values (ties to even) as fp32; NaN kept."""
    import numpy as np
    bits = a.view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    out = ((bits + rounding) & np.uint32(0xFFFF0000)).view(np.float32)
    return np.where(np.isnan(a), a, out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    args = ap.parse_args()
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper

    src_model = args.src / "model.onnx"
    if not src_model.is_file():
        print(f"error: {src_model} not found", file=sys.stderr)
        return 2
    if args.dst.resolve() == args.src.resolve():
        print("error: DST_DIR must differ from SRC_DIR", file=sys.stderr)
        return 2
    args.dst.mkdir(parents=True, exist_ok=True)
    model = onnx.load(str(src_model), load_external_data=False)
    # Copy every file first (external data included), then round in place.
    for f in args.src.iterdir():
        if f.is_file():
            shutil.copyfile(f, args.dst / f.name)
    rounded = kept = 0
    for t in model.graph.initializer:
        count = int(np.prod(t.dims)) if len(t.dims) else 1
        if t.data_type != TensorProto.FLOAT or count < MIN_ELEMENTS:
            kept += 1
            continue
        external = {e.key: e.value for e in t.external_data}
        if t.data_location == TensorProto.EXTERNAL:
            path = args.dst / external["location"]
            offset = int(external.get("offset", "0"))
            length = int(external.get("length", str(4 * count)))
            if length != 4 * count:
                print(f"error: {t.name}: {length} bytes for {count} floats", file=sys.stderr)
                return 1
            mm = np.memmap(path, dtype=np.float32, mode="r+", offset=offset, shape=(count,))
            mm[:] = round_to_bf16(np.array(mm))
            mm.flush()
            del mm
        else:
            a = numpy_helper.to_array(t).astype(np.float32).ravel()
            t.CopyFrom(numpy_helper.from_array(round_to_bf16(a).reshape(t.dims), t.name))
        rounded += 1
    onnx.save(model, str(args.dst / "model.onnx"))
    print(f"{args.dst}: {rounded} initializers rounded to bf16 values, {kept} kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
