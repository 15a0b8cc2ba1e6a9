#!/usr/bin/env python3
"""f32 weights that hold bf16 values are packed in bf16 on the CPU, with the
same results (docs/engine.md, "f32 weights that hold bf16 or f16 values").

For a decoder fixture (random f32 weights):
  1. tools/bf16_valued_onnx.py makes a copy whose weights are bf16 values in
     f32, as an f32 export of a bf16 checkpoint has them: every float
     initializer of >= 1024 elements has its low 16 bits zero afterwards, and
     the fixture's own weights did not (the near miss: nothing to narrow);
  2. kiln build an f32 plan of each;
  3. kiln run (KILN_PROFILE=1, greedy, a few tokens) on the bf16-valued plan
     with narrowing on and off (KILN_CPU_NARROW=0): the profile says that
     weights were held in bf16 only when on, and the tokens and every
     step's logits are bit for bit the same;
  4. the fixture's own plan narrows nothing.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from checks import Checks

REPO = Path(__file__).resolve().parents[2]
NARROWED = re.compile(r"weights packed for the products: (\d+) .*?(\d+) of them f32 held exactly")


def low_bits_zero(model_path):
    """(float initializers of >= 1024 elements, how many have all low 16 bits zero)."""
    model = onnx.load(str(model_path))
    big = zero = 0
    for t in model.graph.initializer:
        if t.data_type != TensorProto.FLOAT or int(np.prod(t.dims)) < 1024:
            continue
        big += 1
        bits = numpy_helper.to_array(t).astype(np.float32).view(np.uint32)
        zero += int(np.all((bits & 0xFFFF) == 0))
    return big, zero


def run(kiln, plan, narrow, tmp, name):
    dump = tmp / f"{name}-{narrow}.npy"
    ids = tmp / f"{name}-{narrow}.json"
    env = dict(os.environ, KILN_CPU_NARROW=narrow, KILN_PROFILE="1")
    r = subprocess.run([kiln, "run", str(plan), "--prompt-ids", "1,5,9,13,17,21,25,29",
                        "--max-new-tokens", "4", "--temperature", "0", "--ignore-eos",
                        "--no-stream", "--dump-logits", str(dump), "--output-ids", str(ids),
                        "--threads", "2"], capture_output=True, text=True, env=env)
    return r, dump, ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--builder", required=True)
    ap.add_argument("fixture", type=Path)
    args = ap.parse_args()
    check = Checks()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        derived = tmp / "bf16v"
        r = subprocess.run([sys.executable, str(REPO / "tools" / "bf16_valued_onnx.py"),
                            str(args.fixture), str(derived)], capture_output=True, text=True)
        if not check(r.returncode == 0, f"bf16_valued_onnx.py {args.fixture.name} "
                     f"(exit {r.returncode}) {r.stderr.strip()[-300:]}"):
            return check.exit_code()
        big, zero = low_bits_zero(derived / "model.onnx")
        check(big > 0 and zero == big, f"{zero} of {big} large float initializers hold bf16 values")
        big0, zero0 = low_bits_zero(args.fixture / "model.onnx")
        check(big0 > 0 and zero0 == 0, f"the fixture's own: {zero0} of {big0} do")
        plans = {}
        for name, model in (("bf16v", derived), ("own", args.fixture)):
            plan = tmp / f"{name}.plan"
            r = subprocess.run([args.builder, "build", str(model / "model.onnx"), "-o", str(plan),
                                "--quiet"], capture_output=True, text=True)
            tail = r.stderr.strip()[-300:] if r.returncode else ""
            if check(r.returncode == 0, f"kiln build {name} (exit {r.returncode}) {tail}"):
                plans[name] = plan
        if "bf16v" in plans:
            out = {}
            for narrow in ("1", "0"):
                r, dump, ids = run(args.kiln, plans["bf16v"], narrow, tmp, "bf16v")
                tail = r.stderr.strip()[-300:] if r.returncode else ""
                if not check(r.returncode == 0, f"kiln run KILN_CPU_NARROW={narrow} "
                             f"(exit {r.returncode}) {tail}"):
                    return check.exit_code()
                m = NARROWED.search(r.stderr)
                if not check(m is not None, f"KILN_CPU_NARROW={narrow}: the profile counts "
                             "packed and narrowed weights"):
                    return check.exit_code()
                packed, narrowed = int(m.group(1)), int(m.group(2))
                want = packed if narrow == "1" else 0
                check(packed > 0 and narrowed == want,
                      f"KILN_CPU_NARROW={narrow}: {narrowed} of {packed} packed weights "
                      f"held in bf16 (want {want})")
                out[narrow] = (np.load(dump), ids.read_text())
            check(out["1"][1] == out["0"][1], f"same tokens narrowed and not: {out['1'][1].strip()}")
            same = out["1"][0].shape == out["0"][0].shape and np.array_equal(out["1"][0],
                                                                              out["0"][0])
            check(same, f"same logits bit for bit over {out['1'][0].shape[0]} steps")
        if "own" in plans:
            r, _, _ = run(args.kiln, plans["own"], "1", tmp, "own")
            m = NARROWED.search(r.stderr)
            check(r.returncode == 0 and m is not None and int(m.group(2)) == 0,
                  "the fixture's own plan (random f32 weights) narrows nothing")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
