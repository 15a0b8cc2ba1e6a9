#!/usr/bin/env python3
"""A model that is already f16 keeps its type when the build config has no dtype.

Makes an f16 twin of an f32 decoder fixture (what exporting after model.half()
gives: f16 initializers, f16 KV cache inputs and outputs, Casts to float become
Casts to f16; logits f16), then:
  1. kiln build with no dtype and --require-injection (injection fuses an f16
     graph too, to the same ops as the fp32 plan's, Q/K/V concatenation
     included): the plan's config says "dtype": "model", its
     float weights and KV cache are f16, its logits are cast to f32 for the
     samplers, and a decoder with position_ids still gets the ragged interface
     (over an f16 paged cache);
  2. --dtype fp16 builds too (the model is already what was asked for), and
     --dtype bf16 is refused with exit code 2 and a message naming both types;
  3. the dense f16 plan's teacher-forced logits over the fixture's 64-token
     prompt match the fp32 plan's: per position, max |f16 - fp32| / max |fp32|
     <= 2e-2, top-1 agreement >= 95%.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from checks import Checks
from half_plans import Fixture, rel_per_position


def to_f16(tensor):
    if tensor.data_type != TensorProto.FLOAT:
        return tensor
    return numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float16), tensor.name)


def half_model(src, dst):
    """An f16 copy of the f32 ONNX model `src`."""
    model = onnx.load(str(src))
    g = model.graph
    for i, t in enumerate(g.initializer):
        g.initializer[i].CopyFrom(to_f16(t))
    for node in g.node:
        for a in node.attribute:
            if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
            if a.type == onnx.AttributeProto.TENSOR:
                a.t.CopyFrom(to_f16(a.t))
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]  # stale f32 types; kiln infers them again
    onnx.save(model, str(dst))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--builder")
    ap.add_argument("fixture", help="an f32 decoder fixture folder")
    args = ap.parse_args()
    args.builder = args.builder or args.kiln
    check = Checks()
    src = Path(args.fixture)
    with tempfile.TemporaryDirectory(prefix="kiln-half-model-") as tmp:
        tmp = Path(tmp)
        folder = tmp / (src.name + "-f16")
        folder.mkdir()
        for f in src.iterdir():
            if f.is_file() and f.name != "model.onnx":
                (folder / f.name).write_bytes(f.read_bytes())
        half_model(src / "model.onnx", folder / "model.onnx")

        fp32 = Fixture(args, src, tmp, check)
        plan32, info32 = fp32.build("fp32", dense=True)
        f16 = Fixture(args, folder, tmp, check)

        plan = tmp / "model-dtype.plan"
        r = subprocess.run([args.builder, "build", str(folder / "model.onnx"), "-o", str(plan),
                            "--quiet", "--require-injection"], capture_output=True, text=True)
        if check(r.returncode == 0, f"build with no dtype, every layer injected (exit "
                 f"{r.returncode}) {r.stderr[-300:]}"):
            info = json.loads(subprocess.run([args.kiln, "inspect", str(plan), "--json"],
                                             capture_output=True, text=True).stdout)
            check(json.loads(info["build_config"])["dtype"] == "model",
                  "the plan's config says dtype \"model\"")
            check(set(info["weight_dtypes"]) & {"f32", "bf16"} == set(),
                  f"no f32 weights: {info['weight_dtypes']}")
            check(info["kv_cache_dtype"] == "f16", f"KV cache f16: {info['kv_cache_dtype']}")
            check(info["interface"] == "ragged", f"ragged interface: {info['interface']}")
            _, ragged32 = fp32.build("fp32", dense=False)
            if ragged32 is not None:
                ops = {k: v for k, v in info["op_counts"].items() if k != "cast"}
                ops32 = {k: v for k, v in ragged32["op_counts"].items() if k != "cast"}
                check(ops == ops32, f"the f16 model's plan has the fp32 plan's ops besides casts "
                      f"(f16 {ops}, fp32 {ops32})")
            logits = [t for t in info["outputs"] if t["name"] == "logits"]
            check(len(logits) == 1 and logits[0]["dtype"] == "f32",
                  f"the f16 model's logits are cast to f32: {logits}")

        _, info16 = f16.build("fp16", dense=False)
        check(info16 is not None and info16["kv_cache_dtype"] == "f16",
              "--dtype fp16 builds an f16 model as it is")
        r = subprocess.run([args.builder, "build", str(folder / "model.onnx"), "-o",
                            str(tmp / "bf16.plan"), "--quiet", "--dtype", "bf16"],
                           capture_output=True, text=True)
        check(r.returncode == 2 and "has f16 weights" in r.stderr and "bf16" in r.stderr,
              f"--dtype bf16 on an f16 model is refused (exit {r.returncode}): "
              f"{r.stderr.strip()[-200:]}")

        dense16, dinfo = f16.build("fp16", dense=True)
        if plan32 is not None and dense16 is not None:
            want, got = fp32.logits(plan32, info32, False), f16.logits(dense16, dinfo, False)
            if want is not None and got is not None:
                rel = rel_per_position(got, want)
                top1 = float(np.mean(np.argmax(got, -1) == np.argmax(want, -1)))
                check(float(rel.max()) <= 2e-2, f"f16 model vs fp32: max rel {rel.max():.2e}")
                check(top1 >= 0.95, f"f16 model vs fp32: top-1 agrees on {top1:.1%}")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
