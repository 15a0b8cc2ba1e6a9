#!/usr/bin/env python3
"""Weights embedded in the ONNX file are served from the file, not held twice.

Builds two models that differ only in the size of eight embedded float32
tables (`out = sum of Gather(table_i, ids), + bias`): 16 rows each, and 2048
rows each (64 MiB in all). The big one's build may use at most 1.3x the
tables more peak memory than the small one's (kiln used to hold the parsed
copy, the mapped file and a copy for the plan: about 2x). Then `kiln exec` on
the big plan must return the rows' sums plus the bias, read from odd offsets
in the ONNX file.
"""

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from checks import Checks

DIM = 1024
TABLES = 8


def make_model(path: Path, rows: int, rng):
    """out = sum over i of Gather(table_i, ids), sliced to DIM - 1 columns, + bias."""
    tables = [rng.standard_normal((rows, DIM), dtype=np.float32) for _ in range(TABLES)]
    bias = rng.standard_normal(DIM - 1, dtype=np.float32)  # odd size: odd offsets after it
    nodes = [helper.make_node("Gather", [f"table{i}", "ids"], [f"rows{i}"], name=f"gather{i}",
                              axis=0) for i in range(TABLES)]
    acc = "rows0"
    for i in range(1, TABLES):
        out = "rows" if i == TABLES - 1 else f"acc{i}"
        nodes.append(helper.make_node("Add", [acc, f"rows{i}"], [out], name=f"add{i}"))
        acc = out
    nodes.append(helper.make_node("Slice", ["rows", "starts", "ends", "axes"], ["cut"],
                                  name="cut"))
    nodes.append(helper.make_node("Add", ["cut", "bias"], ["out"], name="add_bias"))
    initializers = [numpy_helper.from_array(bias, "bias")]
    initializers += [numpy_helper.from_array(t, f"table{i}") for i, t in enumerate(tables)]
    initializers += [numpy_helper.from_array(np.array([v], np.int64), n)
                     for n, v in (("starts", 0), ("ends", DIM - 1), ("axes", 1))]
    graph = helper.make_graph(
        nodes, "embedded", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["n"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["n", DIM - 1])],
        initializer=initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return tables, bias


def build_peak(builder, model: Path, plan: Path):
    """Peak RSS in bytes of one `kiln build` (run in a child of a child, so
    RUSAGE_CHILDREN sees it alone)."""
    code = ("import resource, subprocess, sys\n"
            "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "sys.stderr.write(r.stderr)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.exit(r.returncode)\n")
    r = subprocess.run([sys.executable, "-c", code, builder, "build", str(model), "-o", str(plan),
                        "--quiet"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"kiln build {model} failed: {r.stderr}")
    return int(r.stdout.strip()) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--builder", required=True, help="kiln with the compiler")
    ap.add_argument("--kiln", required=True, help="kiln to run the plan with")
    args = ap.parse_args()
    check = Checks()

    rng = np.random.default_rng(5)
    with tempfile.TemporaryDirectory(prefix="kiln-embedded-") as tmp:
        folder = Path(tmp)
        (folder / "small").mkdir()
        (folder / "big").mkdir()
        make_model(folder / "small" / "model.onnx", 16, rng)
        tables, bias = make_model(folder / "big" / "model.onnx", 2048, rng)
        weights = sum(t.nbytes for t in tables)
        small = build_peak(args.builder, folder / "small" / "model.onnx", folder / "small.plan")
        big = build_peak(args.builder, folder / "big" / "model.onnx", folder / "big.plan")
        extra = big - small
        check(extra < 1.3 * weights,
              f"{weights / 2**20:.0f} MiB of tables cost {extra / 2**20:.0f} MiB more peak RSS "
              f"({big / 2**20:.0f} vs {small / 2**20:.0f} MiB), under 1.3x")

        ids = np.array([0, 7, 2047], dtype=np.int64)
        (folder / "ids.pb").write_bytes(numpy_helper.from_array(ids, "ids").SerializeToString())
        r = subprocess.run([args.kiln, "exec", str(folder / "big.plan"), "--input",
                            f"ids={folder / 'ids.pb'}", "--output-dir", str(folder / "out")],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"kiln exec exits 0 ({r.stderr.strip()})")
        if r.returncode == 0:
            t = TensorProto()
            t.ParseFromString((folder / "out" / "out.pb").read_bytes())
            got = numpy_helper.to_array(t)
            want = sum(t[ids] for t in tables)[:, :DIM - 1] + bias
            check(np.allclose(got, want, rtol=1e-6, atol=1e-5),
                  "sums of the tables' rows plus the bias match numpy")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
