#!/usr/bin/env python3
"""--require-injection on a model whose attention was altered so it must not fuse.

Copies a fixture's model.onnx, changes the Softmax of layer 1's attention to
normalize over the query dim (axis 2) instead of the keys, and checks that:

1. `kiln build --require-injection` fails with exit 2, naming layer 1, its
   attention, the Softmax node and the reason the pattern gave;
2. `kiln build` without the flag succeeds and warns about the same layer;
3. `kiln inspect` shows the report the plan stores;
4. `kiln build --report` prints layer 0 as fused and layer 1's attention as
   not fused.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx
from checks import Checks


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--builder", required=True, help="kiln with the compiler")
    ap.add_argument("fixture", help="a fixture folder with a 2-layer decoder model.onnx")
    args = ap.parse_args()
    check = Checks()
    failures = check.failures

    with tempfile.TemporaryDirectory(prefix="kiln-require-") as tmp:
        for f in Path(args.fixture).iterdir():
            if f.is_file() and f.suffix == ".json":
                shutil.copy(f, tmp)
        model = onnx.load(str(Path(args.fixture) / "model.onnx"))
        altered = [n for n in model.graph.node
                   if n.op_type == "Softmax" and "layers.1" in n.name]
        check(len(altered) == 1, f"one Softmax in layer 1 (found {len(altered)})")
        if not altered:
            return 1
        node = altered[0]
        for a in node.attribute:
            if a.name == "axis":
                a.i = 2
        if not any(a.name == "axis" for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute("axis", 2))
        path = Path(tmp) / "model.onnx"
        onnx.save(model, str(path))
        kiln = [args.builder, "build", str(path), "-o", str(Path(tmp) / "m.plan")]

        r = subprocess.run(kiln + ["--require-injection"], capture_output=True, text=True)
        check(r.returncode == 2, f"--require-injection exits 2 (got {r.returncode})")
        check("layer 1: attention not fused" in r.stderr, "the error names layer 1's attention")
        check(node.name in r.stderr, f"the error names the node {node.name}")
        check("the softmax is not over the key (last) dim" in r.stderr, "the error gives the reason")
        check("layer 0" not in r.stderr, "layer 0 is not blamed")
        check(not (Path(tmp) / "m.plan").exists(), "no plan is left behind")

        r = subprocess.run(kiln, capture_output=True, text=True)
        check(r.returncode == 0, f"without the flag the build succeeds (exit {r.returncode})")
        check("warning: layer 1: attention not fused" in r.stderr, "and warns about layer 1")
        r = subprocess.run([args.builder, "inspect", str(Path(tmp) / "m.plan")],
                           capture_output=True, text=True)
        check("kernel injection: 1 of 2 layers fully injected" in r.stdout and
              "layer 1: attention not fused" in r.stdout,
              "kiln inspect shows the report stored in the plan")

        r = subprocess.run(kiln + ["--report", "--quiet"], capture_output=True, text=True)
        check("kernel injection: 1 of 2 layers fully injected" in r.stderr,
              "--report counts 1 of 2 layers")
        if failures:
            print(r.stderr)
    print(f"\nrequire-injection: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
