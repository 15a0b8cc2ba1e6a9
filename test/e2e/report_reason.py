#!/usr/bin/env python3
"""The injection report names the part of a layer that failed, not a neighbour.

Copies a unit-weight fixture (norm weights 1, so cleanup folds the norm's
scale Mul away and the norm's `x * inv` product feeds the q/k/v projections),
makes layer 1's input RMSNorm take its mean over the sequence dim (axis 1)
instead of the hidden dim, and checks that `kiln build --require-injection`:

1. fails with exit 2, naming layer 1's norm, its ReduceMean node and the
   reason the norm pattern gave;
2. does not blame layer 1's MLP (its gated MLP fuses; the projection of the
   norm's product is not an MLP), nor layer 0.

Before the fix, this build said "MLP not fused ... the down projection's
input is not act(x @ Wg) * (x @ Wu)" at q_proj while also fusing gated_mlp.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from checks import Checks


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--builder", required=True, help="kiln with the compiler")
    ap.add_argument("fixture", help="a Llama-style 2-layer fixture folder with unit norm weights")
    args = ap.parse_args()
    check = Checks()
    failures = check.failures

    with tempfile.TemporaryDirectory(prefix="kiln-reason-") as tmp:
        for f in Path(args.fixture).iterdir():
            if f.is_file() and f.suffix == ".json":
                shutil.copy(f, tmp)
        model = onnx.load(str(Path(args.fixture) / "model.onnx"))
        means = [n for n in model.graph.node if n.op_type == "ReduceMean" and
                 "layers.1/input_layernorm" in n.name]
        check(len(means) == 1, f"one input_layernorm ReduceMean in layer 1 (found {len(means)})")
        if not means:
            return 1
        node = means[0]
        axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "kiln_test_seq_axis")
        model.graph.initializer.append(axes)
        node.input[1] = axes.name
        path = Path(tmp) / "model.onnx"
        onnx.save(model, str(path))

        r = subprocess.run([args.builder, "build", str(path), "-o", str(Path(tmp) / "m.plan"),
                            "--require-injection"], capture_output=True, text=True)
        err = r.stderr
        check(r.returncode == 2, f"--require-injection exits 2 (got {r.returncode})")
        check("layer 1: norm not fused" in err, "the error names layer 1's norm")
        check(node.name in err, f"the error names the node {node.name}")
        check("RMSNorm: the mean is not over the last dim only" in err,
              "the error gives the norm pattern's reason")
        check("MLP not fused" not in err, "the MLP is not blamed")
        check("gated MLP" not in err, "no gated-MLP reason appears")
        check("layer 0" not in err, "layer 0 is not blamed")
        if failures:
            print(err)
    print(f"\nreport reason: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
